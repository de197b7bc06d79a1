/* Products through the chain: Exact gives the reference bits above every
 * threshold in every build, Fast stays within NMSE 1e-6 and repeats itself,
 * thread counts never change a bit, and layouts members cannot express fall
 * through. */
#include "backend_util.h"

/* A 256^3 product is 2^25 flops: at or above every member's threshold. */
enum { BT_BIG = 256 };

static void bt_exact_product(topos_dtype dtype) {
  bt_scope scope = bt_enter();
  int64_t sa[2] = {BT_BIG, BT_BIG + 3}, sb[2] = {BT_BIG + 3, BT_BIG + 1};
  topos_tensor *a = bt_random(dtype, 2, sa, 1), *b = bt_random(dtype, 2, sb, 2), *c = NULL;
  double *ref = bt_reference_matmul(a, b);
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  topos_status s = topos_matmul(a, b, &c);
  int same = s == TOPOS_OK && bt_bits_equal(c, ref, BT_BIG * (BT_BIG + 1));
  topos_backend served = tp_backend_last_served();
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(c), free(ref);
  bt_leave(scope);
  CHECK_OK(s);
  CHECK(same);
  CHECK(served == TOPOS_BACKEND_DEFAULT); /* only bit-identical members serve Exact */
}
TEST(backend_exact_f32_product_is_reference_bits) { bt_exact_product(TOPOS_F32); }
TEST(backend_exact_f64_product_is_reference_bits) { bt_exact_product(TOPOS_F64); }

TEST(backend_fast_f32_product_within_envelope_and_repeatable) {
  bt_scope scope = bt_enter();
  int64_t sa[2] = {BT_BIG + 5, BT_BIG}, sb[2] = {BT_BIG, BT_BIG + 7};
  topos_tensor *a = bt_random(TOPOS_F32, 2, sa, 3), *b = bt_random(TOPOS_F32, 2, sb, 4);
  topos_tensor *c1 = NULL, *c2 = NULL;
  double *ref = bt_reference_matmul(a, b);
  topos_numerics_enter(TOPOS_NUMERICS_FAST);
  topos_status s1 = topos_matmul(a, b, &c1), s2 = topos_matmul(a, b, &c2);
  double nmse = s1 == TOPOS_OK ? bt_nmse(c1, ref, sa[0] * sb[1]) : INFINITY;
  int repeat = s2 == TOPOS_OK && topos_tensor_bits_equal(c1, c2);
  topos_backend served = tp_backend_last_served();
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(c1),
      topos_tensor_release(c2), free(ref);
  bt_leave(scope);
  CHECK_OK(s1);
  CHECK_OK(s2);
  CHECK_MSG(nmse <= 1e-6, "NMSE %.3g", nmse);
  CHECK(repeat);
  /* where an envelope member is compiled, Fast really uses it */
  if (topos_backend_compiled(TOPOS_BACKEND_BLAS) || topos_backend_compiled(TOPOS_BACKEND_SIMD))
    CHECK(served != TOPOS_BACKEND_DEFAULT);
}

/* Every layout the default rung packs: transposed, narrowed, stride-0 and
 * reversed operands, in both postures, equal to the reference bits in Exact. */
