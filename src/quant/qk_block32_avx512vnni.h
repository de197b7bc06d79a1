/* Products of the 32-element block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1,
 * MXFP4: qk_mxfp4_avx512vnni.h) on the AVX-512 VNNI engine (included by
 * qk_avx512vnni.c after the engine body). Weights meet Q8_0 activations (Q4_1 / Q5_1: Q8_1) block by block,
 * and a block's dot product is one exact integer; the result of one output
 * (weight row r, activation row c) is defined as
 *     acc = 0;  for each block b in order:  acc = fma(float(isum_b), dw_b * da_b, acc)
 *                                           (Q4_1 / Q5_1, then: acc = fma(m_b, s_b, acc))
 * with isum_b = sum over the block's 32 elements of w * qa (exact; w = q
 * for Q8_0, q - 8 for Q4_0, q - 16 for Q5_0, q for Q4_1 / Q5_1), dw_b and
 * da_b the weight's and the activation's block scales, m_b the weight's
 * min and s_b the Q8_1 activation's s. For Q8_0 that is the AMX route's
 * definition (qk_amx_body.h: one chunk = one block, the same operations),
 * so on a CPU with AMX the tiles above 8 activation rows and these kernels
 * below should agree bit for bit (not run yet: no AMX where this was
 * written); among these kernels it holds for every m and thread count,
 * tested against the definition in scalar C.
 *
 * Two kernels compute it:
 *  - the tile (m >= QK_C): lanes are 16 activation rows. The activations are
 *    repacked once per product, 4 bytes of each of 16 rows per vector, as
 *    unsigned qa + 128; each weight row's 4 bytes are broadcast straight
 *    from the file's layout (vpdpbusd's signed operand; Q4_0 / Q5_0 rows
 *    are first decoded to Q8_0's layout, w = q - bias), and the integer
 *    accumulator starts from -128 * sum(w) of the block, so it ends at the
 *    exact isum_b. Per block and 16 x 6 outputs: 8 x 12 vpdpbusd, then 12
 *    conversions, scale products and fmas — where the lane-per-4-elements
 *    tile paid a conversion, a product and an fma per vpdpbusd.
 *  - the matrix-vector kernel (m < QK_C, decoding): lanes are 16 weight
 *    rows. Each row's blocks meet the activations in vpdpbusd (lanes of 4
 *    or 8 elements, the engine's init term as the bias correction), two
 *    blocks per step for Q8_0 and four for the nibble types; 16 such
 *    vectors are reduced to the 16 rows' block sums by an exact integer
 *    transpose-and-add, the rows' scales come out of the same loads by
 *    word permutes (no gathers), and the float steps run 16 rows at a time. */
#ifndef TP_QUANT_QK_BLOCK32_AVX512VNNI_H
#define TP_QUANT_QK_BLOCK32_AVX512VNNI_H

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define Q80_BLOCK 34 /* f16 d, 32 int8 */
#define Q80_TR 6     /* weight rows per tile */

/* acc + per-lane sum of 4 u8 (u) * s8 (the 4 bytes at p, broadcast: the
 * instruction's own m32bcst operand, read where the weights lie) */
typedef int32_t q80_dword __attribute__((may_alias, aligned(1)));
static inline __m512i q80_dpbusd_bcast(__m512i acc, __m512i u, const uint8_t *p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const q80_dword *)(const void *)p));
  return acc;
}

/* The weight types served: Q8_0 as stored; Q4_0 / Q5_0 (nibbles, Q5_0's
 * fifth bits, w = q - bias) through the same operations, their rows decoded
 * to Q8_0's layout for the tile. */
typedef struct {
  size_t bytes, qs, qh; /* block bytes, offsets of the q (nibbles) and of the fifth bits (0: none) */
  int bias;             /* w = q - bias */
  int q8;               /* Q8_0: q is w, stored as int8 */
  size_t min;           /* offset of the f16 min (Q4_1 / Q5_1: w = d * q + m; 0: none), 2: right after d */
} b32_kind;
#define B32_Q8_0 ((b32_kind){34, 2, 0, 0, 1, 0})
#define B32_Q4_0 ((b32_kind){18, 2, 0, 8, 0, 0})
#define B32_Q5_0 ((b32_kind){22, 6, 2, 16, 0, 0})
#define B32_Q4_1 ((b32_kind){20, 4, 0, 0, 0, 2})
#define B32_Q5_1 ((b32_kind){24, 8, 4, 0, 0, 2})

typedef struct {
  const tp_qk_task *task;
  qk_act act;
  b32_kind kind;
  int64_t nb, groups; /* blocks per row; groups of 16 activation rows (tile) */
  uint8_t *au;        /* tile: [group][block][4-byte step][16 rows][4] = qa + 128 */
  float *da;          /* tile: [group][block][16] */
  float *sa;          /* tile, Q4_1 / Q5_1: [group][block][16] = the Q8_1 activation's s */
  uint8_t *steps;     /* matrix-vector, nibble types: [activation row][four-block step] the
                         step's three activation vectors (q4_steps_arrange) */
  void *mem;
  int by_address; /* decoding fetches ahead in address order (b32_ahead) */
  volatile int failed;
} qk_q80_ctx;

/* -128 * the sum of the 32 weights of block b (out[0]) and, when `two`, of
 * block b + 1 (out[1]): sums of w + 128 by psadbw, exact. */
static void q80_corr2(const uint8_t *blk, int two, int32_t *out) {
  const __m512i v = mv_q8_chunk(blk + 2, two ? blk + Q80_BLOCK + 2 : NULL); /* w + 128 */
  const __m512i s8 = _mm512_sad_epu8(v, _mm512_setzero_si512()); /* 4 partial sums per block */
  const __m512i s4 = _mm512_add_epi64(s8, _mm512_shuffle_epi32(s8, _MM_PERM_BADC));
  const __m512i s2 = _mm512_add_epi64(s4, _mm512_shuffle_i64x2(s4, s4, _MM_SHUFFLE(2, 3, 0, 1)));
  out[0] = (int32_t)(-128 * ((int64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(s2)) - 32 * 128));
  if (two) out[1] = (int32_t)(-128 * ((int64_t)_mm_cvtsi128_si64(_mm512_extracti64x2_epi64(s2, 2)) - 32 * 128));
}

/* The weights of blocks b0 and b0 + 1 (two = 0: b0 only, the rest zeros)
 * as vpdpbusd's unsigned operand: Q8_0's w + 128 (the activations' bias
 * term is -128 * their sum), Q4_0 / Q5_0's q (bias term -bias * sum). */
