/* The default rung's short-C route (gemm_short.c): at most 8 rows of C, B's
 * rows read in place (row stride past n: a narrowed cache), column chunks
 * in registers, the last columns by the reference loop. Bits equal the
 * reference loops for every row count, width, tail, k, A layout and thread
 * count; operands are allocated to their exact extent so a read past the
 * end shows under valgrind or ASan. */
#include "backend_util.h"
#include "backend/platform.h"

/* decoding's attention (8 query rows x 64 against 32..2048 keys; the
 * probabilities against 64-wide values), widths around the chunks (8 .. 32
 * columns by ISA) with tails, k of one and of two steps */
static const int64_t bt_short_shapes[][3] = {
    {8, 128, 64}, {8, 2048, 64}, {8, 64, 512}, {1, 48, 32}, {1, 32, 48}, {6, 100, 48},
    {3, 33, 7},   {2, 16, 1},    {5, 47, 2},  {7, 300, 129}, {4, 8, 5},  {8, 31, 64},
    {2, 80, 9},   {8, 48, 300}};

TEST(backend_default_short_product_matches_reference_loop) {
  int ok = 1;
  for (size_t s = 0; s < sizeof bt_short_shapes / sizeof bt_short_shapes[0]; ++s) {
    for (int v = 0; v < 4; ++v) { /* A row-major or transposed; B rows packed or strided */
      const int64_t *sh = bt_short_shapes[s];
      int tr = v & 1;
      int64_t ldb = v & 2 ? sh[1] + 37 : sh[1];
      int one = bt_default_gemm_case_f32(sh[0], sh[1], sh[2], tr, ldb, 300 + s);
      int two = bt_default_gemm_case_f64(sh[0], sh[1], sh[2], tr, ldb, 400 + s);
      if (!one || !two)
        fprintf(stderr, "short gemm m=%lld n=%lld k=%lld transposed=%d ldb=%lld: f32 %d f64 %d\n",
                (long long)sh[0], (long long)sh[1], (long long)sh[2], tr, (long long)ldb, one,
                two);
      ok &= one && two;
    }
  }
  CHECK(ok);
}
