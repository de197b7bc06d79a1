/* Fast products with AVX2 + FMA + F16C, 8 f32 lanes. The 32-element block
 * types (MXFP4 among them) and the K-quants have their own kernels
 * (qk_block32_avx2.h, qk_ksum_avx2.h: the AVX-512 kernels' definitions and
 * bits); the engine body serves the float weights and what those decline,
 * with maddubs/madd for the integer dots (u8 operands above 127 are split
 * into nibbles so the 16-bit pair sums never saturate). Call only after
 * tp_qk_cpu_avx2(). */
#include <immintrin.h>

#include "quant/qk_internal.h"

#define QK_FN(name) qk_##name##_avx2
#define QK_VB 32
#define QK_VL 8
typedef __m256i qk_vi;
typedef __m256 qk_vf;
#define QK_LOAD_I(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define QK_LOAD_F(p) _mm256_loadu_ps(p)
#define QK_ZERO_I() _mm256_setzero_si256()
#define QK_ZERO_F() _mm256_setzero_ps()
#define QK_DPBUSD(acc, u, s, wide) qk_dpbusd_avx2((acc), (u), (s), (wide))
#define QK_CVT(v) _mm256_cvtepi32_ps(v)
#define QK_MUL(a, b) _mm256_mul_ps((a), (b))
#define QK_FMADD(a, b, c) _mm256_fmadd_ps((a), (b), (c))
/* c - a*b as (-a)*b + c: the same rounding and signed zeros as vfnmadd on
 * hardware, but valgrind 3.19 emulates vfnmadd as -(a*b - c), which turns
 * +0 - (+0) into -0 and broke bit equality with the reference under it */
#define QK_FNMADD(a, b, c) _mm256_fmadd_ps(_mm256_xor_ps((a), _mm256_set1_ps(-0.0f)), (b), (c))
#define QK_EXPAND4(p)                                                              \
  _mm256_permutevar8x32_ps(                                                        \
      _mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)(p)))), \
      _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0))
#define QK_REDUCE(v) qk_reduce_avx2(v)
#define QK_LOADW_F32(p) _mm256_loadu_ps(p)
#define QK_LOADW_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define QK_LOADW_BF16(p)                                                                          \
  _mm256_castsi256_ps(                                                                            \
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))

#define QK_C 3 /* 16 ymm registers: the float tile's 4 x 3 accumulators, 3 activations, a weight */
/* The engine's K tiles without a bias (what qk_ksum_avx2.h declines): vpmaddwd of the vpmaddubsw
 * pair sums with the scale in both halves gives sc * (p0 + p1) = sc * t,
 * the integer vpmaddwd(ones) then vpmaddwd(sc) gave, in two multiplies
 * instead of three (pairs <= 2 * 31 * 127: no overflow) */
#define QK_DOT_SCALED(acc, u, s, sc2) qk_dpwssd_avx2((acc), _mm256_maddubs_epi16((u), (s)), (sc2))
#define QK_EXPAND4_I(p)                                                                   \
  _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)(p))), \
                              _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0))
#define QK_DPBUSD0(u, s) qk_dpbusd_avx2(_mm256_setzero_si256(), (u), (s), 0)
#define QK_DPWSSD(acc, t, s) qk_dpwssd_avx2((acc), (t), (s))
#define QK_STORE_F(p, v) _mm256_storeu_ps((p), (v))
#define QK_SET1(x) _mm256_set1_ps(x)
#define QK_F16_TO_F32(h) _cvtsh_ss(h)
/* f16 rounding of an f32 (the activation blocks' scales): vcvtps2ph with
 * round-to-nearest-even gives the scalar conversion's bits on every input,
 * NaNs included, and its quiet result widens as the scalar widening does */
#define QK_F16_ROUND(x) _cvtsh_ss(_cvtss_sh((x), _MM_FROUND_TO_NEAREST_INT))