static inline __attribute__((always_inline)) __m512i b32_chunk(const uint8_t *b0, int two, const b32_kind kd) {
  const uint8_t *b1 = two ? b0 + kd.bytes : NULL;
  if (kd.q8) return mv_q8_chunk(b0 + 2, b1 ? b1 + 2 : NULL);
  __m512i q = mv_nib_chunk(b0 + kd.qs, b1 ? b1 + kd.qs : NULL);
  if (kd.qh) {
    const uint64_t bits = (uint64_t)mv_le32(b0 + kd.qh) | (b1 ? (uint64_t)mv_le32(b1 + kd.qh) << 32 : 0);
    q = _mm512_or_si512(q, _mm512_maskz_mov_epi8((__mmask64)bits, _mm512_set1_epi8(0x10)));
  }
  return q;
}

/* A Q4_0 / Q5_0 / Q4_1 / Q5_1 row in Q8_0's layout (f16 d, then the 32 w =
 * q - bias; the mins stay in the file). */
static void b32_decode_row(const uint8_t *src, int64_t nb, const b32_kind kd, uint8_t *dst) {
  const __m512i bias = _mm512_set1_epi8((char)kd.bias);
  for (int64_t b = 0; b < nb; b += 2) {
    const int two = b + 1 < nb;
    const uint8_t *blk = src + b * kd.bytes;
    uint8_t w[64];
    _mm512_storeu_si512(w, _mm512_sub_epi8(b32_chunk(blk, two, kd), bias));
    memcpy(dst + b * Q80_BLOCK, blk, 2);
    memcpy(dst + b * Q80_BLOCK + 2, w, 32);
    if (two) {
      memcpy(dst + (b + 1) * Q80_BLOCK, blk + kd.bytes, 2);
      memcpy(dst + (b + 1) * Q80_BLOCK + 2, w + 32, 32);
    }
  }
}

/* MXFP4 rows take their own decoder, which also writes the blocks' f32 scales dw (no f16 d). */
static void mx_decode_row(const uint8_t *src, int64_t nb, uint8_t *dst, float *dw); /* qk_mxfp4_avx512vnni.h */

/* ---- tile: Q80_TR weight rows x two groups of 16 activation rows ------- */

/* pf: the next panel's rows (NULL: none), fetched a block per step while
 * this panel's first activation groups run, so its preparation (the
 * scales' pass) finds them in cache. NG groups (1 or 2, a constant: a
 * single group, as a mixture's expert with at most 16 rows has, does half
 * the products). */
static inline __attribute__((always_inline)) void q80_tile_ng(const qk_q80_ctx *x, const uint8_t *const *rows,
                                                              const float *dw, const float *mw, const int32_t *corr,
                                                              int64_t g0, const uint8_t *const *pf,
                                                              __m512 f[Q80_TR][2], const int NG) {
  const int64_t nb = x->nb;
  for (int r = 0; r < Q80_TR; ++r) f[r][0] = f[r][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    if (pf)
      for (int r = 0; r < Q80_TR; ++r) _mm_prefetch((const char *)pf[r] + b * Q80_BLOCK, _MM_HINT_T0);
    __m512i acc[Q80_TR][2];
#pragma GCC unroll 6
    for (int r = 0; r < Q80_TR; ++r) acc[r][0] = acc[r][1] = _mm512_set1_epi32(corr[r * nb + b]);
    const uint8_t *a0 = x->au + (size_t)((g0 * nb + b) * 8) * 64;
    const uint8_t *a1 = NG > 1 ? a0 + (size_t)nb * 8 * 64 : a0;
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const __m512i u0 = _mm512_loadu_si512(a0 + 64 * s);
      const __m512i u1 = NG > 1 ? _mm512_loadu_si512(a1 + 64 * s) : u0;
#pragma GCC unroll 6
      for (int r = 0; r < Q80_TR; ++r) {
        const uint8_t *w = rows[r] + (size_t)b * Q80_BLOCK + 2 + 4 * s;
        acc[r][0] = q80_dpbusd_bcast(acc[r][0], u0, w);
        if (NG > 1) acc[r][1] = q80_dpbusd_bcast(acc[r][1], u1, w);
      }
    }
    const __m512 d0 = _mm512_loadu_ps(x->da + (g0 * nb + b) * 16);
    const __m512 d1 = NG > 1 ? _mm512_loadu_ps(x->da + ((g0 + 1) * nb + b) * 16) : d0;
#pragma GCC unroll 6
    for (int r = 0; r < Q80_TR; ++r) {
      const __m512 sw = _mm512_set1_ps(dw[r * nb + b]);
      f[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][0]), _mm512_mul_ps(sw, d0), f[r][0]);
      if (NG > 1) f[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][1]), _mm512_mul_ps(sw, d1), f[r][1]);
    }
    if (mw) { /* Q4_1 / Q5_1: + m * s */
      const __m512 s0 = _mm512_loadu_ps(x->sa + (g0 * nb + b) * 16);
      const __m512 s1 = NG > 1 ? _mm512_loadu_ps(x->sa + ((g0 + 1) * nb + b) * 16) : s0;
#pragma GCC unroll 6
      for (int r = 0; r < Q80_TR; ++r) {
        const __m512 mv = _mm512_set1_ps(mw[r * nb + b]);
        f[r][0] = _mm512_fmadd_ps(mv, s0, f[r][0]);
        if (NG > 1) f[r][1] = _mm512_fmadd_ps(mv, s1, f[r][1]);
      }
    }
  }
}

static void q80_tile(const qk_q80_ctx *x, const uint8_t *const *rows, const float *dw, const float *mw,
                     const int32_t *corr, int64_t g0, int ng, const uint8_t *const *pf, __m512 f[Q80_TR][2]) {
  if (ng > 1) q80_tile_ng(x, rows, dw, mw, corr, g0, pf, f, 2);
  else q80_tile_ng(x, rows, dw, mw, corr, g0, pf, f, 1);
}

/* Tile output: weight row n0 + r (r < nr, else dropped) for the activation
 * rows c0 .. c0 + lanes_used - 1 held in v's lanes, plus the bias. */
static void q80_store(const tp_qk_task *t, int64_t n0, int nr, int64_t c0, int lanes_used, __m512 v, int r) {
  float lane[16];
  _mm512_storeu_ps(lane, v);
  if (r >= nr) return;
  for (int c = 0; c < lanes_used; ++c) {
    const float y = lane[c];
    t->out[(c0 + c) * t->n + n0 + r] = t->bias ? y + t->bias[n0 + r] : y;
  }
}

