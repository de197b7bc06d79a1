/* The default rung's elementwise paths, bit-identical to the reference
 * kernels (each output element is one operation on its inputs, so any order
 * or split gives the same bits).
 *
 * Binaries walk innermost runs: axes that are contiguous in both operands
 * merge, then each run of the last axis is a slice (stride 1), one held
 * element (stride 0: a broadcast) or a strided walk. A bias-add over a
 * broadcast view therefore runs at slice speed instead of paying an
 * odometer step per element. Maps run over contiguous buffers with the
 * reference's libm calls. Both split their outputs over threads. */
#include <math.h>
#include <stdlib.h>

#include "backend/backend_internal.h"
#include "backend/platform.h"
#include "ops/kernel.h"

/* ---- maps */
#define TP_MAP_RELU(x) TP_MAXIMUM_MASKED(x, 0) /* no sign-dependent branch */

#define TP_DEFAULT_MAP(T, sfx)                                                      \
  typedef struct tp_map_job_##sfx {                                                 \
    topos_map_op op;                                                                \
    const T *in;                                                                    \
    T *out;                                                                         \
  } tp_map_job_##sfx;                                                               \
  static void tp_map_chunk_##sfx(void *ctx, int64_t begin, int64_t end) {           \
    const tp_map_job_##sfx *job = ctx;                                              \
    const T *x = job->in;                                                           \
    T *y = job->out;                                                                \
    switch (job->op) {                                                              \
      case TOPOS_MAP_EXP:                                                           \
        for (int64_t i = begin; i < end; ++i) y[i] = TP_EXP(x[i]);                  \
        break;                                                                      \
      case TOPOS_MAP_LN:                                                            \
        for (int64_t i = begin; i < end; ++i) y[i] = TP_LOG(x[i]);                  \
        break;                                                                      \
      case TOPOS_MAP_SQRT:                                                          \
        for (int64_t i = begin; i < end; ++i) y[i] = TP_SQRT(x[i]);                 \
        break;                                                                      \
      case TOPOS_MAP_TANH:                                                          \
        for (int64_t i = begin; i < end; ++i) y[i] = TP_TANH(x[i]);                 \
        break;                                                                      \
      case TOPOS_MAP_NEG:                                                           \
        for (int64_t i = begin; i < end; ++i) y[i] = -x[i];                         \
        break;                                                                      \
      case TOPOS_MAP_RELU:                                                          \
        for (int64_t i = begin; i < end; ++i) y[i] = TP_MAP_RELU(x[i]);             \
        break;                                                                      \
      default: break;                                                               \
    }                                                                               \
  }                                                                                 \
  topos_status tp_default_map_##sfx(topos_map_op op, const void *in, void *out,     \
                                    int64_t count) {                                \
    if ((unsigned)op >= TOPOS_MAP_COUNT) return TOPOS_UNSUPPORTED;                  \
    tp_map_job_##sfx job = {op, in, out};                                           \
    tp_backend_parallel_for(count, 1 << 15, tp_map_chunk_##sfx, &job);              \
    return TOPOS_OK;                                                                \
  }                                                                                 \
  topos_status tp_reference_map_##sfx(topos_map_op op, const void *in, void *out,   \
                                      int64_t count) {                              \
    if ((unsigned)op >= TOPOS_MAP_COUNT) return TOPOS_UNSUPPORTED;                  \
    tp_map_job_##sfx job = {op, in, out};                                           \
    tp_map_chunk_##sfx(&job, 0, count);                                             \
    return TOPOS_OK;                                                                \
  }
TP_DEFAULT_MAP(float, f32)
TP_DEFAULT_MAP(double, f64)

/* ---- binaries: the same bodies as the reference (ops/elementwise.c) */
#define TP_BIN_ADD(a, b) TP_FIRST_NAN(a, b, +)
#define TP_BIN_SUB(a, b) ((a) - (b))
#define TP_BIN_MUL(a, b) TP_FIRST_NAN(a, b, *)
#define TP_BIN_DIV(a, b) ((a) / (b))
#define TP_BIN_POW(a, b) TP_POW(a, b)
#define TP_BIN_MAXIMUM(a, b) TP_MAXIMUM_MASKED(a, b)
/* 0 or 1 looked up by the comparison: compilers turn the plain ternary into
 * a branch, which mispredicts on every other element of a gradient mask */
static const float tp_step_values[2] = {0.0f, 1.0f};
#define TP_BIN_STEP(a, b) tp_step_values[(a) >= (b)]
#define TP_BIN_OPS(X)                  \
  X(tp_op_id_add, TP_BIN_ADD)          \
  X(tp_op_id_sub, TP_BIN_SUB)          \
  X(tp_op_id_mul, TP_BIN_MUL)          \
  X(tp_op_id_div, TP_BIN_DIV)          \
  X(tp_op_id_pow, TP_BIN_POW)          \
  X(tp_op_id_maximum, TP_BIN_MAXIMUM)  \
  X(tp_op_id_step, TP_BIN_STEP)

/* The coalesced walk: rank axes (last = the run), strides of a and b. */
typedef struct tp_walk {
  int rank;
  int64_t shape[TOPOS_MAX_RANK];
  int64_t sa[TOPOS_MAX_RANK], sb[TOPOS_MAX_RANK];
  const void *a, *b; /* element at logical index 0 */
  void *out;
  topos_op op;
} tp_walk;

