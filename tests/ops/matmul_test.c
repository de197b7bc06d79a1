/* Reference matmul: hand cases per dtype, seeded-from-first summation (-0.0
 * survives, fixed k order), f32 accumulation for bf16, batched products. */
#include "ops_util.h"

TEST(ops_matmul_hand_cases) {
  ot_pool p = {{0}, 0};
  int64_t sa[] = {2, 3}, sb[] = {3, 2}, so[] = {2, 2};
  const double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
  const topos_dtype dts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *x = ot_make(&p, dts[d], 2, sa, a), *y = ot_make(&p, dts[d], 2, sb, b), *r;
    CHECK(x && y);
    CHECK_OK(topos_matmul(x, y, &r));
    /* [1 2 3; 4 5 6] x [7 8; 9 10; 11 12] */
    CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 58, 64, 139, 154);
  }
  ot_free(&p);
}

TEST(ops_matmul_seeded_with_first_product) {
  ot_pool p = {{0}, 0};
  int64_t sa[] = {1, 2}, sb[] = {2, 1}, so[] = {1, 1};
  const double a[2] = {1, 1}, b[2] = {-0.0, -0.0};
  topos_tensor *x = ot_make(&p, TOPOS_F32, 2, sa, a), *y = ot_make(&p, TOPOS_F32, 2, sb, b), *r;
  CHECK(x && y);
  CHECK_OK(topos_matmul(x, y, &r));
  ot_keep(&p, r);
  CHECK(signbit(ot_at(r, 0))); /* -0 + -0 = -0; a zero seed would give +0 */
  CHECK_VALUES(&p, r, 2, so, -0.0);
  /* k ascending: (1e8*1 + 1*1) + (-1e8*1) = 0 in f32 (1e8 + 1 rounds to 1e8) */
  int64_t sa3[] = {1, 3}, sb3[] = {3, 1};
  const double a3[3] = {1e8, 1, -1e8}, b3[3] = {1, 1, 1};
  x = ot_make(&p, TOPOS_F32, 2, sa3, a3);
  y = ot_make(&p, TOPOS_F32, 2, sb3, b3);
  CHECK_OK(topos_matmul(x, y, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 0.0);
  /* bf16 accumulates in f32 and rounds once: 1 + 2^-8 + 2^-8 = 1 + 2^-7 */
  const double ab[3] = {1, 1, 1}, bb[3] = {1, 0x1p-8, 0x1p-8};
  x = ot_make(&p, TOPOS_BF16, 2, sa3, ab);
  y = ot_make(&p, TOPOS_BF16, 2, sb3, bb);
  CHECK_OK(topos_matmul(x, y, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 1 + 0x1p-7);
  ot_free(&p);
}

TEST(ops_matmul_batched) {
  ot_pool p = {{0}, 0};
  int64_t sa[] = {2, 2, 3}, sb[] = {2, 3, 2}, so[] = {2, 2, 2};
  const double a[12] = {1, 2, 3, 4, 5, 6, 1, 0, -1, 0, 2, 0};
  const double b[12] = {7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6};
  topos_tensor *x = ot_make(&p, TOPOS_F64, 3, sa, a), *y = ot_make(&p, TOPOS_F64, 3, sb, b), *r;
  CHECK(x && y);
  CHECK_OK(topos_matmul(x, y, &r));
  /* batch 1: [1 0 -1; 0 2 0] x [1 2; 3 4; 5 6] = [-4 -4; 6 8] */
  CHECK_VALUES(&p, ot_keep(&p, r), 3, so, 58, 64, 139, 154, -4, -4, 6, 8);
  /* each batch equals the rank-2 product of its slices */
  for (int64_t batch = 0; batch < 2; ++batch) {
    topos_tensor *xa, *yb, *xa2, *yb2, *rr, *rb, *rb2;
    CHECK_OK(topos_tensor_narrow(x, 0, batch, 1, &xa));
    CHECK_OK(topos_tensor_narrow(y, 0, batch, 1, &yb));
    ot_keep(&p, xa);
    ot_keep(&p, yb);
    int64_t s2a[] = {2, 3}, s2b[] = {3, 2}, s2o[] = {2, 2};
    CHECK_OK(topos_tensor_reshape(xa, 2, s2a, &xa2));
    CHECK_OK(topos_tensor_reshape(yb, 2, s2b, &yb2));
    ot_keep(&p, xa2);
    ot_keep(&p, yb2);
    CHECK_OK(topos_matmul(xa2, yb2, &rr));
    ot_keep(&p, rr);
    CHECK_OK(topos_tensor_narrow(r, 0, batch, 1, &rb));
    ot_keep(&p, rb);
    CHECK_OK(topos_tensor_reshape(rb, 2, s2o, &rb2));
    ot_keep(&p, rb2);
    CHECK_TENSOR_BITS(rr, rb2);
  }
  ot_free(&p);
}
