/* Q4_K and Q5_K products of the AVX-512 VNNI engine (included by
 * qk_avx512vnni.c after the engine body). A super-block of 256 weights has
 * eight sub-blocks j of 32 with 6-bit integer scales sc_j and mins m_j and
 * two f16 factors d, dmin: w = d * sc_j * q - dmin * m_j (q: 0..15, Q5_K
 * 0..31). The activations are Q8_K: per super-block one f32 da and int8 qa.
 * The result of one output (weight row, activation row) is defined per
 * super-block s, in order from acc = 0, as
 *     T_j = sum over sub-block j of q * qa        B_j = sum over it of qa
 *     isc = sum_j sc_j * T_j                      imn = sum_j m_j * B_j
 *     acc = fma(float(isc), d * da, acc)
 *     acc = acc - float(imn) * (dmin * da)        (one fnmadd)
 * where isc and imn are exact integers (|isc| < 2^25, |imn| < 2^22), so
 * every kernel that forms them, in whatever order, gives the same bits.
 * The engine's K tile (qk_engine_body.h) converted 16 lane sums per
 * super-block and took the min term group by group in floats; here one
 * conversion each per super-block is the whole float work.
 *
 * Two kernels compute it, as for Q8_0 (qk_q8_0_avx512vnni.h):
 *  - the tile (m >= QK_C): lanes are 16 activation rows, repacked once per
 *    product as unsigned qa + 128; a panel of 6 weight rows is decoded to
 *    bytes and their 4-byte groups are broadcast (vpdpbusd's signed
 *    operand). A sub-block's 8 vpdpbusd give T_j + 128 * Q_j (Q_j = sum of
 *    its q), one vpmulld scales it by sc_j into isc, which starts the
 *    super-block at -128 * sum_j sc_j * Q_j; imn is 4 vpdpwssd of the
 *    activations' paired sub-block sums with the paired mins. Per
 *    sub-block and 16 x 6 outputs: 96 vpdpbusd and 12 vpmulld, where the K
 *    tile spent a vpdpwssd (or, wide, half of one) per vpdpbusd.
 *  - the matrix-vector kernel (m < QK_C, decoding): lanes are elements as
 *    in the tile route's fused kernels; each weight row's scaled lane sums
 *    and its min products are folded into one vector, 16 rows are reduced
 *    to their isc and imn by an exact integer transpose-and-add, and the
 *    float steps run 16 rows at a time. */
#ifndef TP_QUANT_QK_K45_AVX512VNNI_H
#define TP_QUANT_QK_K45_AVX512VNNI_H

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define K45_TR 6 /* weight rows per tile */

typedef struct {
  const tp_qk_task *task;
  qk_act act;
  int five;           /* Q5_K */
  int64_t nsb, bb;    /* super-blocks per row; bytes per super-block */
  int64_t groups;     /* tile: groups of 16 activation rows */
  uint8_t *au;        /* tile: [group][sb][64 steps][16 rows][4] = qa + 128 */
  float *da;          /* tile: [group][sb][16] */
  int32_t *bp;        /* tile: [group][sb][pair p][16] = B_2p (low half) | B_2p+1 << 16 */
  int32_t *bs;        /* matrix-vector: [row][16 * sb + g] = sum of qa over 16-element group g */
  void *mem;
  volatile int failed;
} qk_k45_ctx;

/* ---- tile ---------------------------------------------------------------- */

/* One decoded panel row: q in element order, per super-block the 8 scales,
 * the 4 paired mins, d, dmin and the correction -128 * sum_j sc_j * Q_j. */
typedef struct {
  uint8_t *q;
  int32_t *sc, *mnp, *corr;
  float *d, *dmin;
} k45_row;

static size_t k45_row_bytes(int64_t nsb) {
  /* q, then sc (8), mnp (4), corr (1), d (1), dmin (1) per super-block; q
   * rows a cache line longer than 256 * nsb (L1 sets, as in the engine) */
  return (size_t)nsb * (256 + 15 * 4) + 64;
}

