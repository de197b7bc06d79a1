/* K-quant products (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) of the AVX-512 VNNI
 * engine (included by qk_avx512vnni.c after the engine body), defined by
 * super-block sums.
 *
 * A super-block of 256 weights has sub-blocks j with integer scales sc_j:
 * Q4_K / Q5_K eight of 32 with 6-bit scales and mins m_j and two f16
 * factors, w = d * sc_j * q - dmin * m_j (q: 0..15, Q5_K 0..31); Q2_K
 * sixteen of 16 with 4-bit scales and mins, w = d * sc_j * q - dmin * m_j
 * (q: 0..3); Q6_K and Q3_K sixteen of 16 with signed scales, w = d * sc_j
 * * (q - bias) (Q6_K: int8 scales, q 0..63, bias 32; Q3_K: 6-bit scales
 * less 32, q 0..7, bias 4). The activations are Q8_K: per super-block one
 * f32 da and int8 qa. The result of one output (weight row, activation
 * row) is defined per super-block, in order from acc = 0, as
 *     Q2_K, Q4_K, Q5_K:  isc = sum_j sc_j * sum_(i in j) q_i * qa_i
 *                        imn = sum_j m_j * sum_(i in j) qa_i
 *                        acc = fma(float(isc), d * da, acc)
 *                        acc = acc - float(imn) * (dmin * da)  (one fnmadd)
 *     Q3_K, Q6_K:        isc = sum_j sc_j * sum_(i in j) (q_i - bias) * qa_i
 *                        acc = fma(float(isc), d * da, acc)
 * where isc and imn are exact integers (|isc| < 2^27, |imn| < 2^22), so
 * every kernel that forms them, in whatever order, gives the same bits
 * (the AVX2 kernels, qk_ksum_avx2.h, compute the same definition).
 * The engine's K tile (qk_engine_body.h) converted 16 lane sums per
 * super-block and took the min term group by group in floats; here one or
 * two conversions per super-block are the whole float work.
 *
 * Two kernels compute it, as for Q8_0 (qk_block32_avx512vnni.h):
 *  - the tile (m >= QK_C): lanes are 16 activation rows, repacked once per
 *    product as unsigned qa + 128 (qk_lanes_repack); a panel of 6 weight
 *    rows is decoded to bytes (Q6_K: q - 32) whose 4-byte groups are
 *    broadcast as vpdpbusd's signed operand. A sub-block's vpdpbusd give
 *    its dot plus 128 * (its sum of weight bytes), one vpmulld scales that
 *    by sc_j into isc, and isc starts each super-block at -128 * sum_j sc_j
 *    * (sub-block j's byte sum), a per-row constant; imn is 4 vpdpwssd of
 *    the activations' paired sub-block sums with the paired mins. Per
 *    sub-block of 32 and 16 x 6 outputs: 96 vpdpbusd and 12 vpmulld, where
 *    the K tile spent a vpdpwssd (or, wide, half of one) per vpdpbusd.
 *  - the matrix-vector kernel (m < QK_C, decoding): lanes are elements as
 *    in the tile route's fused kernels (qk_matvec_avx512vnni.h); each
 *    weight row's scaled lane sums (and min products) are folded into one
 *    vector, 16 rows are reduced to their integers by an exact integer
 *    transpose-and-add, and the float steps run 16 rows at a time. */
#ifndef TP_QUANT_QK_KSUM_AVX512VNNI_H
#define TP_QUANT_QK_KSUM_AVX512VNNI_H

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/qk_q3k_scales_x86.h"

#define KS_TR 6 /* weight rows per tile */

typedef enum { KS_Q4_K, KS_Q5_K, KS_Q6_K, KS_Q2_K, KS_Q3_K } ks_kind;

/* Types of sixteen 16-element sub-blocks whose q are met in element order
 * (Q4_K / Q5_K: eight of 32, met in nibble order), and those with a min
 * term (imn); the others subtract a bias through isc. */
static inline int ks_subs16(ks_kind kd) { return kd == KS_Q6_K || kd == KS_Q2_K || kd == KS_Q3_K; }
static inline int ks_has_min(ks_kind kd) { return kd == KS_Q4_K || kd == KS_Q5_K || kd == KS_Q2_K; }

/* The kind of K-quant weight type t (one of the five) and its bytes per
 * super-block. */
static ks_kind ks_kind_of(topos_dtype t, int64_t *bb) {
  static const struct {
    topos_dtype type;
    ks_kind kind;
    int64_t bb;
  } kinds[] = {{TOPOS_Q4_K, KS_Q4_K, 144}, {TOPOS_Q5_K, KS_Q5_K, 176}, {TOPOS_Q6_K, KS_Q6_K, 210},
               {TOPOS_Q2_K, KS_Q2_K, 84},  {TOPOS_Q3_K, KS_Q3_K, 110}};
  int i = 0;
  while (i < 4 && kinds[i].type != t) ++i; /* the callers pass a K type: the last if none before */
  *bb = kinds[i].bb;
  return kinds[i].kind;
}

typedef struct {
  const tp_qk_task *task;
  qk_act act;
  ks_kind kind;
  int64_t nsb, bb;    /* super-blocks per row; bytes per super-block */
  int64_t groups;     /* tile: groups of 16 activation rows */
  uint8_t *au;        /* tile: [group][sb][64 steps][16 rows][4] = qa + 128 */
  float *da;          /* tile: [group][sb][16] */
  int32_t *bp;        /* tile, min types: [group][sb][pair p][16] = B_2p (low half) | B_2p+1 << 16, B_j
                         sub-block j's sum of qa (4 pairs, Q2_K 8) */
  int16_t *bs;        /* matrix-vector, min types: [row][sb][32]: sums of qa over the 16-element groups g, twice */
  void *mem;
  volatile int failed;
} qk_ks_ctx;

/* ---- tile: weight rows ----------------------------------------------------- */

/* One decoded panel row: bytes in element order (Q6_K, Q3_K: q - bias as
 * int8), per super-block the sub-block scales (8 or 16), the paired mins
 * (Q4_K / Q5_K 4 pairs, Q2_K 8), the correction -128 * sum_j sc_j * (byte
 * sum of j), d and dmin. */
