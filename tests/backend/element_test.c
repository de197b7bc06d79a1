/* The element seam: the gemm and map hooks on each element descriptor are
 * where acceleration enters; overriding them reroutes the ops without the
 * caller changing; user elements run the built-in reference order through
 * their own scalar arithmetic, or their own kernels through the hooks. */
#include "backend_util.h"

static int bt_hook_calls;
static topos_status bt_declining_gemm(const topos_element *self, const topos_gemm_task *task) {
  (void)self, (void)task;
  ++bt_hook_calls;
  return TOPOS_UNSUPPORTED;
}
static topos_status bt_serving_gemm(const topos_element *self, const topos_gemm_task *task) {
  (void)self;
  ++bt_hook_calls;
  tp_reference_gemm_f32(task);
  ((float *)task->c)[0] = 42.0f; /* a mark: this kernel ran */
  return TOPOS_OK;
}
static topos_status bt_serving_map(const topos_element *self, topos_map_op op, const void *in,
                                   void *out, int64_t count) {
  (void)self, (void)op, (void)in;
  ++bt_hook_calls;
  for (int64_t i = 0; i < count; ++i) ((float *)out)[i] = 7.0f;
  return TOPOS_OK;
}

TEST(element_override_routes_products_and_maps) {
  bt_scope scope = bt_enter();
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  int64_t sa[3] = {2, 9, 11}, sb[3] = {2, 11, 5};
  topos_tensor *a = bt_random(TOPOS_F32, 3, sa, 61), *b = bt_random(TOPOS_F32, 3, sb, 62);
  topos_tensor *plain = NULL, *declined = NULL, *served = NULL, *mapped = NULL;
  CHECK(a && b);
  topos_status s0 = topos_matmul(a, b, &plain);
  topos_element declining = {"f32-declining", 4, bt_declining_gemm, NULL, NULL, NULL, NULL, NULL};
  topos_element serving = {"f32-own", 4, bt_serving_gemm, bt_serving_map, NULL, NULL, NULL, NULL};
  bt_hook_calls = 0;
  topos_status s1 = topos_element_override(TOPOS_F32, &declining);
  topos_status s2 = topos_matmul(a, b, &declined);
  int declined_calls = bt_hook_calls;
  bt_hook_calls = 0;
  topos_status s3 = topos_element_override(TOPOS_F32, &serving);
  topos_status s4 = topos_matmul(a, b, &served);
  topos_status s5 = topos_exp(a, &mapped);
  int served_calls = bt_hook_calls;
  topos_status s6 = topos_element_override(TOPOS_F32, NULL);
  const topos_element *restored = topos_element_of(TOPOS_F32);
  double first = NAN, mapped_first = NAN;
  int64_t zero[3] = {0, 0, 0};
  if (served) topos_tensor_get(served, zero, &first);
  if (mapped) topos_tensor_get(mapped, zero, &mapped_first);
  int same = plain && declined && topos_tensor_bits_equal(plain, declined);
  topos_tensor *all[] = {a, b, plain, declined, served, mapped};
  for (size_t i = 0; i < 6; ++i) topos_tensor_release(all[i]);
  bt_leave(scope);
  CHECK_OK(s0);
  CHECK_OK(s1);
  CHECK_OK(s2);
  CHECK_OK(s3);
  CHECK_OK(s4);
  CHECK_OK(s5);
  CHECK_OK(s6);
  CHECK_EQ_INT(declined_calls, 2); /* once per batch, then the chain served */
  CHECK(same);
  CHECK_EQ_INT(served_calls, 3); /* two products and one map */
  CHECK(first == 42.0);
  CHECK(mapped_first == 7.0);
  CHECK(strcmp(restored->name, "f32") == 0);
  CHECK_STATUS(topos_element_override(TOPOS_BF16, &serving), TOPOS_ERR_DTYPE);
  CHECK(topos_element_of(TOPOS_I32) == NULL);
}

/* A user element: Q16.16 fixed point in an int32 (saturation aside). */
static void bt_q16_mul(const void *a, const void *b, void *out) {
  int32_t x, y;
  memcpy(&x, a, 4), memcpy(&y, b, 4);
  int32_t r = (int32_t)(((int64_t)x * y) >> 16);
  memcpy(out, &r, 4);
}
static void bt_q16_add(const void *a, const void *b, void *out) {
  int32_t x, y;
  memcpy(&x, a, 4), memcpy(&y, b, 4);
  int32_t r = (int32_t)((uint32_t)x + (uint32_t)y);
  memcpy(out, &r, 4);
}
static topos_status bt_q16_apply(topos_map_op op, const void *in, void *out) {
  int32_t x;
  memcpy(&x, in, 4);
  if (op != TOPOS_MAP_NEG) return TOPOS_UNSUPPORTED;
  x = -x;
  memcpy(out, &x, 4);
  return TOPOS_OK;
}

TEST(element_user_type_runs_reference_order_and_own_hooks) {
  enum { M = 3, K = 4, N = 2 };
  int32_t a[M * K], b[K * N], c[M * N], expect[M * N];
  for (int i = 0; i < M * K; ++i) a[i] = (i - 5) * 40000;
  for (int i = 0; i < K * N; ++i) b[i] = (3 - i) * 30000;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = (int32_t)(((int64_t)a[i * K] * b[j]) >> 16);
      for (int p = 1; p < K; ++p) acc += (int32_t)(((int64_t)a[i * K + p] * b[p * N + j]) >> 16);
      expect[i * N + j] = acc;
    }
  topos_element q16 = {"q16.16", 4, NULL, NULL, bt_q16_mul, bt_q16_add, bt_q16_apply, NULL};
  topos_gemm_task t = {M, N, K, a, K, 1, b, N, 1, c, N};
  CHECK_OK(topos_element_gemm(&q16, &t));
  CHECK(memcmp(c, expect, sizeof c) == 0);
  /* its own kernel through the hook */
  q16.gemm = bt_declining_gemm;
  bt_hook_calls = 0;
  memset(c, 0, sizeof c);
  CHECK_OK(topos_element_gemm(&q16, &t));
  CHECK_EQ_INT(bt_hook_calls, 1);
  CHECK(memcmp(c, expect, sizeof c) == 0);
  int32_t neg[2];
  CHECK_OK(topos_element_map(&q16, TOPOS_MAP_NEG, a, neg, 2));
  CHECK_EQ_INT(neg[1], -a[1]);
  CHECK_STATUS(topos_element_map(&q16, TOPOS_MAP_EXP, a, neg, 2), TOPOS_UNSUPPORTED);
  /* bad tasks are refused with a message, never run */
  t.k = 0;
  CHECK_STATUS(topos_element_gemm(&q16, &t), TOPOS_ERR_INVALID_ARGUMENT);
  t.k = K;
  t.c = NULL;
  CHECK_STATUS(topos_element_gemm(&q16, &t), TOPOS_ERR_INVALID_ARGUMENT);
  topos_element bare = {"bare", 4, NULL, NULL, NULL, NULL, NULL, NULL};
  t.c = c;
  CHECK_STATUS(topos_element_gemm(&bare, &t), TOPOS_UNSUPPORTED);
}
