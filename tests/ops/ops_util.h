/* Helpers for the ops tests: a pool that releases every tensor a test made,
 * constructors from double values, and runners over topos_op_forward. */
#ifndef TOPOS_TESTS_OPS_UTIL_H
#define TOPOS_TESTS_OPS_UTIL_H

#include <stdlib.h>

#include "test.h"

#define OT_POOL_MAX 128
typedef struct ot_pool {
  topos_tensor *t[OT_POOL_MAX];
  int n;
} ot_pool;

static inline topos_tensor *ot_keep(ot_pool *p, topos_tensor *t) {
  if (t && p->n < OT_POOL_MAX) p->t[p->n++] = t;
  return t;
}

static inline void ot_free(ot_pool *p) {
  for (int i = 0; i < p->n; ++i) topos_tensor_release(p->t[i]);
  p->n = 0;
}

/* A contiguous tensor holding `values` (rounded to dtype); NULL on failure. */
static inline topos_tensor *ot_make(ot_pool *p, topos_dtype dtype, int rank, const int64_t *shape,
                                    const double *values) {
  topos_tensor *t = NULL;
  if (topos_tensor_from_f64(dtype, rank, shape, values, &t) != TOPOS_OK) return NULL;
  return ot_keep(p, t);
}

static inline topos_tensor *ot_i32(ot_pool *p, int64_t n, const int32_t *values) {
  topos_tensor *t = NULL;
  int64_t shape[1] = {n};
  if (topos_tensor_from_data(TOPOS_I32, 1, shape, values, (size_t)n * 4, &t) != TOPOS_OK)
    return NULL;
  return ot_keep(p, t);
}

static inline topos_tensor *ot_run(ot_pool *p, topos_op op, topos_tensor *a, topos_tensor *b,
                                   const topos_op_attrs *attrs) {
  topos_tensor *in[2] = {a, b}, *out = NULL;
  if (topos_op_forward(op, in, attrs, &out) != TOPOS_OK) return NULL;
  return ot_keep(p, out);
}

static inline topos_op_attrs ot_attrs(void) {
  topos_op_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

/* Element i (row-major logical) as a double. */
static inline double ot_at(const topos_tensor *t, int64_t i) {
  int64_t n = topos_tensor_volume(t);
  double *all = (double *)malloc((size_t)n * sizeof(double));
  double v = NAN;
  if (all && topos_tensor_read_f64(t, all, n) == TOPOS_OK && i < n) v = all[i];
  free(all);
  return v;
}

/* Rounds a double as the dtype stores it (for expected values). */
static inline double ot_round(topos_dtype dtype, double v) {
  switch (dtype) {
    case TOPOS_F32: return (float)v;
    case TOPOS_BF16: return topos_bf16_to_f32(topos_f32_to_bf16((float)v));
    case TOPOS_F16: return topos_f16_to_f32(topos_f32_to_f16((float)v));
    default: return v;
  }
}

/* The tensor equals `values` (already representable in its dtype) in shape
 * and bits. Fails the current test otherwise. */
#define CHECK_VALUES(pool, t, rank, shape, ...)                                              \
  do {                                                                                      \
    const double ot_v_[] = {__VA_ARGS__};                                                   \
    topos_tensor *ot_t_ = (t);                                                              \
    CHECK_MSG(ot_t_ != NULL, "no result: %s", topos_last_error());                          \
    topos_tensor *ot_e_ = ot_make((pool), topos_tensor_dtype(ot_t_), (rank), (shape), ot_v_); \
    CHECK(ot_e_ != NULL);                                                                   \
    CHECK_TENSOR_BITS(ot_t_, ot_e_);                                                        \
  } while (0)

/* Runs op on the (possibly strided) inputs and on forced contiguous copies of
 * them and compares the bits. Returns 1 when equal; prints the difference. */
static inline int ot_layout_invariant(topos_op op, topos_tensor *a, topos_tensor *b,
                                      const topos_op_attrs *attrs) {
  ot_pool p = {{0}, 0};
  int ok = 0;
  topos_tensor *ca = NULL, *cb = NULL;
  if (topos_tensor_contiguous(a, 1, &ca) != TOPOS_OK) goto done;
  ot_keep(&p, ca);
  if (b) {
    if (topos_tensor_contiguous(b, 1, &cb) != TOPOS_OK) goto done;
    ot_keep(&p, cb);
  }
  topos_tensor *strided = ot_run(&p, op, a, b, attrs);
  if (!strided) {
    printf("    %s on views failed: %s\n", topos_op_name(op), topos_last_error());
    goto done;
  }
  topos_tensor *packed = ot_run(&p, op, ca, cb, attrs);
  if (!packed) {
    printf("    %s on copies failed: %s\n", topos_op_name(op), topos_last_error());
    goto done;
  }
  ok = topos_tensor_bits_equal(strided, packed);
  if (!ok) {
    char x[512], y[512];
    topos_tensor_format(strided, x, sizeof x, 16);
    topos_tensor_format(packed, y, sizeof y, 16);
    printf("    %s: views give\n%s\n    copies give\n%s\n", topos_op_name(op), x, y);
  }
done:
  ot_free(&p);
  return ok;
}

/* Deterministic small values: integers in [-range, range] scaled by `scale`
 * (base's splitmix64, a tier below ops). */
static inline void ot_fill(double *v, int64_t n, uint64_t seed, int range, double scale) {
  topos_rng rng = topos_rng_seed(seed);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = topos_rng_next(&rng);
    v[i] = scale * (double)((int64_t)(z % (uint64_t)(2 * range + 1)) - range);
  }
}

#endif
