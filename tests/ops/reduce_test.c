/* Reductions: fixed summation order seeded from the first element,
 * log_softmax / log_sum_exp formulas and their non-finite rules. */
#include "ops_util.h"

TEST(ops_sum_seeded_row_major) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2, 2};
  /* ((1e8 + 1) - 1e8) + 1 = 1 in f32 (1e8 + 1 rounds to 1e8) */
  const double v[4] = {1e8, 1, -1e8, 1};
  topos_tensor *x = ot_make(&p, TOPOS_F32, 2, s, v), *r;
  CHECK(x);
  CHECK_OK(topos_sum(x, &r));
  CHECK_EQ_INT(topos_tensor_rank(ot_keep(&p, r)), 0);
  CHECK_VALUES(&p, r, 0, NULL, 1.0);
  const double z[4] = {-0.0, -0.0, -0.0, -0.0};
  x = ot_make(&p, TOPOS_F64, 2, s, z);
  CHECK_OK(topos_sum(x, &r));
  CHECK(signbit(ot_at(ot_keep(&p, r), 0)));
  /* bf16: f32 accumulation rounded once: 1 + 4 * 2^-9 = 1 + 2^-7 */
  const double b[4] = {1, 0x1p-9, 0x1p-9, 0x1p-8};
  x = ot_make(&p, TOPOS_BF16, 2, s, b);
  CHECK_OK(topos_sum(x, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 0, NULL, 1 + 0x1p-7);
  ot_free(&p);
}

TEST(ops_sum_along_each_axis) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2, 3}, s0[] = {3}, s1[] = {2};
  const double v[6] = {1, 2, 3, 4, 5, 6};
  const topos_dtype dts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *x = ot_make(&p, dts[d], 2, s, v), *r;
    CHECK(x);
    CHECK_OK(topos_sum_along(x, 0, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 1, s0, 5, 7, 9);
    CHECK_OK(topos_sum_along(x, 1, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 1, s1, 6, 15);
  }
  /* middle axis of a rank-3 tensor; -0 lanes stay -0 (seeded from first) */
  int64_t s3[] = {2, 2, 2}, so[] = {2, 2};
  const double w[8] = {1, -0.0, 2, -0.0, 1e8, 3, 1, 4};
  topos_tensor *x = ot_make(&p, TOPOS_F32, 3, s3, w), *r;
  CHECK_OK(topos_sum_along(x, 1, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 2, so, 3, -0.0, 1e8 + 1, 7);
  CHECK(signbit(ot_at(r, 1)));
  ot_free(&p);
}

TEST(ops_log_softmax_and_log_sum_exp_formulas) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2, 3}, sl[] = {2};
  const double v[6] = {1, 2, 3, -1, 0.5, 0.25};
  /* f64: the documented formula, computed here the same way */
  topos_tensor *x = ot_make(&p, TOPOS_F64, 2, s, v), *r, *l;
  CHECK(x);
  CHECK_OK(topos_log_softmax(x, 1, &r));
  CHECK_OK(topos_log_sum_exp(x, 1, &l));
  ot_keep(&p, r);
  ot_keep(&p, l);
  for (int row = 0; row < 2; ++row) {
    const double *xr = v + 3 * row;
    double peak = fmax(fmax(xr[0], xr[1]), xr[2]);
    double sum = exp(xr[0] - peak);
    sum += exp(xr[1] - peak);
    sum += exp(xr[2] - peak);
    for (int k = 0; k < 3; ++k) CHECK_BITS_F64(ot_at(r, 3 * row + k), (xr[k] - peak) - log(sum));
    CHECK_BITS_F64(ot_at(l, row), peak + log(sum));
  }
  /* f32 and bf16 agree with the f32 formula (bf16 rounded once) */
  const topos_dtype dts[] = {TOPOS_F32, TOPOS_BF16};
  for (int d = 0; d < 2; ++d) {
    x = ot_make(&p, dts[d], 2, s, v);
    CHECK_OK(topos_log_softmax(x, 0, &r));
    CHECK_OK(topos_log_sum_exp(x, 0, &l));
    ot_keep(&p, r);
    ot_keep(&p, l);
    for (int col = 0; col < 3; ++col) {
      float a = (float)ot_round(dts[d], v[col]), b = (float)ot_round(dts[d], v[3 + col]);
      float peak = a > b ? a : b;
      float sum = expf(a - peak);
      sum += expf(b - peak);
      float ls = logf(sum);
      CHECK_BITS_F64(ot_at(r, col), ot_round(dts[d], (a - peak) - ls));
      CHECK_BITS_F64(ot_at(r, 3 + col), ot_round(dts[d], (b - peak) - ls));
      CHECK_BITS_F64(ot_at(l, col), ot_round(dts[d], peak + ls));
    }
  }
  /* a known value: log_softmax of equal entries is -ln 2, log_sum_exp is x + ln 2 */
  const double eq[2] = {1, 1};
  x = ot_make(&p, TOPOS_F64, 1, sl, eq);
  CHECK_OK(topos_log_softmax(x, 0, &r));
  CHECK_BITS_F64(ot_at(ot_keep(&p, r), 0), -log(2.0));
  CHECK_OK(topos_log_sum_exp(x, 0, &l));
  CHECK_BITS_F64(ot_at(ot_keep(&p, l), 0), 1 + log(2.0));
  ot_free(&p);
}