TEST(backend_exact_product_over_views) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  int64_t sbase[2] = {70, 90};
  topos_tensor *base = bt_random(TOPOS_F32, 2, sbase, 5);
  topos_tensor *at = NULL, *bn = NULL, *row = NULL, *spread = NULL, *c = NULL, *c2 = NULL;
  int ok = 1;
  /* a = base^T narrowed to [90, 64]; b = base narrowed to [64, 90] */
  ok &= topos_tensor_transpose(base, &at) == TOPOS_OK;
  topos_tensor *a = NULL;
  ok &= ok && topos_tensor_narrow(at, 1, 3, 64, &a) == TOPOS_OK;
  ok &= ok && topos_tensor_narrow(base, 0, 2, 64, &bn) == TOPOS_OK;
  double *ref = ok ? bt_reference_matmul(a, bn) : NULL;
  ok &= ref && topos_matmul(a, bn, &c) == TOPOS_OK && bt_bits_equal(c, ref, 90 * 90);
  free(ref);
  /* b = one row broadcast over k (stride 0 rows) */
  int64_t srow[1] = {90};
  row = bt_random(TOPOS_F32, 1, srow, 6);
  ok &= row && topos_tensor_broadcast_along(row, 0, 64, &spread) == TOPOS_OK;
  ref = ok ? bt_reference_matmul(a, spread) : NULL;
  ok &= ref && topos_matmul(a, spread, &c2) == TOPOS_OK && bt_bits_equal(c2, ref, 90 * 90);
  free(ref);
  topos_tensor *all[] = {base, at, a, bn, row, spread, c, c2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK(ok);
}

/* Batched products go through the seam one matrix at a time. */
TEST(backend_batched_product_matches_per_matrix_reference) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  int64_t sa[3] = {3, 17, 33}, sb[3] = {3, 33, 9};
  topos_tensor *a = bt_random(TOPOS_F64, 3, sa, 7), *b = bt_random(TOPOS_F64, 3, sb, 8), *c = NULL;
  int ok = topos_matmul(a, b, &c) == TOPOS_OK;
  for (int64_t i = 0; ok && i < 3; ++i) {
    topos_tensor *ai = NULL, *bi = NULL, *a2 = NULL, *b2 = NULL, *ci = NULL, *c2 = NULL;
    int64_t s2a[2] = {17, 33}, s2b[2] = {33, 9}, s2c[2] = {17, 9};
    ok &= topos_tensor_narrow(a, 0, i, 1, &ai) == TOPOS_OK &&
          topos_tensor_reshape(ai, 2, s2a, &a2) == TOPOS_OK &&
          topos_tensor_narrow(b, 0, i, 1, &bi) == TOPOS_OK &&
          topos_tensor_reshape(bi, 2, s2b, &b2) == TOPOS_OK &&
          topos_tensor_narrow(c, 0, i, 1, &ci) == TOPOS_OK &&
          topos_tensor_reshape(ci, 2, s2c, &c2) == TOPOS_OK;
    double *ref = ok ? bt_reference_matmul(a2, b2) : NULL;
    ok &= ref && bt_bits_equal(c2, ref, 17 * 9);
    free(ref);
    topos_tensor *all[] = {ai, bi, a2, b2, ci, c2};
    for (size_t j = 0; j < 6; ++j) topos_tensor_release(all[j]);
  }
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(c);
  bt_leave(scope);
  CHECK(ok);
}

/* Work is split over outputs only: 1, 2 and 3 threads give the same bits,
 * in Exact (default rung) and in Fast (whichever member serves). */
TEST(backend_product_bits_do_not_depend_on_threads) {
  bt_scope scope = bt_enter();
  int64_t sa[2] = {301, 129}, sb[2] = {129, 211};
  topos_tensor *a = bt_random(TOPOS_F32, 2, sa, 9), *b = bt_random(TOPOS_F32, 2, sb, 10);
  int ok = a && b;
  for (int posture = 0; ok && posture < 2; ++posture) {
    topos_numerics_enter(posture ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST);
    topos_tensor *first = NULL;
    for (int threads = 1; ok && threads <= 3; ++threads) {
      tp_backend_set_threads(threads);
      topos_tensor *c = NULL;
      ok &= topos_matmul(a, b, &c) == TOPOS_OK;
      if (ok && first) ok &= topos_tensor_bits_equal(first, c);
      if (!first)
        first = c;
      else
        topos_tensor_release(c);
    }
    topos_tensor_release(first);
  }
  topos_tensor_release(a), topos_tensor_release(b);
  bt_leave(scope);
  CHECK(ok);
}

/* The default rung on its own, every ISA this CPU has: same bits as the
 * reference loops for odd shapes that exercise every edge tile and k block. */
