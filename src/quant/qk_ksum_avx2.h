/* K-quant products on AVX2 (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; included by
 * qk_avx2.c after qk_block32_avx2.h), by the super-block-sum definition of
 * the AVX-512 kernels (qk_ksum_avx512vnni.h): with the Q8_K activation's da
 * and qa, per super-block in order from acc = 0,
 *     Q2_K, Q4_K, Q5_K:  isc = sum_j sc_j * sum_(i in j) q_i * qa_i
 *                        imn = sum_j m_j * sum_(i in j) qa_i
 *                        acc = fma(float(isc), d * da, acc)
 *                        acc = fma(-float(imn), dmin * da, acc)
 *     Q3_K, Q6_K:        isc = sum_j sc_j * sum_(i in j) (q_i - bias) * qa_i
 *                        acc = fma(float(isc), d * da, acc)
 * (bias 4 and 32; Q3_K's sc_j is its 6-bit scale less 32). isc and imn are
 * exact integers, so any kernel that forms them gives the same bits. The
 * engine's K tile converted a lane sum per 16 elements and took the min
 * term group by group in floats; here the float work is one or two
 * conversions per super-block.
 *
 * The weights' q (Q2_K 0..3, Q3_K 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K
 * 0..63) are vpmaddubsw's unsigned operand and qa (-128..127) the signed
 * one: pair sums of at most 2 * q_max * 128 add in 16 bits over 8 steps
 * of 4 elements (Q4_K), 4 (Q5_K, and Q2_K / Q3_K's 16-element sub-block)
 * and 2 (Q6_K), and one vpmaddwd with the sub-block's scale in both 16-bit
 * halves of a lane both widens them and applies sc_j (products <= 63 *
 * 30720 or 128 * 32256). The bias becomes a per-row and -activation
 * correction, -bias * sum_j sc_j * (j's qa sum), and the min term is a
 * vpmaddwd of the paired mins with the paired sub-block sums of qa.
 *
 * As for the 32-element types: the tile (m >= KS8_MV_MAX_M) has 8
 * activation rows as lanes, a panel of 4 weight rows decoded to bytes in
 * element order; the matrix-vector kernel takes 8 weight rows in pairs
 * (Q4_K / Q5_K: both rows' elements of a sub-block in one vector,
 * ks8_mv_pair45; the 16-sub-block types: a row's 32 elements per vector,
 * ks8_mv_row16) and reduces their lane sums by exact transposes
 * (q32_reduce_pairs, q32_reduce_halves). */
#ifndef TP_QUANT_QK_KSUM_AVX2_H
#define TP_QUANT_QK_KSUM_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/qk_q3k_scales_x86.h"

#define KS8_TR 4       /* weight rows per tile */
#define KS8_MV_MAX_M 4 /* below this m, the matrix-vector kernel */

typedef enum { KS8_Q4_K, KS8_Q5_K, KS8_Q6_K, KS8_Q2_K, KS8_Q3_K } ks8_kind;

typedef struct {
  qk8_base b;
  ks8_kind kind;
  int64_t nsb, bb; /* super-blocks per row; bytes per super-block */
  int64_t groups;  /* tile: groups of 8 activation rows */
  int8_t *au;      /* tile: [group][sb][64 steps][8 rows][4] = qa */
  float *gda;      /* tile: [group][sb][8] */
  int32_t *gbp;    /* tile: [group][sb][pair][8]: sub-block qa sums 2p | 2p + 1 << 16 (8 pairs) */
  int16_t *bs;     /* matrix-vector: [row][sb][16] sub-block qa sums (Q4_K / Q5_K: 8, then zeros) */
  int8_t *ah;      /* matrix-vector, Q4_K / Q5_K: [row][sb][sub-block][2][32]: its qa 0..15, then 16..31,
                      each in both 128-bit halves (ks8_mv_pair45) */
  float *da;       /* matrix-vector: [row][sb] */
} qk_ks8_ctx;

/* Sub-blocks per super-block (of 32 or 16 elements). */
static inline int ks8_subs(ks8_kind kd) { return kd == KS8_Q4_K || kd == KS8_Q5_K ? 8 : 16; }
/* Types whose min term is subtracted (imn); the others subtract a bias of
 * ks8_bias(kd) * sum_j sc_j * (j's qa sum) from isc. */
static inline int ks8_has_min(ks8_kind kd) { return kd == KS8_Q4_K || kd == KS8_Q5_K || kd == KS8_Q2_K; }
static inline int ks8_bias(ks8_kind kd) { return kd == KS8_Q6_K ? 32 : kd == KS8_Q3_K ? 4 : 0; }
/* Where a super-block holds its f16 d (a min type's dmin 2 bytes on). */
static inline int64_t ks8_d_at(ks8_kind kd) {
  return kd == KS8_Q6_K ? 208 : kd == KS8_Q3_K ? 108 : kd == KS8_Q2_K ? 80 : 0;
}

/* Q4_K / Q5_K's 6-bit scales and mins of two super-blocks (a, b), in
 * vector registers: per 128-bit half (a's, then b's) bytes 0..7 the
 * scales, 8..15 the mins (byte j: sub-block j). The 16 bytes
 * from blk + 4 (the 12 scale bytes and 4 of qs, inside the super-block)
 * are arranged so each output byte has its low part (6 bits, or a nibble
 * for sub-blocks 4..7) and, for 4..7, its top two bits above it. */
