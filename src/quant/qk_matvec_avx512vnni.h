/* In-register unpacking of the block layouts for the AVX-512 VNNI
 * engine's own kernels: the block-sum and super-block-sum products
 * (qk_block32_avx512vnni.h, qk_ksum_avx512vnni.h) build on these. Included
 * by qk_avx512vnni.c before the engine body. Those kernels serve every
 * product of their types on this ISA (decoding included), as the AVX2
 * kernels do there (qk_block32_avx2.h, qk_ksum_avx2.h).
 *
 * Layouts: reference/ggml.md §2. */
#ifndef TP_QUANT_QK_MATVEC_AVX512VNNI_H
#define TP_QUANT_QK_MATVEC_AVX512VNNI_H

#include <immintrin.h>
#include <stdint.h>

#define MV_INLINE static inline __attribute__((always_inline))

MV_INLINE __m512i mv_nib_mask(void) { return _mm512_set1_epi8(0x0F); }

/* ---- Q4_K / Q5_K: d, dmin (f16), 12 bytes of 6-bit scales and mins, (Q5_K:
 * 32 bytes of fifth bits,) 128 bytes of
 * nibbles; the 32 bytes of chunk j hold elements 64j..64j+31 in their low
 * nibbles and 64j+32..64j+63 in their high nibbles. */

/* The eight 6-bit scales (bytes 0..7) and mins (bytes 8..15) of a
 * super-block, byte-parallel (the values of qk_scale_min_k4): p's in the
 * low 128 bits, q's in the high 128 bits (two rows decoded side by side). */
MV_INLINE __m256i mv_q4k_scales2(const uint8_t *p, const uint8_t *q) {
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p + 4))),
                                            _mm_loadu_si128((const __m128i *)(const void *)(q + 4)), 1);
  const __m256i t1 = _mm256_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)); /* w0 w2 w1 w2 */
  const __m256i t2 = _mm256_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)); /* w0 w0 w1 w1 */
  const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(t1, _mm256_set_epi32(4, 0, 0, 0, 4, 0, 0, 0)),
                                      _mm256_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f,
                                                       0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f));
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(t2, 2),
                                      _mm256_set_epi32(0x30303030, 0, 0x30303030, 0, 0x30303030, 0, 0x30303030, 0));
  return _mm256_or_si256(lo, hi);
}

/* Q4_K's activations in nibble order: per super-block the four 64-byte
 * vectors the kernel meets, [a0..31 a64..95] [a32..63 a96..127] and the
 * same for the second half (ks_row_k45 in qk_ksum_avx512vnni.h). */
static int mv_q4k_prepare(qk_act *act) {
  const int64_t kpad = act->kpad;
  act->qn = tp_temp_alloc((size_t)(act->m * kpad));
  if (!act->qn) return 0;
  for (int64_t r = 0; r < act->m; ++r)
    for (int64_t sb = 0; sb + 256 <= kpad; sb += 256) {
      const int8_t *src = act->q + r * kpad + sb;
      int8_t *dst = act->qn + r * kpad + sb;
      for (int h = 0; h < 2; ++h) {
        memcpy(dst + 128 * h, src + 128 * h, 32);
        memcpy(dst + 128 * h + 32, src + 128 * h + 64, 32);
        memcpy(dst + 128 * h + 64, src + 128 * h + 32, 32);
        memcpy(dst + 128 * h + 96, src + 128 * h + 96, 32);
      }
    }
  return 1;
}

/* Q5_K's fifth bits, into the four nibble vectors of a super-block as
 * loaded (low and high nibbles of bytes 0..63, then of 64..127): bit 2j
 * (low nibbles of 32 bytes j) and 2j + 1 (high) of qh[l] are bit 4. */