static void q80_tile_range(void *vctx, int64_t p0, int64_t p1) {
  qk_q80_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  const int64_t nb = x->nb;
  const int decoded = !x->kind.q8, mxfp4 = t->wtype == TOPOS_MXFP4; /* rows decoded to Q8_0's layout */
  float *dw = tp_temp_alloc((size_t)(Q80_TR * nb) * (2 * sizeof(float) + sizeof(int32_t) + (decoded ? Q80_BLOCK : 0)));
  if (!dw) {
    x->failed = 1;
    return;
  }
  float *mw = x->kind.min ? dw + Q80_TR * nb : NULL;
  int32_t *corr = (int32_t *)(void *)(dw + 2 * Q80_TR * nb);
  uint8_t *dec = (uint8_t *)(void *)(corr + Q80_TR * nb);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * Q80_TR;
    const int nr = (int)(t->n - n0 < Q80_TR ? t->n - n0 : Q80_TR);
    const uint8_t *rows[Q80_TR], *next[Q80_TR];
    const int has_next = n0 + Q80_TR < t->n; /* past p1 too: the next claim is usually ours */
    for (int r = 0; r < Q80_TR; ++r) {
      const int64_t nx = n0 + Q80_TR + r < t->n ? n0 + Q80_TR + r : t->n - 1;
      next[r] = (const uint8_t *)t->w + (size_t)nx * t->row_bytes;
      rows[r] = (const uint8_t *)t->w + (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes;
      if (decoded) {
        if (has_next)
          for (size_t off = 0; off < t->row_bytes; off += 64) __builtin_prefetch(next[r] + off, 0, 2);
        if (mw)
          for (int64_t b = 0; b < nb; ++b) mw[r * nb + b] = mv_f16(rows[r] + b * x->kind.bytes + x->kind.min);
        if (mxfp4) mx_decode_row(rows[r], nb, dec + (size_t)(r * nb) * Q80_BLOCK, dw + r * nb);
        else b32_decode_row(rows[r], nb, x->kind, dec + (size_t)(r * nb) * Q80_BLOCK);
        rows[r] = dec + (size_t)(r * nb) * Q80_BLOCK;
      }
      for (int64_t b = 0; b < nb && !mxfp4; ++b) dw[r * nb + b] = mv_f16(rows[r] + b * Q80_BLOCK);
      for (int64_t b = 0; b < nb; b += 2) q80_corr2(rows[r] + b * Q80_BLOCK, b + 1 < nb, corr + r * nb + b);
    }
    for (int64_t g0 = 0; g0 < x->groups; g0 += 2) {
      const int ng = x->groups - g0 >= 2 ? 2 : 1;
      __m512 f[Q80_TR][2];
      q80_tile(x, rows, dw, mw, corr, g0, ng, has_next && g0 == 0 && !decoded ? next : NULL, f);
      for (int g = 0; g < ng; ++g) {
        const int64_t c0 = (g0 + g) * 16;
        const int used = (int)(t->m - c0 < 16 ? t->m - c0 : 16);
        for (int r = 0; r < Q80_TR; ++r) q80_store(t, n0, nr, c0, used, f[r][g], r);
      }
    }
  }
  tp_temp_free(dw);
}

/* Activation rows as tile lanes: for `steps` 4-byte steps from element e0
 * of the 16 rows at q (kpad apart; `used` of them real, the rest qa = 0),
 * dst[64 * s + 4 * lane + i] = qa + 128. One gather per step. */
static void qk_lanes_repack(const int8_t *q, int64_t kpad, int64_t used, int64_t e0, int steps, uint8_t *dst) {
  int32_t off[16];
  for (int l = 0; l < 16; ++l) off[l] = (int32_t)((l < used ? l : 0) * kpad);
  const __m512i offs = _mm512_loadu_si512(off), flip = _mm512_set1_epi8((char)0x80);
  const __mmask16 live = (__mmask16)((1u << used) - 1u);
  for (int s = 0; s < steps; ++s) {
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, offs, q + e0 + 4 * s, 1);
    _mm512_storeu_si512(dst + 64 * s, _mm512_xor_si512(v, flip));
  }
}

/* The activations as the tile reads them, a group of 16 rows per call. */
static void q80_tile_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_q80_ctx *x = vctx;
  const qk_act *act = &x->act;
  const int64_t m = act->m, nb = x->nb, kpad = act->kpad, lanes = kpad / 4;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t used = m - 16 * g < 16 ? m - 16 * g : 16;
    for (int64_t b = 0; b < nb; ++b) {
      qk_lanes_repack(act->q + 16 * g * kpad, kpad, used, 32 * b, 8, x->au + (size_t)((g * nb + b) * 8) * 64);
      for (int64_t l = 0; l < 16; ++l) x->da[(g * nb + b) * 16 + l] = l < used ? act->d[(16 * g + l) * lanes + 8 * b] : 0.0f;
      if (x->sa) /* Q8_1's s, spread over the block's 8 lanes as s / 8 (exact) */
        for (int64_t l = 0; l < 16; ++l)
          x->sa[(g * nb + b) * 16 + l] = l < used ? act->g[(16 * g + l) * lanes + 8 * b] * 8.0f : 0.0f;
    }
  }
}

static int q80_tile_prepare(qk_q80_ctx *x) {
  const int64_t nb = x->nb;
  x->groups = (x->act.m + 15) / 16;
  const size_t cells = (size_t)(x->groups * nb);
  x->mem = tp_temp_alloc(cells * 8 * 64 + 2 * cells * 16 * sizeof(float) + 64);
  if (!x->mem) return 0;
  x->da = (float *)x->mem;
  x->sa = x->kind.min ? x->da + cells * 16 : NULL;
  x->au = (uint8_t *)(x->da + 2 * cells * 16);
  tp_qk_parallel_for(x->task->threads, x->groups, 1, q80_tile_prepare_groups, x);
  return 1;
}

/* ---- matrix-vector: 16 weight rows per panel, lanes are rows ----------- */

/* v[r] holds row r's lane sums of blocks b (lanes 0..7) and b + 1 (8..15);
 * the 16 rows' sums of block b end in *s0 and of block b + 1 in *s1. In
 * two steps, so callers can pair rows as they make them (16 live vectors
 * would not leave registers for the work): q80_pair per rows 2i, 2i + 1,
 * then q80_reduce8 over the 8 pairs. */