static inline __m256i ks8_k45_scales_pair(const uint8_t *a, const uint8_t *b) {
  const __m256i x = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(a + 4))),
      _mm_loadu_si128((const __m128i *)(const void *)(b + 4)), 1);
  /* low parts from s0..3 (sc 0..3), s8..11 (sc 4..7), s4..7 (mn 0..3), s8..11 (mn 4..7) */
  const __m256i lo_src = _mm256_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10,
                                          11, 4, 5, 6, 7, 8, 9, 10, 11);
  /* top bits of sc 4..7 from s0..3, of mn 4..7 from s4..7 (bits 6, 7) */
  const __m256i hi_src = _mm256_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 0,
                                          1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7);
  const __m256i lo = _mm256_shuffle_epi8(x, lo_src), hi = _mm256_shuffle_epi8(x, hi_src);
  /* mn 4..7 take the high nibble: shifted down in 16-bit lanes, then masked */
  const __m256i low6 = _mm256_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0, 63, 63, 63, 63, 15,
                                        15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m256i high4 = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 15, 15, 15, 15);
  const __m256i base =
      _mm256_or_si256(_mm256_and_si256(lo, low6), _mm256_and_si256(_mm256_srli_epi16(lo, 4), high4));
  /* bits 6, 7 to 4, 5 (a 16-bit shift by 2 brings no neighbour's bit there) */
  return _mm256_or_si256(base, _mm256_and_si256(_mm256_srli_epi16(hi, 2), _mm256_set1_epi8(0x30)));
}

/* Q5_K: bit j of each byte of qh moved to bit 4, the rest cleared (16-bit
 * shifts of at most 4 left or 3 right bring no neighbour's bit there). */
Q32_INLINE __m256i ks8_bit4(__m256i qh, int j) {
  const __m256i v = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* Q6_K: vector u (0..3) of half h's 128 elements, from the half's low bits
 * l0 = ql[64h..], l1 = ql[64h + 32..] and high bits qh = qh[32h..]:
 * elements 128h + 32u .. + 31, q = 0..63. */
Q32_INLINE __m256i ks8_q6_vector(__m256i l0, __m256i l1, __m256i qh, int u) {
  const __m256i nib = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const __m256i low = u % 2 ? l1 : l0;
  const __m256i lo4 = u < 2 ? _mm256_and_si256(low, nib) : _mm256_and_si256(_mm256_srli_epi16(low, 4), nib);
  /* qh bits 2u, 2u + 1 to bits 4, 5 */
  const __m256i hi2 = u == 0 ? _mm256_slli_epi16(qh, 4) : u == 1 ? _mm256_slli_epi16(qh, 2) : u == 2 ? qh
                                                                                                 : _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(lo4, _mm256_and_si256(hi2, m30));
}

/* Q2_K / Q3_K: vector 4h + u of a super-block (elements 128h + 32u .. +
 * 31, sub-blocks 8h + 2u and 8h + 2u + 1): bits 2u, 2u + 1 of x = qs[32h
 * ..] (q = 0..3); Q3_K adds bit 4h + u of hm = hmask as bit 2 (q = 0..7,
 * w = q - 4). 16-bit shifts of at most 6 bring no neighbour's bit into
 * the bits kept. */
Q32_INLINE __m256i ks8_q23_vector(__m256i x, __m256i hm, int h, int u, ks8_kind kd) {
  __m256i q = _mm256_and_si256(u ? _mm256_srli_epi16(x, 2 * u) : x, _mm256_set1_epi8(3));
  if (kd == KS8_Q3_K) {
    const int b = 4 * h + u;
    const __m256i hb = b > 2 ? _mm256_srli_epi16(hm, b - 2) : b < 2 ? _mm256_slli_epi16(hm, 2 - b) : hm;
    q = _mm256_or_si256(q, _mm256_and_si256(hb, _mm256_set1_epi8(4)));
  }
  return q;
}

/* A super-block's 256 q in element order as 8 vectors of 32 (Q4_K / Q5_K:
 * one sub-block each; Q6_K, Q2_K, Q3_K: sub-blocks 2i and 2i + 1). */
Q32_INLINE void ks8_elems(const uint8_t *blk, ks8_kind kd, __m256i q[8]) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  if (kd == KS8_Q2_K || kd == KS8_Q3_K) {
    const uint8_t *qs = blk + (kd == KS8_Q2_K ? 16 : 32);
    const __m256i hm = kd == KS8_Q3_K ? _mm256_loadu_si256((const __m256i *)(const void *)blk) : _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * h));
      for (int u = 0; u < 4; ++u) q[4 * h + u] = ks8_q23_vector(x, hm, h, u, kd);
    }
    return;
  }
  if (kd == KS8_Q6_K) {
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h));
      const __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 128 + 32 * h));
      for (int u = 0; u < 4; ++u) q[4 * h + u] = ks8_q6_vector(l0, l1, qh, u);
    }
    return;
  }
  const uint8_t *qs = blk + (kd == KS8_Q5_K ? 48 : 16);
  const __m256i qh = kd == KS8_Q5_K ? _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16)) : _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) { /* bit j of qh[l] is element l of sub-block j */
    const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
    __m256i lo = _mm256_and_si256(x, nib), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
    if (kd == KS8_Q5_K) lo = _mm256_or_si256(lo, ks8_bit4(qh, 2 * c)), hi = _mm256_or_si256(hi, ks8_bit4(qh, 2 * c + 1));
    q[2 * c] = lo, q[2 * c + 1] = hi;
  }
}

