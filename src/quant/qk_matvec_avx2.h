/* Fused matrix-vector kernels of the AVX2 engine for the K types (m = 1:
 * QK_C is 2 there), included by qk_avx2.c before the engine body. Each
 * super-block is unpacked in registers straight from the file's layout and
 * meets the same integer and float operations, in the same order and lane
 * layout, as the tile route with C = 1 (ktile in qk_engine_body.h with 8
 * lanes), so results are bit-identical to it. With 32-byte steps the file
 * layouts need no reordering: a step is the low or high nibbles of 32 Q4_K
 * / Q6_K bytes. Integer dots are exact whatever instructions form them;
 * the scaled dot (QK_DOT_SCALED) is qk_avx2.c's, the tile's own. The
 * 32-element block types have their own kernels (qk_block32_avx2.h).
 * k must be a multiple of 256; the caller checks. */
#ifndef TP_QUANT_QK_MATVEC_AVX2_H
#define TP_QUANT_QK_MATVEC_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#define MV_INLINE static inline __attribute__((always_inline))

MV_INLINE __m256i mv_ld(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
MV_INLINE __m256i mv_nib(void) { return _mm256_set1_epi8(0x0F); }

/* Exact lane sums of 4 u8 * s8 products (u <= 127: no 16-bit saturation). */
MV_INLINE __m256i mv_dot4(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* ---- Q4_K / Q5_K: step 2j holds the low nibbles of qs[32j..32j+31], step
 * 2j + 1 the high ones; one sub-block (one scale) per step. */
MV_INLINE void mv_body_k45(const uint8_t *const *rows, int NR, const qk_act *act, int64_t c, int64_t k,
                           const uint8_t *pf, int64_t pf_step, float *res, int five) {
  const size_t bb = five ? 176 : 144, qs_at = five ? 48 : 16;
  const __m256i b4 = _mm256_set1_epi8(0x10);
  const int64_t kpad = act->kpad, ng = kpad / 16, dstride = kpad / 256 + 1;
  const int8_t *aq = act->q + c * kpad;
  const float *dsb = act->dsb + c * dstride, *bf = act->bf + c * ng;
  __m256 acc[4];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < k / 256; ++sb) {
    const int8_t *a = aq + 256 * sb;
    qk_prefetch_slice(pf, sb, pf_step);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const uint8_t *blk = rows[r] + bb * (size_t)sb;
      const __m256i qh = five ? mv_ld(blk + 16) : _mm256_setzero_si256();
      uint32_t w[3];
      memcpy(w, blk + 4, 12);
      const uint32_t lo6 = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, top2 = 0x03030303u;
      const uint32_t sc_lo = w[0] & lo6, m_lo = w[1] & lo6;
      const uint32_t sc_hi = (w[2] & lo4) | (((w[0] >> 6) & top2) << 4);
      const uint32_t m_hi = ((w[2] >> 4) & lo4) | (((w[1] >> 6) & top2) << 4);
      /* scales 0..3 and 4..7, each in both 16-bit halves of a 32-bit lane
       * as QK_DOT_SCALED (qk_avx2.c) takes them: the tile's integers, in both
       * 128-bit halves: a shuffle with an immediate broadcasts one */
      const __m128i sc16_lo = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)sc_lo));
      const __m128i sc16_hi = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)sc_hi));
      const __m256i s03 = _mm256_broadcastsi128_si256(_mm_unpacklo_epi16(sc16_lo, sc16_lo));
      const __m256i s47 = _mm256_broadcastsi128_si256(_mm_unpacklo_epi16(sc16_hi, sc16_hi));
      __m256i isum = _mm256_setzero_si256();
/* Q5_K: bit 2j (low nibbles) and 2j + 1 (high) of qh[l] become bit 4; 16-bit
 * shifts of at most 4 left or 3 right never bring a neighbour's bit there */
#define MV_BIT4(n) ((n) <= 4 ? _mm256_slli_epi16(qh, 4 - (n)) : _mm256_srli_epi16(qh, (n) - 4))
#define MV_Q4K_STEPS(j, sv_lo, sv_hi)                                                                \
  {                                                                                                  \
    const __m256i x = mv_ld(blk + qs_at + 32 * (j));                                                 \
    __m256i ql = _mm256_and_si256(x, mv_nib()), qu = _mm256_and_si256(_mm256_srli_epi16(x, 4), mv_nib()); \
    if (five) {                                                                                      \
      ql = _mm256_or_si256(ql, _mm256_and_si256(MV_BIT4(2 * (j)), b4));                               \
      qu = _mm256_or_si256(qu, _mm256_and_si256(MV_BIT4(2 * (j) + 1), b4));                           \
    }                                                                                                \
    isum = QK_DOT_SCALED(isum, ql, mv_ld(a + 64 * (j)), sv_lo);                                     \
    isum = QK_DOT_SCALED(isum, qu, mv_ld(a + 64 * (j) + 32), sv_hi);                                \
  }
      MV_Q4K_STEPS(0, _mm256_shuffle_epi32(s03, 0x00), _mm256_shuffle_epi32(s03, 0x55))
      MV_Q4K_STEPS(1, _mm256_shuffle_epi32(s03, 0xAA), _mm256_shuffle_epi32(s03, 0xFF))
      MV_Q4K_STEPS(2, _mm256_shuffle_epi32(s47, 0x00), _mm256_shuffle_epi32(s47, 0x55))
      MV_Q4K_STEPS(3, _mm256_shuffle_epi32(s47, 0xAA), _mm256_shuffle_epi32(s47, 0xFF))