typedef struct {
  uint8_t *q;
  int32_t *sc, *mnp, *corr;
  float *d, *dmin;
} ks_row;

static size_t ks_row_bytes(int64_t nsb) {
  /* q, then sc (16), mnp (8), corr, d, dmin per super-block; q rows a cache
   * line longer than 256 * nsb (L1 sets, as in the engine) */
  return (size_t)nsb * (256 + 27 * 4) + 64;
}

static inline int32_t ks_sad(__m256i u) { /* the sum of 32 unsigned bytes */
  const __m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return (int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1));
}

/* Q4_K in 512-bit steps: each 64 bytes of qs hold sub-blocks 4h .. 4h + 3
 * (the low, then high nibbles of bytes 0..31 and 32..63), stored in element
 * order; the correction's sum_j sc_j * (byte sum of j) as one vpdpbusd per
 * two sub-blocks against their scales (0..63 as signed bytes), the same
 * integer as ks_decode_k45's. A mixture's experts decode a row per 16
 * activation rows, where a dense layer's rows serve hundreds. */
static void ks_decode_q4k(const qk_ks_ctx *x, const uint8_t *src, ks_row *out) {
  const __m512i nib = _mm512_set1_epi8(0x0F), upper = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  for (int64_t sb = 0; sb < x->nsb; ++sb) {
    const uint8_t *blk = src + sb * x->bb, *qs = blk + 16;
    uint8_t *q = out->q + 256 * sb;
    out->d[sb] = qk_f16(blk);
    out->dmin[sb] = qk_f16(blk + 2);
    uint32_t w[4];
    qk_k4_scale_words(blk + 4, w);
    const uint8_t *sc = (const uint8_t *)w, *mn = sc + 8;
    __m512i acc = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_loadu_si512(qs + 64 * h);
      const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      const __m512i a = _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1); /* sub-blocks 4h, 4h + 1 */
      const __m512i b = _mm512_permutex2var_epi64(lo, upper, hi);               /* 4h + 2, 4h + 3 */
      _mm512_storeu_si512(q + 128 * h, a);
      _mm512_storeu_si512(q + 128 * h + 64, b);
      const __m512i sa = _mm512_inserti64x4(_mm512_set1_epi8((char)sc[4 * h]), _mm256_set1_epi8((char)sc[4 * h + 1]), 1);
      const __m512i sbv =
          _mm512_inserti64x4(_mm512_set1_epi8((char)sc[4 * h + 2]), _mm256_set1_epi8((char)sc[4 * h + 3]), 1);
      acc = qk_dpbusd(qk_dpbusd(acc, a, sa), b, sbv);
    }
    for (int j = 0; j < 8; ++j) out->sc[16 * sb + j] = sc[j];
    for (int p = 0; p < 4; ++p) out->mnp[8 * sb + p] = mn[2 * p] | mn[2 * p + 1] << 16;
    out->corr[sb] = -128 * _mm512_reduce_add_epi32(acc);
  }
}

static void ks_decode_k45(const qk_ks_ctx *x, const uint8_t *src, ks_row *out) {
  const int five = x->kind == KS_Q5_K;
  if (!five) {
    ks_decode_q4k(x, src, out);
    return;
  }
  const __m256i nib = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
  for (int64_t sb = 0; sb < x->nsb; ++sb) {
    const uint8_t *blk = src + sb * x->bb, *qs = blk + (five ? 48 : 16);
    uint8_t *q = out->q + 256 * sb;
    out->d[sb] = qk_f16(blk);
    out->dmin[sb] = qk_f16(blk + 2);
    /* 32 bytes c hold sub-block 2c in their low nibbles, 2c + 1 in their
     * high nibbles; Q5_K's bit 4 of sub-block j is bit j of qh[l] */
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16));
    int32_t qsum[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
      __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
      if (five) { /* bit j to bit 4: a 16-bit shift right by j, then left by 4, masked per byte */
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), 4), b4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), 4), b4));
      }
      _mm256_storeu_si256((__m256i *)(void *)(q + 64 * c), lo);
      _mm256_storeu_si256((__m256i *)(void *)(q + 64 * c + 32), hi);
      qsum[2 * c] = ks_sad(lo), qsum[2 * c + 1] = ks_sad(hi);
    }
    int mins[8];
    int64_t corr = 0;
    for (int j = 0; j < 8; ++j) {
      int sc;
      qk_scale_min_k4(j, blk + 4, &sc, &mins[j]);
      out->sc[16 * sb + j] = sc;
      corr += (int64_t)sc * qsum[j];
    }
    for (int p = 0; p < 4; ++p) out->mnp[8 * sb + p] = mins[2 * p] | mins[2 * p + 1] << 16;
    out->corr[sb] = (int32_t)(-128 * corr);
  }
}

/* Q6_K: per half h, ql[64h..] and qh[32h..]; elements 0..31 are the low
 * nibbles of ql 0..31 with qh bits 0-1, 32..63 those of ql 32..63 with
 * bits 2-3, 64..95 the high nibbles of ql 0..31 with bits 4-5, 96..127
 * those of ql 32..63 with bits 6-7 (16-bit shifts: the bits a byte takes
 * from its neighbour fall outside 0x30). */
static void ks_decode_q6(const qk_ks_ctx *x, const uint8_t *src, ks_row *out) {
  const __m256i nib = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), b32 = _mm256_set1_epi8(32);
  for (int64_t sb = 0; sb < x->nsb; ++sb) {
    const uint8_t *blk = src + sb * x->bb;
    uint8_t *q = out->q + 256 * sb;
    out->d[sb] = qk_f16(blk + 208);
    int64_t corr = 0;
    for (int h = 0; h < 2; ++h) {
      const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h));
      const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 128 + 32 * h));
      const __m256i v[4] = {
          _mm256_or_si256(_mm256_and_si256(a, nib), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(b, nib), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nib), _mm256_and_si256(hb, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), nib), _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30))};
      for (int t = 0; t < 4; ++t) {
        _mm256_storeu_si256((__m256i *)(void *)(q + 128 * h + 32 * t), _mm256_sub_epi8(v[t], b32));
        /* the two sub-blocks of 16: psadbw's partial sums of 8 bytes, pairwise */
        const __m256i s = _mm256_sad_epu8(v[t], _mm256_setzero_si256());
        const int j = 8 * h + 2 * t;
        const int sc0 = (int8_t)blk[192 + j], sc1 = (int8_t)blk[192 + j + 1];
        out->sc[16 * sb + j] = sc0, out->sc[16 * sb + j + 1] = sc1;
        const int64_t s0 = _mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) - 16 * 32;
        const int64_t s1 = _mm256_extract_epi64(s, 2) + _mm256_extract_epi64(s, 3) - 16 * 32;
        corr += sc0 * s0 + sc1 * s1;
      }
    }
    out->corr[sb] = (int32_t)(-128 * corr);
  }
}

