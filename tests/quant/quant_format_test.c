/* Behaviour of the quant formats beyond the goldens: argument checks,
 * round-trip error per type, handcrafted blocks decoded from the layout
 * rules of ggml.md section 2 (written independently of the library's code),
 * Q8_K sums, and the traits table. */
#include <stdlib.h>

#include "quant/quant_internal.h"
#include "quant_test_util.h"

TEST(quant_row_rejects_partial_blocks_and_bad_arguments) {
  float x[64] = {0};
  uint8_t buf[512];
  CHECK_STATUS(topos_quantize_row(TOPOS_Q4_0, x, buf, 33), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("33 elements");
  CHECK_ERROR_HAS("q4_0");
  CHECK_STATUS(topos_quantize_row(TOPOS_Q4_K, x, buf, 64), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("256");
  CHECK_STATUS(topos_dequantize_row(TOPOS_Q8_0, buf, x, 40), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_quantize_row(TOPOS_Q8_0, x, buf, -32), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_quantize_row(TOPOS_I32, x, buf, 32), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_quantize_row(TOPOS_F64, x, buf, 32), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_dequantize_row((topos_dtype)999, buf, x, 32), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_quantize_row(TOPOS_Q8_0, NULL, buf, 32), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_dequantize_row(TOPOS_Q8_0, buf, NULL, 32), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_OK(topos_quantize_row(TOPOS_Q8_0, NULL, NULL, 0)); /* nothing to do */
  CHECK_OK(topos_quantize_row(TOPOS_F16, x, buf, 3));      /* plain floats: any n */
  float y = 0;
  CHECK_STATUS(tp_vec_dot_ref(TOPOS_Q8_K, 256, buf, buf, &y), TOPOS_ERR_DTYPE);
  CHECK_STATUS(tp_vec_dot_ref(TOPOS_Q4_0, 48, buf, buf, &y), TOPOS_ERR_SHAPE);
}

TEST(quant_vec_dot_partners_follow_ggml) {
  static const struct {
    topos_dtype weight, partner;
  } pairs[] = {{TOPOS_Q4_0, TOPOS_Q8_0}, {TOPOS_Q5_0, TOPOS_Q8_0}, {TOPOS_Q8_0, TOPOS_Q8_0},
               {TOPOS_Q4_1, TOPOS_Q8_1}, {TOPOS_Q5_1, TOPOS_Q8_1}, {TOPOS_Q2_K, TOPOS_Q8_K},
               {TOPOS_Q3_K, TOPOS_Q8_K}, {TOPOS_Q4_K, TOPOS_Q8_K}, {TOPOS_Q5_K, TOPOS_Q8_K},
               {TOPOS_Q6_K, TOPOS_Q8_K}, {TOPOS_F16, TOPOS_F16},   {TOPOS_BF16, TOPOS_BF16},
               {TOPOS_F32, TOPOS_F32},   {TOPOS_MXFP4, TOPOS_Q8_0}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i) {
    topos_dtype got = TOPOS_DTYPE_COUNT;
    CHECK_OK(topos_quant_vec_dot_type(pairs[i].weight, &got));
    CHECK_EQ_INT(got, pairs[i].partner);
    const tp_quant_traits *t = tp_quant_traits_of(pairs[i].weight);
    int64_t be, bb;
    qt_geometry(pairs[i].weight, &be, &bb);
    CHECK(t != NULL && t->block_elements == be && t->block_bytes == bb && t->vec_dot != NULL);
  }
  topos_dtype unused;
  CHECK_STATUS(topos_quant_vec_dot_type(TOPOS_Q8_1, &unused), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_quant_vec_dot_type(TOPOS_Q8_K, &unused), TOPOS_ERR_DTYPE);
  CHECK(tp_quant_traits_of(TOPOS_I32) == NULL);
}

/* Relative RMSE ||dequant(quant(x)) - x|| / ||x|| on 4096 standard normal
 * values. Bounds are 1.2x what the ggml algorithms give on this data
 * (measured: f16 2.1e-4, bf16 1.67e-3, q4_0 .0841, q4_1 .0775, q5_0 .0419,
 * q5_1 .0375, q8_0/q8_1 .00528, q2_K .289, q3_K .148, q4_K .0703, q5_K .0357,
 * q6_K .0177, q8_K .00653, mxfp4 .1139); each K format must also beat the legacy
 * format of the same width and every format must beat the next narrower one
 * (MXFP4's 16 fixed levels: between Q4_0 and Q3_K). */
TEST(quant_round_trip_error_per_type) {
  static const struct {
    topos_dtype dtype;
    double bound;
  } cases[] = {{TOPOS_F16, 2.6e-4},  {TOPOS_BF16, 2.0e-3},  {TOPOS_Q4_0, 0.101},
               {TOPOS_Q4_1, 0.093},  {TOPOS_Q5_0, 0.0503}, {TOPOS_Q5_1, 0.045},
               {TOPOS_Q8_0, 0.00634}, {TOPOS_Q8_1, 0.00634}, {TOPOS_Q2_K, 0.347},
               {TOPOS_Q3_K, 0.178},  {TOPOS_Q4_K, 0.0844}, {TOPOS_Q5_K, 0.0429},
               {TOPOS_Q6_K, 0.0213}, {TOPOS_Q8_K, 0.00784}, {TOPOS_MXFP4, 0.137}};
  enum { N = 4096 };
  static float x[N], y[N];
  static uint8_t q[N * 4];
  double err[TOPOS_DTYPE_COUNT] = {0};
  qt_fill_gaussian(x, N, 11);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    CHECK_OK(topos_quantize_row(cases[i].dtype, x, q, N));
    CHECK_OK(topos_dequantize_row(cases[i].dtype, q, y, N));
    err[cases[i].dtype] = qt_relative_rmse(x, y, N);
    CHECK_MSG(err[cases[i].dtype] <= cases[i].bound, "%s: relative rmse %.5f > %.5f",
              tp_quant_traits_of(cases[i].dtype)->suffix, err[cases[i].dtype], cases[i].bound);
    CHECK(err[cases[i].dtype] > 0); /* a lossless "quantizer" would be a bug here */
  }
  CHECK(err[TOPOS_Q4_K] < err[TOPOS_Q4_0] && err[TOPOS_Q5_K] < err[TOPOS_Q5_0]);
  CHECK(err[TOPOS_Q2_K] > err[TOPOS_Q3_K] && err[TOPOS_Q3_K] > err[TOPOS_Q4_K] &&
        err[TOPOS_Q4_K] > err[TOPOS_Q5_K] && err[TOPOS_Q5_K] > err[TOPOS_Q6_K] &&
        err[TOPOS_Q6_K] > err[TOPOS_Q8_0]);
  CHECK(err[TOPOS_Q4_0] > err[TOPOS_Q5_0] && err[TOPOS_Q4_1] > err[TOPOS_Q5_1]);
  CHECK(err[TOPOS_Q3_K] > err[TOPOS_MXFP4] && err[TOPOS_MXFP4] > err[TOPOS_Q4_0]);
}

/* Per-element bounds of the legacy symmetric formats: Q8_0 rounds to the
 * nearest of 255 levels (|err| <= d/2, plus d's f16 rounding times 127);
 * Q4_0 maps the extreme exactly and clamps the opposite side (|err| <= d). */
TEST(quant_legacy_element_error_bounds) {
  enum { N = 1024 };
  static float x[N], y[N];
  static uint8_t q[N * 2];
  qt_fill_gaussian(x, N, 5);
  CHECK_OK(topos_quantize_row(TOPOS_Q8_0, x, q, N));
  CHECK_OK(topos_dequantize_row(TOPOS_Q8_0, q, y, N));
  for (int b = 0; b < N / 32; ++b) {
    tp_block_q8_0 blk;
    memcpy(&blk, q + b * sizeof blk, sizeof blk);
    const double d = fabs(tp_h2f(blk.d));
    for (int j = 0; j < 32; ++j)
      CHECK_MSG(fabs(y[32 * b + j] - x[32 * b + j]) <= 0.5 * d + 127 * d * 0x1p-11,
                "q8_0 element %d: %g vs %g", 32 * b + j, y[32 * b + j], x[32 * b + j]);
  }
  CHECK_OK(topos_quantize_row(TOPOS_Q4_0, x, q, N));
  CHECK_OK(topos_dequantize_row(TOPOS_Q4_0, q, y, N));
  for (int b = 0; b < N / 32; ++b) {
    tp_block_q4_0 blk;
    memcpy(&blk, q + b * sizeof blk, sizeof blk);
    const double d = fabs(tp_h2f(blk.d));
    for (int j = 0; j < 32; ++j)
      CHECK(fabs(y[32 * b + j] - x[32 * b + j]) <= d * (1 + 0x1p-10) + 8 * d * 0x1p-11);
  }
}

/* ---- handcrafted blocks, expected values from the documented layouts */

TEST(quant_dequantize_handcrafted_q4_0_q5_0_q8_0) {
  tp_block_q4_0 b4;
  b4.d = 0x3800; /* 0.5 */
  for (int j = 0; j < 16; ++j) b4.qs[j] = (uint8_t)(j | (15 - j) << 4);
  float y[32];
  CHECK_OK(topos_dequantize_row(TOPOS_Q4_0, &b4, y, 32));
  for (int j = 0; j < 16; ++j) {
    CHECK_BITS_F32(y[j], (float)(j - 8) * 0.5f);
    CHECK_BITS_F32(y[j + 16], (float)(7 - j) * 0.5f);
  }
  tp_block_q5_0 b5;
  b5.d = 0xc000; /* -2.0 */
  const uint32_t high = 0xA5A5F00Fu;
  for (int k = 0; k < 4; ++k) b5.qh[k] = (uint8_t)(high >> (8 * k));
  for (int j = 0; j < 16; ++j) b5.qs[j] = (uint8_t)((j * 7) % 16 | ((j * 3) % 16) << 4);
  CHECK_OK(topos_dequantize_row(TOPOS_Q5_0, &b5, y, 32));
  for (int j = 0; j < 32; ++j) {
    int low = j < 16 ? (j * 7) % 16 : ((j - 16) * 3) % 16;
    int level = low | (int)((high >> j) & 1) << 4;
    CHECK_BITS_F32(y[j], (float)(level - 16) * -2.0f);
  }
  tp_block_q8_0 b8;
  b8.d = 0x4000; /* 2.0 */
  for (int j = 0; j < 32; ++j) b8.qs[j] = (int8_t)(j * 8 - 128);
  CHECK_OK(topos_dequantize_row(TOPOS_Q8_0, &b8, y, 32));
  for (int j = 0; j < 32; ++j) CHECK_BITS_F32(y[j], (float)(j * 8 - 128) * 2.0f);
}

TEST(quant_dequantize_handcrafted_q4_K) {
  /* scale j = j + 1 + 8*(j >= 4) (up to 15, 6 bits), min j = 2*j + 40*(j==7) */
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = (uint8_t)(j + 1 + (j >= 4 ? 8 : 0) + (j == 5 ? 40 : 0));
    mn[j] = (uint8_t)(2 * j + (j == 7 ? 40 : 0));
  }
  tp_block_q4_K b;
  memset(&b, 0, sizeof b);
  b.d = 0x3c00;    /* 1.0 */
  b.dmin = 0x3400; /* 0.25 */
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
    b.scales[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
    b.scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
  }
  int level[256];
  for (int e = 0; e < 256; ++e) level[e] = (e * 5 + e / 7) % 16;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * c + l] = (uint8_t)(level[64 * c + l] | level[64 * c + 32 + l] << 4);
  float y[256];
  CHECK_OK(topos_dequantize_row(TOPOS_Q4_K, &b, y, 256));
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    CHECK_BITS_F32(y[e], 1.0f * (float)sc[j] * (float)level[e] - 0.25f * (float)mn[j]);
  }
}

