/* topos_qmatmul: argument checks, path choice, and the reference path (the
 * specification the fast kernels are measured against). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "quant/quant_internal.h"
#include "topos/quant.h"


/* Geometry straight from TOPOS_DTYPE_LIST (name, elements and bytes per block). */
typedef struct {
  const char *name;
  int64_t block, bytes;
} qk_geometry;
static const qk_geometry qk_geometries[TOPOS_DTYPE_COUNT] = {
#define QK_GEOMETRY_ROW(e, name, be, bb, gg, kind) [e] = {name, be, bb},
    TOPOS_DTYPE_LIST(QK_GEOMETRY_ROW)
#undef QK_GEOMETRY_ROW
};

static const char *qk_name(topos_dtype t) {
  return (unsigned)t < TOPOS_DTYPE_COUNT ? qk_geometries[t].name : "?";
}

int tp_qk_traits_of(topos_dtype wtype, tp_qk_traits *out) {
  tp_qk_traits t = {TP_QK_ACT_F32, 0, 0};
  switch (wtype) {
    case TOPOS_F32:
    case TOPOS_F16:
    case TOPOS_BF16: break;
    case TOPOS_Q8_0: t = (tp_qk_traits){TP_QK_ACT_Q8_0, 128, 0}; break;
    case TOPOS_Q4_0: t = (tp_qk_traits){TP_QK_ACT_Q8_0, 8, 0}; break;
    case TOPOS_Q5_0: t = (tp_qk_traits){TP_QK_ACT_Q8_0, 16, 0}; break;
    case TOPOS_Q4_1:
    case TOPOS_Q5_1: t = (tp_qk_traits){TP_QK_ACT_Q8_1, 0, 1}; break;
    case TOPOS_Q2_K:
    case TOPOS_Q4_K:
    case TOPOS_Q5_K: t = (tp_qk_traits){TP_QK_ACT_Q8_K, 0, 1}; break;
    case TOPOS_Q3_K: t = (tp_qk_traits){TP_QK_ACT_Q8_K, 4, 0}; break;
    case TOPOS_Q6_K: t = (tp_qk_traits){TP_QK_ACT_Q8_K, 32, 0}; break;
    case TOPOS_MXFP4: t = (tp_qk_traits){TP_QK_ACT_Q8_0, TP_MXFP4_BIAS, 0}; break; /* q = level + 12 */
    default: return 0;
  }
  if (out) *out = t;
  return 1;
}

/* f32, f16, bf16: weights whose products take f32 activations as they are */
static bool qk_float_weights(topos_dtype wtype) {
  return wtype == TOPOS_F32 || wtype == TOPOS_F16 || wtype == TOPOS_BF16;
}

static topos_dtype qk_partner(tp_qk_act_format f, topos_dtype wtype) {
  switch (f) {
    case TP_QK_ACT_Q8_0: return TOPOS_Q8_0;
    case TP_QK_ACT_Q8_1: return TOPOS_Q8_1;
    case TP_QK_ACT_Q8_K: return TOPOS_Q8_K;
    default: return qk_float_weights(wtype) ? TOPOS_F32 : wtype;
  }
}

/* ---- fast path selection --------------------------------------------------- */

typedef topos_status (*qk_fast_fn)(const tp_qk_task *);

static qk_fast_fn qk_fast_kernel(topos_dtype wtype, const char **isa) {
  if (!tp_qk_traits_of(wtype, NULL)) return NULL;
#if defined(__x86_64__) || defined(_M_X64)
  if (tp_qk_isa_cap() >= TP_QK_ISA_AVX512VNNI && tp_qk_cpu_avx512vnni()) {
    if (isa) *isa = tp_qk_amx_usable() ? "avx512vnni+amx" : "avx512vnni";
    return tp_qk_fast_avx512vnni;
  }
  if (tp_qk_isa_cap() >= TP_QK_ISA_AVX2 && tp_qk_cpu_avx2()) {
    if (isa) *isa = "avx2";
    return tp_qk_fast_avx2;
  }
#endif
#if defined(__aarch64__)
  if (tp_qk_isa_cap() >= TP_QK_ISA_AVX2 && tp_qk_cpu_neon_dotprod()) {
    if (isa) *isa = "neon-dotprod";
    return tp_qk_fast_neon;
  }
#endif
  if (tp_qk_isa_cap() >= TP_QK_ISA_GENERIC) {
    if (isa) *isa = "generic";
    return tp_qk_fast_generic;
  }
  return NULL;
}

