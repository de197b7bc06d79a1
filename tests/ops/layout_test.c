/* Layout ops through the op table: views share storage, pad places inside
 * zeros, fold is the exact adjoint of unfold, gather/scatter by i32 rows. */
#include "ops_util.h"

static const topos_dtype kDts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};

TEST(ops_views_share_storage) {
  for (int d = 0; d < 3; ++d) {
    ot_pool p = {{0}, 0};
    int64_t s[] = {2, 3};
    const double v[6] = {1, 2, 3, 4, 5, 6};
    topos_tensor *x = ot_make(&p, kDts[d], 2, s, v), *r;
    CHECK(x);
    topos_op_attrs at = ot_attrs();
    r = ot_run(&p, TOPOS_OP_TRANSPOSE, x, NULL, &at);
    int64_t st[] = {3, 2};
    CHECK_VALUES(&p, r, 2, st, 1, 4, 2, 5, 3, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    at.rank = 2;
    at.order[0] = 1;
    at.order[1] = 0;
    r = ot_run(&p, TOPOS_OP_PERMUTE, x, NULL, &at);
    CHECK_VALUES(&p, r, 2, st, 1, 4, 2, 5, 3, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    at = ot_attrs();
    at.rank = 2;
    at.shape[0] = -1;
    at.shape[1] = 2;
    r = ot_run(&p, TOPOS_OP_RESHAPE, x, NULL, &at);
    CHECK_VALUES(&p, r, 2, st, 1, 2, 3, 4, 5, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    at = ot_attrs();
    at.axis = 1;
    at.start = 1;
    at.length = 2;
    r = ot_run(&p, TOPOS_OP_NARROW, x, NULL, &at);
    int64_t sn[] = {2, 2};
    CHECK_VALUES(&p, r, 2, sn, 2, 3, 5, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    at = ot_attrs();
    at.axis = 1;
    at.length = 2;
    r = ot_run(&p, TOPOS_OP_BROADCAST_ALONG, x, NULL, &at);
    int64_t sb[] = {2, 2, 3};
    CHECK_VALUES(&p, r, 3, sb, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    at = ot_attrs();
    at.axis = 1;
    at.size = 2;
    at.step = 1;
    at.dilation = 1;
    r = ot_run(&p, TOPOS_OP_UNFOLD, x, NULL, &at);
    int64_t su[] = {2, 2, 2};
    CHECK_VALUES(&p, r, 3, su, 1, 2, 2, 3, 4, 5, 5, 6);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(x));
    const double one[1] = {7};
    topos_tensor *c = ot_make(&p, kDts[d], 0, NULL, one);
    at = ot_attrs();
    at.rank = 2;
    at.shape[0] = 2;
    at.shape[1] = 2;
    r = ot_run(&p, TOPOS_OP_BROADCAST, c, NULL, &at);
    CHECK_VALUES(&p, r, 2, sn, 7, 7, 7, 7);
    CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(c));
    ot_free(&p);
  }
}

TEST(ops_pad_places_inside_zeros) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2, 2}, so[] = {2, 5}, so0[] = {3, 2};
  const double v[4] = {1, -2, 3, -0.0};
  topos_tensor *x = NULL, *r;
  for (int d = 0; d < 3; ++d) {
    x = ot_make(&p, kDts[d], 2, s, v);
    CHECK(x);
    CHECK_OK(topos_pad(x, 1, 2, 5, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 0, 0, 1, -2, 0, 0, 0, 3, -0.0, 0);
    CHECK(signbit(ot_at(r, 8)) && !signbit(ot_at(r, 9)));
    CHECK_OK(topos_pad(x, 0, 0, 3, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, so0, 1, -2, 3, -0.0, 0, 0);
  }
  /* integer data moves too */
  int32_t iv[3] = {5, -6, 7};
  topos_tensor *i = ot_i32(&p, 3, iv);
  CHECK_OK(topos_pad(i, 0, 1, 5, &r));
  ot_keep(&p, r);
  int32_t want[5] = {0, 5, -6, 7, 0};
  CHECK(memcmp(topos_tensor_data(r), want, sizeof want) == 0);
  CHECK_STATUS(topos_pad(x, 1, 4, 5, &r), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("pad:");
  ot_free(&p);
}

TEST(ops_fold_hand_case) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {3, 3}, so[] = {5};
  const double v[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t s2[] = {2, 3}, so2[] = {7};
  const double w[6] = {1, 2, 3, 10, 20, 30};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *x = ot_make(&p, kDts[d], 2, s, v), *r;
    CHECK(x);
    CHECK_OK(topos_fold(x, 0, 3, 1, 1, 5, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 1, so, 1, 2, 3, 2, 1);
    /* step 2, dilation 2 over extent 7: windows at 0 and 2 cover 0,2,4 and 2,4,6 */
    x = ot_make(&p, kDts[d], 2, s2, w);
    CHECK_OK(topos_fold(x, 0, 3, 2, 2, 7, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 1, so2, 1, 0, 12, 0, 23, 0, 30);
  }
  ot_free(&p);
}

/* <unfold(x), y> == <x, fold(y)>, exactly for small integers. */
static int adjoint_holds(topos_dtype dt, int rank, const int64_t *shape, int axis, int64_t size,
                         int64_t step, int64_t dilation, uint64_t seed) {
  ot_pool p = {{0}, 0};
  int ok = 0;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  double *xv = malloc((size_t)n * sizeof(double));
  double *yv = malloc((size_t)n * (size_t)size * sizeof(double));
  topos_op_attrs at = ot_attrs();
  at.axis = axis;
  at.size = size;
  at.step = step;
  at.dilation = dilation;
  at.length = shape[axis];
  ot_fill(xv, n, seed, 4, 1.0);
  topos_tensor *x = ot_make(&p, dt, rank, shape, xv);
  topos_tensor *u = x ? ot_run(&p, TOPOS_OP_UNFOLD, x, NULL, &at) : NULL;
  if (!u) goto done;
  ot_fill(yv, topos_tensor_volume(u), seed + 1, 4, 1.0);
  topos_tensor *y = ot_make(&p, dt, topos_tensor_rank(u), topos_tensor_shape(u), yv);
  topos_tensor *fy = y ? ot_run(&p, TOPOS_OP_FOLD, y, NULL, &at) : NULL;
  topos_tensor *uy = y ? ot_run(&p, TOPOS_OP_MUL, u, y, NULL) : NULL;
  topos_tensor *xf = fy ? ot_run(&p, TOPOS_OP_MUL, x, fy, NULL) : NULL;
  topos_tensor *lhs = uy ? ot_run(&p, TOPOS_OP_SUM, uy, NULL, NULL) : NULL;
  topos_tensor *rhs = xf ? ot_run(&p, TOPOS_OP_SUM, xf, NULL, NULL) : NULL;
  if (!lhs || !rhs) {
    printf("    adjoint: %s\n", topos_last_error());
    goto done;
  }
  ok = topos_tensor_bits_equal(lhs, rhs) && ot_at(lhs, 0) != 0;
  if (!ok) printf("    adjoint: %g vs %g\n", ot_at(lhs, 0), ot_at(rhs, 0));
done:
  free(xv);
  free(yv);
  ot_free(&p);
  return ok;
}

TEST(ops_fold_is_adjoint_of_unfold) {
  int64_t s1[] = {11}, s2[] = {3, 10}, s3[] = {2, 9, 3};
  CHECK(adjoint_holds(TOPOS_F32, 1, s1, 0, 3, 1, 1, 1));
  CHECK(adjoint_holds(TOPOS_F64, 1, s1, 0, 3, 2, 2, 2));
  CHECK(adjoint_holds(TOPOS_F32, 2, s2, 1, 4, 3, 1, 3));
  CHECK(adjoint_holds(TOPOS_BF16, 2, s2, 1, 2, 1, 3, 4));
  CHECK(adjoint_holds(TOPOS_F32, 3, s3, 1, 3, 2, 1, 5)); /* middle axis */
  CHECK(adjoint_holds(TOPOS_F64, 3, s3, 0, 1, 1, 1, 6));
  CHECK(adjoint_holds(TOPOS_F32, 3, s3, 2, 2, 1, 1, 7)); /* last axis */
}

TEST(ops_gather_rows) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {4, 2}, so[] = {3, 2}, s1[] = {4}, so1[] = {3};
  const double v[8] = {0, 1, 10, 11, 20, 21, 30, 31};
  int32_t idx[3] = {2, 0, 2};
  topos_tensor *t = NULL, *i = ot_i32(&p, 3, idx), *r;
  CHECK(i);
  for (int d = 0; d < 3; ++d) {
    t = ot_make(&p, kDts[d], 2, s, v);
    CHECK(t);
    CHECK_OK(topos_gather(t, i, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 20, 21, 0, 1, 20, 21);
    topos_tensor *t1 = ot_make(&p, kDts[d], 1, s1, v);
    CHECK_OK(topos_gather(t1, i, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 1, so1, 10, 0, 10);
  }
  int32_t bad[3] = {0, 4, 1};
  i = ot_i32(&p, 3, bad);
  CHECK_STATUS(topos_gather(t, i, &r), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("gather: index 4 at position 1");
  CHECK_ERROR_HAS("[4,2]");
  bad[1] = -1;
  i = ot_i32(&p, 3, bad);
  CHECK_STATUS(topos_gather(t, i, &r), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("index -1");
  ot_free(&p);
}

TEST(ops_scatter_repeats_accumulate_in_order) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {4, 2}, so[] = {3, 2};
  const double v[8] = {1, 2, 10, 20, 100, 200, -0.0, -0.0};
  int32_t idx[4] = {2, 0, 2, 1};
  const topos_dtype dts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *x = ot_make(&p, dts[d], 2, s, v), *i = ot_i32(&p, 4, idx), *r;
    CHECK(x && i);
    CHECK_OK(topos_scatter(x, i, 3, &r));
    /* zero-seeded: row 1 gets +0 + -0 = +0 */
    CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 10, 20, 0.0, 0.0, 101, 202);
    CHECK(!signbit(ot_at(r, 2)));
  }
  /* ascending i: ((0 + 1e8) + 1) - 1e8 = 0 in f32 */
  int64_t s1[] = {3}, so1[] = {1};
  const double w[3] = {1e8, 1, -1e8};
  int32_t same[3] = {0, 0, 0};
  topos_tensor *x = ot_make(&p, TOPOS_F32, 1, s1, w), *i = ot_i32(&p, 3, same), *r;
  CHECK_OK(topos_scatter(x, i, 1, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 1, so1, 0.0);
  int32_t bad[3] = {0, 0, 1};
  i = ot_i32(&p, 3, bad);
  CHECK_STATUS(topos_scatter(x, i, 1, &r), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("scatter: index 1 at position 2");
  ot_free(&p);
}