/* The sums of qa over each sub-block of a super-block (8 or 16), zeros after. */
static void ks8_sub_sums(const int8_t *qa, ks8_kind kd, int32_t sums[16]) {
  const int subs = ks8_subs(kd), len = 256 / subs;
  for (int j = 0; j < 16; ++j) {
    sums[j] = 0;
    if (j < subs)
      for (int i = 0; i < len; ++i) sums[j] += qa[len * j + i];
  }
}

/* ---- matrix-vector: 8 weight rows per panel ---------------------------- */

/* Per activation row and super-block: da and the sub-block sums of qa. */
static int ks8_mv_prepare(qk_ks8_ctx *x) {
  const qk_act *act = &x->b.act;
  const int64_t m = act->m, nsb = x->nsb, kpad = act->kpad, dstride = kpad / 256 + 1;
  const int halves = ks8_subs(x->kind) == 8;
  x->b.mem = tp_temp_alloc((size_t)(m * nsb) * (16 * sizeof(int16_t) + sizeof(float) + (halves ? 512 : 0)));
  if (!x->b.mem) return 0;
  x->ah = (int8_t *)x->b.mem; /* first: 32-byte aligned as the allocation */
  x->da = (float *)(void *)(x->ah + (halves ? (size_t)(m * nsb) * 512 : 0));
  x->bs = (int16_t *)(void *)(x->da + m * nsb);
  if (halves)
    for (int64_t c = 0; c < m; ++c)
      for (int64_t e = 0; e < 256 * nsb; e += 16) { /* element e's 16 in both halves */
        int8_t *dst = x->ah + (size_t)(c * nsb * 512) + 2 * (e / 32) * 32 + (e % 32 ? 32 : 0);
        memcpy(dst, act->q + c * kpad + e, 16);
        memcpy(dst + 16, act->q + c * kpad + e, 16);
      }
  for (int64_t c = 0; c < m; ++c)
    for (int64_t sb = 0; sb < nsb; ++sb) {
      int32_t sums[16];
      ks8_sub_sums(act->q + c * kpad + 256 * sb, x->kind, sums);
      for (int j = 0; j < 16; ++j) x->bs[(c * nsb + sb) * 16 + j] = (int16_t)sums[j];
      x->da[c * nsb + sb] = act->dsb[c * dstride + sb];
    }
  return 1;
}

/* Q6_K, Q2_K, Q3_K (16 sub-blocks of 16): one row's super-block against
 * activation row (qa, bs): the 8 lane sums of isc, and for Q2_K *imn's of
 * the min products. */
Q32_INLINE __m256i ks8_mv_row16(const uint8_t *blk, const int8_t *qa, const int16_t *bs, ks8_kind kd, __m256i *imn) {
  __m256i acc = _mm256_setzero_si256();
  /* vector i (elements 32i..32i + 31) holds sub-blocks 2i (low half) and
   * 2i + 1 (high): its scale vector has sc_2i in the low half's words and
   * sc_2i+1 in the high half's, an in-lane dword broadcast of scv[i / 4]
   * (words: sc 0 0 2 2 4 4 6 6 | 1 1 3 3 5 5 7 7, and 8..15 likewise; a
   * lane-crossing vpermd per vector was two uops on one Zen 3 port) */
  const __m128i sc = kd == KS8_Q6_K ? _mm_loadu_si128((const __m128i *)(const void *)(blk + 192))
                     : kd == KS8_Q3_K ? qk_q3k_scales(blk)
                                      : _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)blk), _mm_set1_epi8(0x0F));
  const __m256i s16 = _mm256_cvtepi8_epi16(sc);
  const __m256i scv[2] = {
      _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 1, 1, 3, 3, 5, 5, 7, 7))),
      _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, _mm_setr_epi8(8, 8, 10, 10, 12, 12, 14, 14, 9, 9, 11, 11, 13, 13, 15, 15)))};
  /* vector 4h + u; u a literal (the dword broadcast's immediate) */
#define KS8_DOT16(h, u, q)                                                                                    \
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16((q), _mm256_loadu_si256(                 \
                                                    (const __m256i *)(const void *)(qa + 32 * (4 * (h) + (u))))), \
                                                _mm256_shuffle_epi32(scv[h], (u) * 0x55)))
  if (kd == KS8_Q6_K) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h));
      const __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 128 + 32 * h));
      /* vectors 4h .. 4h + 3: sub-blocks 8h .. 8h + 7, scales in scv[h] */
      KS8_DOT16(h, 0, ks8_q6_vector(l0, l1, qh, 0));
      KS8_DOT16(h, 1, ks8_q6_vector(l0, l1, qh, 1));
      KS8_DOT16(h, 2, ks8_q6_vector(l0, l1, qh, 2));
      KS8_DOT16(h, 3, ks8_q6_vector(l0, l1, qh, 3));
    }
  } else {
    const uint8_t *qs = blk + (kd == KS8_Q2_K ? 16 : 32);
    const __m256i hm = kd == KS8_Q3_K ? _mm256_loadu_si256((const __m256i *)(const void *)blk) : _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * h));
      KS8_DOT16(h, 0, ks8_q23_vector(x, hm, h, 0, kd));
      KS8_DOT16(h, 1, ks8_q23_vector(x, hm, h, 1, kd));
      KS8_DOT16(h, 2, ks8_q23_vector(x, hm, h, 2, kd));
      KS8_DOT16(h, 3, ks8_q23_vector(x, hm, h, 3, kd));
    }
  }
