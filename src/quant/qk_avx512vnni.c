/* Fast quantized products with AVX-512 (F/BW/DQ/VL) + VNNI: vpdpbusd for
 * the integer dots, 16 f32 lanes. Call only after tp_qk_cpu_avx512vnni(). */
#include <immintrin.h>

#include "quant/qk_internal.h"

#define QK_FN(name) qk_##name##_avx512vnni
#define QK_VB 64
#define QK_VL 16
typedef __m512i qk_vi;
typedef __m512 qk_vf;
#define QK_LOAD_I(p) _mm512_loadu_si512((const void *)(p))
#define QK_LOAD_F(p) _mm512_loadu_ps(p)
#define QK_ZERO_I() _mm512_setzero_si512()
#define QK_ZERO_F() _mm512_setzero_ps()
#define QK_DPBUSD(acc, u, s, wide) ((void)(wide), qk_dpbusd((acc), (u), (s)))
#define QK_CVT(v) _mm512_cvtepi32_ps(v)
#define QK_MUL(a, b) _mm512_mul_ps((a), (b))
#define QK_FMADD(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define QK_FNMADD(a, b, c) _mm512_fnmadd_ps((a), (b), (c))
#define QK_EXPAND4(p)                                                                          \
  _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),     \
                        _mm512_castps128_ps512(_mm_loadu_ps(p)))
#define QK_REDUCE(v) qk_reduce_avx512(v)
#define QK_LOADW_F32(p) _mm512_loadu_ps(p)
#define QK_LOADW_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define QK_LOADW_BF16(p)                                                                          \
  _mm512_castsi512_ps(                                                                            \
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))

#define QK_C 4
#define QK_EXPAND4_I(p)                                                                        \
  _mm512_permutexvar_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),  \
                           _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(p))))
#define QK_DPBUSD0(u, s) qk_dpbusd0((u), (s))
#define QK_DPWSSD(acc, t, s) qk_dpwssd((acc), (t), (s))
#define QK_STORE_F(p, v) _mm512_storeu_ps((p), (v))
#define QK_SET1(x) _mm512_set1_ps(x)
#define QK_F16_TO_F32(h) _cvtsh_ss(h)
/* f16 rounding of an f32 (the activation blocks' scales): vcvtps2ph with
 * round-to-nearest-even gives the scalar conversion's bits on every input,
 * NaNs included, and its quiet result widens as the scalar widening does */
#define QK_F16_ROUND(x) _cvtsh_ss(_cvtss_sh((x), _MM_FROUND_TO_NEAREST_INT))

/* The VNNI accumulations as inline asm with the accumulator tied in place:
 * GCC 12 copies every intrinsic accumulator once per loop iteration. Same
 * instructions as _mm512_dpbusd_epi32 / _mm512_dpwssd_epi32. */
static inline __m512i qk_dpbusd(__m512i acc, __m512i u, __m512i s) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(s));
  return acc;
}
/* vpdpbusd into a fresh zero (a zeroing idiom costs no execution port; a
 * register copy of a zero vector does). */
static inline __m512i qk_dpbusd0(__m512i u, __m512i s) {
  __m512i acc;
  __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(acc) : "v"(u), "vm"(s));
  return acc;
}
static inline __m512i qk_dpwssd(__m512i acc, __m512i a, __m512i b) {
  __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "vm"(b));
  return acc;
}

static inline float qk_absmax(const float *x, int n) {
  __m512 m = _mm512_setzero_ps();
  /* maxps(a, m) is a > m ? a : m: a NaN element leaves its lane as it was
   * (the reference's maximum), so no lane holds a NaN and the reduction's
   * order does not matter */
  for (int i = 0; i < n; i += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
  return _mm512_reduce_max_ps(m);
}

#define QK_HAS_FIRST_OF_MAGNITUDE 1
static inline float qk_first_of_magnitude(const float *x, int n, float amax) {
  const __m512 v = _mm512_set1_ps(amax);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 eq = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), v, _CMP_EQ_OQ);
    if (eq) return x[i + __builtin_ctz(eq)];
  }
  return amax;
}