/* Q2_K / Q3_K: elements 64v .. 64v + 63 of a super-block (v = 2h + p, h
 * its half): bits 4p (elements 0..31 of the run, low 256 bits) and 4p + 2
 * (32..63, high) of qs[32h ..], q = 0..3; Q3_K adds bit 4h + 2p (low) and
 * 4h + 2p + 1 (high) of hmask[0..31] as 4 (q = 0..7). 16-bit shifts of at
 * most 6 bring no neighbour's bit into the two kept. */
MV_INLINE __m512i ks_q23_vec(const uint8_t *blk, int v, int three) {
  const int h = v / 2, p = v % 2;
  const __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(blk + (three ? 32 : 16) + 32 * h)));
  __m512i q = _mm512_mask_srli_epi16(_mm512_srli_epi16(x, (unsigned)(4 * p)), (__mmask32)0xFFFF0000u, x, (unsigned)(4 * p + 2));
  q = _mm512_and_si512(q, _mm512_set1_epi8(3));
  if (three) {
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)blk));
    const int b = 4 * h + 2 * p;
    const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << b)), _mm256_set1_epi8((char)(1 << (b + 1))), 1);
    q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hm, sel), q, _mm512_set1_epi8(4));
  }
  return q;
}

/* A Q2_K or Q3_K super-block's factors: its 16 sub-block scales (Q2_K the
 * 4-bit ones in the low nibbles of bytes 0..15, Q3_K its 6-bit ones less
 * 32), d (Q2_K at 80, Q3_K at 108), and Q2_K's dmin (at 82) and 8 pairs of
 * 4-bit mins (the high nibbles), m_2p | m_2p+1 << 16. */
static inline void ks_q23_factors(const uint8_t *blk, int three, int8_t sc[16], float *d, float *dmin, int32_t *mnp) {
  if (three) {
    _mm_storeu_si128((__m128i *)(void *)sc, qk_q3k_scales(blk));
    *d = qk_f16(blk + 108);
    return;
  }
  for (int j = 0; j < 16; ++j) sc[j] = (int8_t)(blk[j] & 15);
  for (int p = 0; p < 8; ++p) mnp[p] = blk[2 * p] >> 4 | (blk[2 * p + 1] >> 4) << 16;
  *d = qk_f16(blk + 80);
  *dmin = qk_f16(blk + 82);
}

/* A Q2_K or Q3_K row for the tile: q (Q3_K: q - 4) in element order. */
static void ks_decode_q23(const qk_ks_ctx *x, const uint8_t *src, ks_row *out) {
  const int three = x->kind == KS_Q3_K, bias = three ? 4 : 0;
  for (int64_t sb = 0; sb < x->nsb; ++sb) {
    const uint8_t *blk = src + sb * x->bb;
    uint8_t *q = out->q + 256 * sb;
    int8_t sc[16];
    ks_q23_factors(blk, three, sc, &out->d[sb], &out->dmin[sb], out->mnp + 8 * sb);
    int64_t corr = 0;
    for (int v = 0; v < 4; ++v) {
      const __m512i u = ks_q23_vec(blk, v, three);
      _mm512_storeu_si512(q + 64 * v, _mm512_sub_epi8(u, _mm512_set1_epi8((char)bias)));
      uint64_t s[8]; /* psadbw: sums of 8 bytes; sub-block 4v + i is s[2i] + s[2i + 1] */
      _mm512_storeu_si512(s, _mm512_sad_epu8(u, _mm512_setzero_si512()));
      for (int i = 0; i < 4; ++i) {
        const int j = 4 * v + i;
        out->sc[16 * sb + j] = sc[j];
        corr += (int64_t)sc[j] * ((int64_t)(s[2 * i] + s[2 * i + 1]) - 16 * bias);
      }
    }
    out->corr[sb] = (int32_t)(-128 * corr);
  }
}

static void ks_decode_row(const qk_ks_ctx *x, const uint8_t *src, uint8_t *mem, ks_row *out) {
  const int64_t nsb = x->nsb;
  out->q = mem;
  out->sc = (int32_t *)(void *)(mem + nsb * 256 + 64);
  out->mnp = out->sc + 16 * nsb;
  out->corr = out->mnp + 8 * nsb;
  out->d = (float *)(void *)(out->corr + nsb);
  out->dmin = out->d + nsb;
  if (x->kind == KS_Q6_K) ks_decode_q6(x, src, out);
  else if (x->kind == KS_Q2_K || x->kind == KS_Q3_K) ks_decode_q23(x, src, out);
  else ks_decode_k45(x, src, out);
}

/* ---- tile --------------------------------------------------------------- */

static inline __m512i ks_dpbusd0_bcast(__m512i u, const uint8_t *p) {
  __m512i acc;
  __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2%{1to16%}, %1, %0"
          : "=&v"(acc)
          : "v"(u), "m"(*(const q80_dword *)(const void *)p));
  return acc;
}

/* KS_TR rows x activation groups g0, g0 + 1 (NG of them: 1 or 2, a
 * constant, so a single group, as a mixture's expert with at most 16 rows
 * has, does half the products), sub-blocks of SUB (32: Q4_K / Q5_K; 16:
 * the others), MINP pairs of mins (4: Q4_K / Q5_K, 8: Q2_K, 0: no min
 * term); f[r][g] in memory: touched once per super-block, the registers
 * hold the integers. */