#undef KS8_DOT16
  const __m256i bsv = _mm256_loadu_si256((const __m256i *)(const void *)bs);
  if (kd == KS8_Q2_K) { /* the mins: the scale bytes' high nibbles */
    *imn = _mm256_madd_epi16(_mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)blk)), 4), bsv);
    return acc;
  }
  /* - bias * sum_j sc_j * bs_j (Q6_K: 32, Q3_K: 4) */
  const __m256i corr = _mm256_madd_epi16(_mm256_slli_epi16(s16, kd == KS8_Q6_K ? 5 : 2), bsv);
  return _mm256_sub_epi32(acc, corr);
}

/* Q4_K / Q5_K, two rows' super-blocks (blocks a, b) against activation row
 * (ah: its halves, bs: its sub-block sums) as [row a | row b], 4 lanes
 * each: *isc's scaled sums and *imn's min products. A vector holds 16
 * elements of one sub-block of both rows, so one in-lane dword broadcast
 * gives both rows' scale (a row per vector needs one per row and
 * sub-block); the two halves' pair sums (<= 2 * 31 * 127 each) add in 16
 * bits before the scaling vpmaddwd. */
Q32_INLINE void ks8_mv_pair45(const uint8_t *a, const uint8_t *b, const int8_t *ah, const int16_t *bs, ks8_kind kd,
                              __m256i *isc, __m256i *imn) {
  const __m256i scm = ks8_k45_scales_pair(a, b); /* per half: 8 scales, 8 mins */
  const __m256i w = _mm256_unpacklo_epi8(scm, _mm256_setzero_si256()); /* [a's 8 scales | b's 8] as int16 */
  const __m256i dup = _mm256_unpacklo_epi16(w, w), duh = _mm256_unpackhi_epi16(w, w);
  const __m256i bs2 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)bs));
  *imn = _mm256_madd_epi16(_mm256_unpackhi_epi8(scm, _mm256_setzero_si256()), bs2);
  const int five = kd == KS8_Q5_K;
  const int64_t qs = five ? 48 : 16;
#define KS8_PAIR_LOAD(off)                                                                                  \
  _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(a + (off)))), \
                          _mm_loadu_si128((const __m128i *)(const void *)(b + (off))), 1)
  const __m256i h0 = five ? KS8_PAIR_LOAD(16) : _mm256_setzero_si256(); /* qh of elements 0..15 */
  const __m256i h1 = five ? KS8_PAIR_LOAD(32) : _mm256_setzero_si256(); /* 16..31 */
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i acc = _mm256_setzero_si256();
#define KS8_PAIR_CHUNK(c, svl, svh)                                                                          \
  {                                                                                                          \
    const __m256i x0 = KS8_PAIR_LOAD(qs + 32 * (c)), x1 = KS8_PAIR_LOAD(qs + 32 * (c) + 16);                 \
    __m256i l0 = _mm256_and_si256(x0, nib), l1 = _mm256_and_si256(x1, nib);                                   \
    __m256i u0 = _mm256_and_si256(_mm256_srli_epi16(x0, 4), nib), u1 = _mm256_and_si256(_mm256_srli_epi16(x1, 4), nib); \
    if (five) {                                                                                              \
      l0 = _mm256_or_si256(l0, ks8_bit4(h0, 2 * (c))), l1 = _mm256_or_si256(l1, ks8_bit4(h1, 2 * (c)));      \
      u0 = _mm256_or_si256(u0, ks8_bit4(h0, 2 * (c) + 1)), u1 = _mm256_or_si256(u1, ks8_bit4(h1, 2 * (c) + 1)); \
    }                                                                                                        \
    const int8_t *al = ah + 64 * 2 * (c), *au = al + 64;                                                     \
    const __m256i pl = _mm256_add_epi16(                                                                     \
        _mm256_maddubs_epi16(l0, _mm256_load_si256((const __m256i *)(const void *)al)),                      \
        _mm256_maddubs_epi16(l1, _mm256_load_si256((const __m256i *)(const void *)(al + 32))));              \
    const __m256i pu = _mm256_add_epi16(                                                                     \
        _mm256_maddubs_epi16(u0, _mm256_load_si256((const __m256i *)(const void *)au)),                      \
        _mm256_maddubs_epi16(u1, _mm256_load_si256((const __m256i *)(const void *)(au + 32))));              \
    acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(pl, (svl)), _mm256_madd_epi16(pu, (svh)))); \
  }
  KS8_PAIR_CHUNK(0, _mm256_shuffle_epi32(dup, 0x00), _mm256_shuffle_epi32(dup, 0x55))
  KS8_PAIR_CHUNK(1, _mm256_shuffle_epi32(dup, 0xAA), _mm256_shuffle_epi32(dup, 0xFF))
  KS8_PAIR_CHUNK(2, _mm256_shuffle_epi32(duh, 0x00), _mm256_shuffle_epi32(duh, 0x55))
  KS8_PAIR_CHUNK(3, _mm256_shuffle_epi32(duh, 0xAA), _mm256_shuffle_epi32(duh, 0xFF))