static inline __m512i q80_pair(__m512i v0, __m512i v1) {
  /* per 128-bit lane: [r0 l0+l2, r1 l0+l2, r0 l1+l3, r1 l1+l3] */
  return _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
}
static inline void q80_reduce8(const __m512i u[8], __m512i *s0, __m512i *s1) {
  __m512i w[4];
  for (int i = 0; i < 4; ++i) /* per 128-bit lane: rows 4i..4i+3, each its 4 lanes summed */
    w[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[2 * i], u[2 * i + 1]),
                            _mm512_unpackhi_epi64(u[2 * i], u[2 * i + 1]));
  /* 128-bit lanes of w[i]: block b halves 0 and 1, block b + 1 halves 0 and 1 */
  const __m512i z01 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i z23 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(3, 1, 3, 1)));
  /* z01: [rows 0-3 b, rows 0-3 b+1, rows 4-7 b, rows 4-7 b+1]; z23 the same for rows 8-15 */
  *s0 = _mm512_shuffle_i32x4(z01, z23, _MM_SHUFFLE(2, 0, 2, 0));
  *s1 = _mm512_shuffle_i32x4(z01, z23, _MM_SHUFFLE(3, 1, 3, 1));
}

/* The 16 rows of the decode panel at row n0 (a short last panel repeats its
 * last row) and *base, the first one's address. Returns the real rows'
 * count. */
/* A matrix-vector range's first two panels up front (its loop fetches two
 * ahead): a cold range otherwise starts on demand misses, and the short
 * products of small models (SmolLM2's 69-207 KB) are mostly start.
 * Measured there (decode, products alternating in one process): 2 threads
 * 6.57 -> 6.05 ms per token, 1 thread 8.87 -> 8.51. */
static inline void b32_prefetch_first_panels(const tp_qk_task *t, int64_t p0) {
  const int64_t first = p0 * 16, rows = (t->n - first < 32 ? t->n - first : 32);
  qk_prefetch_slice((const uint8_t *)t->w + (size_t)first * t->row_bytes, 0, rows * (int64_t)t->row_bytes);
}

static inline int b16_panel(const tp_qk_task *t, int64_t n0, const uint8_t **base, const uint8_t *rows[16]) {
  const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
  *base = (const uint8_t *)t->w + (size_t)n0 * t->row_bytes;
  for (int r = 0; r < 16; ++r) rows[r] = *base + (size_t)(r < nr ? r : nr - 1) * t->row_bytes;
  return nr;
}

/* Decode output: activation row c for weight rows n0 .. n0 + nr - 1 held in
 * v's lanes, plus the bias. */
static inline void b16_store(const tp_qk_task *t, int64_t c, int64_t n0, int nr, __m512 v) {
  const __mmask16 live = (__mmask16)((1u << nr) - 1); /* nr <= 16 */
  if (t->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(live, t->bias + n0));
  _mm512_mask_storeu_ps(t->out + c * t->n + n0, live, v);
}

/* The weights two panels ahead of the one being computed (p: their first
 * byte, NULL: none; the stream stops at the tensor's end), fetched into L2
 * as the first activation row's pass goes.
 *  - The nibble types on Intel cores (b32_fetch_ahead): in address order. A step of the
 *    16 rows consumes 16 * `span` bytes (span: a row's bytes per step), so
 *    it fetches span / 4 lines at p + step * 16 * span, row r of the step
 *    taking lines r * span / 64 .. (r + 1) * span / 64 - 1 (counts known at
 *    compile time). A panel's rows are one contiguous run; fetched so, the
 *    memory side sees one stream where fetching each row at the step's
 *    offset showed it 16 short ones (18-24 lines each at k = 2048), and
 *    two lines per row and step fetched most lines twice. TinyLlama Q4_0
 *    decode, one process alternating: 1 thread 21.0-21.3 -> 23.0-23.5 t/s,
 *    2 threads 38.1-38.5 -> 40.9-41.6; Q4_0 2048 x 2048 from memory 13.5
 *    -> 16.4 GB/s, Q4_1 14.0 -> 14.4 (Sapphire Rapids). One, three and four
 *    panels ahead measured slower.
 *  - Q8_0, and every type on other cores (b32_fetch_row): row by row, two
 *    lines per row and step at the step's offset. On Sapphire Rapids the
 *    address order measured slower for Q8_0 (decode 12.7-12.9 -> 12.0-12.1
 *    t/s at 1 thread; 2048 x 2048 from memory 15.6-16.0 -> 13.7-14.3 GB/s at
 *    16 to 64 rows ahead, 576 x 49152 16.6 -> 15.4; both orders at once
 *    slower still); on Zen 4 an address order ran decoding 20-55 % slower
 *    for all five types (docs/LLM.md; not measured there since).
 * Spread over the rows: the 32 prefetches as a burst at each step's start
 * stalled on the core's miss buffers. The stream runs to the tensor's end,
 * not the range's: the work-stealing dispatch hands a thread its span in
 * chunks, each continuing where the last ended (stopped at each chunk's
 * end, 2 threads ran 6 % slower). */
typedef struct {
  const uint8_t *p, *end;
  int64_t stride; /* the tensor's row bytes */
  int by_address; /* b32_fetch_ahead, else b32_fetch_row */
} b32_ahead;

static inline __attribute__((always_inline)) void b32_fetch_ahead(const b32_ahead *a, int64_t step, int r,
                                                                  int64_t span) {
  if (!a->p) return;
  const uint8_t *q = a->p + step * 16 * span;
  if (q >= a->end) return;
  for (int64_t l = r * span / 64; l < (r + 1) * span / 64; ++l) _mm_prefetch((const char *)q + 64 * l, _MM_HINT_T1);
}

static inline __attribute__((always_inline)) void b32_fetch_row(const b32_ahead *a, int r, int64_t at) {
  if (!a->p) return;
  const char *q = (const char *)a->p + r * a->stride + at;
  if ((const uint8_t *)q >= a->end) return;
  _mm_prefetch(q, _MM_HINT_T1);
  _mm_prefetch(q + 64, _MM_HINT_T1);
}

/* ---- matrix-vector, four blocks per step -------------------------------
 * A gather fetches one scale per row and block (~1.6 cycles per element on
 * Zen 4): pair steps that gathered their scales spent more than a third of
 * their time on them. Here a step covers four blocks of each of 16 rows (a
 * span of 72 to 96 bytes per row; Q4_0, Q4_1, Q5_0, Q5_1), and one or two
 * 64-byte loads per row carry all four blocks' d (and min) along with the
 * weights; word permutes and lane shuffles (q4_quad_heads,
 * q4_lanes_transpose) turn them into the 16 rows' scales per block, ~1.5
 * shuffles per row where the gathers took 4 loads.
 * The nibbles are not put in element order: the four blocks' 16 qs bytes
 * are packed into one vector, its low nibbles meet the activations'
 * elements 0..15 of each block and its high nibbles elements 16..31 (arranged
 * once per product for all its steps, q4_steps_arrange); Q5's fifth bits join as 0x10
 * under two 64-bit masks, and Q4_0 / Q5_0's init term holds -bias * the
 * activations' sums. Lane 4j + i then sums 8 products of block j; the exact
 * integer block sums and the float steps in block order are the
 * definition's, bit for bit. A row's last 1..3 blocks take the same step
 * with the missing blocks zero (nq). Steps run in two halves, pipelined
 * (q4_rows, q4_tail): a step's integer work does not queue behind the
 * previous step's transposes and serial float chain. */

