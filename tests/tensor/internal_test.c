#include "tensor/tensor_internal.h"
#include "test.h"

TEST(internal_view_checks_bounds_and_allows_negative_strides) {
  float v[5] = {0, 1, 2, 3, 4};
  int64_t shape[] = {5};
  topos_tensor *t, *flip, *x;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 1, shape, v, &t));
  int64_t back[] = {-1};
  CHECK_OK(tp_tensor_view(t, 1, shape, back, 4, &flip));
  float out[5];
  CHECK_OK(topos_tensor_read_f32(flip, out, 5));
  for (int i = 0; i < 5; ++i) CHECK_BITS_F32(out[i], (float)(4 - i));
  CHECK(!topos_tensor_is_contiguous(flip));
  topos_tensor *c;
  CHECK_OK(topos_tensor_contiguous(flip, 0, &c));
  CHECK_TENSOR_BITS(c, flip);
  topos_tensor_release(c);
  CHECK_STATUS(tp_tensor_view(t, 1, shape, back, 3, &x), TOPOS_ERR_RANGE);
  int64_t one[] = {1};
  CHECK_STATUS(tp_tensor_view(t, 1, shape, one, 1, &x), TOPOS_ERR_RANGE);
  int64_t huge[] = {INT64_MAX / 2};
  CHECK_STATUS(tp_tensor_view(t, 1, shape, huge, 0, &x), TOPOS_ERR_RANGE);
  topos_tensor_release(flip);
  topos_tensor_release(t);
}

TEST(internal_empty_shape_helpers) {
  topos_tensor *t;
  int64_t shape[] = {3, 1, 2};
  CHECK_OK(tp_tensor_empty(TOPOS_BF16, 3, shape, &t));
  CHECK_EQ_INT(t->storage->bytes, 12);
  CHECK_EQ_INT(t->strides[0], 2);
  CHECK(tp_tensor_base(t) == t->storage->data);
  topos_tensor_release(t);
  char buf[8];
  CHECK(strcmp(tp_shape_string(3, shape, buf, sizeof buf), "[3,1,2]") == 0);
  int64_t wide[] = {123456, 7};
  CHECK(strcmp(tp_shape_string(2, wide, buf, sizeof buf), "[123456") == 0);
  CHECK(strcmp(tp_shape_string(0, NULL, buf, sizeof buf), "[]") == 0);
  int64_t volume;
  CHECK_OK(tp_shape_volume(0, NULL, &volume));
  CHECK_EQ_INT(volume, 1);
  CHECK_EQ_INT(tp_dtype_size(TOPOS_I64), 8);
  CHECK_EQ_INT(tp_dtype_size(TOPOS_Q8_0), 0);
  tp_value v = tp_load(TOPOS_I8, &(int8_t){-5});
  CHECK(v.is_int && v.i == -5);
}

TEST(view_edge_cases) {
  int64_t shape[] = {4};
  topos_tensor *t, *x, *y;
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 1, shape, &t));
  CHECK_OK(topos_tensor_transpose(t, &x)); /* rank 1: identity view */
  CHECK(x != t && topos_tensor_storage_id(x) == topos_tensor_storage_id(t));
  CHECK_EQ_INT(topos_tensor_shape(x)[0], 4);
  topos_tensor_release(x);
  CHECK_STATUS(topos_tensor_narrow(t, 0, INT64_MAX, 1, &x), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tensor_narrow(t, 0, 1, INT64_MAX, &x), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tensor_narrow(t, -1, 0, 1, &x), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tensor_narrow(t, 0, 0, 1, NULL), TOPOS_ERR_INVALID_ARGUMENT);
  /* rank 8 is the limit for inserted axes */
  x = topos_tensor_retain(t);
  for (int i = 0; i < 7; ++i) {
    CHECK_OK(topos_tensor_broadcast_along(x, 0, 2, &y));
    topos_tensor_release(x);
    x = y;
  }
  CHECK_EQ_INT(topos_tensor_rank(x), 8);
  CHECK_EQ_INT(topos_tensor_volume(x), 512);
  CHECK_STATUS(topos_tensor_broadcast_along(x, 0, 2, &y), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_tensor_unfold(x, 7, 2, 1, 1, &y), TOPOS_ERR_SHAPE);
  topos_tensor_release(x);
  topos_tensor *s;
  CHECK_OK(topos_tensor_scalar(TOPOS_F32, 1.0, &s));
  CHECK_OK(topos_tensor_permute(s, NULL, &x)); /* rank 0: empty order */
  topos_tensor_release(x);
  int64_t huge[] = {1LL << 40, 1LL << 40};
  CHECK_STATUS(topos_tensor_broadcast(s, 2, huge, &x), TOPOS_ERR_OVERFLOW);
  CHECK_ERROR_HAS("broadcast");
  topos_tensor_release(s);
  topos_tensor_release(t);
}