static void k45_decode_row(const qk_k45_ctx *x, const uint8_t *src, uint8_t *mem, k45_row *out) {
  const int64_t nsb = x->nsb;
  out->q = mem;
  out->sc = (int32_t *)(void *)(mem + nsb * 256 + 64);
  out->mnp = out->sc + 8 * nsb;
  out->corr = out->mnp + 4 * nsb;
  out->d = (float *)(void *)(out->corr + nsb);
  out->dmin = out->d + nsb;
  const __m256i nib = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t *blk = src + sb * x->bb, *qs = blk + (x->five ? 48 : 16);
    uint8_t *q = out->q + 256 * sb;
    out->d[sb] = qk_f16(blk);
    out->dmin[sb] = qk_f16(blk + 2);
    /* q: 32 bytes c hold sub-block 2c in their low nibbles, 2c + 1 in their
     * high nibbles; Q5_K's bit 4 of sub-block j is bit j of qh[l] */
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16));
    int32_t qsum[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
      __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
      if (x->five) { /* bit j to bit 4: a 16-bit shift right by j, then left by 4, masked per byte */
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), 4), b4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), 4), b4));
      }
      _mm256_storeu_si256((__m256i *)(void *)(q + 64 * c), lo);
      _mm256_storeu_si256((__m256i *)(void *)(q + 64 * c + 32), hi);
      const __m256i sl = _mm256_sad_epu8(lo, _mm256_setzero_si256()), sh = _mm256_sad_epu8(hi, _mm256_setzero_si256());
      const __m128i hl = _mm_add_epi64(_mm256_castsi256_si128(sl), _mm256_extracti128_si256(sl, 1));
      const __m128i hh = _mm_add_epi64(_mm256_castsi256_si128(sh), _mm256_extracti128_si256(sh, 1));
      qsum[2 * c] = (int32_t)(_mm_cvtsi128_si64(hl) + _mm_extract_epi64(hl, 1));
      qsum[2 * c + 1] = (int32_t)(_mm_cvtsi128_si64(hh) + _mm_extract_epi64(hh, 1));
    }
    int mins[8];
    int64_t corr = 0;
    for (int j = 0; j < 8; ++j) {
      int sc;
      qk_scale_min_k4(j, blk + 4, &sc, &mins[j]);
      out->sc[8 * sb + j] = sc;
      corr += (int64_t)sc * qsum[j];
    }
    for (int p = 0; p < 4; ++p) out->mnp[4 * sb + p] = mins[2 * p] | mins[2 * p + 1] << 16;
    out->corr[sb] = (int32_t)(-128 * corr);
  }
}

static inline __m512i k45_dpbusd0_bcast(__m512i u, const uint8_t *p) {
  __m512i acc;
  __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2%{1to16%}, %1, %0"
          : "=&v"(acc)
          : "v"(u), "m"(*(const q80_dword *)(const void *)p));
  return acc;
}

/* K45_TR rows x activation groups g0, g0 + 1 (ng of them); f[r][g] in
 * memory: touched once per super-block, the registers hold the integers. */
static void k45_tile(const qk_k45_ctx *x, const k45_row *rw, int64_t g0, int ng, float f[K45_TR][2][16]) {
  const int64_t nsb = x->nsb;
  memset(f, 0, sizeof(float) * K45_TR * 2 * 16);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isc[K45_TR][2];
#pragma GCC unroll 6
    for (int r = 0; r < K45_TR; ++r) isc[r][0] = isc[r][1] = _mm512_set1_epi32(rw[r].corr[sb]);
    const uint8_t *a0 = x->au + (size_t)(g0 * nsb + sb) * 64 * 64;
    const uint8_t *a1 = ng > 1 ? a0 + (size_t)nsb * 64 * 64 : a0;
    for (int j = 0; j < 8; ++j) {
      __m512i t[K45_TR][2];
      {
        const __m512i u0 = _mm512_loadu_si512(a0 + 64 * 8 * j), u1 = _mm512_loadu_si512(a1 + 64 * 8 * j);
#pragma GCC unroll 6
        for (int r = 0; r < K45_TR; ++r) {
          const uint8_t *w = rw[r].q + 256 * sb + 32 * j;
          t[r][0] = k45_dpbusd0_bcast(u0, w);
          t[r][1] = k45_dpbusd0_bcast(u1, w);
        }
      }
#pragma GCC unroll 7
      for (int s = 1; s < 8; ++s) {
        const __m512i u0 = _mm512_loadu_si512(a0 + 64 * (8 * j + s));
        const __m512i u1 = _mm512_loadu_si512(a1 + 64 * (8 * j + s));
#pragma GCC unroll 6
        for (int r = 0; r < K45_TR; ++r) {
          const uint8_t *w = rw[r].q + 256 * sb + 32 * j + 4 * s;
          t[r][0] = q80_dpbusd_bcast(t[r][0], u0, w);
          t[r][1] = q80_dpbusd_bcast(t[r][1], u1, w);
        }
      }
#pragma GCC unroll 6
      for (int r = 0; r < K45_TR; ++r) {
        const __m512i sc = _mm512_set1_epi32(rw[r].sc[8 * sb + j]);
        isc[r][0] = _mm512_add_epi32(isc[r][0], _mm512_mullo_epi32(t[r][0], sc));
        isc[r][1] = _mm512_add_epi32(isc[r][1], _mm512_mullo_epi32(t[r][1], sc));
      }
    }
    for (int g = 0; g < ng; ++g) {
      const int64_t cell = (g0 + g) * nsb + sb;
      const __m512 da = _mm512_loadu_ps(x->da + cell * 16);
      const int32_t *bp = x->bp + cell * 64;
#pragma GCC unroll 6
      for (int r = 0; r < K45_TR; ++r) {
        __m512i imn = _mm512_setzero_si512();
        for (int p = 0; p < 4; ++p)
          imn = qk_dpwssd(imn, _mm512_loadu_si512(bp + 16 * p), _mm512_set1_epi32(rw[r].mnp[4 * sb + p]));
        __m512 acc = _mm512_loadu_ps(f[r][g]);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc[r][g]), _mm512_mul_ps(_mm512_set1_ps(rw[r].d[sb]), da), acc);
        acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imn), _mm512_mul_ps(_mm512_set1_ps(rw[r].dmin[sb]), da), acc);
        _mm512_storeu_ps(f[r][g], acc);
      }
    }
  }
}

