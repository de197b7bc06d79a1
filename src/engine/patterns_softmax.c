/* Pattern "softmax": exp(log_softmax(x, axis)) along the last axis, f32 — the
 * attention probabilities of the llama graph (scores -> log_softmax -> exp).
 *
 * Composed, this is two single-threaded-per-op passes with a full buffer in
 * between: the reference log_softmax (peak, ascending sum of expf(x - peak)
 * seeded with the first term, y = (x - peak) - logf(s)) and then the exp map.
 * Fused, each row does the same arithmetic in the same order, rows split over
 * threads (one row is one output lane: the bits never depend on the thread
 * count), and no intermediate buffer.
 *
 * Exact: the composed bits. expf(-inf) is +0 (C Annex F), so a term whose
 * argument is -inf — a masked key, a causal future — is written as +0
 * without calling libm; adding that +0 to the running sum (which is >= +0 or
 * NaN) changes nothing, so it is skipped too. Everything else is expf/logf
 * exactly as the reference kernels call them.
 *
 * Fast: p = exp(x - peak) / s with one exp per element. On x86-64 with AVX2
 * or AVX-512 the whole row runs in vectors (softmax_rows_template.h: the
 * shared vector exp, 1 ulp, and s summed on 64 fixed lanes, the same bits on
 * both ISAs); elsewhere, and for rows with a NaN or infinite key, the exp
 * goes through the f32 map chain (the simd rung's vector exp when that
 * backend is built, otherwise libm expf) and s is the ascending sum. Exact's
 * exp((x - peak) - ln s) rounds its argument,
 * which costs up to |ln p| / 2 ulp; Fast's route costs about 2 ulp (exp,
 * reciprocal, product) plus the sum's. Stated envelope against Exact, checked
 * by tests/engine/softmax_pattern_test.c: |fast - exact| <= (8 + |ln p|) ulp
 * of p, special values (NaN rows, exact zeros) identical. Still the same bits
 * at every thread count (a row is one task). */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "backend/platform.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "engine/softmax_rows.h"
#include "ops/kernel.h"
#include "topos/backend.h"

static bool tp_softmax_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                             tp_fusion *f) {
  (void)evaluated;
  const tp_node *e = tp_pattern_op(g, root, TOPOS_OP_EXP);
  if (!e || e->desc->dtype != TOPOS_F32) return false;
  uint32_t ls = e->operands[0];
  const tp_node *l = tp_pattern_op(g, ls, TOPOS_OP_LOG_SOFTMAX);
  if (!l || l->desc->dtype != TOPOS_F32 || l->desc->rank < 1 ||
      l->attrs->axis != l->desc->rank - 1 || l->desc->shape[l->desc->rank - 1] < 1)
    return false;
  f->n_members = 2;
  f->members[0] = ls;
  f->members[1] = root;
  f->n_inputs = 1;
  f->inputs[0] = l->operands[0];
  return true;
}

typedef struct tp_softmax_job {
  const float *x;
  float *y;
  int64_t extent;
  int exact;
  atomic_int status; /* Fast only: the status of a map that failed (rare) */
} tp_softmax_job;

/* The reference peak (TP_MAXIMUM ascending: the first NaN, +0 over -0). A
 * plain max finds the same bits unless the row holds a NaN or the peak is a
 * zero (the only tie whose operands differ in bits): those rows take the
 * reference loop. */
static float tp_softmax_peak(const float *x, int64_t n) {
  float m = x[0];
  int nan = x[0] != x[0];
  for (int64_t k = 1; k < n; ++k) {
    m = x[k] > m ? x[k] : m;
    nan |= x[k] != x[k];
  }
  if (!nan && m != 0.0f) return m;
  float peak = x[0];
  for (int64_t k = 1; k < n; ++k) peak = TP_MAXIMUM(peak, x[k]);
  return peak;
}

/* Exact: the reference's order and calls, -inf arguments written as +0. */
void tp_softmax_row_exact(const float *x, float *y, int64_t n) {
  float peak = tp_softmax_peak(x, n);
  float z0 = x[0] - peak;
  float s = z0 == -INFINITY ? 0.0f : expf(z0);
  for (int64_t k = 1; k < n; ++k) {
    float z = x[k] - peak;
    if (z != -INFINITY) s += expf(z);
  }
  float log_s = logf(s);
  for (int64_t k = 0; k < n; ++k) {
    float v = (x[k] - peak) - log_s;
    y[k] = v == -INFINITY ? 0.0f : expf(v);
  }
}