TEST(quant_dequantize_handcrafted_q6_K) {
  tp_block_q6_K b;
  memset(&b, 0, sizeof b);
  b.d = 0x3000; /* 0.125 */
  for (int j = 0; j < 16; ++j) b.scales[j] = (int8_t)(j * 17 - 128);
  int level[256];
  for (int e = 0; e < 256; ++e) level[e] = (e * 11 + 3) % 64;
  for (int e = 0; e < 256; ++e) { /* element e: half h, quarter k of 32, lane l */
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    uint8_t *ql = b.ql + 64 * h + l + (k & 1) * 32;
    *ql |= (uint8_t)((level[e] & 0xF) << (k >= 2 ? 4 : 0));
    b.qh[32 * h + l] |= (uint8_t)((level[e] >> 4) << (2 * k));
  }
  float y[256];
  CHECK_OK(topos_dequantize_row(TOPOS_Q6_K, &b, y, 256));
  for (int e = 0; e < 256; ++e)
    CHECK_BITS_F32(y[e], 0.125f * (float)b.scales[e / 16] * (float)(level[e] - 32));
}

TEST(quant_q8_K_bsums_and_zero_block) {
  enum { N = 512 };
  float x[N], y[N];
  qt_fill_gaussian(x, N, 3);
  for (int j = 256; j < 512; ++j) x[j] = 0.0f; /* second block all zeros */
  uint8_t q[2 * sizeof(tp_block_q8_K)];
  memset(q, 0x5a, sizeof q); /* garbage that must be overwritten */
  CHECK_OK(topos_quantize_row(TOPOS_Q8_K, x, q, N));
  tp_block_q8_K b[2];
  memcpy(b, q, sizeof b);
  int saw_extreme = 0;
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) {
      sum += b[0].qs[16 * g + l];
      saw_extreme |= b[0].qs[16 * g + l] == 127 || b[0].qs[16 * g + l] == -127;
    }
    CHECK_EQ_INT(b[0].bsums[g], sum);
    CHECK_EQ_INT(b[1].bsums[g], 0);
  }
  CHECK(saw_extreme); /* the largest magnitude maps to +-127 */
  CHECK_BITS_F32(b[1].d, 0.0f);
  for (int j = 0; j < 256; ++j) CHECK_EQ_INT(b[1].qs[j], 0);
  CHECK_OK(topos_dequantize_row(TOPOS_Q8_K, q, y, N));
  for (int j = 0; j < 256; ++j) CHECK(fabsf(y[j] - x[j]) <= 0.5f * fabsf(b[0].d) * 1.0001f);
  for (int j = 256; j < 512; ++j) CHECK_BITS_F32(y[j], 0.0f);
}