/* One run of `len` outputs: slice, held element or strided, per operand. */
#define TP_RUN_CASE(ID, BODY, T)                                                     \
  case ID:                                                                           \
    if (sa == 1 && sb == 1)                                                          \
      for (int64_t j = 0; j < len; ++j) y[j] = (T)BODY(x[j], z[j]);                  \
    else if (sa == 1 && sb == 0) {                                                   \
      T hz = z[0];                                                                   \
      for (int64_t j = 0; j < len; ++j) y[j] = (T)BODY(x[j], hz);                    \
    } else if (sa == 0 && sb == 1) {                                                 \
      T hx = x[0];                                                                   \
      for (int64_t j = 0; j < len; ++j) y[j] = (T)BODY(hx, z[j]);                    \
    } else                                                                           \
      for (int64_t j = 0; j < len; ++j) y[j] = (T)BODY(x[j * sa], z[j * sb]);        \
    break;

#define TP_DEFAULT_BINARY(T, sfx)                                                             \
  static void tp_run_##sfx(topos_op op, const T *x, int64_t sa, const T *z, int64_t sb, T *y,  \
                           int64_t len) {                                                     \
    switch ((int)op) {                                                                        \
      TP_BIN_OPS(TP_BIN_RUN_##sfx)                                                            \
      default: break;                                                                         \
    }                                                                                         \
  }                                                                                           \
  static void tp_walk_chunk_##sfx(void *ctx, int64_t begin, int64_t end) {                    \
    const tp_walk *w = ctx;                                                                   \
    int r = w->rank;                                                                          \
    int64_t len = w->shape[r - 1];                                                            \
    int64_t index[TOPOS_MAX_RANK];                                                            \
    int64_t rest = begin;                                                                     \
    for (int axis = r - 1; axis >= 0; --axis) {                                               \
      index[axis] = rest % w->shape[axis];                                                    \
      rest /= w->shape[axis];                                                                 \
    }                                                                                         \
    T *y = (T *)w->out;                                                                       \
    int64_t at = begin;                                                                       \
    while (at < end) {                                                                        \
      int64_t oa = 0, ob = 0;                                                                 \
      for (int axis = 0; axis < r; ++axis) {                                                  \
        oa += index[axis] * w->sa[axis];                                                      \
        ob += index[axis] * w->sb[axis];                                                      \
      }                                                                                       \
      int64_t run = len - index[r - 1];                                                       \
      if (run > end - at) run = end - at;                                                     \
      tp_run_##sfx(w->op, (const T *)w->a + oa, w->sa[r - 1], (const T *)w->b + ob,           \
                   w->sb[r - 1], y + at, run);                                                \
      at += run;                                                                              \
      index[r - 1] = 0;                                                                       \
      if (r > 1) tp_index_next(r - 1, w->shape, index);                                       \
    }                                                                                         \
  }
#define TP_BIN_RUN_f32(ID, BODY) TP_RUN_CASE(ID, BODY, float)
#define TP_BIN_RUN_f64(ID, BODY) TP_RUN_CASE(ID, BODY, double)
TP_DEFAULT_BINARY(float, f32)
TP_DEFAULT_BINARY(double, f64)

topos_status tp_default_binary(topos_op op, const topos_tensor *a, const topos_tensor *b,
                               topos_tensor *out) {
  if (a->dtype != b->dtype || (a->dtype != TOPOS_F32 && a->dtype != TOPOS_F64))
    return TOPOS_UNSUPPORTED;
  /* Coalesce: drop unit axes, merge an axis into the next one when both
   * operands step over it as one run (stride 0 merges with stride 0). */
  tp_walk w = {0};
  for (int axis = 0; axis < a->rank; ++axis) {
    if (a->shape[axis] == 1) continue;
    int64_t e = a->shape[axis], xa = a->strides[axis], xb = b->strides[axis];
    if (w.rank > 0) {
      int last = w.rank - 1;
      if (w.sa[last] == xa * e && w.sb[last] == xb * e) {
        w.shape[last] *= e;
        w.sa[last] = xa;
        w.sb[last] = xb;
        continue;
      }
    }
    w.shape[w.rank] = e;
    w.sa[w.rank] = xa;
    w.sb[w.rank] = xb;
    ++w.rank;
  }
  if (w.rank == 0) {
    w.rank = 1;
    w.shape[0] = 1;
  }
  w.a = tp_tensor_base(a);
  w.b = tp_tensor_base(b);
  w.out = tp_tensor_base(out);
  w.op = op;
  int64_t grain = 1 << 15;
  if (a->dtype == TOPOS_F32)
    tp_backend_parallel_for(a->volume, grain, tp_walk_chunk_f32, &w);
  else
    tp_backend_parallel_for(a->volume, grain, tp_walk_chunk_f64, &w);
  return TOPOS_OK;
}

const tp_kernels tp_kernels_default = {NULL, tp_default_gemm_f32, tp_default_gemm_f64,
                                       tp_default_map_f32, tp_default_map_f64,
                                       tp_default_describe};