#undef KS8_PAIR_CHUNK
#undef KS8_PAIR_LOAD
  *isc = acc;
}

Q32_INLINE void ks8_mv_panels(qk_ks8_ctx *x, int64_t p0, int64_t p1, const ks8_kind kd) {
  const tp_qk_task *t = x->b.task;
  const qk_act *act = &x->b.act;
  const int64_t nsb = x->nsb, bb = x->bb, kpad = act->kpad;
  const int paired = ks8_subs(kd) == 8; /* Q4_K / Q5_K */
  const int64_t d_at = ks8_d_at(kd);
  const qk8_fetch plan = qk8_fetch_plan(t, bb, p0);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 8;
    const uint8_t *rows[8], *lanes[8];
    const int nr = qk8_panel_rows(t, n0, rows);
    const uint8_t *ahead = qk8_panel_ahead(t, n0);
    for (int l = 0; l < 8; ++l) lanes[l] = rows[q32_lane_row[l]];
    for (int64_t c = 0; c < t->m; ++c) {
      const int8_t *aq = act->q + c * kpad;
      __m256 f = _mm256_setzero_ps();
      for (int64_t sb = 0; sb < nsb; ++sb) {
        const int64_t at = sb * bb;
        const int16_t *bs = x->bs + (c * nsb + sb) * 16;
        if (paired) { /* Q4_K / Q5_K: rows in pairs, lanes in q32_lane_row's order */
          __m256i v[4], vm[4];
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            if (c == 0) /* a quarter of the super-block's lines per pair: no burst */
              qk8_fetch_lines(ahead, &plan, sb, i * plan.lines / 4, (i + 1) * plan.lines / 4);
            ks8_mv_pair45(rows[2 * i] + at, rows[2 * i + 1] + at, x->ah + (size_t)((c * nsb + sb) * 512), bs, kd,
                          &v[i], &vm[i]);
          }
          __m256 d, dmin;
          q32_f16x8_dm(lanes, at + d_at, &d, &dmin);
          const __m256 da = _mm256_set1_ps(x->da[c * nsb + sb]);
          const __m256 imn = _mm256_cvtepi32_ps(q32_reduce_pairs(vm));
          f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q32_reduce_pairs(v)), _mm256_mul_ps(d, da), f);
          /* -imn * (dmin * da) + f: fmadd of the negated term, as qk_avx2.c's QK_FNMADD (valgrind) */
          f = _mm256_fmadd_ps(_mm256_xor_ps(imn, _mm256_set1_ps(-0.0f)), _mm256_mul_ps(dmin, da), f);
          continue;
        }
        __m256i h[4], hm[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) { /* rows in pairs, reduced as they are made */
          if (c == 0) qk8_fetch_lines(ahead, &plan, sb, i * plan.lines / 4, (i + 1) * plan.lines / 4);
          __m256i m0 = _mm256_setzero_si256(), m1 = m0;
          const __m256i s0 = ks8_mv_row16(rows[2 * i] + at, aq + 256 * sb, bs, kd, &m0);
          const __m256i s1 = ks8_mv_row16(rows[2 * i + 1] + at, aq + 256 * sb, bs, kd, &m1);
          h[i] = _mm256_hadd_epi32(s0, s1);
          if (kd == KS8_Q2_K) hm[i] = _mm256_hadd_epi32(m0, m1);
        }
        const __m256 da = _mm256_set1_ps(x->da[c * nsb + sb]);
        if (kd != KS8_Q2_K) {
          f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q32_reduce_halves(h)), _mm256_mul_ps(q32_f16x8(rows, at + d_at), da), f);
          continue;
        }
        __m256 d, dmin;
        q32_f16x8_dm(rows, at + d_at, &d, &dmin);
        const __m256 imn = _mm256_cvtepi32_ps(q32_reduce_halves(hm));
        f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q32_reduce_halves(h)), _mm256_mul_ps(d, da), f);
        f = _mm256_fmadd_ps(_mm256_xor_ps(imn, _mm256_set1_ps(-0.0f)), _mm256_mul_ps(dmin, da), f);
      }
      qk8_store_rows(t, c, n0, nr, paired ? q32_lane_row : qk8_rows_in_order, f);
    }
  }
}

static void ks8_mv_q4_K(void *x, int64_t p0, int64_t p1) { ks8_mv_panels(x, p0, p1, KS8_Q4_K); }
static void ks8_mv_q5_K(void *x, int64_t p0, int64_t p1) { ks8_mv_panels(x, p0, p1, KS8_Q5_K); }
static void ks8_mv_q6_K(void *x, int64_t p0, int64_t p1) { ks8_mv_panels(x, p0, p1, KS8_Q6_K); }
static void ks8_mv_q2_K(void *x, int64_t p0, int64_t p1) { ks8_mv_panels(x, p0, p1, KS8_Q2_K); }
static void ks8_mv_q3_K(void *x, int64_t p0, int64_t p1) { ks8_mv_panels(x, p0, p1, KS8_Q3_K); }

