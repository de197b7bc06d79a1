/* The default rung's microkernels, one definition compiled once per ISA
 * file (gemm_ukernel.c for the baseline, *_avx2.c, *_avx512.c). Include with
 * TP_UK_SUFFIX (name suffix) and TP_UK_VECTOR_BYTES (16, 32, 64) defined.
 *
 * Written with compiler vector types: one vector op per element lane, a
 * multiply then an add, each rounded (the library is compiled with
 * -ffp-contract=off, so no FMA forms). Each C element owns one accumulator
 * lane that is seeded with the first product a[i,0]*b[0,j] and then adds the
 * products in k order: the reference's bits, at vector speed.
 *
 * Broadcasts are written x - 0 (exact for every x, and folded away by the
 * compiler); 0 + x would turn -0 into +0.
 *
 * Tile: MR = 6 rows by NR = two vectors of columns. ap holds MR values per k
 * step (rows past the edge are zero), bp holds NR values per k step. */
#include <stdint.h>
#include <string.h>

#define TP_UK_CAT3_(a, b, c) a##b##c
#define TP_UK_CAT3(a, b, c) TP_UK_CAT3_(a, b, c)
#define TP_UK_MR 6

#define TP_UK_DEFINE(T, tsfx)                                                                    \
  typedef T TP_UK_CAT3(tp_uk_vec_, tsfx, TP_UK_SUFFIX)                                           \
      __attribute__((vector_size(TP_UK_VECTOR_BYTES)));                                          \
  void TP_UK_CAT3(tp_default_ukernel_, tsfx, TP_UK_SUFFIX)(                                      \
      int64_t kc, const T *ap, const T *bp, T *c, int64_t ldc, int first, int mr, int nr) {      \
    typedef TP_UK_CAT3(tp_uk_vec_, tsfx, TP_UK_SUFFIX) V;                                        \
    enum { W = TP_UK_VECTOR_BYTES / sizeof(T), NR = 2 * W };                                     \
    V acc[TP_UK_MR][2];                                                                          \
    T edge[TP_UK_MR * NR];                                                                       \
    int full = mr == TP_UK_MR && nr == NR;                                                       \
    T *tile = full ? c : edge;                                                                   \
    int64_t ld = full ? ldc : NR;                                                                \
    int64_t p = 0;                                                                               \
    if (first) {                                                                                 \
      V b0, b1;                                                                                  \
      memcpy(&b0, bp, sizeof b0);                                                                \
      memcpy(&b1, bp + W, sizeof b1);                                                            \
      _Pragma("GCC unroll 6") for (int r = 0; r < TP_UK_MR; ++r) {                               \
        V va = ap[r] - (V){0};                                                                  \
        acc[r][0] = va * b0;                                                                     \
        acc[r][1] = va * b1;                                                                     \
      }                                                                                          \
      p = 1;                                                                                     \
    } else {                                                                                     \
      if (!full) {                                                                               \
        memset(edge, 0, sizeof edge);                                                            \
        for (int r = 0; r < mr; ++r) memcpy(edge + r * NR, c + r * ldc, (size_t)nr * sizeof(T)); \
      }                                                                                          \
      _Pragma("GCC unroll 6") for (int r = 0; r < TP_UK_MR; ++r) {                               \
        memcpy(&acc[r][0], tile + r * ld, sizeof(V));                                            \
        memcpy(&acc[r][1], tile + r * ld + W, sizeof(V));                                        \
      }                                                                                          \
    }                                                                                            \
    for (; p < kc; ++p) {                                                                        \
      V b0, b1;                                                                                  \
      memcpy(&b0, bp + p * NR, sizeof b0);                                                       \
      memcpy(&b1, bp + p * NR + W, sizeof b1);                                                   \
      const T *a = ap + p * TP_UK_MR;                                                            \
      _Pragma("GCC unroll 6") for (int r = 0; r < TP_UK_MR; ++r) {                               \
        V va = a[r] - (V){0};                                                                   \
        acc[r][0] += va * b0;                                                                    \
        acc[r][1] += va * b1;                                                                    \
      }                                                                                          \
    }                                                                                            \
    _Pragma("GCC unroll 6") for (int r = 0; r < TP_UK_MR; ++r) {                                 \
      memcpy(tile + r * ld, &acc[r][0], sizeof(V));                                              \
      memcpy(tile + r * ld + W, &acc[r][1], sizeof(V));                                          \
    }                                                                                            \
    if (!full)                                                                                   \
      for (int r = 0; r < mr; ++r) memcpy(c + r * ldc, edge + r * NR, (size_t)nr * sizeof(T));   \
  }

TP_UK_DEFINE(float, f32_)
TP_UK_DEFINE(double, f64_)