static inline __attribute__((always_inline)) void ks_tile(const qk_ks_ctx *x, const ks_row *rw, int64_t g0,
                                                          float f[KS_TR][2][16], const int NG, const int SUB,
                                                          const int MINP) {
  const int64_t nsb = x->nsb;
  const int steps = SUB / 4;
  memset(f, 0, sizeof(float) * KS_TR * 2 * 16);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isc[KS_TR][2];
#pragma GCC unroll 6
    for (int r = 0; r < KS_TR; ++r) isc[r][0] = isc[r][1] = _mm512_set1_epi32(rw[r].corr[sb]);
    const uint8_t *a0 = x->au + (size_t)(g0 * nsb + sb) * 64 * 64;
    const uint8_t *a1 = NG > 1 ? a0 + (size_t)nsb * 64 * 64 : a0;
    for (int j = 0; j < 256 / SUB; ++j) {
      __m512i t[KS_TR][2];
      {
        const __m512i u0 = _mm512_loadu_si512(a0 + 64 * steps * j);
        const __m512i u1 = NG > 1 ? _mm512_loadu_si512(a1 + 64 * steps * j) : u0;
#pragma GCC unroll 6
        for (int r = 0; r < KS_TR; ++r) {
          const uint8_t *w = rw[r].q + 256 * sb + SUB * j;
          t[r][0] = ks_dpbusd0_bcast(u0, w);
          if (NG > 1) t[r][1] = ks_dpbusd0_bcast(u1, w);
        }
      }
#pragma GCC unroll 7
      for (int s = 1; s < steps; ++s) {
        const __m512i u0 = _mm512_loadu_si512(a0 + 64 * (steps * j + s));
        const __m512i u1 = NG > 1 ? _mm512_loadu_si512(a1 + 64 * (steps * j + s)) : u0;
#pragma GCC unroll 6
        for (int r = 0; r < KS_TR; ++r) {
          const uint8_t *w = rw[r].q + 256 * sb + SUB * j + 4 * s;
          t[r][0] = q80_dpbusd_bcast(t[r][0], u0, w);
          if (NG > 1) t[r][1] = q80_dpbusd_bcast(t[r][1], u1, w);
        }
      }
#pragma GCC unroll 6
      for (int r = 0; r < KS_TR; ++r) {
        const __m512i sc = _mm512_set1_epi32(rw[r].sc[16 * sb + j]);
        isc[r][0] = _mm512_add_epi32(isc[r][0], _mm512_mullo_epi32(t[r][0], sc));
        if (NG > 1) isc[r][1] = _mm512_add_epi32(isc[r][1], _mm512_mullo_epi32(t[r][1], sc));
      }
    }
    for (int g = 0; g < NG; ++g) {
      const int64_t cell = (g0 + g) * nsb + sb;
      const __m512 da = _mm512_loadu_ps(x->da + cell * 16);
#pragma GCC unroll 6
      for (int r = 0; r < KS_TR; ++r) {
        __m512 acc = _mm512_loadu_ps(f[r][g]);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc[r][g]), _mm512_mul_ps(_mm512_set1_ps(rw[r].d[sb]), da), acc);
        if (MINP) {
          const int32_t *bp = x->bp + cell * 128;
          __m512i imn = _mm512_setzero_si512();
          for (int p = 0; p < MINP; ++p)
            imn = qk_dpwssd(imn, _mm512_loadu_si512(bp + 16 * p), _mm512_set1_epi32(rw[r].mnp[8 * sb + p]));
          acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imn), _mm512_mul_ps(_mm512_set1_ps(rw[r].dmin[sb]), da), acc);
        }
        _mm512_storeu_ps(f[r][g], acc);
      }
    }
  }
}

/* one variant per (kind, group count): the tile's loops unrolled for both */
static void ks_tile_k45(const qk_ks_ctx *x, const ks_row *rw, int64_t g0, int ng, float f[KS_TR][2][16]) {
  if (ng > 1) ks_tile(x, rw, g0, f, 2, 32, 4);
  else ks_tile(x, rw, g0, f, 1, 32, 4);
}
static void ks_tile_q2(const qk_ks_ctx *x, const ks_row *rw, int64_t g0, int ng, float f[KS_TR][2][16]) {
  if (ng > 1) ks_tile(x, rw, g0, f, 2, 16, 8);
  else ks_tile(x, rw, g0, f, 1, 16, 8);
}
static void ks_tile_bias(const qk_ks_ctx *x, const ks_row *rw, int64_t g0, int ng, float f[KS_TR][2][16]) {
  if (ng > 1) ks_tile(x, rw, g0, f, 2, 16, 0); /* Q6_K, Q3_K */
  else ks_tile(x, rw, g0, f, 1, 16, 0);
}

static void ks_tile_range(void *vctx, int64_t p0, int64_t p1) {
  qk_ks_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  const size_t rb = ks_row_bytes(x->nsb);
  uint8_t *mem = tp_temp_alloc(rb * KS_TR);
  if (!mem) {
    x->failed = 1;
    return;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * KS_TR;
    const int nr = (int)(t->n - n0 < KS_TR ? t->n - n0 : KS_TR);
    ks_row rw[KS_TR];
    for (int r = 0; r < KS_TR; ++r) {
      if (r >= nr) { /* a short last panel repeats its last row (results dropped) */
        rw[r] = rw[nr - 1];
        continue;
      }
      const uint8_t *src = (const uint8_t *)t->w + (size_t)(n0 + r) * t->row_bytes;
      if (n0 + r + KS_TR < t->n) /* the same row of the next panel, for its decode */
        for (size_t off = 0; off < t->row_bytes; off += 64)
          __builtin_prefetch(src + (size_t)KS_TR * t->row_bytes + off, 0, 2);
      ks_decode_row(x, src, mem + (size_t)r * rb, &rw[r]);
    }
    for (int64_t g0 = 0; g0 < x->groups; g0 += 2) {
      const int ng = x->groups - g0 >= 2 ? 2 : 1;
      float f[KS_TR][2][16] __attribute__((aligned(64)));
      (x->kind == KS_Q2_K ? ks_tile_q2 : ks_subs16(x->kind) ? ks_tile_bias : ks_tile_k45)(x, rw, g0, ng, f);
      for (int g = 0; g < ng; ++g) {
        const int64_t c0 = (g0 + g) * 16;
        const int used = (int)(t->m - c0 < 16 ? t->m - c0 : 16);
        for (int r = 0; r < nr; ++r) q80_store(t, n0, nr, c0, used, _mm512_load_ps(f[r][g]), r);
      }
    }
  }
  tp_temp_free(mem);
}