const char *topos_qmatmul_fast_isa(topos_dtype wtype) {
  const char *isa = NULL;
  return qk_fast_kernel(wtype, &isa) ? isa : NULL;
}

/* ---- reference path ---------------------------------------------------------- */

typedef struct {
  const tp_qk_task *task;
  const uint8_t *act; /* m rows of act_row_bytes */
  size_t act_row_bytes;
  tp_vec_dot_fn dot; /* the quantized weights' dot on a vector unit, NULL: tp_vec_dot_ref */
  volatile int failed;
  topos_status status;
} qk_ref_ctx;

/* Float weights meet f32 activations, never rounded to 16 bits (the quant
 * tier's f16/bf16 dots pair with f16/bf16 activations, as ggml does): each
 * product is formed in f32 from the exactly widened weight, the products are
 * summed in f64 in ascending k, rounded once, as the quant tier's f32 dot. */
static float qk_ref_float_dot(topos_dtype wtype, int64_t k, const uint8_t *w, const float *a) {
  double sum = 0.0;
  for (int64_t i = 0; i < k; ++i) sum += (double)(tp_qk_float_at(w, wtype, i) * a[i]);
  return (float)sum;
}

static void qk_ref_range(void *vctx, int64_t j0, int64_t j1) {
  qk_ref_ctx *ctx = vctx;
  const tp_qk_task *t = ctx->task;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t *wrow = (const uint8_t *)t->w + (size_t)j * t->row_bytes;
    for (int64_t i = 0; i < t->m; ++i) {
      float v = 0.0f;
      topos_status st = TOPOS_OK;
      if (t->wtype == TOPOS_F16 || t->wtype == TOPOS_BF16)
        v = qk_ref_float_dot(t->wtype, t->k, wrow, t->a + i * t->k);
      else if (ctx->dot)
        v = ctx->dot(t->k / qk_geometries[t->wtype].block, wrow, ctx->act + (size_t)i * ctx->act_row_bytes);
      else
        st = tp_vec_dot_ref(t->wtype, t->k, wrow, ctx->act + (size_t)i * ctx->act_row_bytes, &v);
      if (st != TOPOS_OK) {
        ctx->status = st;
        ctx->failed = 1;
        return;
      }
      t->out[i * t->n + j] = t->bias ? v + t->bias[j] : v;
    }
  }
}

topos_status tp_qk_row_groups(const tp_qk_task *t, int64_t per, topos_status (*run)(const tp_qk_task *)) {
  const int64_t groups = (t->m + per - 1) / per;
  int64_t r0 = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t rows = (t->m - r0 + (groups - g) - 1) / (groups - g);
    tp_qk_task sub = *t;
    sub.a = t->a + r0 * t->k, sub.m = rows, sub.out = t->out + r0 * t->n;
    TP_TRY(run(&sub));
    r0 += rows;
  }
  return TOPOS_OK;
}

/* The reference's bits on a vector unit: AVX2 where the CPU has it, NEON
 * on arm64 (baseline there), when the ISA cap allows it. Whether the
 * vector kernels run never changes a bit (the tests run both: the ISA cap
 * below AVX2 keeps the scalar loops). */