/* Special rows every format must survive: zeros give zeros, a constant row
 * and an outlier row stay finite and close to their value. */
TEST(quant_special_rows_all_formats) {
  static const topos_dtype types[] = {TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q5_0, TOPOS_Q5_1,
                                      TOPOS_Q8_0, TOPOS_Q8_1, TOPOS_Q2_K, TOPOS_Q3_K,
                                      TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q8_K};
  static float x[256], y[256];
  static uint8_t q[512];
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    for (int j = 0; j < 256; ++j) x[j] = 0.0f;
    CHECK_OK(topos_quantize_row(types[t], x, q, 256));
    CHECK_OK(topos_dequantize_row(types[t], q, y, 256));
    /* == not bits: ggml's Q4_0 stores d = 0/-8 = -0 and decodes -0 */
    for (int j = 0; j < 256; ++j) CHECK(y[j] == 0.0f);
    for (int j = 0; j < 256; ++j) x[j] = -3.0f;
    CHECK_OK(topos_quantize_row(types[t], x, q, 256));
    CHECK_OK(topos_dequantize_row(types[t], q, y, 256));
    for (int j = 0; j < 256; ++j)
      CHECK_MSG(fabsf(y[j] + 3.0f) <= 3.0f * 0.01f, "%s constant: %g",
                tp_quant_traits_of(types[t])->suffix, y[j]);
    qt_fill_gaussian(x, 256, 9 + t);
    x[100] = 1e4f;
    CHECK_OK(topos_quantize_row(types[t], x, q, 256));
    CHECK_OK(topos_dequantize_row(types[t], q, y, 256));
    for (int j = 0; j < 256; ++j) CHECK(isfinite(y[j]));
    CHECK_MSG(fabsf(y[100] - 1e4f) <= 1e4f * 0.05f, "%s outlier: %g",
              tp_quant_traits_of(types[t])->suffix, y[100]);
  }
}