static void k45_tile_range(void *vctx, int64_t p0, int64_t p1) {
  qk_k45_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  const size_t rb = k45_row_bytes(x->nsb);
  uint8_t *mem = aligned_alloc(64, (rb * K45_TR + 63) / 64 * 64);
  if (!mem) {
    x->failed = 1;
    return;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * K45_TR;
    const int nr = (int)(t->n - n0 < K45_TR ? t->n - n0 : K45_TR);
    k45_row rw[K45_TR];
    for (int r = 0; r < K45_TR; ++r) {
      if (r >= nr) { /* a short last panel repeats its last row (results dropped) */
        rw[r] = rw[nr - 1];
        continue;
      }
      const uint8_t *src = (const uint8_t *)t->w + (size_t)(n0 + r) * t->row_bytes;
      if (p + 1 < p1) /* the same row of the next panel, for its decode */
        for (size_t off = 0; off < t->row_bytes; off += 64)
          __builtin_prefetch(src + (size_t)K45_TR * t->row_bytes + off, 0, 2);
      k45_decode_row(x, src, mem + (size_t)r * rb, &rw[r]);
    }
    for (int64_t g0 = 0; g0 < x->groups; g0 += 2) {
      const int ng = x->groups - g0 >= 2 ? 2 : 1;
      float f[K45_TR][2][16] __attribute__((aligned(64)));
      k45_tile(x, rw, g0, ng, f);
      for (int g = 0; g < ng; ++g) {
        const int64_t c0 = (g0 + g) * 16;
        const int used = (int)(t->m - c0 < 16 ? t->m - c0 : 16);
        for (int c = 0; c < used; ++c)
          for (int r = 0; r < nr; ++r)
            t->out[(c0 + c) * t->n + n0 + r] = t->bias ? f[r][g][c] + t->bias[n0 + r] : f[r][g][c];
      }
    }
  }
  free(mem);
}

/* The activations as the tile reads them (rows past m: qa = 0), a group of
 * 16 rows per call (qk_lanes_repack); a sub-block's sum of qa is psadbw's
 * sum of qa + 128 less 32 * 128. */
static void k45_tile_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_k45_ctx *x = vctx;
  const qk_act *act = &x->act;
  const int64_t m = act->m, nsb = x->nsb, kpad = act->kpad, dstride = kpad / 256 + 1;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t used = m - 16 * g < 16 ? m - 16 * g : 16;
    const int8_t *q = act->q + 16 * g * kpad;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const size_t cell = (size_t)(g * nsb + sb);
      qk_lanes_repack(q, kpad, used, 256 * sb, 64, x->au + cell * 64 * 64);
      int32_t *bp = x->bp + cell * 64;
      float *da = x->da + cell * 16;
      for (int l = 0; l < 16; ++l) {
        if (l >= used) {
          da[l] = 0.0f;
          for (int p = 0; p < 4; ++p) bp[16 * p + l] = 0;
          continue;
        }
        const int8_t *row = q + l * kpad + 256 * sb;
        da[l] = act->dsb[(16 * g + l) * dstride + sb];
        int32_t b[8];
        for (int j = 0; j < 8; ++j) {
          const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(row + 32 * j)),
                                             _mm256_set1_epi8((char)0x80));
          const __m256i sad = _mm256_sad_epu8(u, _mm256_setzero_si256());
          const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(sad), _mm256_extracti128_si256(sad, 1));
          b[j] = (int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 32 * 128;
        }
        for (int p = 0; p < 4; ++p)
          bp[16 * p + l] = (int32_t)((uint32_t)(uint16_t)b[2 * p] | (uint32_t)b[2 * p + 1] << 16);
      }
    }
  }
}

