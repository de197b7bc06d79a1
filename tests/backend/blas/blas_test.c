/* The blas rung (compiled only with TOPOS_BLAS): views map onto transpose
 * flags and leading dimensions without copies and land within the Fast
 * envelope; strides BLAS cannot express decline to the next member. */
#include "backend/backend_util.h"

TEST(blas_serves_transposed_and_narrowed_views_in_fast) {
  if (topos_backend_status(TOPOS_BACKEND_BLAS) != TOPOS_OK) SKIP("blas not ready");
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_FAST);
  int64_t s[2] = {160, 150};
  topos_tensor *base = bt_random(TOPOS_F32, 2, s, 71), *bt = NULL, *an = NULL, *c = NULL;
  int ok = base && topos_tensor_transpose(base, &bt) == TOPOS_OK &&   /* [150,160] transposed */
           topos_tensor_narrow(base, 1, 10, 120, &an) == TOPOS_OK;   /* [160,120] ld 150 */
  topos_tensor *bn = NULL;
  ok &= ok && topos_tensor_narrow(bt, 0, 30, 120, &bn) == TOPOS_OK;   /* [120,160] transposed */
  ok &= ok && topos_matmul(an, bn, &c) == TOPOS_OK;
  topos_backend served = tp_backend_last_served();
  double *ref = ok ? bt_reference_matmul(an, bn) : NULL;
  double nmse = ref ? bt_nmse(c, ref, 160 * 160) : INFINITY;
  free(ref);
  topos_tensor *all[] = {base, bt, an, bn, c};
  for (size_t i = 0; i < 5; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK(ok);
  CHECK_EQ_INT(served, TOPOS_BACKEND_BLAS);
  CHECK_MSG(nmse <= 1e-6, "NMSE %.3g", nmse);
}

TEST(blas_declines_broadcast_and_reversed_operands) {
  if (topos_backend_status(TOPOS_BACKEND_BLAS) != TOPOS_OK) SKIP("blas not ready");
  float a[64 * 64], b[64], c[64 * 64];
  for (int i = 0; i < 64 * 64; ++i) a[i] = (float)(i % 17) - 8.0f;
  for (int i = 0; i < 64; ++i) b[i] = (float)i;
  /* b spread over k rows: row stride 0 */
  topos_gemm_task t = {64, 64, 64, a, 64, 1, b, 0, 1, c, 64};
  CHECK(tp_kernels_blas.gemm_f32(&t) == TOPOS_UNSUPPORTED);
  /* a read with its columns reversed */
  topos_gemm_task r = {64, 64, 64, a + 63, 64, -1, a, 64, 1, c, 64};
  CHECK(tp_kernels_blas.gemm_f32(&r) == TOPOS_UNSUPPORTED);
  /* overlapping rows (row stride < columns) */
  topos_gemm_task o = {64, 64, 64, a, 8, 1, a, 64, 1, c, 64};
  CHECK(tp_kernels_blas.gemm_f32(&o) == TOPOS_UNSUPPORTED);
  /* through the chain they still run (on a member that takes them) */
  t.c = c;
  CHECK_OK(tp_chain_gemm(TOPOS_FORMULA_GEMM_F32, &t));
  CHECK(tp_backend_last_served() != TOPOS_BACKEND_BLAS);
}

TEST(blas_product_bits_do_not_depend_on_threads) {
  if (topos_backend_status(TOPOS_BACKEND_BLAS) != TOPOS_OK) SKIP("blas not ready");
  enum { M = 257, K = 200, N = 190 };
  float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c1 = malloc(M * N * 4), *c2 = malloc(M * N * 4);
  double *v = malloc((M * K + K * N) * 8);
  CHECK(a && b && c1 && c2 && v);
  bt_fill_f64(v, M * K + K * N, 72);
  for (int i = 0; i < M * K; ++i) a[i] = (float)v[i];
  for (int i = 0; i < K * N; ++i) b[i] = (float)v[M * K + i];
  topos_gemm_task t = {M, N, K, a, K, 1, b, N, 1, c1, N};
  int ok = 1;
  for (int threads = 1; threads <= 3; ++threads) {
    tp_backend_set_threads(threads);
    t.c = threads == 1 ? c1 : c2;
    ok &= tp_kernels_blas.gemm_f32(&t) == TOPOS_OK;
    if (threads > 1) ok &= memcmp(c1, c2, M * N * 4) == 0;
  }
  tp_backend_set_threads(0);
  free(a), free(b), free(c1), free(c2), free(v);
  CHECK(ok);
}