#define QK_HAS_LANE_SUMS 1
static inline void qk_lane_sums(const int8_t *q, int64_t lanes, int32_t mul, int32_t *out) {
  const __m512i ones = _mm512_set1_epi8(1), vm = _mm512_set1_epi32(mul);
  int64_t l = 0;
  for (; l + 16 <= lanes; l += 16)
    _mm512_storeu_si512(out + l, _mm512_mullo_epi32(vm, qk_dpbusd0(ones, _mm512_loadu_si512(q + 4 * l))));
  for (; l < lanes; ++l) out[l] = mul * (q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
}

/* roundf as trunc(v + copysign(0.5 - 2^-25, v)): the sum rounds up past
 * the next integer exactly when v's fraction is >= 1/2 (checked against
 * roundf on every non-NaN float; NaN converts to INT_MIN either way), so a
 * truncating conversion finishes it — five operations per 16 elements
 * where truncate, compare and step took eight. The sum of q comes from the
 * registers (reading q back right after these 16-byte stores would stall
 * on store forwarding). */
static inline void qk_round_away(const float *x, float id, int8_t *q, int n, int *qsum) {
  const __m512 vid = _mm512_set1_ps(id), below_half = _mm512_set1_ps(0x1.fffffep-2f);
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < n; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vid);
    const __m512 bump = _mm512_or_ps(below_half, _mm512_and_ps(v, _mm512_set1_ps(-0.0f))); /* with v's sign */
    /* a NaN lane is 0, as the reference's rounding makes it (the conversion gives INT32_MIN) */
    const __m512i r = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q),
                                             _mm512_cvtt_roundps_epi32(_mm512_add_ps(v, bump), _MM_FROUND_NO_EXC));
    _mm_storeu_si128((__m128i *)(void *)(q + i), _mm512_cvtsepi32_epi8(r));
    if (qsum) /* the stored bytes: int8 saturation */
      sum = _mm512_add_epi32(sum, _mm512_max_epi32(_mm512_min_epi32(r, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128)));
  }
  if (qsum) *qsum = _mm512_reduce_add_epi32(sum);
}

static inline void qk_round_even(const float *x, float is, int8_t *q, int n) {
  const __m512 vis = _mm512_set1_ps(is);
  const __m512i top = _mm512_set1_epi32(127);
  for (int i = 0; i < n; i += 16) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vis);
    __m512i r = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), top);
    r = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), r); /* NaN: 0, as the reference */
    _mm_storeu_si128((__m128i *)(void *)(q + i), _mm512_cvtsepi32_epi8(r));
  }
}

/* Halves, then quarters ... : a fixed tree, the same on every call. */
static inline float qk_reduce_avx512(__m512 v) {
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

/* 2^(e - 128) of 16 MXFP4 exponents (dwords 0..255): tp_e8m0_half's bits
 * (quant/mxfp4.h), for the AMX tiles and the block-sum kernels. */
static inline __m512 qk_e8m0_half16(__m512i e) {
  const __mmask16 normal = _mm512_cmpge_epu32_mask(e, _mm512_set1_epi32(2));
  const __m512i denormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e); /* e = 0, 1 */
  return _mm512_castsi512_ps(_mm512_mask_slli_epi32(denormal, normal, _mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23));
}

#define QK_HAS_Q8_0_ROW 1
#include "quant/qk_act_body.h"

/* 16 blocks at a time: their maxima first (qk_absmax, so the same bits,
 * NaNs included), then the scales as vectors (vdivps and vcvtps2ph round as
 * the scalar forms do), then the rounding; so no block waits on the
 * previous one's max -> divide -> round chain, and the lane copies of the
 * scales are 8 permutes. A short last group takes the per-block form. */
