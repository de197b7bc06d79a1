#include <stdlib.h>

#include "test.h"

static topos_tensor *from_f32(topos_dtype dtype, int rank, const int64_t *shape, const float *v) {
  topos_tensor *t = NULL;
  topos_tensor_from_f32(dtype, rank, shape, v, &t);
  return t;
}

TEST(copy_contiguous_reuses_or_copies) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {2, 3};
  topos_tensor *t = from_f32(TOPOS_F32, 2, shape, v), *same, *forced, *tr, *packed;
  CHECK(t);
  CHECK_OK(topos_tensor_contiguous(t, 0, &same));
  CHECK(same == t);
  CHECK_OK(topos_tensor_contiguous(t, 1, &forced));
  CHECK(forced != t && topos_tensor_storage_id(forced) != topos_tensor_storage_id(t));
  CHECK_TENSOR_BITS(forced, t);
  CHECK_OK(topos_tensor_transpose(t, &tr));
  CHECK_OK(topos_tensor_contiguous(tr, 0, &packed));
  CHECK(topos_tensor_is_contiguous(packed));
  const float *p = topos_tensor_data(packed);
  const float expected[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) CHECK_BITS_F32(p[i], expected[i]);
  CHECK_TENSOR_BITS(packed, tr);
  CHECK(!topos_tensor_bits_equal(packed, t)); /* shapes differ */
  topos_tensor_release(same);
  topos_tensor_release(forced);
  topos_tensor_release(packed);
  topos_tensor_release(tr);
  topos_tensor_release(t);
}