TEST(ops_log_sum_exp_non_finite_peaks) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {4, 2}, so[] = {4};
  const double v[8] = {-INFINITY, -INFINITY, INFINITY, 1, NAN, 1, -INFINITY, 0};
  const topos_dtype dts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
  for (int d = 0; d < 3; ++d) {
    topos_tensor *x = ot_make(&p, dts[d], 2, s, v), *l, *r;
    CHECK(x);
    CHECK_OK(topos_log_sum_exp(x, 1, &l));
    /* all -inf -> -inf; +inf -> +inf; NaN -> NaN; a -inf entry contributes 0 */
    CHECK_VALUES(&p, ot_keep(&p, l), 1, so, -INFINITY, INFINITY, NAN, 0.0);
    CHECK_OK(topos_log_softmax(x, 1, &r));
    ot_keep(&p, r);
    for (int i = 0; i < 6; ++i) CHECK(isnan(ot_at(r, i))); /* no distribution: NaN */
    CHECK(ot_at(r, 6) == -INFINITY);
    CHECK(ot_at(r, 7) == 0.0);
  }
  ot_free(&p);
}

/* sum_along over an axis whose trailing axes are one contiguous run (a bias
 * gradient's [rows, C]) takes blocks of lanes side by side: still each lane
 * seeded from its first element and ascending. Checked against that loop for
 * short runs, runs longer than a block (64), 8 or 16 lanes and a leading axis. */
TEST(ops_sum_along_contiguous_runs_keep_lane_order) {
  ot_pool p = {{0}, 0};
  /* 8 and 16 lanes (and a last block of 8 or 16 after 64) keep their sums in registers */
  static const int64_t shapes[][3] = {{1, 301, 8}, {1, 77, 70}, {3, 50, 5}, {2, 9, 130},
                                      {2, 33, 16}, {1, 20, 72}, {3, 7, 80}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
    int64_t o = shapes[c][0], k = shapes[c][1], in = shapes[c][2];
    int64_t s[3] = {o, k, in}, so[2] = {o, in};
    double *v = malloc((size_t)(o * k * in) * sizeof *v);
    CHECK(v != NULL);
    if (!v) break;
    for (int64_t i = 0; i < o * k * in; ++i)
      v[i] = (double)((i * 2654435761u) % 20011) / 97.0 - 100.0 + (i % 13 == 0 ? 1e7 : 0.0);
    topos_tensor *xf = ot_make(&p, TOPOS_F32, 3, s, v), *xd = ot_make(&p, TOPOS_F64, 3, s, v);
    topos_tensor *rf = NULL, *rd = NULL;
    CHECK_OK(topos_sum_along(xf, 1, &rf));
    CHECK_OK(topos_sum_along(xd, 1, &rd));
    ot_keep(&p, rf), ot_keep(&p, rd);
    CHECK(topos_tensor_rank(rf) == 2 && topos_tensor_shape(rf)[1] == so[1]);
    int same = 1;
    for (int64_t a = 0; a < o; ++a)
      for (int64_t i = 0; i < in; ++i) {
        const double *lane = v + a * k * in + i;
        float ef = (float)lane[0];
        double ed = lane[0];
        for (int64_t q = 1; q < k; ++q) ef += (float)lane[q * in], ed += lane[q * in];
        same &= (float)ot_at(rf, a * in + i) == ef && ot_at(rd, a * in + i) == ed;
      }
    CHECK_MSG(same, "sum_along [%lld,%lld,%lld] axis 1", (long long)o, (long long)k, (long long)in);
    free(v);
  }
  ot_free(&p);
}