typedef struct {
  __m512i words; /* q4_row's permute of its loads' words (scale dwords, fifth-bit words) */
  __m512i quads; /* q4_quad_heads' permute of two rows' words */
  __m512i qs;    /* a four-block step's 64 qs bytes (every block's qs starts at an even byte) as
                    words of its two loads */
  int64_t tail;  /* offset of a row's second load for its words (0: the first load carries them) */
  int64_t far;   /* offset of a four-block step's second load: its span's last 64 bytes */
  /* The same 64 qs bytes by one vpermt2d of x and y, where every block's
   * qs starts on a dword boundary of one of them (Q4_1, Q5_1: 20- and
   * 24-byte blocks): 1 uop where the word permute takes 3 (Q4_1 2048 x 2048
   * from L2 25.9 -> 24.0 us). Q4_0's 18-byte blocks put blocks 0 and 2 two
   * bytes off in a load from the span's start, blocks 1 and 3 on dwords of
   * the far load: its first load starts 2 bytes early (`lead`, masked so
   * nothing before the span is read), which aligns blocks 0 and 2 (a third
   * load from byte 2 and a masked move measured 24.0 -> 25.8). Q5_0 cannot
   * (its block 0's d and its even blocks' qs fit no common load): it keeps
   * the word permute (qd_on 0). */
  __m512i qd;
  int qd_on;
  int lead; /* the first load starts at span + lead (0 or -2) */
} q4_index;

/* Q4_0 / Q4_1: a row's words are its first 64 span bytes, block j's scale
 * dword at byte j * bytes. Q5_0 / Q5_1 (block 3's scale past byte 64): a
 * second load at `tail` (the span's last 64 bytes), and `words` gathers
 * dword j <- block j's first two words (d, then the min or whatever
 * follows), words 8 + j and 12 + j <- the low and high half of Q5's qh of
 * block j (word w of the first load is index w, of the second 32 + w).
 * quads puts, in 128-bit lane j, rows r and r + 1's d of block j in words 0
 * and 1, their mins in words 2 and 3. */
static inline q4_index q4_index_of(const b32_kind kd) {
  const int64_t bytes = (int64_t)kd.bytes, far = 4 * bytes - 64;
  const int64_t tail = kd.qh ? far : 0;
  /* block j's qs as dwords j' .. j' + 3 of x (from span + lead), or of y
   * (+16); lead -2 only where 0 fails and no fifth-bit words are needed */
  uint32_t qd[16] = {0};
  int qd_on = 0, lead = 0;
  for (int try_lead = 0; try_lead >= (kd.qh ? 0 : -2) && !qd_on; try_lead -= 2) {
    qd_on = 1, lead = try_lead;
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t at = j * bytes + (int64_t)kd.qs, ax = at - lead;
      int64_t dw = -1;
      if (ax % 4 == 0 && ax + 16 <= 64) dw = ax / 4;
      else if ((at - far) % 4 == 0 && at - far >= 0) dw = 16 + (at - far) / 4;
      if (dw < 0) qd_on = 0;
      for (int i = 0; i < 4; ++i) qd[4 * j + i] = (uint32_t)(dw + i);
    }
  }
  if (!qd_on) lead = 0;
  uint16_t w[32] = {0}, h[32] = {0}, qs[32] = {0};
  for (int64_t k = 0; k < 32; ++k) { /* word k: bytes 2(k % 8), +1 of block k / 8's qs */
    const int64_t at = (k / 8) * bytes + (int64_t)kd.qs + 2 * (k % 8);
    qs[k] = (uint16_t)(at + 2 <= 64 ? at / 2 : 32 + (at - far) / 2);
  }
  for (int64_t j = 0; j < 4; ++j) {
    const int64_t at = j * bytes, qh = at + (int64_t)kd.qh;
    for (int64_t i = 0; i < 2; ++i) {
      const int64_t x = at + 2 * i, y = qh + 2 * i;
      w[2 * j + i] = (uint16_t)(x + 2 <= 64 ? x / 2 : 32 + (x - tail) / 2);
      w[8 + 4 * i + j] = (uint16_t)(y + 2 <= 64 ? y / 2 : 32 + (y - tail) / 2);
    }
    /* block j's d in a row's words */
    const uint16_t s = (uint16_t)(tail ? 2 * j : (j * bytes - lead) / 2);
    h[8 * j] = s, h[8 * j + 1] = (uint16_t)(32 + s), h[8 * j + 2] = (uint16_t)(s + 1), h[8 * j + 3] = (uint16_t)(33 + s);
  }
  return (q4_index){_mm512_loadu_si512(w), _mm512_loadu_si512(h), _mm512_loadu_si512(qs), tail, far,
                    _mm512_loadu_si512(qd), qd_on, lead};
}

/* 16 bytes at `at` of each of the nq (1..4) blocks, packed (missing blocks zero). */
static inline __attribute__((always_inline)) __m512i q4_pack(const uint8_t *span, int64_t bytes, int64_t at, int nq) {
#define Q4_LD(j) _mm_loadu_si128((const __m128i *)(const void *)(span + (j) * bytes + at))
  __m512i v = _mm512_zextsi128_si512(Q4_LD(0));
  if (nq > 1) v = _mm512_inserti32x4(v, Q4_LD(1), 1);
  if (nq > 2) v = _mm512_inserti32x4(v, Q4_LD(2), 2);
  if (nq > 3) v = _mm512_inserti32x4(v, Q4_LD(3), 3);
#undef Q4_LD
  return v;
}

/* The activation side of a step: elements 0..15 (*lo) and 16..31 (*hi) of
 * each of the nq blocks at q, 16 bytes per block (missing blocks zero); and
 * the bias term spread over the block's 4 lanes (`init`'s 8 lane sums per
 * block folded in pairs: any split of a block's exact sum gives its sum). */