TEST(backend_default_rung_edges_match_reference_loop) {
  /* above the small-product cutoff (4096 multiply-adds) but for {1,1,1} */
  static const int64_t shapes[][3] = {{1, 1, 1}, {7, 33, 50}, {13, 3, 300}, {1, 97, 257}, {50, 70, 513}};
  int ok = 1;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    float *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4);
    float *c1 = malloc((size_t)(m * n) * 4), *c2 = malloc((size_t)(m * n) * 4);
    double *tmp = malloc((size_t)((m * k) + (k * n)) * 8);
    if (!a || !b || !c1 || !c2 || !tmp) ok = 0;
    if (ok) {
      bt_fill_f64(tmp, m * k + k * n, 11 + s);
      for (int64_t i = 0; i < m * k; ++i) a[i] = (float)tmp[i];
      for (int64_t i = 0; i < k * n; ++i) b[i] = (float)tmp[m * k + i];
      a[0] = -0.0f; /* the seed keeps -0 products */
      /* b read transposed: b_row_stride 1, b_col_stride k (b holds n x k) */
      topos_gemm_task t = {m, n, k, a, k, 1, b, 1, k, c1, n};
      tp_reference_gemm_f32(&t);
      t.c = c2;
      ok &= tp_default_gemm_f32(&t) == TOPOS_OK && memcmp(c1, c2, (size_t)(m * n) * 4) == 0;
    }
    free(a), free(b), free(c1), free(c2), free(tmp);
  }
  CHECK(ok);
}

/* Tiny products and stride-0 operands are declined by every envelope member
 * and run on the default rung (Fast posture, whatever is compiled). */
TEST(backend_declines_fall_through_to_default) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_FAST);
  int64_t s2[2] = {2, 2};
  topos_tensor *a = bt_random(TOPOS_F32, 2, s2, 12), *b = bt_random(TOPOS_F32, 2, s2, 13), *c = NULL;
  topos_status s = topos_matmul(a, b, &c);
  topos_backend tiny = tp_backend_last_served();
  topos_tensor_release(c);
  c = NULL;
  int64_t sbig[2] = {BT_BIG, BT_BIG}, srow[1] = {BT_BIG};
  topos_tensor *big = bt_random(TOPOS_F32, 2, sbig, 14), *row = bt_random(TOPOS_F32, 1, srow, 15);
  topos_tensor *spread = NULL;
  topos_status s3 = topos_tensor_broadcast_along(row, 0, BT_BIG, &spread);
  topos_status s4 = s3 == TOPOS_OK ? topos_matmul(big, spread, &c) : s3;
  topos_backend broadcast = tp_backend_last_served();
  double *ref = s4 == TOPOS_OK ? bt_reference_matmul(big, spread) : NULL;
  int same = ref && bt_bits_equal(c, ref, BT_BIG * BT_BIG);
  free(ref);
  topos_tensor *all[] = {a, b, c, big, row, spread};
  for (size_t i = 0; i < 6; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK_OK(s);
  CHECK_OK(s4);
  CHECK_EQ_INT(tiny, TOPOS_BACKEND_DEFAULT);
  CHECK_EQ_INT(broadcast, TOPOS_BACKEND_DEFAULT);
  CHECK(same); /* the default rung is bit-identical even in Fast */
}

/* With every backend switched off the op runs its reference loop: same bits. */
TEST(backend_all_disabled_runs_reference_kernel) {
  bt_scope scope = bt_enter();
  int64_t sa[2] = {31, 40}, sb[2] = {40, 29};
  topos_tensor *a = bt_random(TOPOS_F64, 2, sa, 16), *b = bt_random(TOPOS_F64, 2, sb, 17), *c = NULL;
  bt_all_backends(0);
  topos_status s = topos_matmul(a, b, &c);
  double *ref = bt_reference_matmul(a, b);
  int same = s == TOPOS_OK && bt_bits_equal(c, ref, 31 * 29);
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(c), free(ref);
  bt_leave(scope);
  CHECK_OK(s);
  CHECK(same);
}