MV_INLINE void mv_q5k_fifth_bits(const uint8_t *blk, __m512i *q0, __m512i *q1, __m512i *q2, __m512i *q3) {
  const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(blk + 16)));
  const __m512i b4 = _mm512_set1_epi8(0x10);
  /* 16-bit shifts of at most 4 left or 3 right: bit 4 never takes a neighbour's bit */
  *q0 = _mm512_or_si512(*q0, _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(h, 2), (__mmask32)0x0000FFFFu, h, 4), b4));
  *q1 = _mm512_or_si512(*q1, _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(h, 1), (__mmask32)0x0000FFFFu, h, 3), b4));
  *q2 = _mm512_or_si512(*q2, _mm512_and_si512(_mm512_mask_srli_epi16(h, (__mmask32)0xFFFF0000u, h, 2), b4));
  *q3 = _mm512_or_si512(*q3, _mm512_and_si512(_mm512_mask_srli_epi16(_mm512_srli_epi16(h, 3), (__mmask32)0x0000FFFFu, h, 1), b4));
}

/* ---- Q6_K: ql[128] low nibbles, qh[64] top two bits, 16 int8 scales, d
 * (f16). Half h (128 elements) takes ql[64h..] and qh[32h..]: chunk 2h is
 * the low nibbles of those 64 ql bytes with qh bits 0-1 (elements 0..31)
 * and 2-3 (32..63); chunk 2h + 1 the high nibbles with bits 4-5 and 6-7. */
MV_INLINE void mv_q6k_chunks(const uint8_t *ql, const uint8_t *qh, __m512i *lo, __m512i *hi) {
  const __m512i l = _mm512_loadu_si512(ql), m30 = _mm512_set1_epi8(0x30);
  const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)qh));
  /* 16-bit shifts: the bits a byte takes from its neighbour fall outside 0x30 */
  const __m512i h_lo = _mm512_mask_slli_epi16(_mm512_slli_epi16(h, 2), (__mmask32)0x0000FFFFu, h, 4);
  const __m512i h_hi = _mm512_mask_srli_epi16(h, (__mmask32)0xFFFF0000u, h, 2);
  *lo = _mm512_or_si512(_mm512_and_si512(l, mv_nib_mask()), _mm512_and_si512(h_lo, m30));
  *hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), mv_nib_mask()), _mm512_and_si512(h_hi, m30));
}

/* ---- legacy 32-element blocks, two per 64-element chunk ---------------- */

MV_INLINE float mv_f16(const uint8_t *p) { return QK_F16_TO_F32((uint16_t)(p[0] | (p[1] << 8))); }

/* The 64 weights of blocks b0 and b1 (NULL past the row's end: the tile
 * route's zero padding) as the tile route decodes them. Q4_0 / Q4_1 / Q5_0 /
 * Q5_1: 16 bytes of nibbles per block, low nibbles elements 0..15, high
 * 16..31, so the chunk is [lo b0, hi b0, lo b1, hi b1]; Q5's fifth bits
 * (32 per block, element order) become 0x10 through a byte mask. Q8_0:
 * q + 128. */
MV_INLINE __m128i mv_ld16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

MV_INLINE __m512i mv_nib_chunk(const uint8_t *qs0, const uint8_t *qs1) {
  const __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(mv_ld16(qs0)),
                                            qs1 ? mv_ld16(qs1) : _mm_setzero_si128(), 1);
  __m512i v = _mm512_shuffle_i64x2(_mm512_castsi256_si512(x), _mm512_castsi256_si512(x), _MM_SHUFFLE(1, 1, 0, 0));
  v = _mm512_mask_srli_epi16(v, (__mmask32)0xFF00FF00u, v, 4);
  return _mm512_and_si512(v, mv_nib_mask());
}

MV_INLINE uint32_t mv_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v; /* x86: little-endian */
}

MV_INLINE __m512i mv_q8_chunk(const uint8_t *qs0, const uint8_t *qs1) {
  const __m256i f = _mm256_set1_epi8((char)0x80);
  const __m256i lo = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)qs0), f);
  if (!qs1) return _mm512_zextsi256_si512(lo); /* padding decodes to 0, not 128 */
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)qs1), f), 1);
}


#endif