static void qk_quant_q8_0_row(const float *x, int64_t k, int8_t *q, float *d, float *g, int q81) {
  const int64_t nb = k / 32;
  int64_t b0 = 0;
  for (; b0 + 16 <= nb; b0 += 16) {
    __m512 amax = _mm512_setzero_ps();
    for (int i = 0; i < 16; ++i)
      amax = _mm512_mask_broadcastss_ps(amax, (__mmask16)(1u << i), _mm_set_ss(qk_absmax(x + 32 * (b0 + i), 32)));
    const __m512 dd = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    const __mmask16 nz = _mm512_cmp_ps_mask(dd, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    float id[16] __attribute__((aligned(64)));
    _mm512_store_ps(id, _mm512_maskz_div_ps(nz, _mm512_set1_ps(1.0f), dd));
    __m512i sums = _mm512_setzero_si512();
    for (int i = 0; i < 16; ++i) {
      int sum = 0;
      qk_round_away(x + 32 * (b0 + i), id[i], q + 32 * (b0 + i), 32, q81 ? &sum : NULL);
      if (q81) sums = _mm512_mask_set1_epi32(sums, (__mmask16)(1u << i), sum);
    }
    const __m512 dr = _mm512_cvtph_ps(_mm512_cvtps_ph(dd, _MM_FROUND_TO_NEAREST_INT));
    const __m512 s = q81 ? _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), dd),
                                                                           _MM_FROUND_TO_NEAREST_INT)),
                                         _mm512_set1_ps(0.125f))
                         : _mm512_setzero_ps();
    const __m512i pair = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int o = 0; o < 8; ++o) { /* blocks 2o and 2o + 1, 8 lanes each */
      const __m512i idx = _mm512_add_epi32(pair, _mm512_set1_epi32(2 * o));
      _mm512_storeu_ps(d + 8 * b0 + 16 * o, _mm512_permutexvar_ps(idx, dr));
      _mm512_storeu_ps(g + 8 * b0 + 16 * o, _mm512_permutexvar_ps(idx, s));
    }
  }
  qk_quant_q8_0_blocks(x, b0, nb, q, d, g, q81); /* a short last group */
}
#include "quant/qk_matvec_avx512vnni.h"
#define QK_KTILE_WIDE_H "quant/qk_ktile_wide_avx512vnni.h"
#include "quant/qk_engine_body.h"
#include "quant/qk_amx_body.h"
#include "quant/qk_amx_float.h"
#include "quant/qk_block32_avx512vnni.h"
#include "quant/qk_ksum_avx512vnni.h"
#include "quant/qk_amx_ksum.h"
#include "quant/qk_multi.h"

/* Which kernel family serves a task below AMX's m: the block-sum kernels
 * for the 32-element block types, the super-block-sum kernels for the K
 * types (both repack prompt activations with a gather of 16 rows at
 * int32 offsets, qk_lanes_repack: rows up to INT32_MAX / 16 elements), or
 * the engine body. */
typedef enum { QK_KERNEL_B32, QK_KERNEL_KS, QK_KERNEL_ENGINE } qk_kernel;

static qk_kernel qk_kernel_of(const tp_qk_task *task) {
  const int gatherable = task->k <= INT32_MAX / 16 - 256;
  const topos_dtype w = task->wtype;
  if ((w == TOPOS_Q8_0 || w == TOPOS_Q4_0 || w == TOPOS_Q5_0 || w == TOPOS_Q4_1 || w == TOPOS_Q5_1 ||
       w == TOPOS_MXFP4) && task->k % 32 == 0 && gatherable)
    return QK_KERNEL_B32;
  if ((w == TOPOS_Q4_K || w == TOPOS_Q5_K || w == TOPOS_Q6_K || w == TOPOS_Q2_K || w == TOPOS_Q3_K) &&
      task->k % 256 == 0 && gatherable)
    return QK_KERNEL_KS;
  return QK_KERNEL_ENGINE;
}

