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

/* A large permuted view packs to the same bytes with 1 and 3 threads (blocks
 * of the outermost axis), and element (i,j,k,l) lands where row-major order
 * puts it. */
TEST(tensor_contiguous_of_a_large_view_does_not_depend_on_threads) {
  const int64_t shape[4] = {6, 40, 30, 20};
  const int64_t n = 6 * 40 * 30 * 20;
  float *v = malloc((size_t)n * sizeof *v);
  CHECK(v);
  if (!v) return;
  for (int64_t i = 0; i < n; ++i) v[i] = (float)i;
  topos_tensor *t = NULL, *view = NULL, *one = NULL, *three = NULL;
  CHECK_OK(topos_tensor_from_data(TOPOS_F32, 4, shape, v, (size_t)n * 4, &t));
  static const int order[4] = {1, 0, 3, 2}; /* [40, 6, 20, 30] */
  CHECK_OK(topos_tensor_permute(t, order, &view));
  int before = topos_threads();
  CHECK_OK(topos_set_threads(1));
  CHECK_OK(topos_tensor_contiguous(view, 1, &one));
  CHECK_OK(topos_set_threads(3));
  CHECK_OK(topos_tensor_contiguous(view, 1, &three));
  topos_set_threads(before);
  CHECK(one && three && topos_tensor_bits_equal(one, three));
  if (one) {
    const float *p = topos_tensor_data(one);
    int bad = 0;
    for (int64_t a = 0; a < 40; ++a)
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t c = 0; c < 20; ++c)
          for (int64_t d = 0; d < 30; ++d)
            bad += p[((a * 6 + b) * 20 + c) * 30 + d] != (float)(((b * 40 + a) * 30 + d) * 20 + c);
    CHECK(bad == 0);
  }
  topos_tensor_release(one);
  topos_tensor_release(three);
  topos_tensor_release(view);
  topos_tensor_release(t);
  free(v);
}

/* Short last rows with a long axis elsewhere (an im2col-like view): the
 * bytes land in row-major order, for 4-, 8- and 2-byte elements. */
TEST(tensor_contiguous_of_a_short_row_view_keeps_row_major_order) {
  const int64_t shape[3] = {5, 2, 64}; /* viewed as [2, 64, 5] */
  double v[5 * 2 * 64];
  for (int i = 0; i < 5 * 2 * 64; ++i) v[i] = i % 256; /* exact in bf16 too */
  const topos_dtype dts[3] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *t = NULL, *view = NULL, *packed = NULL;
    CHECK_OK(topos_tensor_from_f64(dts[d], 3, shape, v, &t));
    static const int order[3] = {1, 2, 0};
    CHECK_OK(topos_tensor_permute(t, order, &view));
    CHECK_OK(topos_tensor_contiguous(view, 1, &packed));
    double got[5 * 2 * 64];
    CHECK_OK(topos_tensor_read_f64(packed, got, 5 * 2 * 64));
    int bad = 0;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 64; ++b)
        for (int c = 0; c < 5; ++c) bad += got[(a * 64 + b) * 5 + c] != (double)(((c * 2 + a) * 64 + b) % 256);
    CHECK(bad == 0);
    topos_tensor_release(packed);
    topos_tensor_release(view);
    topos_tensor_release(t);
  }
}
