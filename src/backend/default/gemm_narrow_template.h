/* The default rung's narrow-C kernel, one definition compiled once per ISA
 * file (gemm_ukernel.c for the baseline, *_avx2.c, *_avx512.c), next to the
 * tile microkernels. Include with TP_UK_SUFFIX, TP_UK_VECTOR_BYTES and
 * TP_NK_ROWS (rows per block, sized to the ISA's vector registers) defined.
 *
 * A C at most one vector wide (a conv's 8 or 16 channels, a classifier's
 * 10 classes) keeps one accumulator vector per row in registers across the
 * whole k loop: per k step one load of B's row, one broadcast, multiply and
 * add per C row. The packed tile (6 rows by two vectors) spends most of its
 * lanes and most of its time packing on such shapes; this kernel reads A in
 * place when A's rows are adjacent in memory (A = a transposed row-major
 * matrix: a conv's weight gradient, patchesᵀ · g) and B's rows in place.
 *
 * Bits: as the tile kernels — each C element is one accumulator lane seeded
 * with the first product a[i,0]*b[0,j] (or reloaded from C, where the caller
 * stored it exactly after an earlier k block) and then adding the products
 * in k order, a rounded multiply then a rounded add (-ffp-contract=off).
 * Lanes past n and rows past h compute on whatever values the reads found
 * and are never stored.
 *
 * ap: A's element (p, r) at ap[p * ap_step + r] for r < TP_NK_ROWS (rows
 * past h must be readable). b: B's row p at b + p * ldb, a whole vector
 * readable. c: the block's rows r < h, columns j < n, row stride ldc. */
#include <stdint.h>
#include <string.h>

#define TP_NK_CAT3_(a, b, c) a##b##c
#define TP_NK_CAT3(a, b, c) TP_NK_CAT3_(a, b, c)

#define TP_NK_DEFINE(T, tsfx)                                                                   \
  typedef T TP_NK_CAT3(tp_nk_vec_, tsfx, TP_UK_SUFFIX)                                          \
      __attribute__((vector_size(TP_UK_VECTOR_BYTES)));                                         \
  void TP_NK_CAT3(tp_default_narrow_, tsfx, TP_UK_SUFFIX)(                                      \
      int64_t kc, const T *ap, int64_t ap_step, const T *b, int64_t ldb, T *c, int64_t ldc,     \
      int first, int h, int n) {                                                                \
    typedef TP_NK_CAT3(tp_nk_vec_, tsfx, TP_UK_SUFFIX) V;                                       \
    enum { W = TP_UK_VECTOR_BYTES / sizeof(T), R = TP_NK_ROWS };                                \
    V acc[R];                                                                                   \
    int64_t p = 0;                                                                              \
    if (first) {                                                                                \
      V bv;                                                                                     \
      memcpy(&bv, b, sizeof bv);                                                                \
      _Pragma("GCC unroll 32") for (int r = 0; r < R; ++r) acc[r] = (ap[r] - (V){0}) * bv;      \
      p = 1;                                                                                    \
    } else {                                                                                    \
      for (int r = 0; r < R; ++r) {                                                             \
        acc[r] = (V){0};                                                                        \
        if (r < h) memcpy(&acc[r], c + r * ldc, (size_t)n * sizeof(T));                         \
      }                                                                                         \
    }                                                                                           \
    for (; p < kc; ++p) {                                                                       \
      V bv;                                                                                     \
      memcpy(&bv, b + p * ldb, sizeof bv);                                                      \
      const T *a = ap + p * ap_step;                                                            \
      _Pragma("GCC unroll 32") for (int r = 0; r < R; ++r) acc[r] += (a[r] - (V){0}) * bv;      \
    }                                                                                           \
    if (n == W && h == R) {                                                                     \
      _Pragma("GCC unroll 32") for (int r = 0; r < R; ++r) memcpy(c + r * ldc, &acc[r], sizeof(V)); \
    } else {                                                                                    \
      for (int r = 0; r < h; ++r) memcpy(c + r * ldc, &acc[r], (size_t)n * sizeof(T));          \
    }                                                                                           \
  }

TP_NK_DEFINE(float, f32_)
TP_NK_DEFINE(double, f64_)