/* Products of QK_C <= m < QK_MV_SPLIT_M rows run as row groups of at most
 * QK_C - 1 through the matrix-vector kernels: the prompt tiles compute 16
 * activation lanes whatever m is, so a 4-row product costs what a 16-row
 * one does (Zen 4, one thread, 4 x 2048 x 1408: Q4_K 700 us, Q8_0 624; 3
 * rows by the matrix-vector kernels 146 and 188). A mixture's prompt meets
 * such products in every expert (64 tokens over 64 experts, 6 each: ~6
 * rows). From 9 rows (3 groups) Q5_0 and MXFP4 products were slower that
 * way (9 x 2048 x 1408: 864 / 704 us against 743 / 679); m = 4, 6: every
 * type 1.5-4.2x faster. Each row gets the same bits either way
 * (qmatmul_small_m_same_bits_as_tiles). */
#define QK_MV_SPLIT_M 9

topos_status tp_qk_fast_avx512vnni(const tp_qk_task *task) {
  tp_qk_traits tr;
  if (task->m >= QK_AMX_MIN_M && qk_kernel_of(task) == QK_KERNEL_KS && tp_qk_amx_usable())
    return qk_aks_run(task);
  if (task->m >= QK_AMX_MIN_M && tp_qk_amx_usable() && tp_qk_traits_of(task->wtype, &tr) &&
      tr.act != TP_QK_ACT_F32)
    return qk_amx_run(task, &tr);
  if (task->m >= TP_QK_AMXF_MIN_M && (task->wtype == TOPOS_F16 || task->wtype == TOPOS_BF16) &&
      tp_qk_amx_bf16_usable())
    return qk_amxf_run(task);
  const int split = task->m >= QK_C && task->m < QK_MV_SPLIT_M;
  switch (qk_kernel_of(task)) {
    case QK_KERNEL_B32: return split ? tp_qk_row_groups(task, QK_C - 1, qk_b32_run) : qk_b32_run(task);
    case QK_KERNEL_KS: return split ? tp_qk_row_groups(task, QK_C - 1, qk_ks_run) : qk_ks_run(task);
    default: return QK_FN(run)(task);
  }
}

/* ---- several matrix-vector products as one dispatch (qk_multi.h) -------- */
topos_status tp_qk_fast_avx512vnni_multi(const tp_qk_task *tasks, int count) {
  if (count < 1 || count > TP_QK_MULTI_MAX) return TOPOS_UNSUPPORTED;
  for (int i = 0; i < count; ++i)
    if (tasks[i].m != tasks[0].m || tasks[i].m >= QK_C || tasks[i].m >= QK_AMX_MIN_M ||
        qk_kernel_of(&tasks[i]) == QK_KERNEL_ENGINE)
      return TOPOS_UNSUPPORTED;
  union {
    qk_q80_ctx b;
    qk_ks_ctx k;
  } ctx[TP_QK_MULTI_MAX];
  qk_multi mu;
  memset(&mu, 0, sizeof mu);
  mu.panel_rows = 16;
  topos_status st = TOPOS_OK;
  while (mu.count < count) {
    const tp_qk_task *t = &tasks[mu.count];
    tp_qk_range_fn fn;
    void *c = &ctx[mu.count];
    const int ok = qk_kernel_of(t) == QK_KERNEL_B32 ? qk_b32_begin(t, c, &fn) : qk_ks_begin(t, c, &fn);
    if (!ok) {
      st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
      break;
    }
    qk_multi_add(&mu, t, fn, c);
  }
  if (st == TOPOS_OK) qk_multi_run(&mu);
  for (int i = 0; i < mu.count; ++i) { /* every begun context ends; the first failure is the status */
    const topos_status e = qk_kernel_of(&tasks[i]) == QK_KERNEL_B32 ? qk_b32_end(&ctx[i].b) : qk_ks_end(&ctx[i].k);
    if (st == TOPOS_OK) st = e;
  }
  return st;
}
