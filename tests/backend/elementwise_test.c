/* Elementwise binaries and maps on the default rung: bit parity with the
 * reference loops over every layout (broadcast views included), maps over a
 * broadcast view compute the distinct elements and keep the view, and the
 * thread count never changes a bit. */
#include "backend_util.h"

static const topos_op bt_binaries[] = {TOPOS_OP_ADD, TOPOS_OP_SUB, TOPOS_OP_MUL, TOPOS_OP_DIV,
                                       TOPOS_OP_POW, TOPOS_OP_MAXIMUM, TOPOS_OP_STEP};

static topos_status bt_forward2(topos_op op, topos_tensor *a, topos_tensor *b, topos_tensor **out) {
  topos_tensor *in[2] = {a, b};
  topos_op_attrs attrs;
  memset(&attrs, 0, sizeof attrs);
  return topos_op_forward(op, in, &attrs, out);
}

/* Runs op on the default rung and on the reference loop; 1 when equal bits. */
static int bt_binary_parity(topos_op op, topos_tensor *a, topos_tensor *b) {
  topos_tensor *fast = NULL, *ref = NULL;
  int ok = bt_forward2(op, a, b, &fast) == TOPOS_OK;
  topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, 0);
  ok &= bt_forward2(op, a, b, &ref) == TOPOS_OK;
  topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, 1);
  ok = ok && topos_tensor_bits_equal(fast, ref) && topos_tensor_is_contiguous(fast);
  topos_tensor_release(fast), topos_tensor_release(ref);
  return ok;
}

TEST(backend_binaries_match_reference_over_broadcast_views) {
  bt_scope scope = bt_enter();
  int ok = 1;
  for (int d = 0; d < 2; ++d) {
    topos_dtype dt = d ? TOPOS_F64 : TOPOS_F32;
    int64_t sx[3] = {5, 37, 41}, srow[1] = {41}, scol[2] = {37, 1}, one[1] = {1};
    topos_tensor *x = bt_random(dt, 3, sx, 31), *row = bt_random(dt, 1, srow, 32);
    topos_tensor *col = bt_random(dt, 2, scol, 33), *scalar = bt_random(dt, 1, one, 34);
    topos_tensor *row2 = NULL, *row3 = NULL, *col2 = NULL, *col3 = NULL, *sc = NULL;
    topos_tensor *xt = NULL, *xt2 = NULL, *xn = NULL;
    ok &= x && row && col && scalar;
    /* bias over rows: [41] -> [37,41] -> [5,37,41] */
    ok &= ok && topos_tensor_broadcast_along(row, 0, 37, &row2) == TOPOS_OK &&
          topos_tensor_broadcast_along(row2, 0, 5, &row3) == TOPOS_OK;
    /* a column spread: [37,1] narrowed view then broadcast along the last axis */
    int64_t s37[1] = {37};
    topos_tensor *colv = NULL;
    ok &= ok && topos_tensor_reshape(col, 1, s37, &colv) == TOPOS_OK &&
          topos_tensor_broadcast_along(colv, 1, 41, &col2) == TOPOS_OK &&
          topos_tensor_broadcast_along(col2, 0, 5, &col3) == TOPOS_OK;
    ok &= ok && topos_tensor_broadcast(scalar, 3, sx, &sc) == TOPOS_OK;
    /* a permuted view of another tensor with the same shape */
    int64_t sy[3] = {41, 37, 5};
    topos_tensor *y = bt_random(dt, 3, sy, 35);
    int order[3] = {2, 1, 0};
    ok &= ok && y && topos_tensor_permute(y, order, &xt) == TOPOS_OK;
    /* a narrowed view */
    int64_t sz[3] = {5, 40, 41};
    topos_tensor *z = bt_random(dt, 3, sz, 36);
    ok &= ok && z && topos_tensor_narrow(z, 1, 2, 37, &xn) == TOPOS_OK;
    for (size_t o = 0; ok && o < sizeof bt_binaries / sizeof bt_binaries[0]; ++o) {
      topos_op op = bt_binaries[o];
      ok &= bt_binary_parity(op, x, row3) && bt_binary_parity(op, row3, x) &&
            bt_binary_parity(op, x, col3) && bt_binary_parity(op, col3, row3) &&
            bt_binary_parity(op, sc, x) && bt_binary_parity(op, xt, x) &&
            bt_binary_parity(op, xn, xt) && bt_binary_parity(op, x, x);
      if (!ok) printf("  parity failed for %s %s\n", topos_op_name(op), topos_dtype_name(dt));
    }
    topos_tensor *all[] = {x, row, col, scalar, row2, row3, col2, col3, sc, xt, xt2, xn, colv, y, z};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  }
  bt_leave(scope);
  CHECK(ok);
}