static inline float qk_absmax(const float *x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  /* maxps(a, m) is a > m ? a : m: a NaN element leaves its lane as it was,
   * as the reference's maximum does, so no lane holds a NaN and the lanes
   * reduce in any order */
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

#define QK_HAS_FIRST_OF_MAGNITUDE 1
static inline float qk_first_of_magnitude(const float *x, int n, float amax) {
  const __m256 sign = _mm256_set1_ps(-0.0f), v = _mm256_set1_ps(amax);
  for (int i = 0; i < n; i += 8) {
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), v, _CMP_EQ_OQ));
    if (eq) return x[i + __builtin_ctz((unsigned)eq)];
  }
  return amax;
}

/* 8 int32 (each within int8 range) to 8 bytes. */
static inline void qk_store8(int8_t *q, __m256i r) {
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storel_epi64((__m128i *)(void *)q, _mm_packs_epi16(w, w));
}

/* The sum of q comes from the rounded lanes, not from the bytes just
 * stored: reading 32 bytes back over four 8-byte stores missed the store
 * forwarding and stalled each block (a sixth of a decoding product's
 * activation preparation). The same exact integer either way. */
static inline void qk_round_away(const float *x, float id, int8_t *q, int n, int *qsum) {
  const __m256 vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vid);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), half, _CMP_GE_OQ);
    __m256 step = _mm256_and_ps(up, _mm256_or_ps(one, _mm256_and_ps(v, sign)));
    /* a NaN lane (x * id with x NaN, or an infinity times id = 0) is 0, as
     * the reference's rounding makes it; the conversion would give INT32_MIN */
    const __m256i r = _mm256_and_si256(_mm256_cvtps_epi32(_mm256_add_ps(t, step)),
                                       _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
    qk_store8(q + i, r);
    /* the bytes as the saturating packs left them */
    sum = _mm256_add_epi32(sum, _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(-128)), _mm256_set1_epi32(127)));
  }
  if (qsum) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    *qsum = _mm_cvtsi128_si32(h);
  }
}

static inline void qk_round_even(const float *x, float is, int8_t *q, int n) {
  const __m256 vis = _mm256_set1_ps(is);
  const __m256i top = _mm256_set1_epi32(127);
  for (int i = 0; i < n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vis);
    __m256i r = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    r = _mm256_and_si256(r, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q))); /* NaN: 0, as the reference */
    qk_store8(q + i, _mm256_min_epi32(r, top));
  }
}

/* An empty asm that takes v in a vector register and gives it back: the
 * compiler must have the running sum there after each step. Without it GCC
 * 12 reassociates a tile's chain of integer adds into a tree, parking each
 * step's product on the stack (64 stores and loads per Q8_0 block; a third
 * of the tiles' time). */
#define QK_KEEP_IN_REGISTER(v) __asm__("" : "+x"(v))

static inline __m256i qk_dpbusd_avx2(__m256i acc, __m256i u, __m256i s, int wide) {
  const __m256i ones = _mm256_set1_epi16(1);
  if (!wide) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
    QK_KEEP_IN_REGISTER(acc);
    return acc;
  }
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(u, low4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
  __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, s), ones);
  __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, s), _mm256_set1_epi16(16));
  acc = _mm256_add_epi32(acc, _mm256_add_epi32(plo, phi));
  QK_KEEP_IN_REGISTER(acc);
  return acc;
}

static inline __m256i qk_dpwssd_avx2(__m256i acc, __m256i t, __m256i s) {
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(t, s));
  QK_KEEP_IN_REGISTER(acc);
  return acc;
}

static inline float qk_reduce_avx2(__m256 v) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

#define QK_HAS_Q8_0_ROW 1
#include "quant/qk_act_body.h"