/* The activations as the tile reads them (rows past m: qa = 0), a group of
 * 16 rows per call (qk_lanes_repack); for the min types a sub-block's sum
 * of qa is psadbw's sum of qa + 128 less its length * 128. */
static void ks_tile_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_ks_ctx *x = vctx;
  const qk_act *act = &x->act;
  const int64_t m = act->m, nsb = x->nsb, kpad = act->kpad, dstride = kpad / 256 + 1;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t used = m - 16 * g < 16 ? m - 16 * g : 16;
    const int8_t *q = act->q + 16 * g * kpad;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const size_t cell = (size_t)(g * nsb + sb);
      qk_lanes_repack(q, kpad, used, 256 * sb, 64, x->au + cell * 64 * 64);
      float *da = x->da + cell * 16;
      for (int l = 0; l < 16; ++l) da[l] = l < used ? act->dsb[(16 * g + l) * dstride + sb] : 0.0f;
      if (!ks_has_min(x->kind)) continue;
      const int subs = ks_subs16(x->kind) ? 16 : 8, len = 256 / subs;
      int32_t *bp = x->bp + cell * 128;
      for (int l = 0; l < 16; ++l) {
        int32_t b[16] = {0};
        if (l < used)
          for (int j = 0; j < subs; ++j) {
            const int8_t *src = q + l * kpad + 256 * sb + len * j;
            b[j] = (len == 32 ? ks_sad(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)src),
                                                        _mm256_set1_epi8((char)0x80)))
                              : ks_sad(_mm256_zextsi128_si256(_mm_xor_si128(
                                    _mm_loadu_si128((const __m128i *)(const void *)src), _mm_set1_epi8((char)0x80))))) -
                   len * 128;
          }
        for (int p = 0; p < subs / 2; ++p)
          bp[16 * p + l] = (int32_t)((uint32_t)(uint16_t)b[2 * p] | (uint32_t)b[2 * p + 1] << 16);
      }
    }
  }
}

static int ks_tile_prepare(qk_ks_ctx *x) {
  x->groups = (x->act.m + 15) / 16;
  const size_t cells = (size_t)(x->groups * x->nsb);
  x->mem = tp_temp_alloc(cells * (64 * 64 + 16 * sizeof(float) + 128 * sizeof(int32_t)));
  if (!x->mem) return 0;
  x->au = (uint8_t *)x->mem;
  x->da = (float *)(void *)(x->au + cells * 64 * 64);
  x->bp = (int32_t *)(void *)(x->da + cells * 16);
  tp_qk_parallel_for(x->task->threads, x->groups, 1, ks_tile_prepare_groups, x);
  return 1;
}

/* ---- matrix-vector: 16 weight rows per panel, lanes are rows ------------ */

/* Two 16-lane integer vectors folded into one: lanes 0..7 sum to a's lane
 * total, lanes 8..15 to b's (the halves q80_reduce8 separates). */