/* ---- tile: KS8_TR weight rows x two groups of 8 activation rows -------- */

static void ks8_tile_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_ks8_ctx *x = vctx;
  const qk_act *act = &x->b.act;
  const int64_t m = act->m, nsb = x->nsb, kpad = act->kpad, dstride = kpad / 256 + 1;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const size_t cell = (size_t)(g * nsb + sb);
      int8_t *dst = x->au + cell * 64 * 32;
      for (int64_t l = 0; l < 8; ++l) {
        const int64_t c = 8 * g + l;
        int32_t *bp = x->gbp + cell * 64 + l;
        if (c >= m) { /* a part-filled last group: zero rows, their outputs dropped */
          qk8_repack_lane(dst, NULL, l, 64);
          x->gda[cell * 8 + l] = 0.0f;
          for (int p = 0; p < 8; ++p) bp[8 * p] = 0;
          continue;
        }
        const int8_t *qa = act->q + c * kpad + 256 * sb;
        qk8_repack_lane(dst, qa, l, 64);
        x->gda[cell * 8 + l] = act->dsb[c * dstride + sb];
        int32_t sums[16];
        ks8_sub_sums(qa, x->kind, sums);
        for (int p = 0; p < 8; ++p) bp[8 * p] = (int32_t)((uint32_t)(uint16_t)sums[2 * p] | (uint32_t)sums[2 * p + 1] << 16);
      }
    }
}

static int ks8_tile_prepare(qk_ks8_ctx *x) {
  const int64_t nsb = x->nsb;
  x->groups = (x->b.act.m + 7) / 8;
  const size_t cells = (size_t)(x->groups * nsb);
  x->b.mem = tp_temp_alloc(cells * (64 * 32 + 8 * sizeof(float) + 64 * sizeof(int32_t)));
  if (!x->b.mem) return 0;
  x->gda = (float *)x->b.mem;
  x->gbp = (int32_t *)(void *)(x->gda + cells * 8);
  x->au = (int8_t *)(void *)(x->gbp + cells * 64);
  tp_qk_parallel_for(x->b.task->threads, x->groups, 1, ks8_tile_prepare_groups, x);
  return 1;
}

/* A decoded panel row, per super-block: 256 q, the sub-block scales in
 * both 16-bit halves (16), paired mins (Q4_K / Q5_K) or paired 32 * scales
 * (Q6_K's correction) (8), d and dmin. */
#define KS8_ROW_INTS 24
typedef struct {
  uint8_t *q;
  int32_t *ints; /* [sb][KS8_ROW_INTS]: sc2[16], pairs[8] */
  float *d, *dmin;
} ks8_row;

static void ks8_decode_row(const uint8_t *src, int64_t nsb, int64_t bb, ks8_kind kd, ks8_row *row) {
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t *blk = src + sb * bb;
    __m256i q[8];
    ks8_elems(blk, kd, q);
    for (int i = 0; i < 8; ++i) _mm256_storeu_si256((__m256i *)(void *)(row->q + 256 * sb + 32 * i), q[i]);
    int32_t *v = row->ints + sb * KS8_ROW_INTS;
    if (ks8_subs(kd) == 16) { /* Q6_K, Q2_K, Q3_K */
      int8_t sc[16];
      if (kd == KS8_Q6_K) memcpy(sc, blk + 192, 16);
      else if (kd == KS8_Q3_K) _mm_storeu_si128((__m128i *)(void *)sc, qk_q3k_scales(blk));
      else
        for (int j = 0; j < 16; ++j) sc[j] = (int8_t)(blk[j] & 15);
      for (int j = 0; j < 16; ++j) v[j] = (int32_t)((uint32_t)(uint16_t)sc[j] | (uint32_t)(uint16_t)sc[j] << 16);
      const int bias = ks8_bias(kd);
      for (int p = 0; p < 8; ++p) /* Q2_K: the paired mins; else the paired bias * scales */
        v[16 + p] = kd == KS8_Q2_K ? (int32_t)((uint32_t)(blk[2 * p] >> 4) | (uint32_t)(blk[2 * p + 1] >> 4) << 16)
                                   : (int32_t)((uint32_t)(uint16_t)(bias * sc[2 * p]) |
                                               (uint32_t)(uint16_t)(bias * sc[2 * p + 1]) << 16);
      row->d[sb] = QK_F16_TO_F32((uint16_t)q32_le16(blk + ks8_d_at(kd)));
      row->dmin[sb] = kd == KS8_Q2_K ? QK_F16_TO_F32((uint16_t)q32_le16(blk + ks8_d_at(kd) + 2)) : 0.0f;
    } else {
      uint8_t scm[16]; /* 8 scales, 8 mins */
      _mm_storeu_si128((__m128i *)(void *)scm, _mm256_castsi256_si128(ks8_k45_scales_pair(blk, blk)));
      for (int j = 0; j < 8; ++j) v[j] = (int32_t)((uint32_t)scm[j] | (uint32_t)scm[j] << 16);
      for (int p = 0; p < 4; ++p) v[16 + p] = (int32_t)((uint32_t)scm[8 + 2 * p] | (uint32_t)scm[9 + 2 * p] << 16);
      row->d[sb] = QK_F16_TO_F32((uint16_t)q32_le16(blk));
      row->dmin[sb] = QK_F16_TO_F32((uint16_t)q32_le16(blk + 2));
    }
  }
}