static int qk_ref_on_vectors(void) {
#if defined(__x86_64__)
  return tp_qk_isa_cap() >= TP_QK_ISA_AVX2 && tp_qk_cpu_avx2();
#elif defined(__aarch64__)
  return tp_qk_isa_cap() >= TP_QK_ISA_AVX2;
#else
  return 0;
#endif
}

tp_vec_dot_fn tp_qk_exact_dot(topos_dtype wtype) {
#if defined(__x86_64__)
  return tp_qk_cpu_avx2() ? tp_qk_exact_dot_avx2(wtype) : NULL;
#elif defined(__aarch64__)
  return tp_qk_exact_dot_neon(wtype);
#else
  (void)wtype;
  return NULL;
#endif
}

/* Float weights on a vector kernel with the reference's bits (lanes are
 * outputs, each its own chain in ascending k): panels of rows, each range
 * done by one call; a panel whose scratch cannot be had runs the scalar
 * loop. */
static int qk_ref_vector(const tp_qk_task *t) { return qk_float_weights(t->wtype) && qk_ref_on_vectors(); }

static void qk_ref_panels(void *vctx, int64_t p0, int64_t p1) {
  qk_ref_ctx *ctx = vctx;
#if defined(__x86_64__)
  if (tp_qk_exact_float_avx2(ctx->task, p0, p1)) return;
#elif defined(__aarch64__)
  if (tp_qk_exact_float_neon(ctx->task, p0, p1)) return;
#endif
  const int64_t n = ctx->task->n, j1 = p1 * TP_QK_EXACT_ROWS;
  qk_ref_range(ctx, p0 * TP_QK_EXACT_ROWS, j1 < n ? j1 : n);
}

static topos_status qk_reference(const tp_qk_task *t) {
  tp_qk_traits tr = {TP_QK_ACT_F32, 0, 0};
  tp_qk_traits_of(t->wtype, &tr);
  const topos_dtype partner = qk_partner(tr.act, t->wtype);
  const qk_geometry *g = &qk_geometries[partner];
  size_t act_row_bytes = (size_t)(t->k / g->block) * (size_t)g->bytes, total;
  if (__builtin_mul_overflow(act_row_bytes, (size_t)t->m, &total))
    return tp_fail(TOPOS_ERR_OVERFLOW, "qmatmul: %lld activation rows of %zu bytes",
                   (long long)t->m, act_row_bytes);
  uint8_t *act = NULL;
  if (partner == TOPOS_F32) {
    act = (uint8_t *)(uintptr_t)t->a; /* used as is, never written */
  } else {
    act = malloc(total ? total : 1);
    if (!act)
      return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: %zu bytes of %s activations", total,
                     qk_name(partner));
    for (int64_t i = 0; i < t->m; ++i) {
      topos_status st = topos_quantize_row(partner, t->a + i * t->k, act + (size_t)i * act_row_bytes, t->k);
      if (st != TOPOS_OK) {
        free(act);
        return tp_fail_context(st, "qmatmul: reference activations");
      }
    }
  }
  qk_ref_ctx ctx = {t, act, act_row_bytes, NULL, 0, TOPOS_OK};
  if (!qk_float_weights(t->wtype) && qk_ref_on_vectors()) ctx.dot = tp_qk_exact_dot(t->wtype);
  if (qk_ref_vector(t))
    tp_qk_parallel_for(t->threads, (t->n + TP_QK_EXACT_ROWS - 1) / TP_QK_EXACT_ROWS, 1, qk_ref_panels, &ctx);
  else
    tp_qk_parallel_for(t->threads, t->n, 1, qk_ref_range, &ctx);
  if (partner != TOPOS_F32) free(act);
  if (ctx.failed) return tp_fail_context(ctx.status, "qmatmul: reference dot of %s", qk_name(t->wtype));
  return TOPOS_OK;
}

/* ---- entry ----------------------------------------------------------------- */