MV_INLINE __m512i ks_fold(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* A vpshufb control of four 16-bit words that zero-extend byte i. */
#define KS_W16(i) (int64_t)(0x8000800080008000ull | 0x0001000100010001ull * (uint64_t)(i))

/* vpshufb controls over the scale bytes: 16-bit words that zero-extend
 * byte a (words 0..3 of 128-bit lanes 0 and 1), b (words 4..7 of lanes 0
 * and 1), c and d (the same in lanes 2 and 3); and words m_j, m_j for the
 * min bytes 8 + j, j = 0..3 in lanes 0 and 2, 4..7 in lanes 1 and 3. */
#define KS_Q16(a, b, c, d) \
  _mm512_set_epi64(KS_W16(d), KS_W16(c), KS_W16(d), KS_W16(c), KS_W16(b), KS_W16(a), KS_W16(b), KS_W16(a))
#define KS_W2(a, b) (int64_t)(0x8000800080008000ull | 0x0000000000010001ull * (uint64_t)(a) | 0x0001000100000000ull * (uint64_t)(b))
#define KS_MINS \
  _mm512_set_epi64(KS_W2(14, 15), KS_W2(12, 13), KS_W2(10, 11), KS_W2(8, 9), KS_W2(14, 15), KS_W2(12, 13), KS_W2(10, 11), KS_W2(8, 9))

/* Q4_K / Q5_K: one row's super-block as 16 lanes summing to isc; sm: its
 * scales (mv_q4k_scales2, broadcast). The 64 nibble bytes of each half super-block are
 * used as loaded: low nibbles hold elements [0..31 | 64..95] of the half,
 * high ones [32..63 | 96..127], met by the activations in the same order
 * (mv_q4k_prepare), so vpdpbusd's lanes 0..7 of q0 are sub-block 0 and 8..15
 * sub-block 2 (q1: 1 | 3, q2: 4 | 6, q3: 5 | 7). A lane's 4-element dot is
 * within int16 (|.| <= 4 * 31 * 128): vpackssdw pairs two chunks exactly,
 * per 128-bit lane [sub-block a x 4 | b x 4], and one vpmaddwd (vpdpwssd)
 * scales 16 words by their sub-blocks' scales into int32 lanes. */
MV_INLINE __m512i ks_isc_k45(const uint8_t *blk, __m512i sm, const int8_t *a, int five) {
  const size_t qs_at = five ? 48 : 16;
  const __m512i nib = mv_nib_mask(), z = _mm512_setzero_si512();
  const __m512i x01 = _mm512_loadu_si512(blk + qs_at), x23 = _mm512_loadu_si512(blk + qs_at + 64);
  __m512i q0 = _mm512_and_si512(x01, nib), q1 = _mm512_and_si512(_mm512_srli_epi16(x01, 4), nib);
  __m512i q2 = _mm512_and_si512(x23, nib), q3 = _mm512_and_si512(_mm512_srli_epi16(x23, 4), nib);
  if (five) mv_q5k_fifth_bits(blk, &q0, &q1, &q2, &q3);
  const __m512i t0 = qk_dpbusd(z, q0, _mm512_loadu_si512(a)), t1 = qk_dpbusd(z, q1, _mm512_loadu_si512(a + 64));
  const __m512i t2 = qk_dpbusd(z, q2, _mm512_loadu_si512(a + 128)), t3 = qk_dpbusd(z, q3, _mm512_loadu_si512(a + 192));
  const __m512i isc = _mm512_madd_epi16(_mm512_packs_epi32(t0, t1), _mm512_shuffle_epi8(sm, KS_Q16(0, 1, 2, 3)));
  return qk_dpwssd(isc, _mm512_packs_epi32(t2, t3), _mm512_shuffle_epi8(sm, KS_Q16(4, 5, 6, 7)));
}

/* Q4_K / Q5_K: rows r0 and r1 of one super-block as q80_pair(F, M) with F
 * lanes 0..7 summing to r0's isc and 8..15 to r1's (ks_fold), M the same for
 * imn: each row's mins as words m_j, m_j against the activations' 16
 * 16-element group sums (bs16: int16 words, the same in both halves), one
 * vpmaddwd for both rows (ks_mv_split undoes the layout after q80_reduce8). */
MV_INLINE __m512i ks_pair_k45(const uint8_t *r0, const uint8_t *r1, const int8_t *a, __m512i bs16, int five) {
  /* both rows' scales decoded side by side (r0 low, r1 high 128 bits) */
  const __m512i s01 = _mm512_castsi256_si512(mv_q4k_scales2(r0, r1));
  const __m512i sm0 = _mm512_shuffle_i32x4(s01, s01, 0x00), sm1 = _mm512_shuffle_i32x4(s01, s01, 0x55);
  const __m512i f = ks_fold(ks_isc_k45(r0, sm0, a, five), ks_isc_k45(r1, sm1, a, five));
  const __m512i m01 = _mm512_shuffle_i32x4(s01, s01, 0x50); /* lanes r0, r0, r1, r1 */
  const __m512i m = _mm512_madd_epi16(_mm512_shuffle_epi8(m01, KS_MINS), bs16);
  return q80_pair(f, m);
}

/* After q80_reduce8 of ks_pair_k45's vectors: s0 = [isc 0, imn 0, isc 2,
 * imn 2, ...], s1 = [isc 1, imn 1, isc 3, imn 3, ...]; the 16 rows' isc and
 * imn in row order. */
MV_INLINE void ks_mv_split(__m512i s0, __m512i s1, __m512i *isc, __m512i *imn) {
  *isc = _mm512_mask_blend_epi32(0xAAAA, s0, _mm512_shuffle_epi32(s1, _MM_PERM_CCAA));
  *imn = _mm512_mask_blend_epi32(0xAAAA, _mm512_shuffle_epi32(s0, _MM_PERM_DDBB), s1);
}

/* vpermw indices: four words of scale i, then four of scale i + 4, per
 * 128-bit lane k = 0..3 (i = b + k). */
#define KS_W4(i) (int64_t)(0x0001000100010001ull * (uint64_t)(i))
#define KS_Q6_IDX(b) \
  _mm512_set_epi64(KS_W4(b + 7), KS_W4(b + 3), KS_W4(b + 6), KS_W4(b + 2), KS_W4(b + 5), KS_W4(b + 1), KS_W4(b + 4), KS_W4(b))

/* Q6_K: one row's super-block, all 16 lanes summing to isc (the caller adds
 * the reduction's two halves). vpdpbusd's lanes of 4 elements start from
 * the activations' bias term (init = -32 * their qa sum), so each is the
 * exact sum of (q - 32) * qa, within int16 (|.| <= 4 * 32 * 128): chunks 2c
 * and 2c + 1 pack into words, per 128-bit lane k sub-blocks 8c + k and
 * 8c + 4 + k, and one vpmaddwd (vpdpwssd) scales them by the int8 scales
 * as words. */
MV_INLINE __m512i ks_row_q6(const uint8_t *blk, const int8_t *a, const int32_t *in) {
  const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192))));
  __m512i q0, q1, q2, q3;
  mv_q6k_chunks(blk, blk + 128, &q0, &q1);
  mv_q6k_chunks(blk + 64, blk + 160, &q2, &q3);
  const __m512i t0 = qk_dpbusd(_mm512_loadu_si512(in), q0, _mm512_loadu_si512(a));
  const __m512i t1 = qk_dpbusd(_mm512_loadu_si512(in + 16), q1, _mm512_loadu_si512(a + 64));
  const __m512i t2 = qk_dpbusd(_mm512_loadu_si512(in + 32), q2, _mm512_loadu_si512(a + 128));
  const __m512i t3 = qk_dpbusd(_mm512_loadu_si512(in + 48), q3, _mm512_loadu_si512(a + 192));
  const __m512i isc = _mm512_madd_epi16(_mm512_packs_epi32(t0, t1), _mm512_permutexvar_epi16(KS_Q6_IDX(0), s16));
  return qk_dpwssd(isc, _mm512_packs_epi32(t2, t3), _mm512_permutexvar_epi16(KS_Q6_IDX(8), s16));
}

/* Q2_K / Q3_K: one row's super-block, all 16 lanes summing to isc, in
 * ks_row_q6's layout: chunk v's vpdpbusd lanes (Q3_K from the bias term
 * init = -4 * their qa sum) are exact 4-element sums within int16 (|.| <=
 * 4 * 4 * 128), packed in word pairs and scaled by one vpmaddwd
 * (vpdpwssd) with the scales as words: sv holds 16 of them from word w0 (0
 * or 16: a row pair's scales in one vector). */
