#include "test.h"

TEST(tensor_dtype_table) {
  topos_dtype d;
  CHECK(strcmp(topos_dtype_name(TOPOS_BF16), "bf16") == 0);
  CHECK_OK(topos_dtype_parse("Q4_k", &d));
  CHECK_EQ_INT(d, TOPOS_Q4_K);
  CHECK_STATUS(topos_dtype_parse("f8", &d), TOPOS_ERR_NOT_FOUND);
  CHECK_EQ_INT(topos_dtype_block_size(TOPOS_Q8_0), 32);
  CHECK_EQ_INT(topos_dtype_block_bytes(TOPOS_Q6_K), 210);
  CHECK(topos_dtype_is_float(TOPOS_F16) && !topos_dtype_is_float(TOPOS_I32));
  CHECK(topos_dtype_is_quantized(TOPOS_Q2_K) && !topos_dtype_is_quantized(TOPOS_I8));
  CHECK_EQ_INT(topos_dtype_ggml_id(TOPOS_Q8_0), 8);
  CHECK_OK(topos_dtype_from_ggml_id(30, &d));
  CHECK_EQ_INT(d, TOPOS_BF16);
  CHECK_STATUS(topos_dtype_from_ggml_id(4, &d), TOPOS_ERR_BAD_TYPE); /* removed q4_2 */
  size_t bytes;
  CHECK_OK(topos_dtype_bytes(TOPOS_Q4_0, 64, &bytes));
  CHECK_EQ_INT(bytes, 36);
  CHECK_STATUS(topos_dtype_bytes(TOPOS_Q4_0, 33, &bytes), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_dtype_bytes(TOPOS_F64, INT64_MAX / 4, &bytes), TOPOS_ERR_OVERFLOW);
}

TEST(tensor_zeros_queries) {
  topos_tensor *t;
  int64_t shape[] = {2, 3, 4};
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 3, shape, &t));
  CHECK_EQ_INT(topos_tensor_dtype(t), TOPOS_F32);
  CHECK_EQ_INT(topos_tensor_rank(t), 3);
  CHECK_EQ_INT(topos_tensor_volume(t), 24);
  CHECK_EQ_INT(topos_tensor_strides(t)[0], 12);
  CHECK_EQ_INT(topos_tensor_strides(t)[1], 4);
  CHECK_EQ_INT(topos_tensor_strides(t)[2], 1);
  CHECK_EQ_INT(topos_tensor_offset(t), 0);
  CHECK(topos_tensor_is_contiguous(t));
  CHECK_EQ_INT(topos_tensor_storage_kind(t), TOPOS_STORAGE_HEAP);
  CHECK((uintptr_t)topos_tensor_data(t) % 64 == 0);
  const float *p = topos_tensor_data(t);
  for (int i = 0; i < 24; ++i) CHECK_BITS_F32(p[i], 0.0f);
  topos_tensor_release(t);
}

TEST(tensor_scalar_rank0) {
  topos_tensor *t;
  CHECK_OK(topos_tensor_scalar(TOPOS_F64, 2.5, &t));
  CHECK_EQ_INT(topos_tensor_rank(t), 0);
  CHECK_EQ_INT(topos_tensor_volume(t), 1);
  double v;
  CHECK_OK(topos_tensor_get(t, NULL, &v));
  CHECK_BITS_F64(v, 2.5);
  CHECK_OK(topos_tensor_set(t, NULL, -1.0));
  CHECK_OK(topos_tensor_get(t, NULL, &v));
  CHECK_BITS_F64(v, -1.0);
  topos_tensor_release(t);
}

TEST(tensor_bad_shapes_rejected) {
  topos_tensor *t = (topos_tensor *)1;
  int64_t zero[] = {2, 0};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, 2, zero, &t), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("zeros");
  CHECK_ERROR_HAS("[2,0]");
  CHECK(t == NULL);
  int64_t negative[] = {-3};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, 1, negative, &t), TOPOS_ERR_SHAPE);
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, 9, nine, &t), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, -1, nine, &t), TOPOS_ERR_SHAPE);
  int64_t huge[] = {1LL << 40, 1LL << 40};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, 2, huge, &t), TOPOS_ERR_OVERFLOW);
  CHECK_ERROR_HAS("overflow");
  int64_t bytes_overflow[] = {1LL << 62};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_F32, 1, bytes_overflow, &t), TOPOS_ERR_OVERFLOW);
  CHECK_STATUS(topos_tensor_zeros((topos_dtype)99, 1, negative, &t), TOPOS_ERR_DTYPE);
  int64_t q_bad[] = {4, 33};
  CHECK_STATUS(topos_tensor_zeros(TOPOS_Q8_0, 2, q_bad, &t), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("whole blocks");
  CHECK_STATUS(topos_tensor_zeros(TOPOS_Q8_0, 0, NULL, &t), TOPOS_ERR_SHAPE);
}

TEST(tensor_from_data_copies_and_checks_bytes) {
  float values[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {2, 3};
  topos_tensor *t;
  CHECK_STATUS(topos_tensor_from_data(TOPOS_F32, 2, shape, values, 20, &t), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("20 bytes");
  CHECK_OK(topos_tensor_from_data(TOPOS_F32, 2, shape, values, sizeof values, &t));
  values[0] = 99;
  double v;
  int64_t index[] = {0, 0};
  CHECK_OK(topos_tensor_get(t, index, &v));
  CHECK_BITS_F64(v, 1.0);
  index[0] = 1, index[1] = 2;
  CHECK_OK(topos_tensor_get(t, index, &v));
  CHECK_BITS_F64(v, 6.0);
  index[1] = 3;
  CHECK_STATUS(topos_tensor_get(t, index, &v), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("[1,3]");
  index[1] = -1;
  CHECK_STATUS(topos_tensor_set(t, index, 0.0), TOPOS_ERR_RANGE);
  topos_tensor_release(t);
}

TEST(tensor_from_f32_rounds_to_16_bit_types) {
  float values[4] = {1.0f, 1.0f + 0x1p-9f, 65520.0f, -0.0f};
  int64_t shape[] = {4};
  topos_tensor *h, *b;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F16, 1, shape, values, &h));
  CHECK_OK(topos_tensor_from_f32(TOPOS_BF16, 1, shape, values, &b));
  const uint16_t *hp = topos_tensor_data(h), *bp = topos_tensor_data(b);
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ_INT(hp[i], topos_f32_to_f16(values[i]));
    CHECK_EQ_INT(bp[i], topos_f32_to_bf16(values[i]));
  }
  float back[4];
  CHECK_OK(topos_tensor_read_f32(b, back, 4));
  for (int i = 0; i < 4; ++i) CHECK_BITS_F32(back[i], topos_bf16_to_f32(bp[i]));
  topos_tensor_release(h);
  topos_tensor_release(b);
}

TEST(tensor_full_and_integer_set) {
  int64_t shape[] = {3};
  topos_tensor *t;
  CHECK_OK(topos_tensor_full(TOPOS_I32, 1, shape, 7.9, &t));
  const int32_t *p = topos_tensor_data(t);
  CHECK_EQ_INT(p[0], 7); /* toward zero */
  int64_t i = 1;
  CHECK_OK(topos_tensor_set(t, &i, -1e20));
  CHECK_EQ_INT(p[1], INT32_MIN); /* saturates */
  CHECK_STATUS(topos_tensor_set(t, &i, NAN), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("NaN");
  CHECK_EQ_INT(p[1], INT32_MIN);
  topos_tensor_release(t);
}