static inline __attribute__((always_inline)) void q4_act(const int8_t *q, const int32_t *init, int biased, int nq,
                                                         __m512i *lo, __m512i *hi, __m512i *iv) {
  *lo = q4_pack((const uint8_t *)q, 32, 0, nq), *hi = q4_pack((const uint8_t *)q, 32, 16, nq);
  if (!biased) return;
  const __mmask16 m0 = (__mmask16)(nq >= 2 ? 0xFFFFu : 0xFFu), m1 = (__mmask16)(nq == 4 ? 0xFFFFu : nq == 3 ? 0xFFu : 0u);
  const __m512i x = _mm512_maskz_loadu_epi32(m0, init), y = _mm512_maskz_loadu_epi32(m1, init + 16);
  /* lane 4j + i: lanes 8j + i and 8j + 4 + i of (x, y) */
  const __m512i ia = _mm512_set_epi32(27, 26, 25, 24, 19, 18, 17, 16, 11, 10, 9, 8, 3, 2, 1, 0);
  const __m512i ib = _mm512_add_epi32(ia, _mm512_set1_epi32(4));
  *iv = _mm512_add_epi32(_mm512_permutex2var_epi32(x, ia, y), _mm512_permutex2var_epi32(x, ib, y));
}

static inline __m512i q4_load_first(const uint8_t *p, int64_t n) {
  return n >= 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8((__mmask64)((1ull << n) - 1), p);
}

/* A row's first load: span bytes 0 .. n - 1 from span + lead, the `-lead`
 * bytes before the span masked off (never read: the span may start a
 * buffer). */
static inline __m512i q4_load_lead(const uint8_t *span, int lead, int64_t n) {
  if (!lead) return q4_load_first(span, n);
  const int64_t top = n - lead >= 64 ? 64 : n - lead;
  const uint64_t upto = top >= 64 ? ~0ull : (1ull << top) - 1;
  return _mm512_maskz_loadu_epi8((__mmask64)(upto & ~((1ull << -lead) - 1)), span + lead);
}

/* One row's step: its lane sums (lane 4j + i: 8 products of block j) and
 * its words (q4_index). Loads stay inside the nq blocks' span. */
static inline __attribute__((always_inline)) __m512i q4_row(const uint8_t *span, const b32_kind kd, const q4_index *ix,
                                                            int nq, __m512i init, __m512i alo, __m512i ahi,
                                                            __m512i *words) {
  const int64_t bytes = (int64_t)kd.bytes, n = nq * bytes;
  const __m512i x = q4_load_lead(span, ix->lead, n), m = _mm512_set1_epi8(0x0F);
  __m512i q;
  if (nq == 4) { /* the span's first and last 64 bytes carry every word and every qs byte */
    const __m512i y = _mm512_loadu_si512(span + ix->far);
    *words = ix->tail ? _mm512_permutex2var_epi16(x, ix->words, y) : x;
    q = ix->qd_on ? _mm512_permutex2var_epi32(x, ix->qd, y) : _mm512_permutex2var_epi16(x, ix->qs, y);
  } else {
    if (!ix->tail) *words = x;
    else *words = _mm512_permutex2var_epi16(x, ix->words, n > ix->tail ? q4_load_first(span + ix->tail, n - ix->tail) : x);
    q = q4_pack(span, bytes, (int64_t)kd.qs, nq);
  }
  __m512i lo = _mm512_and_si512(q, m), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m);
  if (kd.qh) { /* fifth bits: qh bit i is element i (lo byte i), bit 16 + i element 16 + i (hi byte i) */
    const __m128i hq = _mm512_extracti32x4_epi32(*words, 1);
    const __m512i b5 = _mm512_set1_epi8(0x10);
    lo = _mm512_mask_add_epi8(lo, (__mmask64)_mm_cvtsi128_si64(hq), lo, b5); /* the nibbles leave bit 4 clear */
    hi = _mm512_mask_add_epi8(hi, (__mmask64)_mm_extract_epi64(hq, 1), hi, b5);
  }
  return qk_dpbusd(qk_dpbusd(init, lo, alo), hi, ahi);
}

/* 128-bit lane j of out[j'] <- lane j' of in[j]: the 4 x 4 transpose of
 * 128-bit lanes. */