MV_INLINE __m512i ks_row_q23(const uint8_t *blk, const int8_t *a, const int32_t *in, __m512i sv, int w0, int three) {
  __m512i t[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    t[v] = qk_dpbusd(three ? _mm512_loadu_si512(in + 16 * v) : _mm512_setzero_si512(), ks_q23_vec(blk, v, three),
                     _mm512_loadu_si512(a + 64 * v));
  const __m512i isc = _mm512_madd_epi16(_mm512_packs_epi32(t[0], t[1]), _mm512_permutexvar_epi16(KS_Q6_IDX(w0), sv));
  return qk_dpwssd(isc, _mm512_packs_epi32(t[2], t[3]), _mm512_permutexvar_epi16(KS_Q6_IDX(w0 + 8), sv));
}

/* Q2_K: rows r0 and r1 of one super-block as q80_pair(F, M) (ks_pair_k45's
 * layout): both rows' 4-bit scales and mins decoded side by side as words
 * [r0's 16 | r1's 16]; M is the mins against the activations' 16 sub-block
 * sums (bs16: the same in both halves), one vpmaddwd for both rows. */
MV_INLINE __m512i ks_pair_q2(const uint8_t *r0, const uint8_t *r1, const int8_t *a, __m512i bs16) {
  const __m256i raw = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)r0)),
                                              _mm_loadu_si128((const __m128i *)(const void *)r1), 1);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m512i sc = _mm512_cvtepu8_epi16(_mm256_and_si256(raw, nib));
  const __m512i mn = _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), nib));
  const __m512i f = ks_fold(ks_row_q23(r0, a, NULL, sc, 0, 0), ks_row_q23(r1, a, NULL, sc, 16, 0));
  return q80_pair(f, _mm512_madd_epi16(mn, bs16));
}

/* Q3_K: its scales (less 32) as 16 words. */
MV_INLINE __m512i ks_q3_words(const uint8_t *blk) {
  return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(qk_q3k_scales(blk)));
}

/* Rows r and r + 1 (those below `rows`) of the panel at pf (NULL: none):
 * the `bytes` of each at byte `at`, into L2. */
static inline void ks_fetch_pair(const uint8_t *pf, int rows, int r, int64_t stride, int64_t at, int64_t bytes) {
  if (!pf) return;
  for (int k = r; k < r + 2 && k < rows; ++k) qk_prefetch_slice(pf + k * stride + at, 0, bytes);
}

/* Super-blocks per pass of the matrix-vector kernel: a row pair's integer
 * vectors for KS_SBC super-blocks wait in u (8 KiB) for the reduction. */
#define KS_SBC 16

static inline __attribute__((always_inline)) void ks_mv_panels(qk_ks_ctx *x, int64_t p0, int64_t p1,
                                                               const ks_kind kind) {
  const tp_qk_task *t = x->task;
  const qk_act *act = &x->act;
  const int64_t nsb = x->nsb, bb = x->bb, kpad = act->kpad, lanes = kpad / 4, dstride = kpad / 256 + 1;
  /* the 32 bits read per row and super-block: d | dmin << 16 (the min
   * types), the two bytes before d | d << 16 (Q6_K, Q3_K: d ends the block) */
  const int64_t at = kind == KS_Q6_K ? 206 : kind == KS_Q3_K ? 106 : kind == KS_Q2_K ? 80 : 0;
  const int side = ks_subs16(kind), has_min = ks_has_min(kind);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const uint8_t *base, *rows[16];
    const int nr = b16_panel(t, n0, &base, rows);
    /* the next panel (its rows are one contiguous run; two ahead measured
     * no better with 16-row panels), fetched spread through the pass, not
     * in bursts, in the order the pass meets the bytes: Q4_K / Q5_K take
     * a row pair's super-blocks one after another (a slice of the panel
     * per call, in address order: qk_prefetch_slice); Q6_K takes the eight
     * pairs' super-block sb side by side, so each pair fetches its two
     * rows' super-block sb of the panel ahead (ks_fetch_pair). Q6_K in
     * address order instead: TinyLlama Q4_K_M decoding 5-9 % slower at
     * one thread (plans alternating in one process). */
    const uint8_t *pf = n0 + 16 < t->n ? base + (size_t)16 * t->row_bytes : NULL; /* past p1 too */
    const int64_t pf_rows = pf ? (t->n - n0 - 16 < 16 ? t->n - n0 - 16 : 16) : 0;
    const int64_t pf_step = (pf_rows * (int64_t)t->row_bytes + 8 * nsb - 1) / (8 * nsb);
    const uint8_t *pf_c = pf; /* the first activation row's pass fetches */
    int64_t pf_u = 0;
    for (int64_t c = 0; c < t->m; ++c) {
      const int8_t *aq = side ? act->q + c * kpad : act->qn + c * kpad;
      const int32_t *init = act->init + c * lanes; /* Q6_K, Q3_K */
      const float *dsb = act->dsb + c * dstride;
      const int16_t *bs = has_min ? x->bs + c * nsb * 32 : NULL;
      __m512 f = _mm512_setzero_ps();
      /* G row pairs at a time through KS_SBC super-blocks. Q4_K / Q5_K: one
       * pair, its bytes met nearly in address order (24.9 against 22.7 GB/s
       * from L2 with all 16 rows side by side); the 16-sub-block types: all
       * eight pairs, which share each super-block's activation loads (Q6_K
       * 31.7 against 27.1) */
      const int G = side ? 8 : 1;
      for (int64_t s0 = 0; s0 < nsb; s0 += KS_SBC) {
        const int64_t ns = nsb - s0 < KS_SBC ? nsb - s0 : KS_SBC;
        __m512i u[KS_SBC][8];
        /* the rows' 32 bits at `at`, read as each pair's block is (its lines are
         * being fetched then), for one vector load per super-block: a gather
         * there cost 4-8 % of the kernel from L2 */
        uint32_t dw[KS_SBC][16];
        for (int i0 = 0; i0 < 8; i0 += G)
          for (int64_t j = 0; j < ns; ++j) {
            const int64_t sb = s0 + j;
#pragma GCC unroll 8
            for (int i = i0; i < i0 + G; ++i) {
              const uint8_t *r0 = rows[2 * i] + sb * bb, *r1 = rows[2 * i + 1] + sb * bb;
              if (side) ks_fetch_pair(pf_c, (int)pf_rows, 2 * i, (int64_t)t->row_bytes, sb * bb, bb);
              else qk_prefetch_slice(pf_c, pf_u++, pf_step);
              memcpy(&dw[j][2 * i], r0 + at, 4), memcpy(&dw[j][2 * i + 1], r1 + at, 4);
              const int8_t *a = aq + 256 * sb;
              if (kind == KS_Q6_K)
                u[j][i] = q80_pair(ks_row_q6(r0, a, init + 64 * sb), ks_row_q6(r1, a, init + 64 * sb));
              else if (kind == KS_Q3_K)
                u[j][i] = q80_pair(ks_row_q23(r0, a, init + 64 * sb, ks_q3_words(r0), 0, 1),
                                   ks_row_q23(r1, a, init + 64 * sb, ks_q3_words(r1), 0, 1));
              else if (kind == KS_Q2_K)
                u[j][i] = ks_pair_q2(r0, r1, a, _mm512_loadu_si512(bs + sb * 32));
              else
                u[j][i] = ks_pair_k45(r0, r1, a, _mm512_loadu_si512(bs + sb * 32), kind == KS_Q5_K);
            }
          }
        for (int64_t j = 0; j < ns; ++j) {
          const int64_t sb = s0 + j;
          __m512i i0, i1;
          q80_reduce8(u[j], &i0, &i1);
          const __m512i dd = _mm512_loadu_si512(dw[j]);
          const __m512 da = _mm512_set1_ps(dsb[sb]);
          if (!has_min) {
            const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
            f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), _mm512_mul_ps(d, da), f);
          } else {
            const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
            const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
            __m512i isc, imn;
            ks_mv_split(i0, i1, &isc, &imn);
            f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc), _mm512_mul_ps(d, da), f);
            f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imn), _mm512_mul_ps(dmin, da), f);
          }
        }
      }
      b16_store(t, c, n0, nr, f);
      pf_c = NULL;
    }
  }
}