TEST(backend_binary_special_values_match_reference) {
  bt_scope scope = bt_enter();
  double v[8] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, 1.0, -2.5, 3e38};
  double w[8] = {0.0, -0.0, -INFINITY, 2.0, 1.0, NAN, -2.5, 3e38};
  int64_t s[1] = {8};
  topos_tensor *a = NULL, *b = NULL;
  CHECK_OK(topos_tensor_from_f64(TOPOS_F32, 1, s, v, &a));
  CHECK_OK(topos_tensor_from_f64(TOPOS_F32, 1, s, w, &b));
  int ok = 1;
  for (size_t o = 0; o < sizeof bt_binaries / sizeof bt_binaries[0]; ++o)
    ok &= bt_binary_parity(bt_binaries[o], a, b);
  topos_tensor_release(a), topos_tensor_release(b);
  bt_leave(scope);
  CHECK(ok);
}

TEST(backend_elementwise_bits_do_not_depend_on_threads) {
  bt_scope scope = bt_enter();
  int64_t s[2] = {300, 333}, srow[1] = {333};
  topos_tensor *x = bt_random(TOPOS_F32, 2, s, 41), *row = bt_random(TOPOS_F32, 1, srow, 42);
  topos_tensor *spread = NULL, *first_add = NULL, *first_tanh = NULL;
  int ok = x && row && topos_tensor_broadcast_along(row, 0, 300, &spread) == TOPOS_OK;
  for (int threads = 1; ok && threads <= 3; ++threads) {
    tp_backend_set_threads(threads);
    topos_tensor *sum = NULL, *th = NULL;
    ok &= topos_add(x, spread, &sum) == TOPOS_OK && topos_tanh(x, &th) == TOPOS_OK;
    if (ok && first_add) ok &= topos_tensor_bits_equal(first_add, sum) && topos_tensor_bits_equal(first_tanh, th);
    if (!first_add) {
      first_add = sum;
      first_tanh = th;
    } else {
      topos_tensor_release(sum), topos_tensor_release(th);
    }
  }
  topos_tensor *all[] = {x, row, spread, first_add, first_tanh};
  for (size_t i = 0; i < 5; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK(ok);
}

/* Exact maps are the reference's libm bits (special values included). */
TEST(backend_exact_maps_match_reference) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  enum { N = 4096 };
  double *v = malloc(N * sizeof(double));
  CHECK(v);
  bt_fill_f64(v, N, 43);
  for (int i = 0; i < N; ++i) v[i] *= 30.0;
  double specials[] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, 1e-45, -1.0, 88.8, -104.0, 1e-40};
  memcpy(v, specials, sizeof specials);
  static const topos_op maps[] = {TOPOS_OP_EXP, TOPOS_OP_LN, TOPOS_OP_SQRT, TOPOS_OP_TANH,
                                  TOPOS_OP_NEG, TOPOS_OP_RELU};
  int64_t s[1] = {N};
  int ok = 1;
  for (int d = 0; d < 2; ++d) {
    topos_tensor *x = NULL;
    ok &= topos_tensor_from_f64(d ? TOPOS_F64 : TOPOS_F32, 1, s, v, &x) == TOPOS_OK;
    for (size_t o = 0; ok && o < sizeof maps / sizeof maps[0]; ++o) {
      topos_tensor *in[1] = {x}, *fast = NULL, *ref = NULL;
      topos_op_attrs attrs;
      memset(&attrs, 0, sizeof attrs);
      ok &= topos_op_forward(maps[o], in, &attrs, &fast) == TOPOS_OK;
      bt_all_backends(0);
      ok &= topos_op_forward(maps[o], in, &attrs, &ref) == TOPOS_OK;
      bt_all_backends(1);
      ok &= ok && topos_tensor_bits_equal(fast, ref);
      if (!ok) printf("  %s %s differs\n", topos_op_name(maps[o]), d ? "f64" : "f32");
      topos_tensor_release(fast), topos_tensor_release(ref);
    }
    topos_tensor_release(x);
  }
  free(v);
  bt_leave(scope);
  CHECK(ok);
}

/* exp over a [1000] row broadcast to [64,1000] computes 1000 values and
 * returns a view with the same stride-0 axis; values equal the reference. */
TEST(backend_map_over_broadcast_view_keeps_the_view) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  int64_t srow[1] = {1000};
  topos_tensor *row = bt_random(TOPOS_F32, 1, srow, 44), *spread = NULL, *y = NULL, *ref = NULL;
  int ok = row && topos_tensor_broadcast_along(row, 0, 64, &spread) == TOPOS_OK &&
           topos_exp(spread, &y) == TOPOS_OK;
  int kept = ok && topos_tensor_strides(y)[0] == 0 && topos_tensor_strides(y)[1] == 1 &&
             topos_tensor_shape(y)[0] == 64 && topos_tensor_storage_id(y) != topos_tensor_storage_id(row);
  bt_all_backends(0);
  ok &= ok && topos_exp(spread, &ref) == TOPOS_OK;
  bt_all_backends(1);
  int same = ok && topos_tensor_bits_equal(y, ref);
  topos_tensor_release(row), topos_tensor_release(spread), topos_tensor_release(y),
      topos_tensor_release(ref);
  bt_leave(scope);
  CHECK(ok);
  CHECK(kept);
  CHECK(same);
}
