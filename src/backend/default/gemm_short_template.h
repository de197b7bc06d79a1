/* The default rung's short-C kernel, one definition compiled once per ISA
 * file next to the tile and narrow kernels. Include with TP_UK_SUFFIX and
 * TP_UK_VECTOR_BYTES defined.
 *
 * A C of a few rows (attention while decoding: the 8 query heads of a
 * key/value head against every cached key) spends most of the packed tile
 * route's time packing B, which it then reads once. This kernel reads B's
 * rows in place: per k step, TP_SK_COLS vectors of B's row p, one broadcast
 * of A per C row, a multiply and an add per accumulator. h <= TP_SK_ROWS rows
 * of C stay in registers over the whole k loop, one column chunk at a time.
 *
 * Bits: the reference's — each C element one accumulator seeded with
 * a[i,0]*b[0,j], then the products added in k order, a rounded multiply then
 * a rounded add (-ffp-contract=off).
 *
 * a: A's element (r, p) at a[r * lda + p * astep]. b: B's row p at
 * b + p * ldb, columns [0, cols) with cols a multiple of the vector width. */
#include <stdint.h>
#include <string.h>

#define TP_SK_CAT3_(a, b, c) a##b##c
#define TP_SK_CAT3(a, b, c) TP_SK_CAT3_(a, b, c)

#define TP_SK_ROWS 8

/* The kernel for a fixed number of rows R (1..8): each instance keeps
 * exactly its rows' accumulators, so one query row costs one row of work. */
#define TP_SK_BODY(T, tsfx)                                                                     \
  static inline __attribute__((always_inline)) void TP_SK_CAT3(tp_sk_rows_, tsfx, TP_UK_SUFFIX)( \
      const int R, const int NV, int64_t k, const T *a, int64_t lda, int64_t astep, const T *b, int64_t ldb,   \
      T *c, int64_t ldc, int64_t cols) {                                                        \
    typedef T V __attribute__((vector_size(TP_UK_VECTOR_BYTES)));                               \
    enum { W = TP_UK_VECTOR_BYTES / sizeof(T) };                                                \
    for (int64_t j0 = 0; j0 < cols; j0 += (int64_t)NV * W) {                                    \
      V acc[TP_SK_ROWS][TP_SK_VECTORS], bv[TP_SK_VECTORS];                                                            \
      _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) memcpy(&bv[v], b + j0 + v * W, sizeof(V)); \
      _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r)                                       \
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) acc[r][v] = (a[r * lda] - (V){0}) * bv[v]; \
      for (int64_t p = 1; p < k; ++p) {                                                         \
        const T *brow = b + p * ldb + j0;                                                       \
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) memcpy(&bv[v], brow + v * W, sizeof(V)); \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {                                   \
          const V x = a[r * lda + p * astep] - (V){0};                                          \
          _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) acc[r][v] += x * bv[v];          \
        }                                                                                       \
      }                                                                                         \
      for (int r = 0; r < R; ++r) memcpy(c + r * ldc + j0, acc[r], (size_t)NV * sizeof(V));     \
    }                                                                                           \
  }

#define TP_SK_CALL(tsfx, R, NV, cols) \
  TP_SK_CAT3(tp_sk_rows_, tsfx, TP_UK_SUFFIX)(R, NV, k, a, lda, astep, b + done, ldb, c + done, ldc, cols)
#define TP_SK_CASES(tsfx, NV, cols)              \
  switch (h) {                                   \
    case 1: TP_SK_CALL(tsfx, 1, NV, cols); break; \
    case 2: TP_SK_CALL(tsfx, 2, NV, cols); break; \
    case 3: TP_SK_CALL(tsfx, 3, NV, cols); break; \
    case 4: TP_SK_CALL(tsfx, 4, NV, cols); break; \
    case 5: TP_SK_CALL(tsfx, 5, NV, cols); break; \
    case 6: TP_SK_CALL(tsfx, 6, NV, cols); break; \
    case 7: TP_SK_CALL(tsfx, 7, NV, cols); break; \
    default: TP_SK_CALL(tsfx, 8, NV, cols); break; \
  }

/* cols: a multiple of the vector width; chunks of TP_SK_VECTORS vectors,
 * then the vectors left one at a time */
#define TP_SK_DEFINE(T, tsfx)                                                                   \
  TP_SK_BODY(T, tsfx)                                                                           \
  void TP_SK_CAT3(tp_default_short_, tsfx, TP_UK_SUFFIX)(                                       \
      int64_t k, const T *a, int64_t lda, int64_t astep, const T *b, int64_t ldb, T *c,          \
      int64_t ldc, int h, int64_t cols) {                                                       \
    enum { W = TP_UK_VECTOR_BYTES / sizeof(T), CW = TP_SK_VECTORS * W };                        \
    int64_t done = 0, wide = cols / CW * CW;                                                    \
    if (wide) TP_SK_CASES(tsfx, TP_SK_VECTORS, wide)                                            \
    done = wide;                                                                                \
    if (done < cols) TP_SK_CASES(tsfx, 1, cols - done)                                          \
  }

/* TP_SK_VECTORS (B vectors per k step, set by the ISA file): 8 rows x that
 * many accumulators fit the ISA's register file with B and a broadcast */
TP_SK_DEFINE(float, f32_)
TP_SK_DEFINE(double, f64_)