static void ks_mv_range_q4(void *x, int64_t p0, int64_t p1) { ks_mv_panels(x, p0, p1, KS_Q4_K); }
static void ks_mv_range_q5(void *x, int64_t p0, int64_t p1) { ks_mv_panels(x, p0, p1, KS_Q5_K); }
static void ks_mv_range_q6(void *x, int64_t p0, int64_t p1) { ks_mv_panels(x, p0, p1, KS_Q6_K); }
static void ks_mv_range_q2(void *x, int64_t p0, int64_t p1) { ks_mv_panels(x, p0, p1, KS_Q2_K); }
static void ks_mv_range_q3(void *x, int64_t p0, int64_t p1) { ks_mv_panels(x, p0, p1, KS_Q3_K); }

/* The min types: the activations' 16-element group sums, for the min
 * products, and for Q4_K / Q5_K the activations in nibble order (Q6_K and
 * Q3_K read q and the bias term as they are). */
static int ks_mv_prepare(qk_ks_ctx *x) {
  if (!ks_has_min(x->kind)) return 1;
  const qk_act *act = &x->act;
  x->mem = tp_temp_alloc((size_t)(act->m * x->nsb * 32) * sizeof(int16_t));
  if (!x->mem || (!ks_subs16(x->kind) && !mv_q4k_prepare(&x->act))) return 0;
  x->bs = x->mem;
  for (int64_t c = 0; c < act->m; ++c)
    for (int64_t sb = 0; sb < x->nsb; ++sb)
      for (int g = 0; g < 16; ++g) { /* |sum| <= 16 * 128: an int16 word, twice (ks_pair_k45) */
        int32_t s = 0;
        for (int i = 0; i < 16; ++i) s += act->q[c * act->kpad + 256 * sb + 16 * g + i];
        x->bs[(c * x->nsb + sb) * 32 + g] = x->bs[(c * x->nsb + sb) * 32 + 16 + g] = (int16_t)s;
      }
  return 1;
}

/* x for K-quant weights (k % 256 == 0) with t's activations
 * prepared and, when m < QK_C, the matrix-vector kernel's (*mv its range
 * function). 0: out of memory. */
static int qk_ks_begin(const tp_qk_task *t, qk_ks_ctx *x, tp_qk_range_fn *mv) {
  tp_qk_traits tr;
  tp_qk_traits_of(t->wtype, &tr);
  tr.has_min = 0; /* the min term is taken in integers: no float group sums (act.bf) */
  memset(x, 0, sizeof *x);
  x->task = t;
  static const tp_qk_range_fn mv_of[] = {[KS_Q4_K] = ks_mv_range_q4, [KS_Q5_K] = ks_mv_range_q5,
                                         [KS_Q6_K] = ks_mv_range_q6, [KS_Q2_K] = ks_mv_range_q2,
                                         [KS_Q3_K] = ks_mv_range_q3};
  x->kind = ks_kind_of(t->wtype, &x->bb);
  x->nsb = t->k / 256;
  *mv = mv_of[x->kind];
  if (!qk_act_prepare(&tr, t->a, t->m, t->k, &x->act, t->threads)) return 0;
  if (t->m < QK_C && !ks_mv_prepare(x)) {
    tp_temp_free(x->mem);
    qk_act_free(&x->act);
    return 0;
  }
  return 1;
}

/* Frees what qk_ks_begin and the ranges took; the status of the product. */
static topos_status qk_ks_end(qk_ks_ctx *x) {
  const tp_qk_task *t = x->task;
  tp_temp_free(x->mem);
  qk_act_free(&x->act);
  if (x->failed)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: %s buffers for %lld x %lld", topos_dtype_name(t->wtype),
                   (long long)t->m, (long long)t->k);
  return TOPOS_OK;
}

static topos_status qk_ks_run(const tp_qk_task *t) {
  qk_ks_ctx x;
  tp_qk_range_fn mv;
  if (!qk_ks_begin(t, &x, &mv))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  if (t->m < QK_C) {
    const int64_t panels = (t->n + 15) / 16;
    tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m), mv, &x);
  } else if (ks_tile_prepare(&x)) {
    const int64_t panels = (t->n + KS_TR - 1) / KS_TR;
    tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (KS_TR * t->k * t->m), ks_tile_range, &x);
  } else {
    x.failed = 1;
  }
  return qk_ks_end(&x);
}

#endif