static int k45_tile_prepare(qk_k45_ctx *x) {
  x->groups = (x->act.m + 15) / 16;
  const size_t cells = (size_t)(x->groups * x->nsb);
  x->mem = malloc(cells * (64 * 64 + 16 * sizeof(float) + 64 * sizeof(int32_t)));
  if (!x->mem) return 0;
  x->au = (uint8_t *)x->mem;
  x->da = (float *)(void *)(x->au + cells * 64 * 64);
  x->bp = (int32_t *)(void *)(x->da + cells * 16);
  tp_qk_parallel_for(x->task->threads, x->groups, 1, k45_tile_prepare_groups, x);
  return 1;
}

/* ---- matrix-vector: 16 weight rows per panel, lanes are rows ------------ */

/* One row's super-block: lanes 0..7 sum to isc, lanes 8..15 to imn. The
 * integer steps are the fused kernel's (the activations in nibble order,
 * mv_q4k_prepare); min products m_j * (16-element group sums) by vpmaddwd
 * (m in a lane's low half, zero above: the sums' sign bits meet zeros). */
MV_INLINE __m512i k45_row_sums(const uint8_t *blk, const int8_t *a, __m512i bsv, int five) {
  const size_t qs_at = five ? 48 : 16;
  const __m512i s02 = MV_PAIR(0, 2), s13 = MV_PAIR(1, 3), s46 = MV_PAIR(4, 6), s57 = MV_PAIR(5, 7);
  const __m512i mins = _mm512_set_epi8(MV_B(15), MV_B(15), MV_B(14), MV_B(14), MV_B(13), MV_B(13), MV_B(12),
                                       MV_B(12), MV_B(11), MV_B(11), MV_B(10), MV_B(10), MV_B(9), MV_B(9),
                                       MV_B(8), MV_B(8));
  const __m512i nib = mv_nib_mask();
  const __m512i sm = mv_q4k_scales(blk);
  const __m512i x01 = _mm512_loadu_si512(blk + qs_at), x23 = _mm512_loadu_si512(blk + qs_at + 64);
  __m512i q0 = _mm512_and_si512(x01, nib), q1 = _mm512_and_si512(_mm512_srli_epi16(x01, 4), nib);
  __m512i q2 = _mm512_and_si512(x23, nib), q3 = _mm512_and_si512(_mm512_srli_epi16(x23, 4), nib);
  if (five) mv_q5k_fifth_bits(blk, &q0, &q1, &q2, &q3);
  const __m512i tl01 = qk_dpbusd0(q0, _mm512_loadu_si512(a));
  const __m512i th01 = qk_dpbusd0(q1, _mm512_loadu_si512(a + 64));
  const __m512i tl23 = qk_dpbusd0(q2, _mm512_loadu_si512(a + 128));
  const __m512i th23 = qk_dpbusd0(q3, _mm512_loadu_si512(a + 192));
  const __m512i lo = qk_dpwssd(_mm512_madd_epi16(tl01, _mm512_shuffle_epi8(sm, s02)), tl23, _mm512_shuffle_epi8(sm, s46));
  const __m512i hi = qk_dpwssd(_mm512_madd_epi16(th01, _mm512_shuffle_epi8(sm, s13)), th23, _mm512_shuffle_epi8(sm, s57));
  const __m512i isum = _mm512_add_epi32(lo, hi);
  const __m512i mp = _mm512_madd_epi16(_mm512_shuffle_epi8(sm, mins), bsv);
  return _mm512_add_epi32(_mm512_shuffle_i64x2(isum, mp, _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_i64x2(isum, mp, _MM_SHUFFLE(3, 2, 3, 2)));
}

static void k45_mv_range(void *vctx, int64_t p0, int64_t p1) {
  qk_k45_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  const qk_act *act = &x->act;
  const int64_t nsb = x->nsb, bb = x->bb, kpad = act->kpad, dstride = kpad / 256 + 1;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
    const uint8_t *base = (const uint8_t *)t->w + (size_t)n0 * t->row_bytes;
    const uint8_t *rows[16];
    int32_t off[16];
    for (int r = 0; r < 16; ++r) {
      off[r] = (int32_t)((r < nr ? r : nr - 1) * (int64_t)t->row_bytes);
      rows[r] = base + off[r];
    }
    const __m512i offs = _mm512_loadu_si512(off);
    /* the panel two ahead, a super-block of each row per step */
    const uint8_t *pf = p + 2 < p1 ? base + (size_t)32 * t->row_bytes : NULL;
    const int pf_rows = pf ? (int)(t->n - n0 - 32 < 16 ? t->n - n0 - 32 : 16) : 0;
    for (int64_t c = 0; c < t->m; ++c) {
      const int8_t *aq = act->qn + c * kpad;
      const int32_t *bs = x->bs + c * nsb * 16;
      const float *dsb = act->dsb + c * dstride;
      __m512 f = _mm512_setzero_ps();
      for (int64_t sb = 0; sb < nsb; ++sb) {
        if (c == 0 && pf)
          for (int r = 0; r < pf_rows; ++r) {
            const char *q = (const char *)pf + (size_t)r * t->row_bytes + sb * bb;
            for (int64_t o = 0; o < bb; o += 64) _mm_prefetch(q + o, _MM_HINT_T1);
          }
        const __m512i bsv = _mm512_loadu_si512(bs + 16 * sb);
        __m512i v[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) v[r] = k45_row_sums(rows[r] + sb * bb, aq + 256 * sb, bsv, x->five);
        __m512i isc, imn;
        q80_reduce16(v, &isc, &imn);
        /* d (low half) and dmin (high half) of the 16 rows' super-blocks */
        const __m512i dd = _mm512_i32gather_epi32(_mm512_add_epi32(offs, _mm512_set1_epi32((int32_t)(sb * bb))), base, 1);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
        const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
        const __m512 da = _mm512_set1_ps(dsb[sb]);
        f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc), _mm512_mul_ps(d, da), f);
        f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imn), _mm512_mul_ps(dmin, da), f);
      }
      float lane[16];
      _mm512_storeu_ps(lane, f);
      for (int r = 0; r < nr; ++r) t->out[c * t->n + n0 + r] = t->bias ? lane[r] + t->bias[n0 + r] : lane[r];
    }
  }
}