#undef MV_Q4K_STEPS
#undef MV_BIT4
      const float dw = QK_F16_TO_F32((uint16_t)(blk[0] | (blk[1] << 8)));
      const float dmin = QK_F16_TO_F32((uint16_t)(blk[2] | (blk[3] << 8)));
      /* each min twice (per 16 elements), as qk_k4_scales */
      const __m128i m8 = _mm_set_epi32(0, 0, (int)m_hi, (int)m_lo), m16 = _mm_unpacklo_epi8(m8, m8);
      const __m256 vmin = _mm256_set1_ps(-dmin); /* negated: fmadd, not vfnmadd (see qk_avx2.c) */
      const __m256 mf0 = _mm256_mul_ps(vmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m16)));
      const __m256 mf1 = _mm256_mul_ps(vmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(m16, 8))));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dw * dsb[sb]), acc[r]);
      acc[r] = _mm256_fmadd_ps(mf0, _mm256_loadu_ps(bf + 16 * sb), acc[r]);
      acc[r] = _mm256_fmadd_ps(mf1, _mm256_loadu_ps(bf + 16 * sb + 8), acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) res[r * QK_C] = qk_reduce_avx2(acc[r]);
}

/* ---- Q6_K: half h's steps are ql[64h..+31] and ql[64h+32..+63], low
 * nibbles then high, with qh[32h..] bits 0-1, 2-3, 4-5, 6-7. Scales per 16
 * elements: lanes 0..3 and 4..7 of a step. */
MV_INLINE void mv_body_q6_K(const uint8_t *const *rows, int NR, const qk_act *act, int64_t c, int64_t k,
                            const uint8_t *pf, int64_t pf_step, float *res) {
  const int64_t kpad = act->kpad, lanes = kpad / 4, dstride = kpad / 256 + 1;
  const int8_t *aq = act->q + c * kpad;
  const int32_t *init = act->init + c * lanes;
  const float *dsb = act->dsb + c * dstride;
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[4];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < k / 256; ++sb) {
    const int8_t *a = aq + 256 * sb;
    const int32_t *in = init + 64 * sb;
    qk_prefetch_slice(pf, sb, pf_step);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const uint8_t *blk = rows[r] + 210 * sb;
      /* int8 scales as madd wants them: int16 value, zero high half */
      const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192)));
      const __m256i s0 = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(s16));
      const __m256i s1 = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(s16, 1));
      __m256i isum = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const __m256i l0 = mv_ld(blk + 64 * h), l1 = mv_ld(blk + 64 * h + 32), qh = mv_ld(blk + 128 + 32 * h);
        const __m256i sc = h ? s1 : s0; /* groups 8h .. 8h + 7 */
        const __m256i q[4] = {
            _mm256_or_si256(_mm256_and_si256(l0, mv_nib()), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
            _mm256_or_si256(_mm256_and_si256(l1, mv_nib()), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), mv_nib()), _mm256_and_si256(qh, m30)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), mv_nib()),
                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30))};
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const int64_t e = 128 * h + 32 * i;
          const __m256i sv = _mm256_permutevar8x32_epi32(sc, _mm256_set_epi32(2 * i + 1, 2 * i + 1, 2 * i + 1, 2 * i + 1,
                                                                            2 * i, 2 * i, 2 * i, 2 * i));
          const __m256i t = _mm256_add_epi32(mv_ld(in + e / 4), mv_dot4(q[i], mv_ld(a + e)));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(t, sv));
        }
      }
      const float dw = QK_F16_TO_F32((uint16_t)(blk[208] | (blk[209] << 8)));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dw * dsb[sb]), acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) res[r * QK_C] = qk_reduce_avx2(acc[r]);
}

static int mv_prepare(topos_dtype wtype, qk_act *act) {
  (void)wtype, (void)act;
  return 1;
}

#include "quant/qk_matvec_table.h"

#endif