/* 8 blocks at a time, as the AVX-512 form takes 16: their maxima first
 * (qk_absmax: the same bits, NaNs included), then the scales as vectors
 * (vdivps and vcvtps2ph round as the scalar forms do), then the rounding,
 * so no block waits on the previous one's max -> divide -> f16 chain (which
 * took most of a decoding product's activation preparation at 576
 * elements). A short last group takes the per-block form. */
static void qk_quant_q8_0_row(const float *x, int64_t k, int8_t *q, float *d, float *g, int q81) {
  const int64_t nb = k / 32;
  int64_t b0 = 0;
  for (; b0 + 8 <= nb; b0 += 8) {
    float amax[8] __attribute__((aligned(32))), id[8] __attribute__((aligned(32)));
    int32_t sums[8] __attribute__((aligned(32))) = {0};
    for (int i = 0; i < 8; ++i) amax[i] = qk_absmax(x + 32 * (b0 + i), 32);
    const __m256 dd = _mm256_div_ps(_mm256_load_ps(amax), _mm256_set1_ps(127.0f));
    const __m256 nz = _mm256_cmp_ps(dd, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    _mm256_store_ps(id, _mm256_and_ps(nz, _mm256_div_ps(_mm256_set1_ps(1.0f), dd)));
    for (int i = 0; i < 8; ++i) qk_round_away(x + 32 * (b0 + i), id[i], q + 32 * (b0 + i), 32, q81 ? &sums[i] : NULL);
    const __m256 dr = _mm256_cvtph_ps(_mm256_cvtps_ph(dd, _MM_FROUND_TO_NEAREST_INT));
    const __m256 sg =
        q81 ? _mm256_mul_ps(_mm256_cvtph_ps(_mm256_cvtps_ph(
                                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_load_si256((const __m256i *)(const void *)sums)), dd),
                                _MM_FROUND_TO_NEAREST_INT)),
                            _mm256_set1_ps(0.125f))
            : _mm256_setzero_ps();
    for (int i = 0; i < 8; ++i) { /* block b0 + i's 8 lanes */
      const __m256i idx = _mm256_set1_epi32(i);
      _mm256_storeu_ps(d + 8 * (b0 + i), _mm256_permutevar8x32_ps(dr, idx));
      _mm256_storeu_ps(g + 8 * (b0 + i), _mm256_permutevar8x32_ps(sg, idx));
    }
  }
  qk_quant_q8_0_blocks(x, b0, nb, q, d, g, q81); /* a short last group */
}

#include "quant/qk_engine_body.h"
#include "quant/qk_block32_avx2.h"
#include "quant/qk_ksum_avx2.h"

#include "quant/qk_multi.h"

/* A product on the block-sum (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, MXFP4) or
 * super-block-sum (Q2_K .. Q6_K) kernels: its context, begun. */
typedef struct {
  union {
    qk_q32_ctx q32;
    qk_ks8_ctx ks8;
  } ctx;
  qk8_base *base;
  tp_qk_range_fn mv, tile;
  int64_t mv_max_m, tile_rows; /* the matrix-vector kernel below mv_max_m; the tile's panel */
} qk8_product;

static int qk8_serves(const tp_qk_task *t) { return qk_q32_serves(t) || qk_ks8_serves(t); }

/* 0: out of memory (nothing left to free). same: NULL, or the quantized
 * activations of a begun product of t's type over t's rows (qk8_begin). */
static int qk8_product_begin(const tp_qk_task *t, qk8_product *p, const qk_act *same) {
  if (qk_q32_serves(t)) {
    p->base = &p->ctx.q32.b, p->mv_max_m = q32_mv_max_m(t->wtype), p->tile_rows = Q32_TR;
    return qk_q32_begin(t, &p->ctx.q32, &p->mv, &p->tile, same);
  }
  p->base = &p->ctx.ks8.b, p->mv_max_m = KS8_MV_MAX_M, p->tile_rows = KS8_TR;
  return qk_ks8_begin(t, &p->ctx.ks8, &p->mv, &p->tile, same);
}