static inline void q4_lanes_transpose(const __m512i in[4], __m512i out[4]) {
  const __m512i t0 = _mm512_shuffle_i32x4(in[0], in[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t1 = _mm512_shuffle_i32x4(in[0], in[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i t2 = _mm512_shuffle_i32x4(in[2], in[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t3 = _mm512_shuffle_i32x4(in[2], in[3], _MM_SHUFFLE(3, 2, 3, 2));
  out[0] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
  out[1] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
  out[2] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
  out[3] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
}

/* Rows 4i..4i+3's lane sums (s[4]) -> per 128-bit lane j: the 4 rows' exact
 * sums of block j. */
static inline __m512i q4_quad_sums(const __m512i s[4]) {
  const __m512i p01 = q80_pair(s[0], s[1]), p23 = q80_pair(s[2], s[3]);
  return _mm512_add_epi32(_mm512_unpacklo_epi64(p01, p23), _mm512_unpackhi_epi64(p01, p23));
}

/* Rows 4i..4i+3's words (w[4]) -> per 128-bit lane j: the 4 rows' d of
 * block j (words 0..3), then their mins (words 4..7). */
static inline __m512i q4_quad_heads(const __m512i w[4], __m512i quads) {
  const __m512i a = _mm512_permutex2var_epi16(w[0], quads, w[1]), b = _mm512_permutex2var_epi16(w[2], quads, w[3]);
  return _mm512_unpacklo_epi32(a, b);
}

/* The activation side of every four-block step (q4_act), made once per
 * product instead of once per panel: for activation row c and step s, the
 * three vectors (elements 0..15 and 16..31 of each block, the bias term)
 * at steps + (c * nsteps + s) * Q4_STEP_BYTES. */
#define Q4_STEP_BYTES 192
static void q4_steps_arrange(const qk_act *act, int64_t m, int64_t nb, int biased, uint8_t *steps) {
  const int64_t nsteps = (nb + 3) / 4, lanes = act->kpad / 4;
  for (int64_t c = 0; c < m; ++c)
    for (int64_t s = 0; s < nsteps; ++s) {
      const int64_t b = 4 * s;
      __m512i lo, hi, iv = _mm512_setzero_si512();
      q4_act(act->q + c * act->kpad + 32 * b, act->init + c * lanes + 8 * b, biased, (int)(nb - b < 4 ? nb - b : 4),
             &lo, &hi, &iv);
      uint8_t *dst = steps + (size_t)(c * nsteps + s) * Q4_STEP_BYTES;
      _mm512_storeu_si512(dst, lo), _mm512_storeu_si512(dst + 64, hi), _mm512_storeu_si512(dst + 128, iv);
    }
}

/* A step over blocks b .. b + nq - 1 of the 16 rows is two halves. The
 * integer half (av: the step's activation vectors): per four rows, their
 * exact block sums (sums[i]) and their scale words (heads[i]); the panel
 * ahead is fetched as the step goes (b32_ahead). */
static inline __attribute__((always_inline)) void q4_rows(const uint8_t *const rows[16], int64_t b, int nq,
                                                          const uint8_t *av, const q4_index *ix, const b32_kind kd,
                                                          const b32_ahead *ahead, __m512i sums[4],
                                                          __m512i heads[4]) {
  const __m512i alo = _mm512_loadu_si512(av), ahi = _mm512_loadu_si512(av + 64), iv = _mm512_loadu_si512(av + 128);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i s[4], w[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      if (ahead->by_address) b32_fetch_ahead(ahead, b / 4, 4 * i + r, 4 * (int64_t)kd.bytes);
      else b32_fetch_row(ahead, 4 * i + r, b * (int64_t)kd.bytes);
      s[r] = q4_row(rows[4 * i + r] + b * (int64_t)kd.bytes, kd, ix, nq, iv, alo, ahi, &w[r]);
    }
    sums[i] = q4_quad_sums(s);
    heads[i] = q4_quad_heads(w, ix->quads);
  }
}

/* The float half: the blocks' terms, in order, into *f. */
static inline __attribute__((always_inline)) void q4_tail(const __m512i sums[4], const __m512i heads[4], int64_t b,
                                                          int nq, const float *da, const float *ga, const b32_kind kd,
                                                          __m512 *f) {
  __m512i bs[4], hd[4];
  q4_lanes_transpose(sums, bs);
  q4_lanes_transpose(heads, hd);
  /* hd[j]'s qwords: d of rows 0-3, their mins, d of rows 4-7, ... */
  const __m512i split = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
#pragma GCC unroll 4
  for (int j = 0; j < nq; ++j) {
    const __m512i dm = _mm512_permutexvar_epi64(split, hd[j]); /* [16 d | 16 mins] */
    const __m512 d = _mm512_cvtph_ps(_mm512_castsi512_si256(dm));
    *f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(bs[j]), _mm512_mul_ps(d, _mm512_set1_ps(da[8 * (b + j)])), *f);
    if (kd.min) { /* + m * s (Q8_1's s spread over 8 lanes as s / 8) */
      const __m512 m = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dm, 1));
      *f = _mm512_fmadd_ps(m, _mm512_set1_ps(ga[8 * (b + j)] * 8.0f), *f);
    }
  }
}

/* Q8_0's pair step takes its scales the same way: row pairs' d of blocks b
 * and b + 1 (bytes 0 and 34 of the step's span) by one word permute into
 * dword 0 of 128-bit lanes 0 and 1 (q80_heads_index), then unpacks merge 8
 * pairs to the 16 rows' d per block. */
static inline __m512i q80_heads_index(void) {
  uint16_t w[32] = {0};
  w[0] = 0, w[1] = 32, w[8] = Q80_BLOCK / 2, w[9] = 32 + Q80_BLOCK / 2;
  return _mm512_loadu_si512(w);
}
static inline __m512i q80_heads2(const __m512i h[8]) {
  __m512i q[4], r[2];
  for (int i = 0; i < 4; ++i) q[i] = _mm512_unpacklo_epi32(h[2 * i], h[2 * i + 1]); /* 4 rows */
  for (int i = 0; i < 2; ++i) r[i] = _mm512_unpacklo_epi64(q[2 * i], q[2 * i + 1]);  /* 8 rows */
  return _mm512_permutex2var_epi64(r[0], _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), r[1]);
}

/* A Q8_0 pair step's float terms: block b's (sums s0, scales in dd's low
 * half, activation scale da[0]), then block b + 1's when `two`. */
static inline __attribute__((always_inline)) void q80_terms(__m512i s0, __m512i s1, __m512i dd, const float *da,
                                                            int two, __m512 *f) {
  const __m512 d0 = _mm512_cvtph_ps(_mm512_castsi512_si256(dd));
  *f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(d0, _mm512_set1_ps(da[0])), *f);
  if (two) {
    const __m512 d1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dd, 1));
    *f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(d1, _mm512_set1_ps(da[8])), *f);
  }
}

