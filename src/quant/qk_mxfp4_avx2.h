/* MXFP4 weights (gpt-oss's experts) in the AVX2 block-sum family (included
 * by qk_block32_avx2.h after its block layouts; the kernels there take
 * MXFP4 as one more q32_kind). Both routes give that family's definition
 * with MXFP4's block scale, as the AVX-512 kernels (qk_mxfp4_avx512vnni.h)
 * do:
 *     acc = 0;  for each block b in order:  acc = fma(float(isum_b), dw_b * da_b, acc)
 * with isum_b the exact integer dot of the block's 32 levels (the doubled
 * E2M1 values, tp_mxfp4_level) and the Q8_0 activation's 32 values, dw_b =
 * 2^(e_b - 128) (tp_e8m0_half) and da_b the activation's f16 scale; so the
 * matrix-vector kernel (decoding) and the tile (prompts) give the same
 * bits at every m and thread count, and the same bits as the AVX-512 VNNI
 * and AMX routes.
 *
 * A block is the nibble types' 16 bytes of qs (Q4_0's order) at offset 1;
 * one byte shuffle of the 16-entry table turns each nibble into level + 12
 * (0..24, vpmaddubsw's unsigned operand), and the bias term -12 times the
 * activation block's sum (the traits' bias, TP_MXFP4_BIAS) makes the block
 * sum exact in levels. The 16-bit pair sums are wider than Q4_0's
 * (2 * 24 * 127 per vpmaddubsw), so they widen as Q5's do: the tile every 4
 * steps (4 * 6096 = 24384), the matrix-vector reduction after its first
 * vphaddw (2 * 2 * 6096 = 24384; a second would reach 48768). The block
 * scale is the exponent byte at offset 0, widened to f32 in registers
 * (q32_e8m0x8: tp_e8m0_half's bits) where Q4_0 widens an f16 d.
 *
 * Measured (bench-qmatmul --fast-only, TOPOS_DISABLE_ISA=avx512 on a
 * Sapphire Rapids, one thread, shared machine): 1 x 2880 x 2880 in 187-200
 * us where the engine body took 586-619 (Q4_0's kernel 159-163); 1 x 4096 x
 * 4096 427-454 us (engine 1367-1449, Q4_0 416-444); 64 x 2880 x 2880
 * 5.19-5.45 ms (engine 13.6-14.3, Q4_0 4.90-4.98). Of the matrix-vector
 * kernel's 1 x 2880 x 2880, the exponents take about 45 us (without them,
 * wrong, for the bound: 157), the table shuffles about 25 (175). */
#ifndef TP_QUANT_QK_MXFP4_AVX2_H
#define TP_QUANT_QK_MXFP4_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "quant/mxfp4.h"

#define Q32_MXFP4 ((q32_kind){17, 1, 0, 0, TP_MXFP4_BIAS})
#define Q32_IS_MX(kd) ((kd).bytes == 17)
/* the pair sums add in 16 bits over 4 steps, not 8 (Q5 and MXFP4) */
#define Q32_WIDE(kd) ((kd).qh || Q32_IS_MX(kd))

/* Nibbles (0..15 per byte) -> level + TP_MXFP4_BIAS (0..24), per byte. */
Q32_INLINE __m256i q32_mx_levels(__m256i nib) {
  const __m256i lut = _mm256_broadcastsi128_si256(
      _mm_add_epi8(_mm_setr_epi8(TP_MXFP4_LEVELS), _mm_set1_epi8(TP_MXFP4_BIAS)));
  return _mm256_shuffle_epi8(lut, nib);
}

/* 2^(e - 128) of 8 exponents (int32 lanes, 0..255) as f32: tp_e8m0_half's
 * bits, as two parts that are 0 where the other one holds: the normal
 * numbers' (e - 1) << 23 with e - 1 saturated at 0 (e = 0, 1: 0), and the
 * denormals 0x00400000 >> (1 - e) (e = 0: 2^-128, e = 1: 2^-127; from e = 2
 * the count is negative, past 31 as unsigned, and the shift gives 0). Five
 * single operations where a compare and a blend took seven (1 x 2880 x
 * 2880: about 8 us of 200). */
Q32_INLINE __m256 q32_e8m0_half8(__m256i e) {
  const __m256i normal = _mm256_slli_epi32(_mm256_subs_epu16(e, _mm256_set1_epi32(1)), 23);
  const __m256i denormal = _mm256_srlv_epi32(_mm256_set1_epi32(0x00400000), _mm256_sub_epi32(_mm256_set1_epi32(1), e));
  return _mm256_castsi256_ps(_mm256_or_si256(normal, denormal));
}

/* The block scales at offset `at` of the 8 rows (in lane order): their
 * exponent bytes gathered in general registers (the vector ports stay with
 * the dots), then widened. */
Q32_INLINE __m256 q32_e8m0x8(const uint8_t *const rows[8], int64_t at) {
  uint64_t e = 0;
  for (int r = 0; r < 8; ++r) e |= (uint64_t)rows[r][at] << (8 * r);
  return q32_e8m0_half8(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)e)));
}

#endif