/* The checked task of one product (every argument validated). */
static topos_status qk_task_make(const float *a, int64_t m, int64_t k, const void *w, size_t w_row_bytes,
                                 topos_dtype wtype, int64_t n, const float *bias, float *out,
                                 topos_qmatmul_path path, int threads, tp_qk_task *task) {
  if (!a || !w || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul: NULL %s", !a ? "activations a" : !w ? "weights w" : "out");
  if (m < 1 || n < 1 || k < 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul: m = %lld, n = %lld, k = %lld must all be >= 1",
                   (long long)m, (long long)n, (long long)k);
  if (path != TOPOS_QMATMUL_AUTO && path != TOPOS_QMATMUL_REFERENCE && path != TOPOS_QMATMUL_FAST)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul: unknown path %d", (int)path);
  if (!tp_qk_traits_of(wtype, NULL))
    return tp_fail(TOPOS_ERR_DTYPE, "qmatmul: %s cannot be a weight type (f32, f16, bf16, q4_0, "
                   "q4_1, q5_0, q5_1, q8_0, q2_K..q6_K, mxfp4)", qk_name(wtype));
  const qk_geometry *g = &qk_geometries[wtype];
  if (k % g->block != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "qmatmul: k = %lld is not a multiple of the %s block size %lld",
                   (long long)k, g->name, (long long)g->block);
  int64_t mk, mn, wbytes, row_bytes = (k / g->block) * g->bytes;
  if (w_row_bytes != 0) {
    if (!qk_float_weights(wtype))
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul: %s weights must be packed rows (a row stride "
                     "is for f32, f16 and bf16 weights)", g->name);
    if (w_row_bytes > (size_t)INT64_MAX / 2 || (int64_t)w_row_bytes < row_bytes || w_row_bytes % (size_t)g->bytes)
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul: a weight row stride of %zu bytes is shorter than a "
                     "row of %lld %s elements (%lld bytes) or not a whole number of elements",
                     w_row_bytes, (long long)k, g->name, (long long)row_bytes);
    row_bytes = (int64_t)w_row_bytes;
  }
  /* the engines allocate a few bytes per activation element (padded rows
   * included) and index outputs and weights with these products */
  if (__builtin_mul_overflow(m, k, &mk) || __builtin_mul_overflow(m, n, &mn) ||
      __builtin_mul_overflow(n, row_bytes, &wbytes) || mk > INT64_MAX / 128 ||
      m > INT64_MAX / 128 || mn > INT64_MAX / 8 || (uint64_t)wbytes > SIZE_MAX / 2 ||
      k > INT64_MAX / 64)
    return tp_fail(TOPOS_ERR_OVERFLOW, "qmatmul: sizes m = %lld, n = %lld, k = %lld overflow",
                   (long long)m, (long long)n, (long long)k);
  *task = (tp_qk_task){a, m, k, w, wtype, n, bias, out, (size_t)row_bytes, threads};
  return TOPOS_OK;
}

/* One checked task on its path. */
static topos_status qk_task_run(const tp_qk_task *t, topos_qmatmul_path path) {
  if (path == TOPOS_QMATMUL_REFERENCE) return qk_reference(t);
  qk_fast_fn fast = qk_fast_kernel(t->wtype, NULL);
  if (!fast) {
    if (path == TOPOS_QMATMUL_FAST)
      return tp_fail(TOPOS_UNSUPPORTED, "qmatmul: no fast kernel for %s weights on this CPU "
                     "(or masked by TOPOS_DISABLE_ISA)", qk_name(t->wtype));
    return qk_reference(t);
  }
  topos_status st = fast(t);
  if (st == TOPOS_UNSUPPORTED && path == TOPOS_QMATMUL_AUTO) return qk_reference(t);
  return st;
}