/* f[r][v] for weight rows rows[r] and activation groups g0 .. g0 + NG - 1
 * (NG 1 or 2, a constant: a single group, as a mixture's expert with at most
 * 8 rows has, does half the products; f[r][1] is then left zero). */
Q32_INLINE void ks8_tile_ng(const qk_ks8_ctx *x, const ks8_row *rows, int64_t g0, const ks8_kind kd,
                            __m256 f[KS8_TR][2], const int NG) {
  const int64_t nsb = x->nsb;
  const int sixteen = ks8_subs(kd) == 16, has_min = ks8_has_min(kd);
  const int per = sixteen ? 4 : 8; /* steps per sub-block */
  /* steps whose pair sums add in 16 bits: Q6_K 2 * 2 * 63 * 128, Q5_K 4 * 2
   * * 31 * 128, Q4_K 8 * 2 * 15 * 128; Q2_K and Q3_K (q <= 7) a sub-block */
  const int flush = kd == KS8_Q6_K ? 2 : kd == KS8_Q5_K ? 4 : kd == KS8_Q4_K ? 8 : 4;
  for (int r = 0; r < KS8_TR; ++r) f[r][0] = f[r][1] = _mm256_setzero_ps();
  const size_t gstride = NG > 1 ? (size_t)nsb : 0;
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const size_t cell0 = (size_t)(g0 * nsb + sb), cell1 = cell0 + gstride;
    const int8_t *a0 = x->au + cell0 * 64 * 32, *a1 = x->au + cell1 * 64 * 32;
    __m256i isc[KS8_TR][2];
    for (int r = 0; r < KS8_TR; ++r) isc[r][0] = isc[r][1] = _mm256_setzero_si256();
    for (int j = 0; j < 256 / (4 * per); ++j) {
      __m256i p16[KS8_TR][2];
      for (int r = 0; r < KS8_TR; ++r) p16[r][0] = p16[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int s = 0; s < per; ++s) {
        const int64_t e = (int64_t)(j * per + s); /* step: elements 4e .. 4e + 3 */
        const __m256i u0 = _mm256_loadu_si256((const __m256i *)(const void *)(a0 + 32 * e));
        const __m256i u1 = NG > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(a1 + 32 * e)) : u0;
#pragma GCC unroll 4
        for (int r = 0; r < KS8_TR; ++r) {
          int32_t wd;
          memcpy(&wd, rows[r].q + 256 * sb + 4 * e, 4);
          const __m256i wb = _mm256_set1_epi32(wd);
          p16[r][0] = _mm256_add_epi16(p16[r][0], _mm256_maddubs_epi16(wb, u0));
          QK_KEEP_IN_REGISTER(p16[r][0]); /* see qk_avx2.c */
          if (NG > 1) {
            p16[r][1] = _mm256_add_epi16(p16[r][1], _mm256_maddubs_epi16(wb, u1));
            QK_KEEP_IN_REGISTER(p16[r][1]);
          }
          if ((s + 1) % flush == 0) {
            const __m256i sv = _mm256_set1_epi32(rows[r].ints[sb * KS8_ROW_INTS + j]);
            isc[r][0] = _mm256_add_epi32(isc[r][0], _mm256_madd_epi16(p16[r][0], sv));
            if (NG > 1) isc[r][1] = _mm256_add_epi32(isc[r][1], _mm256_madd_epi16(p16[r][1], sv));
            p16[r][0] = p16[r][1] = _mm256_setzero_si256();
          }
        }
      }
    }
    /* Q4_K / Q5_K / Q2_K: imn from the paired mins; Q6_K / Q3_K: isc -= bias *
     * sum_j sc_j * sums_j */
    const int pairs = sixteen ? 8 : 4;
    const __m256 d0 = _mm256_loadu_ps(x->gda + 8 * cell0), d1 = NG > 1 ? _mm256_loadu_ps(x->gda + 8 * cell1) : d0;
#pragma GCC unroll 4
    for (int r = 0; r < KS8_TR; ++r) {
      __m256i t0 = _mm256_setzero_si256(), t1 = _mm256_setzero_si256();
      for (int p = 0; p < pairs; ++p) {
        const __m256i pv = _mm256_set1_epi32(rows[r].ints[sb * KS8_ROW_INTS + 16 + p]);
        t0 = _mm256_add_epi32(t0, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(x->gbp + 64 * cell0 + 8 * p)), pv));
        if (NG > 1)
          t1 = _mm256_add_epi32(t1, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(x->gbp + 64 * cell1 + 8 * p)), pv));
      }
      const __m256 sd = _mm256_set1_ps(rows[r].d[sb]);
      if (!has_min) {
        f[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isc[r][0], t0)), _mm256_mul_ps(sd, d0), f[r][0]);
        if (NG > 1)
          f[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isc[r][1], t1)), _mm256_mul_ps(sd, d1), f[r][1]);
      } else {
        const __m256 sm = _mm256_set1_ps(rows[r].dmin[sb]), neg = _mm256_set1_ps(-0.0f);
        f[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isc[r][0]), _mm256_mul_ps(sd, d0), f[r][0]);
        f[r][0] = _mm256_fmadd_ps(_mm256_xor_ps(_mm256_cvtepi32_ps(t0), neg), _mm256_mul_ps(sm, d0), f[r][0]);
        if (NG > 1) {
          f[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isc[r][1]), _mm256_mul_ps(sd, d1), f[r][1]);
          f[r][1] = _mm256_fmadd_ps(_mm256_xor_ps(_mm256_cvtepi32_ps(t1), neg), _mm256_mul_ps(sm, d1), f[r][1]);
        }
      }
    }
  }
}

