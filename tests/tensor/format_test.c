#include "test.h"

TEST(format_small_tensor_exact_text) {
  float v[6] = {0.0f, 0.1f, -2.5f, 1e20f, NAN, -INFINITY};
  int64_t shape[] = {2, 3};
  topos_tensor *t;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, shape, v, &t));
  char buf[256];
  size_t n = topos_tensor_format(t, buf, sizeof buf, 100);
  const char *expected = "tensor f32 [2,3]\n[[0, 0.1, -2.5],\n [1e+20, nan, -inf]]";
  CHECK_MSG(strcmp(buf, expected) == 0, "got \"%s\"", buf);
  CHECK_EQ_INT(n, strlen(expected));
  /* truncation: returns the needed length, always NUL-terminated */
  char small[8];
  CHECK_EQ_INT(topos_tensor_format(t, small, sizeof small, 100), strlen(expected));
  CHECK(strcmp(small, "tensor ") == 0);
  CHECK_EQ_INT(topos_tensor_format(t, NULL, 0, 100), strlen(expected));
  /* header only */
  topos_tensor_format(t, buf, sizeof buf, 0);
  CHECK(strcmp(buf, "tensor f32 [2,3]") == 0);
  topos_tensor_release(t);
}

TEST(format_shortest_round_trip_per_dtype) {
  topos_tensor *t;
  char buf[128];
  CHECK_OK(topos_tensor_scalar(TOPOS_BF16, 0.1, &t));
  topos_tensor_format(t, buf, sizeof buf, 10);
  CHECK_MSG(strcmp(buf, "tensor bf16 []\n0.1") == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
  CHECK_OK(topos_tensor_scalar(TOPOS_F64, 0.1, &t));
  topos_tensor_format(t, buf, sizeof buf, 10);
  CHECK_MSG(strcmp(buf, "tensor f64 []\n0.1") == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
  CHECK_OK(topos_tensor_scalar(TOPOS_F32, 1.0 / 3.0, &t));
  topos_tensor_format(t, buf, sizeof buf, 10);
  CHECK_MSG(strcmp(buf, "tensor f32 []\n0.33333334") == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
  int64_t three[] = {3};
  CHECK_OK(topos_tensor_full(TOPOS_I64, 1, three, -7, &t));
  topos_tensor_format(t, buf, sizeof buf, 10);
  CHECK_MSG(strcmp(buf, "tensor i64 [3]\n[-7, -7, -7]") == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
  CHECK_OK(topos_tensor_full(TOPOS_F16, 1, three, 10, &t));
  topos_tensor_format(t, buf, sizeof buf, 10);
  CHECK_MSG(strcmp(buf, "tensor f16 [3]\n[10, 10, 10]") == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
}

TEST(format_summarises_and_follows_layout) {
  float v[80];
  for (int i = 0; i < 80; ++i) v[i] = (float)i;
  int64_t shape[] = {2, 40};
  topos_tensor *t, *tr;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, shape, v, &t));
  char buf[512];
  topos_tensor_format(t, buf, sizeof buf, 16);
  const char *expected =
      "tensor f32 [2,40]\n[[0, 1, 2, ..., 37, 38, 39],\n [40, 41, 42, ..., 77, 78, 79]]";
  CHECK_MSG(strcmp(buf, expected) == 0, "got \"%s\"", buf);
  CHECK_OK(topos_tensor_transpose(t, &tr));
  topos_tensor_format(tr, buf, sizeof buf, 16);
  expected =
      "tensor f32 [40,2]\n[[0, 40],\n [1, 41],\n [2, 42],\n ...,\n [37, 77],\n [38, 78],\n [39, 79]]";
  CHECK_MSG(strcmp(buf, expected) == 0, "got \"%s\"", buf);
  topos_tensor_release(tr);
  topos_tensor_release(t);
  int64_t cube[] = {2, 1, 2};
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, cube, v, &t));
  topos_tensor_format(t, buf, sizeof buf, -1);
  expected = "tensor f32 [2,1,2]\n[[[0, 1]],\n\n [[2, 3]]]";
  CHECK_MSG(strcmp(buf, expected) == 0, "got \"%s\"", buf);
  topos_tensor_release(t);
}