TEST(copy_read_logical_order_any_layout) {
  int16_t v[6] = {1, -2, 3, -4, 5, -6};
  int64_t shape[] = {2, 3};
  topos_tensor *t, *tr;
  CHECK_OK(topos_tensor_from_data(TOPOS_I16, 2, shape, v, sizeof v, &t));
  CHECK_OK(topos_tensor_transpose(t, &tr));
  double d[6];
  float f[6];
  CHECK_OK(topos_tensor_read_f64(tr, d, 6));
  CHECK_OK(topos_tensor_read_f32(tr, f, 6));
  const double expected[6] = {1, -4, -2, 5, 3, -6};
  for (int i = 0; i < 6; ++i) {
    CHECK_BITS_F64(d[i], expected[i]);
    CHECK_BITS_F32(f[i], (float)expected[i]);
  }
  CHECK_STATUS(topos_tensor_read_f32(tr, f, 5), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("volume 6");
  topos_tensor_release(tr);
  topos_tensor_release(t);
}

TEST(copy_convert_float_rounding) {
  double v[4] = {1.0 + 0x1p-30, -3.5, 1e300, 0x1p-140};
  int64_t shape[] = {4};
  topos_tensor *t, *f, *b, *back;
  CHECK_OK(topos_tensor_from_f64(TOPOS_F64, 1, shape, v, &t));
  CHECK_OK(topos_tensor_convert(t, TOPOS_F32, &f));
  CHECK_OK(topos_tensor_convert(t, TOPOS_BF16, &b));
  const float *fp = topos_tensor_data(f);
  const uint16_t *bp = topos_tensor_data(b);
  for (int i = 0; i < 4; ++i) {
    CHECK_BITS_F32(fp[i], (float)v[i]);
    CHECK_EQ_INT(bp[i], topos_f32_to_bf16((float)v[i])); /* via f32 */
  }
  CHECK(isinf(fp[2]));
  /* bf16 -> f32 is exact, back to bf16 is the identity */
  CHECK_OK(topos_tensor_convert(b, TOPOS_F32, &back));
  topos_tensor *again;
  CHECK_OK(topos_tensor_convert(back, TOPOS_BF16, &again));
  CHECK_TENSOR_BITS(again, b);
  topos_tensor_release(again);
  topos_tensor_release(back);
  /* same dtype: a new contiguous copy */
  CHECK_OK(topos_tensor_convert(b, TOPOS_BF16, &again));
  CHECK(topos_tensor_storage_id(again) != topos_tensor_storage_id(b));
  CHECK_TENSOR_BITS(again, b);
  topos_tensor_release(again);
  topos_tensor_release(b);
  topos_tensor_release(f);
  topos_tensor_release(t);
}

TEST(copy_convert_integers_truncate_saturate_refuse_nan) {
  float v[6] = {2.9f, -2.9f, 300.0f, -1e10f, INFINITY, -0.0f};
  int64_t shape[] = {6};
  topos_tensor *t = from_f32(TOPOS_F32, 1, shape, v), *i8, *i64, *f16;
  CHECK_OK(topos_tensor_convert(t, TOPOS_I8, &i8));
  const int8_t *p = topos_tensor_data(i8);
  const int8_t expected[6] = {2, -2, 127, -128, 127, 0};
  for (int i = 0; i < 6; ++i) CHECK_EQ_INT(p[i], expected[i]);
  CHECK_OK(topos_tensor_convert(i8, TOPOS_F16, &f16));
  float back[6];
  CHECK_OK(topos_tensor_read_f32(f16, back, 6));
  for (int i = 0; i < 6; ++i) CHECK_BITS_F32(back[i], (float)expected[i]);
  /* i64 beyond 2^24 rounds once to nearest even in f32 */
  int64_t big[2] = {(1LL << 24) + 1, INT64_MAX};
  int64_t two[] = {2};
  topos_tensor *bt, *bf;
  CHECK_OK(topos_tensor_from_data(TOPOS_I64, 1, two, big, sizeof big, &bt));
  CHECK_OK(topos_tensor_convert(bt, TOPOS_F32, &bf));
  CHECK_BITS_F32(((const float *)topos_tensor_data(bf))[0], 16777216.0f);
  CHECK_BITS_F32(((const float *)topos_tensor_data(bf))[1], 0x1p63f);
  CHECK_OK(topos_tensor_convert(bt, TOPOS_I32, &i64));
  CHECK_EQ_INT(((const int32_t *)topos_tensor_data(i64))[1], INT32_MAX);
  topos_tensor_release(i64);
  topos_tensor_release(bf);
  topos_tensor_release(bt);
  v[3] = NAN;
  topos_tensor *nan = from_f32(TOPOS_F32, 1, shape, v), *x = (topos_tensor *)1;
  CHECK_STATUS(topos_tensor_convert(nan, TOPOS_I32, &x), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("element 3");
  CHECK(x == NULL);
  topos_tensor_release(nan);
  topos_tensor_release(f16);
  topos_tensor_release(i8);
  topos_tensor_release(t);
}

TEST(copy_bits_equal_compares_bits) {
  float a[3] = {0.0f, NAN, 1.0f}, b[3] = {-0.0f, NAN, 1.0f};
  int64_t shape[] = {3};
  topos_tensor *ta = from_f32(TOPOS_F32, 1, shape, a), *ta2 = from_f32(TOPOS_F32, 1, shape, a);
  topos_tensor *tb = from_f32(TOPOS_F32, 1, shape, b), *tc;
  CHECK(topos_tensor_bits_equal(ta, ta2)); /* NaN == NaN by bits */
  CHECK(!topos_tensor_bits_equal(ta, tb)); /* 0 != -0 */
  CHECK_OK(topos_tensor_convert(ta, TOPOS_F64, &tc));
  CHECK(!topos_tensor_bits_equal(ta, tc)); /* dtypes differ */
  CHECK(!topos_tensor_bits_equal(ta, NULL));
  topos_tensor_release(tc);
  topos_tensor_release(ta);
  topos_tensor_release(ta2);
  topos_tensor_release(tb);
}

TEST(copy_half_storage_round_trips) {
  /* every f16 and bf16 bit pattern survives from_data -> read_f32 -> from_f32 */
  uint16_t *all = malloc(65536 * sizeof *all);
  float *wide = malloc(65536 * sizeof *wide);
  CHECK(all && wide);
  for (int i = 0; i < 65536; ++i) all[i] = (uint16_t)i;
  int64_t shape[] = {256, 256};
  topos_dtype kinds[2] = {TOPOS_F16, TOPOS_BF16};
  for (int k = 0; k < 2; ++k) {
    topos_tensor *t = NULL, *back = NULL;
    if (topos_tensor_from_data(kinds[k], 2, shape, all, 65536 * 2, &t) == TOPOS_OK &&
        topos_tensor_read_f32(t, wide, 65536) == TOPOS_OK)
      topos_tensor_from_f32(kinds[k], 2, shape, wide, &back);
    const uint16_t *p = back ? topos_tensor_data(back) : NULL;
    int mismatches = 0;
    for (int i = 0; p && i < 65536; ++i) {
      int nan = isnan(wide[i]);
      if (nan ? !isnan(kinds[k] == TOPOS_F16 ? topos_f16_to_f32(p[i]) : topos_bf16_to_f32(p[i]))
              : p[i] != all[i])
        ++mismatches;
    }
    topos_tensor_release(back);
    topos_tensor_release(t);
    if (!p || mismatches) {
      free(all);
      free(wide);
      CHECK_MSG(0, "%s round trip: %d mismatches", topos_dtype_name(kinds[k]), mismatches);
    }
  }
  free(all);
  free(wide);
}