int tp_softmax_row_vector(const float *x, float *y, int64_t n, int64_t g0, int64_t g1, int isa) {
#if defined(__x86_64__)
  const tp_vector_isa best = tp_vector_isa_best();
  if ((isa == 0 || isa == 2) && best == TP_VECTOR_AVX512) return tp_softmax_row_vector_avx512(x, y, n, g0, g1);
  if ((isa == 0 || isa == 1) && best >= TP_VECTOR_AVX2) return tp_softmax_row_vector_avx2(x, y, n, g0, g1);
#else
  (void)x, (void)y, (void)n, (void)g0, (void)g1, (void)isa;
#endif
  return -1;
}

/* Fast: p = exp(x - peak) * (1 / s), one exp per element instead of two:
 * the vector row where the CPU has one, else through the map chain (the simd
 * rung's vector exp when built) with s the ascending sum. */
topos_status tp_softmax_row_fast(const float *x, float *y, int64_t n) { return tp_softmax_row_fast_gap(x, y, n, 0, 0); }

/* the scalar path computes the whole row: the gap only saves vector work */
topos_status tp_softmax_row_fast_gap(const float *x, float *y, int64_t n, int64_t g0, int64_t g1) {
  if (tp_softmax_row_vector(x, y, n, g0, g1, 0) == 1) return TOPOS_OK;
  const topos_element *f32 = topos_element_of(TOPOS_F32);
  float peak = tp_softmax_peak(x, n);
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] - peak;
  /* masked keys (-inf, up to half a causal row) are exp(-inf) = +0 without
   * a call: the map runs over the runs between them */
  for (int64_t k = 0; k < n;) {
    if (y[k] == -INFINITY) {
      y[k++] = 0.0f;
      continue;
    }
    int64_t end = k + 1;
    while (end < n && y[end] != -INFINITY) ++end;
    TP_TRY(topos_element_map(f32, TOPOS_MAP_EXP, y + k, y + k, end - k));
    k = end;
  }
  float s = y[0];
  for (int64_t k = 1; k < n; ++k) s += y[k];
  if (!(s >= 0.5f && s <= 3.0e38f)) { /* no finite peak term (NaN, inf, only -inf): */
    float log_s = logf(s);            /* the Exact formula's special values */
    for (int64_t k = 0; k < n; ++k) y[k] = expf((x[k] - peak) - log_s);
    return TOPOS_OK;
  }
  float inv = 1.0f / s;
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
  return TOPOS_OK;
}

static void tp_softmax_rows(void *ctx, int64_t begin, int64_t end) {
  tp_softmax_job *j = ctx;
  int64_t n = j->extent;
  /* workers do not inherit the caller's posture: the job carries it */
  int saved = tp_numerics_enter(j->exact);
  for (int64_t r = begin; r < end; ++r) {
    if (j->exact) {
      tp_softmax_row_exact(j->x + r * n, j->y + r * n, n);
    } else {
      topos_status s = tp_softmax_row_fast(j->x + r * n, j->y + r * n, n);
      if (s != TOPOS_OK) atomic_store(&j->status, (int)s); /* any failure fails the step */
    }
  }
  tp_numerics_leave(saved);
}

static topos_status tp_softmax_run(const tp_fusion *f, const tp_graph *g,
                                   topos_tensor *const *inputs, topos_tensor *dst,
                                   topos_tensor **out) {
  (void)f, (void)g;
  topos_tensor *a = NULL;
  TP_TRY(topos_tensor_contiguous(inputs[0], 0, &a));
  int rank = topos_tensor_rank(dst);
  tp_softmax_job job = {topos_tensor_data(a), topos_tensor_data_mut(dst),
                        topos_tensor_shape(dst)[rank - 1], tp_numerics_exact(), TOPOS_OK};
  atomic_init(&job.status, TOPOS_OK);
  int64_t rows = topos_tensor_volume(dst) / job.extent;
  int64_t grain = (1 << 14) / job.extent;
  tp_parallel_for(rows, grain < 1 ? 1 : grain, tp_softmax_rows, &job);
  topos_tensor_release(a);
  topos_status s = (topos_status)atomic_load(&job.status);
  if (s != TOPOS_OK) return tp_fail(s, "softmax: the exp map failed");
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_softmax = {"softmax", tp_softmax_match, tp_softmax_run};
