/* The default rung's narrow-C route (gemm_narrow.c): C at most one vector
 * wide, A row-major (packed) or transposed (read in place, row blocks that
 * run past m reading into A's next k row), B's rows in place with the last
 * rows copied. Bits equal the reference loops for every width, edge block,
 * k block and thread count; operands are allocated to their exact extent so
 * a read past the end shows under valgrind or ASan. */
#include "backend_util.h"
#include "backend/platform.h"

#define BT_NARROW_CASE(T, sfx)                                                                 \
  static int bt_narrow_case_##sfx(int64_t m, int64_t n, int64_t k, int transposed,            \
                                  uint64_t seed) {                                             \
    T *a = malloc((size_t)(m * k) * sizeof(T)), *b = malloc((size_t)(k * n) * sizeof(T));     \
    T *c1 = malloc((size_t)(m * n) * sizeof(T)), *c2 = malloc((size_t)(m * n) * sizeof(T));   \
    double *tmp = malloc((size_t)(m * k + k * n) * sizeof(double));                            \
    int ok = a && b && c1 && c2 && tmp;                                                        \
    if (ok) {                                                                                  \
      bt_fill_f64(tmp, m * k + k * n, seed);                                                   \
      for (int64_t i = 0; i < m * k; ++i) a[i] = (T)tmp[i];                                    \
      for (int64_t i = 0; i < k * n; ++i) b[i] = (T)tmp[m * k + i];                            \
      a[0] = (T)-0.0; /* the seed keeps -0 products */                                         \
      b[n - 1] = (T)-0.0;                                                                      \
      if (m * k > 7) a[7] = (T)INFINITY;                                                        \
      /* A transposed: A's element (i, p) at a[p * m + i] (a_row_stride 1) */                 \
      topos_gemm_task t = {m, n, k, a, transposed ? 1 : k, transposed ? m : 1,                 \
                           b, n, 1, c1, n};                                                    \
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
BT_NARROW_CASE(float, f32)
BT_NARROW_CASE(double, f64)

/* widths around each vector size, m around the row blocks (12, 24), k
 * around the 512-step k block; a conv's weight gradient (9 x 8 over a long
 * k, 72 x 16) and forward product among them */
static const int64_t bt_narrow_shapes[][3] = {
    {9, 8, 1100}, {72, 16, 1030}, {1100, 8, 9}, {500, 16, 72}, {64, 10, 784}, {25, 1, 700},
    {13, 3, 600}, {11, 4, 513}, {23, 5, 512}, {49, 9, 300}, {37, 15, 129}, {24, 16, 600},
    {12, 2, 2000}, {3, 7, 2048}, {2, 16, 3000}};

TEST(backend_default_narrow_product_matches_reference_loop) {
  int ok = 1;
  for (size_t s = 0; s < sizeof bt_narrow_shapes / sizeof bt_narrow_shapes[0]; ++s) {
    for (int tr = 0; tr < 2; ++tr) {
      const int64_t *sh = bt_narrow_shapes[s];
      int one = bt_narrow_case_f32(sh[0], sh[1], sh[2], tr, 100 + s);
      int two = bt_narrow_case_f64(sh[0], sh[1], sh[2], tr, 200 + s);
      if (!one || !two)
        fprintf(stderr, "narrow gemm m=%lld n=%lld k=%lld transposed=%d: f32 %d f64 %d\n",
                (long long)sh[0], (long long)sh[1], (long long)sh[2], tr, one, two);
      ok &= one && two;
    }
  }
  CHECK(ok);
}
