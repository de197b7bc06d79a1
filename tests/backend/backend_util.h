/* Helpers for the backend tests: random tensors, the reference product
 * written out independently (first product, then k ascending, one rounding
 * per multiply and per add), NMSE, and a scope that restores every runtime
 * switch the tests flip (threads, posture, enabled backends, loud mode). */
#ifndef TOPOS_TESTS_BACKEND_UTIL_H
#define TOPOS_TESTS_BACKEND_UTIL_H

#include <stdlib.h>

#include "backend/backend_internal.h"
#include "backend/platform.h"
#include "test.h"

/* splitmix64 values in [-1, 1). */
static inline void bt_fill_f64(double *out, int64_t n, uint64_t seed) {
  topos_rng rng = topos_rng_seed(seed);
  for (int64_t i = 0; i < n; ++i) out[i] = topos_rng_unit(&rng) * 2.0 - 1.0;
}

/* A contiguous random tensor (caller releases); NULL on failure. */
static inline topos_tensor *bt_random(topos_dtype dtype, int rank, const int64_t *shape,
                                      uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  double *v = malloc((size_t)n * sizeof(double));
  if (!v) return NULL;
  bt_fill_f64(v, n, seed);
  topos_tensor *t = NULL;
  if (topos_tensor_from_f64(dtype, rank, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* The reference product of 2-D tensors (any layout) into a new f64 buffer of
 * the dtype's values: each element seeded with a[i,0]*b[0,j], k ascending,
 * computed in the tensors' own precision. Caller frees. */
static inline double *bt_reference_matmul(const topos_tensor *a, const topos_tensor *b) {
  int64_t m = topos_tensor_shape(a)[0], k = topos_tensor_shape(a)[1], n = topos_tensor_shape(b)[1];
  double *av = malloc((size_t)(m * k) * 8), *bv = malloc((size_t)(k * n) * 8);
  double *c = malloc((size_t)(m * n) * 8);
  if (!av || !bv || !c || topos_tensor_read_f64(a, av, m * k) != TOPOS_OK ||
      topos_tensor_read_f64(b, bv, k * n) != TOPOS_OK) {
    free(av), free(bv), free(c);
    return NULL;
  }
  int f32 = topos_tensor_dtype(a) == TOPOS_F32;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (f32) {
        float acc = (float)av[i * k] * (float)bv[j];
        for (int64_t p = 1; p < k; ++p) {
          float prod = (float)av[i * k + p] * (float)bv[p * n + j];
          acc = acc + prod;
        }
        c[i * n + j] = acc;
      } else {
        double acc = av[i * k] * bv[j];
        for (int64_t p = 1; p < k; ++p) {
          double prod = av[i * k + p] * bv[p * n + j];
          acc = acc + prod;
        }
        c[i * n + j] = acc;
      }
    }
  free(av), free(bv);
  return c;
}

/* 1 when the tensor's values equal ref bit for bit (as values of its dtype). */
static inline int bt_bits_equal(const topos_tensor *t, const double *ref, int64_t n) {
  double *v = malloc((size_t)n * 8);
  if (!v || topos_tensor_read_f64(t, v, n) != TOPOS_OK) {
    free(v);
    return 0;
  }
  int same = memcmp(v, ref, (size_t)n * 8) == 0;
  free(v);
  return same;
}

/* sum (x - ref)^2 / sum ref^2 */
static inline double bt_nmse(const topos_tensor *t, const double *ref, int64_t n) {
  double *v = malloc((size_t)n * 8);
  if (!v || topos_tensor_read_f64(t, v, n) != TOPOS_OK) {
    free(v);
    return INFINITY;
  }
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (v[i] - ref[i]) * (v[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  free(v);
  return den > 0 ? num / den : num;
}

/* Restores the runtime switches at the end of a test. */
typedef struct bt_scope {
  topos_numerics posture;
  int loud;
} bt_scope;
static inline bt_scope bt_enter(void) {
  bt_scope s = {topos_numerics_current(), topos_backend_loud()};
  return s;
}
static inline void bt_leave(bt_scope s) {
  topos_numerics_restore(s.posture);
  topos_backend_set_loud(s.loud);
  tp_backend_set_threads(0);
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) {
    topos_backend_set_enabled((topos_backend)b, 1);
    if (topos_backend_state_of((topos_backend)b, NULL, 0) == TOPOS_BACKEND_POISONED)
      tp_backend_reset((topos_backend)b);
  }
}
/* Disables every backend (ops run their reference loops) or enables them. */
static inline void bt_all_backends(int enabled) {
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) topos_backend_set_enabled((topos_backend)b, enabled);
}

/* The default rung's product of A (m x k; row-major, or transposed: element
 * (i, p) at a[p * m + i]) and B (k x n, rows ldb apart) against the
 * reference loops, bit for bit, at 1, 2 and 3 threads. Operands are
 * allocated to their exact extent so a read past the end shows under
 * valgrind or ASan; -0 and an infinity are planted. 1 when all agree. */
#define BT_DEFAULT_GEMM_CASE(T, sfx)                                                           \
  static inline int bt_default_gemm_case_##sfx(int64_t m, int64_t n, int64_t k, int transposed,  \
                                               int64_t ldb, uint64_t seed) {                   \
    size_t bsize = (size_t)((k - 1) * ldb + n);                                                \
    T *a = malloc((size_t)(m * k) * sizeof(T)), *b = malloc(bsize * sizeof(T));               \
    T *c1 = malloc((size_t)(m * n) * sizeof(T)), *c2 = malloc((size_t)(m * n) * sizeof(T));   \
    double *tmp = malloc(((size_t)(m * k) + bsize) * sizeof(double));                          \
    int ok = a && b && c1 && c2 && tmp;                                                        \
    if (ok) {                                                                                  \
      bt_fill_f64(tmp, m * k + (int64_t)bsize, seed);                                          \
      for (int64_t i = 0; i < m * k; ++i) a[i] = (T)tmp[i];                                    \
      for (size_t i = 0; i < bsize; ++i) b[i] = (T)tmp[m * k + (int64_t)i];                    \
      a[0] = (T)-0.0; /* the seed keeps -0 products */                                         \
      b[n - 1] = (T)-0.0;                                                                      \
      if (m * k > 7) a[7] = (T)INFINITY;                                                        \
      /* A transposed: A's element (i, p) at a[p * m + i] (a_row_stride 1) */                 \
      topos_gemm_task t = {m, n, k, a, transposed ? 1 : k, transposed ? m : 1,                 \
                           b, ldb, 1, c1, n};                                                  \
      tp_reference_gemm_##sfx(&t);                                                             \
      for (int threads = 1; ok && threads <= 3; ++threads) {                                   \
        tp_backend_set_threads(threads);                                                       \
        memset(c2, 0x55, (size_t)(m * n) * sizeof(T));                                         \
        t.c = c2;                                                                              \
        ok &= tp_default_gemm_##sfx(&t) == TOPOS_OK &&                                         \
              memcmp(c1, c2, (size_t)(m * n) * sizeof(T)) == 0;                                \
        t.c = c1;                                                                              \
      }                                                                                        \
      tp_backend_set_threads(0);                                                               \
    }                                                                                          \
    free(a), free(b), free(c1), free(c2), free(tmp);                                           \
    return ok;                                                                                 \
  }
BT_DEFAULT_GEMM_CASE(float, f32)
BT_DEFAULT_GEMM_CASE(double, f64)

#endif
