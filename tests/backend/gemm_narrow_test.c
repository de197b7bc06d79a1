/* The default rung's narrow-C route (gemm_narrow.c): C at most one vector
 * wide, A row-major (packed) or transposed (read in place, row blocks that
 * run past m reading into A's next k row), B's rows in place with the last
 * rows copied. Bits equal the reference loops for every width, edge block,
 * k block and thread count; operands are allocated to their exact extent so
 * a read past the end shows under valgrind or ASan. */
#include "backend_util.h"
#include "backend/platform.h"

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
      int one = bt_default_gemm_case_f32(sh[0], sh[1], sh[2], tr, sh[1], 100 + s);
      int two = bt_default_gemm_case_f64(sh[0], sh[1], sh[2], tr, sh[1], 200 + s);
      if (!one || !two)
        fprintf(stderr, "narrow gemm m=%lld n=%lld k=%lld transposed=%d: f32 %d f64 %d\n",
                (long long)sh[0], (long long)sh[1], (long long)sh[2], tr, one, two);
      ok &= one && two;
    }
  }
  CHECK(ok);
}
