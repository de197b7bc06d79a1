/* topos_quantize / topos_dequantize on tensors: same bytes as the row
 * functions, any source layout, views of quantized tensors, errors. */
#include <stdlib.h>

#include "quant_test_util.h"

TEST(quant_tensor_quantize_matches_rows) {
  enum { ROWS = 3, COLS = 256 };
  static float x[ROWS * COLS], back[ROWS * COLS];
  static uint8_t expect[ROWS * COLS * 2]; /* f16 is the widest here */
  qt_fill_uniform(x, ROWS * COLS, 51, 2.0f);
  const int64_t shape[2] = {ROWS, COLS};
  topos_tensor *t = NULL, *q = NULL, *d = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, shape, x, &t));
  const topos_dtype types[] = {TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q8_K,
                               TOPOS_F16};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
    topos_status s = topos_quantize(t, types[i], &q);
    if (s != TOPOS_OK) topos_tensor_release(t);
    CHECK_OK(s);
    topos_quantize_row(types[i], x, expect, ROWS * COLS);
    topos_dequantize_row(types[i], expect, back, ROWS * COLS);
    const size_t bytes = qt_row_bytes(types[i], ROWS * COLS);
    int same = topos_tensor_dtype(q) == types[i] && topos_tensor_rank(q) == 2 &&
               topos_tensor_shape(q)[1] == COLS && topos_tensor_is_contiguous(q) &&
               memcmp(topos_tensor_data(q), expect, bytes) == 0;
    s = topos_dequantize(q, &d);
    same = same && s == TOPOS_OK && topos_tensor_dtype(d) == TOPOS_F32 &&
           memcmp(topos_tensor_data(d), back, sizeof back) == 0;
    topos_tensor_release(q);
    topos_tensor_release(d);
    q = d = NULL;
    if (!same) topos_tensor_release(t);
    CHECK_MSG(same, "dtype %d: tensor result differs from the row functions", (int)types[i]);
  }
  topos_tensor_release(t);
}

TEST(quant_tensor_quantize_any_source_layout_and_dtype) {
  enum { ROWS = 4, COLS = 64 };
  static float x[ROWS * COLS], xt[ROWS * COLS];
  qt_fill_uniform(x, ROWS * COLS, 52, 1.0f);
  /* xt is x transposed: a (COLS, ROWS) tensor whose transpose view equals x */
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) xt[c * ROWS + r] = x[r * COLS + c];
  const int64_t shape[2] = {ROWS, COLS}, shape_t[2] = {COLS, ROWS};
  topos_tensor *a = NULL, *b = NULL, *bv = NULL, *h = NULL, *qa = NULL, *qb = NULL, *qh = NULL;
  topos_status s = topos_tensor_from_f32(TOPOS_F32, 2, shape, x, &a);
  if (s == TOPOS_OK) s = topos_tensor_from_f32(TOPOS_F32, 2, shape_t, xt, &b);
  if (s == TOPOS_OK) s = topos_tensor_transpose(b, &bv);
  if (s == TOPOS_OK) s = topos_quantize(a, TOPOS_Q5_1, &qa);
  if (s == TOPOS_OK) s = topos_quantize(bv, TOPOS_Q5_1, &qb);
  /* a bf16 source goes through f32 exactly */
  if (s == TOPOS_OK) s = topos_tensor_convert(a, TOPOS_BF16, &h);
  if (s == TOPOS_OK) s = topos_quantize(h, TOPOS_Q8_0, &qh);
  int ok = s == TOPOS_OK && !topos_tensor_is_contiguous(bv) &&
           memcmp(topos_tensor_data(qa), topos_tensor_data(qb), qt_row_bytes(TOPOS_Q5_1, ROWS * COLS)) == 0;
  if (ok) {
    float hx[ROWS * COLS];
    uint8_t expect[ROWS * COLS * 2];
    for (int i = 0; i < ROWS * COLS; ++i) hx[i] = topos_bf16_to_f32(topos_f32_to_bf16(x[i]));
    topos_quantize_row(TOPOS_Q8_0, hx, expect, ROWS * COLS);
    ok = memcmp(topos_tensor_data(qh), expect, qt_row_bytes(TOPOS_Q8_0, ROWS * COLS)) == 0;
  }
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(bv);
  topos_tensor_release(h), topos_tensor_release(qa), topos_tensor_release(qb);
  topos_tensor_release(qh);
  CHECK_OK(s);
  CHECK(ok);
}

TEST(quant_tensor_dequantize_views_of_quantized_rows) {
  enum { ROWS = 5, COLS = 512 };
  static float x[ROWS * COLS], all[ROWS * COLS];
  qt_fill_uniform(x, ROWS * COLS, 53, 1.0f);
  const int64_t shape[2] = {ROWS, COLS};
  topos_tensor *t = NULL, *q = NULL, *rows = NULL, *d_all = NULL, *d_rows = NULL;
  topos_status s = topos_tensor_from_f32(TOPOS_F32, 2, shape, x, &t);
  if (s == TOPOS_OK) s = topos_quantize(t, TOPOS_Q4_K, &q);
  if (s == TOPOS_OK) s = topos_tensor_narrow(q, 0, 1, 3, &rows); /* rows 1..3, a view */
  if (s == TOPOS_OK) s = topos_dequantize(q, &d_all);
  if (s == TOPOS_OK) s = topos_dequantize(rows, &d_rows);
  int ok = s == TOPOS_OK;
  if (ok) {
    memcpy(all, topos_tensor_data(d_all), sizeof all);
    ok = topos_tensor_shape(d_rows)[0] == 3 &&
         memcmp(topos_tensor_data(d_rows), all + COLS, 3 * COLS * sizeof(float)) == 0;
  }
  topos_tensor_release(t), topos_tensor_release(q), topos_tensor_release(rows);
  topos_tensor_release(d_all), topos_tensor_release(d_rows);
  CHECK_OK(s);
  CHECK(ok);
}

TEST(quant_tensor_errors) {
  const int64_t shape[2] = {2, 48};
  float x[96] = {0};
  topos_tensor *t = NULL, *q = (topos_tensor *)&shape; /* must be reset to NULL on failure */
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, shape, x, &t));
  topos_status s = topos_quantize(t, TOPOS_Q4_K, &q);
  int reset = q == NULL;
  int has_shape = strstr(topos_last_error(), "[2,48]") != NULL;
  topos_status s_int = topos_quantize(t, TOPOS_I32, &q);
  topos_status s_null = topos_quantize(NULL, TOPOS_Q8_0, &q);
  topos_status s_ok = topos_quantize(t, TOPOS_Q8_0, &q); /* 48 = not 32-multiple either */
  topos_tensor_release(t);
  CHECK_EQ_INT(s, TOPOS_ERR_SHAPE);
  CHECK(reset);
  CHECK(has_shape);
  CHECK_EQ_INT(s_int, TOPOS_ERR_DTYPE);
  CHECK_EQ_INT(s_null, TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(s_ok, TOPOS_ERR_SHAPE);
  topos_tensor *i = NULL, *d = NULL;
  const int64_t ishape[1] = {32};
  CHECK_OK(topos_tensor_zeros(TOPOS_I32, 1, ishape, &i));
  s = topos_dequantize(i, &d);
  topos_tensor_release(i);
  CHECK_EQ_INT(s, TOPOS_ERR_DTYPE);
  CHECK(d == NULL);
}