topos_status tp_qmatmul_rows(const float *a, int64_t m, int64_t k, const void *w, size_t w_row_bytes,
                             topos_dtype wtype, int64_t n, const float *bias, float *out,
                             topos_qmatmul_path path, int threads) {
  tp_qk_task t;
  TP_TRY(qk_task_make(a, m, k, w, w_row_bytes, wtype, n, bias, out, path, threads, &t));
  return qk_task_run(&t, path);
}

topos_status tp_qmatmul_multi(const float *a, int64_t m, int64_t k, const topos_qmatmul_part *parts,
                              size_t count, topos_qmatmul_path path, int threads) {
  if (!parts && count)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul_multi: NULL parts");
  tp_qk_task tasks[TP_QK_MULTI_MAX];
  for (size_t i = 0; i < count; ++i) {
    const topos_qmatmul_part *p = &parts[i];
    tp_qk_task t;
    topos_status st = qk_task_make(p->a ? p->a : a, m, k, p->w, 0, p->wtype, p->n, p->bias, p->out, path, threads, &t);
    if (st != TOPOS_OK) return tp_fail_context(st, "qmatmul_multi: part %zu", i);
    if (i < TP_QK_MULTI_MAX) tasks[i] = t;
  }
  /* one dispatch where the matrix-vector kernels serve every part */
#if defined(__x86_64__) || defined(_M_X64)
  if (path != TOPOS_QMATMUL_REFERENCE && count >= 2 && count <= TP_QK_MULTI_MAX) {
    const qk_fast_fn first = qk_fast_kernel(tasks[0].wtype, NULL);
    int same = first == tp_qk_fast_avx512vnni || first == tp_qk_fast_avx2;
    for (size_t i = 1; i < count; ++i) same &= qk_fast_kernel(tasks[i].wtype, NULL) == first;
    if (same) {
      topos_status st = first == tp_qk_fast_avx512vnni ? tp_qk_fast_avx512vnni_multi(tasks, (int)count)
                                                       : tp_qk_fast_avx2_multi(tasks, (int)count);
      if (st != TOPOS_UNSUPPORTED) return st;
      topos_clear_error();
    }
  }
#endif
  for (size_t i = 0; i < count; ++i) { /* else one by one, each on its path */
    tp_qk_task t;
    if (i < TP_QK_MULTI_MAX) t = tasks[i];
    else /* past the array: made again (checked above, so it succeeds) */
      qk_task_make(parts[i].a ? parts[i].a : a, m, k, parts[i].w, 0, parts[i].wtype, parts[i].n, parts[i].bias,
                   parts[i].out, path, threads, &t);
    topos_status st = qk_task_run(&t, path);
    if (st != TOPOS_OK) return tp_fail_context(st, "qmatmul_multi: part %zu", i);
  }
  return TOPOS_OK;
}

topos_status topos_qmatmul_multi(const float *a, int64_t m, int64_t k, const topos_qmatmul_part *parts,
                                 size_t count, topos_qmatmul_path path) {
  return tp_qmatmul_multi(a, m, k, parts, count, path, 0);
}

topos_status tp_qmatmul_threads(const float *a, int64_t m, int64_t k, const void *w,
                                topos_dtype wtype, int64_t n, const float *bias, float *out,
                                topos_qmatmul_path path, int threads) {
  return tp_qmatmul_rows(a, m, k, w, 0, wtype, n, bias, out, path, threads);
}

topos_status topos_qmatmul(const float *a, int64_t m, int64_t k, const void *w, topos_dtype wtype,
                           int64_t n, const float *bias, float *out, topos_qmatmul_path path) {
  return tp_qmatmul_rows(a, m, k, w, 0, wtype, n, bias, out, path, 0);
}

topos_status topos_qmatmul_rows(const float *a, int64_t m, int64_t k, const void *w, size_t w_row_bytes,
                                topos_dtype wtype, int64_t n, const float *bias, float *out,
                                topos_qmatmul_path path) {
  return tp_qmatmul_rows(a, m, k, w, w_row_bytes, wtype, n, bias, out, path, 0);
}