static topos_status qk8_product_run(const tp_qk_task *t) {
  qk8_product p;
  if (!qk8_product_begin(t, &p, NULL))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  if (t->m < p.mv_max_m)
    tp_qk_parallel_for(t->threads, (t->n + 7) / 8, 1 + ((int64_t)1 << 16) / (8 * t->k * t->m), p.mv, &p.ctx);
  else
    tp_qk_parallel_for(t->threads, (t->n + p.tile_rows - 1) / p.tile_rows,
                       1 + ((int64_t)1 << 16) / (p.tile_rows * t->k * t->m), p.tile, &p.ctx);
  return qk8_end(p.base);
}

/* Products of mv_max_m <= m < QK8_MV_SPLIT_M rows as row groups of at most
 * mv_max_m - 1 (tp_qk_row_groups): the tiles' 8 lanes cost 8 rows whatever
 * m is (Zen 4 with AVX-512 masked, one thread, 4 x 2048 x 1408: Q4_K 413
 * us, Q8_0 662, Q4_0 411; 3 rows by the matrix-vector kernels 161, 215,
 * 177; at 6 rows 413 -> 323, 664 -> 433, 416 -> 355). Not Q5_0 / Q5_1,
 * whose matrix-vector kernels gain nothing so (6 x 2048 x 1408 Q5_0 462 ->
 * 635 us). The same bits: each row's are its own on either. */
#define QK8_MV_SPLIT_M 7
static topos_status qk8_run(const tp_qk_task *t) {
  const int64_t mv_max = qk_q32_serves(t) ? q32_mv_max_m(t->wtype) : KS8_MV_MAX_M;
  const int slow_mv = t->wtype == TOPOS_Q5_0 || t->wtype == TOPOS_Q5_1;
  if (t->m >= mv_max && t->m < QK8_MV_SPLIT_M && !slow_mv) return tp_qk_row_groups(t, mv_max - 1, qk8_product_run);
  return qk8_product_run(t);
}

topos_status tp_qk_fast_avx2(const tp_qk_task *task) {
  return qk8_serves(task) ? qk8_run(task) : QK_FN(run)(task);
}

topos_status tp_qk_fast_avx2_multi(const tp_qk_task *tasks, int count) {
  if (count < 1 || count > TP_QK_MULTI_MAX) return TOPOS_UNSUPPORTED;
  for (int i = 0; i < count; ++i)
    if (tasks[i].m != tasks[0].m || tasks[i].m >= Q32_MV_MAX_M || tasks[i].m >= KS8_MV_MAX_M ||
        !qk8_serves(&tasks[i]))
      return TOPOS_UNSUPPORTED;
  qk8_product p[TP_QK_MULTI_MAX];
  qk_multi mu;
  memset(&mu, 0, sizeof mu);
  mu.panel_rows = 8; /* both matrix-vector kernels' */
  topos_status st = TOPOS_OK;
  while (mu.count < count) {
    const tp_qk_task *t = &tasks[mu.count];
    /* parts of one type over the same rows (a layer's q and k, or q, k and
     * v) quantize the activations once: the first such part's are shared */
    const qk_act *same = NULL;
    for (int j = 0; j < mu.count && !same; ++j)
      if (tasks[j].wtype == t->wtype && tasks[j].a == t->a && tasks[j].m == t->m && tasks[j].k == t->k)
        same = &p[j].base->act;
    if (!qk8_product_begin(t, &p[mu.count], same)) {
      st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
      break;
    }
    qk_multi_add(&mu, t, p[mu.count].mv, &p[mu.count].ctx);
  }
  if (st == TOPOS_OK) qk_multi_run(&mu);
  for (int i = 0; i < mu.count; ++i) { /* every begun context ends; the first failure is the status */
    const topos_status e = qk8_end(p[i].base);
    if (st == TOPOS_OK) st = e;
  }
  return st;
}