/* NaN, infinities and values beyond f16 range must not reach undefined
 * behaviour (float -> int conversions are guarded; UBSan checks this test):
 * the bytes are unspecified, as in ggml, but every path stays in bounds and
 * finite rows elsewhere in the same call are unaffected. */
TEST(quant_non_finite_inputs_stay_defined) {
  static const topos_dtype types[] = {TOPOS_F16,  TOPOS_BF16, TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q5_0,
                                      TOPOS_Q5_1, TOPOS_Q8_0, TOPOS_Q8_1, TOPOS_Q2_K, TOPOS_Q3_K,
                                      TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q8_K, TOPOS_MXFP4};
  static float x[512], y[512], clean[256];
  static uint8_t q[1024], q_clean[1024];
  qt_fill_gaussian(x, 512, 77);
  memcpy(clean, x + 256, sizeof clean);
  x[3] = NAN;
  x[40] = INFINITY;
  x[41] = -INFINITY;
  x[77] = 3e38f;
  x[200] = -1e30f;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    CHECK_OK(topos_quantize_row(types[t], x, q, 512));
    CHECK_OK(topos_dequantize_row(types[t], q, y, 512));
    CHECK_OK(topos_quantize_row(types[t], clean, q_clean, 256));
    const size_t half = qt_row_bytes(types[t], 256);
    CHECK_MSG(memcmp(q + half, q_clean, half) == 0, "%s: a bad block leaked into the next",
              tp_quant_traits_of(types[t])->suffix);
  }
}