Q32_INLINE void ks8_tile(const qk_ks8_ctx *x, const ks8_row *rows, int64_t g0, int ng, const ks8_kind kd,
                         __m256 f[KS8_TR][2]) {
  if (ng > 1) ks8_tile_ng(x, rows, g0, kd, f, 2);
  else ks8_tile_ng(x, rows, g0, kd, f, 1);
}

Q32_INLINE void ks8_tile_panels(qk_ks8_ctx *x, int64_t p0, int64_t p1, const ks8_kind kd) {
  const tp_qk_task *t = x->b.task;
  const int64_t nsb = x->nsb;
  const size_t per_row = (size_t)nsb * (256 + KS8_ROW_INTS * 4 + 8);
  uint8_t *mem = tp_temp_alloc(KS8_TR * per_row);
  if (!mem) {
    x->b.failed = 1;
    return;
  }
  ks8_row rows[KS8_TR];
  for (int r = 0; r < KS8_TR; ++r) {
    uint8_t *base = mem + r * per_row;
    rows[r].q = base;
    rows[r].ints = (int32_t *)(void *)(base + 256 * nsb);
    rows[r].d = (float *)(void *)(rows[r].ints + KS8_ROW_INTS * nsb);
    rows[r].dmin = rows[r].d + nsb;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * KS8_TR;
    const int nr = (int)(t->n - n0 < KS8_TR ? t->n - n0 : KS8_TR);
    for (int r = 0; r < KS8_TR; ++r)
      ks8_decode_row((const uint8_t *)t->w + (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes, nsb, x->bb, kd,
                     &rows[r]);
    for (int64_t g0 = 0; g0 < x->groups; g0 += 2) {
      const int ng = x->groups - g0 >= 2 ? 2 : 1;
      __m256 f[KS8_TR][2];
      ks8_tile(x, rows, g0, ng, kd, f);
      qk8_store_tile(t, n0, nr, g0, ng, (const __m256(*)[2])f);
    }
  }
  tp_temp_free(mem);
}

static void ks8_tile_q4_K(void *x, int64_t p0, int64_t p1) { ks8_tile_panels(x, p0, p1, KS8_Q4_K); }
static void ks8_tile_q5_K(void *x, int64_t p0, int64_t p1) { ks8_tile_panels(x, p0, p1, KS8_Q5_K); }
static void ks8_tile_q6_K(void *x, int64_t p0, int64_t p1) { ks8_tile_panels(x, p0, p1, KS8_Q6_K); }
static void ks8_tile_q2_K(void *x, int64_t p0, int64_t p1) { ks8_tile_panels(x, p0, p1, KS8_Q2_K); }
static void ks8_tile_q3_K(void *x, int64_t p0, int64_t p1) { ks8_tile_panels(x, p0, p1, KS8_Q3_K); }

/* Whether the super-block kernels serve the task. */
static int qk_ks8_serves(const tp_qk_task *t) {
  const topos_dtype w = t->wtype;
  return (w == TOPOS_Q2_K || w == TOPOS_Q3_K || w == TOPOS_Q4_K || w == TOPOS_Q5_K || w == TOPOS_Q6_K) &&
         t->k % 256 == 0;
}

/* As qk_q32_begin, for Q4_K / Q5_K / Q6_K. */
static int qk_ks8_begin(const tp_qk_task *t, qk_ks8_ctx *x, tp_qk_range_fn *mv, tp_qk_range_fn *tile,
                        const qk_act *same) {
  memset(x, 0, sizeof *x);
  switch (t->wtype) {
    case TOPOS_Q5_K: x->kind = KS8_Q5_K, x->bb = 176, *mv = ks8_mv_q5_K, *tile = ks8_tile_q5_K; break;
    case TOPOS_Q6_K: x->kind = KS8_Q6_K, x->bb = 210, *mv = ks8_mv_q6_K, *tile = ks8_tile_q6_K; break;
    case TOPOS_Q2_K: x->kind = KS8_Q2_K, x->bb = 84, *mv = ks8_mv_q2_K, *tile = ks8_tile_q2_K; break;
    case TOPOS_Q3_K: x->kind = KS8_Q3_K, x->bb = 110, *mv = ks8_mv_q3_K, *tile = ks8_tile_q3_K; break;
    default: x->kind = KS8_Q4_K, x->bb = 144, *mv = ks8_mv_q4_K, *tile = ks8_tile_q4_K; break;
  }
  x->nsb = t->k / 256;
  if (!qk8_begin(t, &x->b, same)) return 0;
  if (t->m < KS8_MV_MAX_M ? ks8_mv_prepare(x) : ks8_tile_prepare(x)) return 1;
  qk_act_free(&x->b.act);
  return 0;
}

#endif