/* The 16-element group sums of the activations, for the min products. */
static int k45_mv_prepare(qk_k45_ctx *x) {
  const qk_act *act = &x->act;
  x->mem = malloc((size_t)(act->m * x->nsb * 16) * sizeof(int32_t));
  if (!x->mem || !mv_q4k_prepare(&x->act)) return 0;
  x->bs = x->mem;
  for (int64_t c = 0; c < act->m; ++c)
    for (int64_t g = 0; g < x->nsb * 16; ++g) {
      int32_t s = 0;
      for (int i = 0; i < 16; ++i) s += act->q[c * act->kpad + 16 * g + i];
      x->bs[c * x->nsb * 16 + g] = s;
    }
  return 1;
}

static topos_status qk_k45_run(const tp_qk_task *t) {
  tp_qk_traits tr;
  tp_qk_traits_of(t->wtype, &tr);
  tr.has_min = 0; /* the min term is taken in integers: no float group sums (act.bf) */
  qk_k45_ctx x;
  memset(&x, 0, sizeof x);
  x.task = t;
  x.five = t->wtype == TOPOS_Q5_K;
  x.nsb = t->k / 256;
  x.bb = x.five ? 176 : 144;
  if (!qk_act_prepare(&tr, t->a, t->m, t->k, &x.act, t->threads))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  if (t->m < QK_C) {
    if (k45_mv_prepare(&x)) {
      const int64_t panels = (t->n + 15) / 16;
      tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m), k45_mv_range, &x);
    } else {
      x.failed = 1;
    }
  } else if (k45_tile_prepare(&x)) {
    const int64_t panels = (t->n + K45_TR - 1) / K45_TR;
    tp_qk_parallel_for(t->threads, panels, 1 + ((int64_t)1 << 16) / (K45_TR * t->k * t->m), k45_tile_range, &x);
  } else {
    x.failed = 1;
  }
  free(x.mem);
  qk_act_free(&x.act);
  if (x.failed)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: %s buffers for %lld x %lld", x.five ? "Q5_K" : "Q4_K",
                   (long long)t->m, (long long)t->k);
  return TOPOS_OK;
}

#endif
