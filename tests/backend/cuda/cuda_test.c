/* The cuda member (compiled only with TOPOS_CUDA). Where an NVIDIA GPU is
 * present, large f32/f64 products run through cuBLAS and are compared with
 * the reference; elsewhere the tests skip with the status reason. The
 * decline and status paths run everywhere. scripts/cuda-check.sh builds with
 * CUDA=1 and runs only these. */
#include "backend/backend_util.h"

TEST(cuda_status_is_an_answer_not_a_failure) {
  char reason[320];
  topos_backend_state state = topos_backend_state_of(TOPOS_BACKEND_CUDA, reason, sizeof reason);
  CHECK(state == TOPOS_BACKEND_READY || state == TOPOS_BACKEND_UNAVAILABLE);
  CHECK(reason[0] != '\0');
  if (state == TOPOS_BACKEND_READY) CHECK(strstr(reason, "cuBLAS") != NULL);
  printf("  cuda: %s: %s\n", topos_backend_state_name(state), reason);
}

static void bt_cuda_product(topos_dtype dtype, int transposed_b) {
  char reason[320];
  if (topos_backend_state_of(TOPOS_BACKEND_CUDA, reason, sizeof reason) != TOPOS_BACKEND_READY) {
    char why[400];
    snprintf(why, sizeof why, "no usable NVIDIA GPU here: %s", reason);
    SKIP(why);
  }
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_FAST);
  topos_backend_set_enabled(TOPOS_BACKEND_BLAS, 0); /* so cuda is first in line */
  topos_backend_set_enabled(TOPOS_BACKEND_SIMD, 0);
  int64_t sa[2] = {700, 520}, sb[2] = {520, 610}, sbt[2] = {610, 520};
  topos_tensor *a = bt_random(dtype, 2, sa, 81), *b = NULL, *braw = NULL, *c = NULL;
  int ok = a != NULL;
  if (transposed_b) {
    braw = bt_random(dtype, 2, sbt, 82);
    ok &= braw && topos_tensor_transpose(braw, &b) == TOPOS_OK;
  } else {
    b = bt_random(dtype, 2, sb, 82);
  }
  ok &= ok && topos_matmul(a, b, &c) == TOPOS_OK;
  topos_backend served = tp_backend_last_served();
  double *ref = ok ? bt_reference_matmul(a, b) : NULL;
  double nmse = ref ? bt_nmse(c, ref, 700 * 610) : INFINITY;
  free(ref);
  topos_tensor *all[] = {a, b, braw, c};
  for (size_t i = 0; i < 4; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK(ok);
  CHECK_EQ_INT(served, TOPOS_BACKEND_CUDA);
  CHECK_MSG(nmse <= (dtype == TOPOS_F32 ? 1e-6 : 1e-20), "NMSE %.3g", nmse);
}
TEST(cuda_large_f32_product_matches_reference) { bt_cuda_product(TOPOS_F32, 0); }
TEST(cuda_large_f64_product_matches_reference) { bt_cuda_product(TOPOS_F64, 0); }
TEST(cuda_transposed_operand_matches_reference) { bt_cuda_product(TOPOS_F32, 1); }

/* Vector products and broadcast operands stay on the host, even with a GPU. */
TEST(cuda_declines_vectors_and_broadcasts) {
  float a[4 * 4] = {0}, b[4] = {0}, c[16];
  topos_gemm_task vec = {1, 4, 4, a, 4, 1, a, 4, 1, c, 4};
  CHECK(tp_kernels_cuda.gemm_f32(&vec) == TOPOS_UNSUPPORTED);
  topos_gemm_task spread = {4, 4, 4, a, 4, 1, b, 0, 1, c, 4};
  CHECK(tp_kernels_cuda.gemm_f32(&spread) == TOPOS_UNSUPPORTED);
}