static inline __attribute__((always_inline)) void b32_mv_panels(qk_q80_ctx *x, int64_t p0, int64_t p1,
                                                                const b32_kind kd) {
  const tp_qk_task *t = x->task;
  const qk_act *act = &x->act;
  const int64_t nb = x->nb, kpad = act->kpad, lanes = kpad / 4, bytes = (int64_t)kd.bytes;
  /* Q8_0 keeps the pair step: from memory its four-block span (136 bytes
   * per row, three lines) ran 5-10 % slower than pairs */
  const int quads = !kd.q8;
  const q4_index ix = q4_index_of(kd);
  const __m512i hix = q80_heads_index();
  b32_prefetch_first_panels(t, p0);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const uint8_t *base, *rows[16];
    const int nr = b16_panel(t, n0, &base, rows);
    const b32_ahead ahead = {n0 + 32 < t->n ? base + (size_t)32 * t->row_bytes : NULL,
                             (const uint8_t *)t->w + (size_t)t->n * t->row_bytes,
                             (int64_t)t->row_bytes, quads && x->by_address};
    const b32_ahead none = {NULL, NULL, 0, 0};
    for (int64_t c = 0; c < t->m; ++c) {
      const int8_t *aq = act->q + c * kpad;
      const int32_t *init = act->init + c * lanes;
      const float *da = act->d + c * lanes, *ga = act->g + c * lanes;
      __m512 f = _mm512_setzero_ps();
      int64_t b = 0;
      if (quads) {
        /* four blocks per step, the last one 1..3 when nb is not a multiple
         * of 4; pipelined: a step's rows, then the previous step's scales
         * and float terms (the rows' integer work does not wait on them) */
        const uint8_t *av = x->steps + (size_t)(c * ((nb + 3) / 4)) * Q4_STEP_BYTES;
        const b32_ahead *pf = c == 0 ? &ahead : &none;
        __m512i s0[4], h0[4], s1[4], h1[4];
        /* full steps with nq a constant 4 (a variable one left a compare
         * per row and load in the loop: Q4_0 2048 x 2048 from L2 92.9 ->
         * 86.0 us), then the short last one */
        if (nb >= 4)
          q4_rows(rows, 0, 4, av, &ix, kd, pf, s0, h0);
        else
          q4_rows(rows, 0, (int)nb, av, &ix, kd, &none, s0, h0);
        for (b = 4; b + 4 <= nb; b += 4) {
          av += Q4_STEP_BYTES;
          q4_rows(rows, b, 4, av, &ix, kd, pf, s1, h1);
          q4_tail(s0, h0, b - 4, 4, da, ga, kd, &f);
          for (int i = 0; i < 4; ++i) s0[i] = s1[i], h0[i] = h1[i];
        }
        if (b < nb) {
          av += Q4_STEP_BYTES;
          q4_rows(rows, b, (int)(nb - b), av, &ix, kd, &none, s1, h1);
          q4_tail(s0, h0, b - 4, 4, da, ga, kd, &f);
          q4_tail(s1, h1, b, (int)(nb - b), da, ga, kd, &f);
        } else {
          q4_tail(s0, h0, b - 4, nb < 4 ? (int)nb : 4, da, ga, kd, &f);
        }
        b = nb;
      }
      /* Q8_0: two blocks per step, pipelined as the four-block steps are:
       * a pair's integer sums and scales, then the previous pair's float
       * terms (ps0, ps1, pdd: its sums and scales; pb: its first block, -1:
       * none yet) */
      __m512i ps0 = _mm512_setzero_si512(), ps1 = ps0, pdd = ps0;
      int64_t pb = -1;
      for (; b < nb; b += 2) {
        const int two = b + 1 < nb;
        const b32_ahead *pf = c == 0 ? &ahead : &none;
        const __m512i av = _mm512_loadu_si512(aq + 32 * b), iv = _mm512_loadu_si512(init + 8 * b);
        __m512i u[8], h[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          b32_fetch_row(pf, 2 * i, b * bytes);
          b32_fetch_row(pf, 2 * i + 1, b * bytes);
          const uint8_t *r0 = rows[2 * i] + b * bytes, *r1 = rows[2 * i + 1] + b * bytes;
          u[i] = q80_pair(qk_dpbusd(iv, b32_chunk(r0, two, kd), av), qk_dpbusd(iv, b32_chunk(r1, two, kd), av));
          h[i] = _mm512_permutex2var_epi16(q4_load_first(r0, two ? 64 : bytes), hix, q4_load_first(r1, two ? 64 : bytes));
        }
        if (pb >= 0) q80_terms(ps0, ps1, pdd, da + 8 * pb, 1, &f);
        q80_reduce8(u, &ps0, &ps1);
        pdd = q80_heads2(h); /* [16 rows' d of block b | of block b + 1] */
        pb = b;
      }
      if (pb >= 0) q80_terms(ps0, ps1, pdd, da + 8 * pb, pb + 1 < nb, &f);
      b16_store(t, c, n0, nr, f);
    }
  }
}

static void b32_mv_range_q8_0(void *x, int64_t p0, int64_t p1) { b32_mv_panels(x, p0, p1, B32_Q8_0); }
static void b32_mv_range_q4_0(void *x, int64_t p0, int64_t p1) { b32_mv_panels(x, p0, p1, B32_Q4_0); }
static void b32_mv_range_q5_0(void *x, int64_t p0, int64_t p1) { b32_mv_panels(x, p0, p1, B32_Q5_0); }
static void b32_mv_range_q4_1(void *x, int64_t p0, int64_t p1) { b32_mv_panels(x, p0, p1, B32_Q4_1); }
static void b32_mv_range_q5_1(void *x, int64_t p0, int64_t p1) { b32_mv_panels(x, p0, p1, B32_Q5_1); }
#include "quant/qk_mxfp4_avx512vnni.h"

/* x for weights of t's type (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1 or MXFP4; k % 32
 * == 0) with t's activations prepared, and the matrix-vector range function
 * (used when m < QK_C). 0: out of memory for the activations. */
static int qk_b32_begin(const tp_qk_task *t, qk_q80_ctx *x, tp_qk_range_fn *mv) {
  tp_qk_traits tr;
  tp_qk_traits_of(t->wtype, &tr);
  memset(x, 0, sizeof *x);
  x->task = t;
  x->by_address = tp_cpu_vendor() == TP_CPU_VENDOR_INTEL;
  switch (t->wtype) {
    case TOPOS_Q4_0: x->kind = B32_Q4_0, *mv = b32_mv_range_q4_0; break;
    case TOPOS_Q5_0: x->kind = B32_Q5_0, *mv = b32_mv_range_q5_0; break;
    case TOPOS_Q4_1: x->kind = B32_Q4_1, *mv = b32_mv_range_q4_1; break;
    case TOPOS_Q5_1: x->kind = B32_Q5_1, *mv = b32_mv_range_q5_1; break;
    case TOPOS_MXFP4: x->kind = B32_MXFP4, *mv = b32_mv_range_mxfp4; break;
    default: x->kind = B32_Q8_0, *mv = b32_mv_range_q8_0; break;
  }
  x->nb = t->k / 32;
  if (!qk_act_prepare(&tr, t->a, t->m, t->k, &x->act, t->threads)) return 0;
  if (t->m < QK_C && !x->kind.q8) {
    x->steps = tp_temp_alloc((size_t)(t->m * ((x->nb + 3) / 4)) * Q4_STEP_BYTES);
    if (!x->steps) {
      qk_act_free(&x->act);
      return 0;
    }
    q4_steps_arrange(&x->act, t->m, x->nb, x->kind.bias, x->steps);
  }
  return 1;
}

/* Frees what qk_b32_begin and the ranges took; the status of the product. */
static topos_status qk_b32_end(qk_q80_ctx *x) {
  const tp_qk_task *t = x->task;
  tp_temp_free(x->mem);
  tp_temp_free(x->steps);
  qk_act_free(&x->act);
  if (x->failed) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: block buffers for %lld x %lld", (long long)t->m,
                                (long long)t->k);
  return TOPOS_OK;
}

static topos_status qk_b32_run(const tp_qk_task *t) {
  qk_q80_ctx x;
  tp_qk_range_fn mv;
  if (!qk_b32_begin(t, &x, &mv))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  if (t->m < QK_C) {
    const int64_t panels = (t->n + 15) / 16;
    tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m), mv, &x);
  } else if (q80_tile_prepare(&x)) {
    const int64_t panels = (t->n + Q80_TR - 1) / Q80_TR;
    tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (Q80_TR * t->k * t->m), q80_tile_range, &x);
  } else {
    x.failed = 1;
  }
  return qk_b32_end(&x);
}

#endif
