/* The reference dot products: equal (within float rounding) to the dot of
 * the dequantized rows, close to the f32 dot of the unquantized data, and the
 * f32 reference matrix product over dequantized rows. */
#include <stdlib.h>

#include "quant/quant_internal.h"
#include "quant_test_util.h"

static const topos_dtype qt_weight_types[] = {TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q5_0, TOPOS_Q5_1,
                                              TOPOS_Q8_0, TOPOS_Q2_K, TOPOS_Q3_K, TOPOS_Q4_K,
                                              TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_MXFP4};

/* Error allowed between tp_vec_dot_ref and the exact dot of the dequantized
 * rows: the integer block sums are exact; what remains is f32 rounding of
 * the per-block scaling and of the running sum, at most a few hundred ulps of
 * sum |w_i a_i| for n = 4096 (we allow 2^-16 of it), plus for Q4_1/Q5_1 the
 * min term, which uses Q8_1's s = f16(d * sum q) instead of f16(d) * sum q:
 * up to 2^-10 relative per block. */
static double qt_dot_bound(topos_dtype wtype, const uint8_t *w, const uint8_t *a, const float *dw,
                           const float *da, int64_t n) {
  double abs_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) abs_sum += fabs((double)dw[i] * (double)da[i]);
  double bound = abs_sum * 0x1p-16;
  if (wtype == TOPOS_Q4_1 || wtype == TOPOS_Q5_1) {
    const size_t wbytes = wtype == TOPOS_Q4_1 ? sizeof(tp_block_q4_1) : sizeof(tp_block_q5_1);
    for (int64_t b = 0; b < n / 32; ++b) {
      uint16_t m16;
      tp_block_q8_1 ab;
      memcpy(&m16, w + b * wbytes + 2, 2); /* m follows d in both layouts */
      memcpy(&ab, a + b * sizeof ab, sizeof ab);
      bound += fabs((double)tp_h2f(m16) * (double)tp_h2f(ab.s)) * 0x1p-10;
    }
  }
  return bound;
}

TEST(quant_vec_dot_ref_equals_dequantized_dot) {
  enum { N = 4096 };
  static float xw[N], xa[N], dw[N], da[N];
  static uint8_t w[N * 2], a[N * 2];
  qt_fill_uniform(xw, N, 21, 1.0f);
  qt_fill_uniform(xa, N, 22, 3.0f);
  for (size_t t = 0; t < sizeof qt_weight_types / sizeof qt_weight_types[0]; ++t) {
    const topos_dtype wtype = qt_weight_types[t];
    topos_dtype atype;
    CHECK_OK(topos_quant_vec_dot_type(wtype, &atype));
    CHECK_OK(topos_quantize_row(wtype, xw, w, N));
    CHECK_OK(topos_quantize_row(atype, xa, a, N));
    CHECK_OK(topos_dequantize_row(wtype, w, dw, N));
    CHECK_OK(topos_dequantize_row(atype, a, da, N));
    double exact = 0.0;
    for (int64_t i = 0; i < N; ++i) exact += (double)dw[i] * (double)da[i];
    float dot = 0;
    CHECK_OK(tp_vec_dot_ref(wtype, N, w, a, &dot));
    const double bound = qt_dot_bound(wtype, w, a, dw, da, N);
    CHECK_MSG(fabs(dot - exact) <= bound, "%s: dot %.9g vs dequantized %.9g (bound %.3g)",
              tp_quant_traits_of(wtype)->suffix, dot, exact, bound);
  }
}

/* Against the unquantized data, as ggml's test-quantize-fns does: data
 * 0.1 + 2cos(i + offset), |dot - f32 dot| / n below 0.02 (0.04 for 2-3 bits). */
TEST(quant_vec_dot_ref_close_to_float_dot) {
  enum { N = 4096 };
  static float xw[N], xa[N];
  static uint8_t w[N * 2], a[N * 2];
  for (int i = 0; i < N; ++i) {
    xw[i] = 0.1f + 2.0f * cosf((float)i);
    xa[i] = 0.1f + 2.0f * cosf((float)i + 1.0f);
  }
  double exact = 0.0;
  for (int i = 0; i < N; ++i) exact += (double)xw[i] * (double)xa[i];
  for (size_t t = 0; t < sizeof qt_weight_types / sizeof qt_weight_types[0]; ++t) {
    const topos_dtype wtype = qt_weight_types[t];
    topos_dtype atype;
    CHECK_OK(topos_quant_vec_dot_type(wtype, &atype));
    CHECK_OK(topos_quantize_row(wtype, xw, w, N));
    CHECK_OK(topos_quantize_row(atype, xa, a, N));
    float dot = 0;
    CHECK_OK(tp_vec_dot_ref(wtype, N, w, a, &dot));
    const double limit = (wtype == TOPOS_Q2_K || wtype == TOPOS_Q3_K) ? 0.04 : 0.02;
    CHECK_MSG(fabs(dot - exact) / N < limit, "%s: %.6g vs %.6g", tp_quant_traits_of(wtype)->suffix,
              dot, exact);
  }
}

/* Plain float partners: f32 products (exact for f16/bf16) summed in f64. */
TEST(quant_vec_dot_ref_float_types) {
  enum { N = 1000 };
  static float x[N], y[N], rx[N], ry[N];
  static uint8_t bx[N * 4], by[N * 4];
  qt_fill_uniform(x, N, 31, 10.0f);
  qt_fill_uniform(y, N, 32, 0.1f);
  const topos_dtype types[] = {TOPOS_F32, TOPOS_F16, TOPOS_BF16};
  for (size_t t = 0; t < 3; ++t) {
    CHECK_OK(topos_quantize_row(types[t], x, bx, N));
    CHECK_OK(topos_quantize_row(types[t], y, by, N));
    CHECK_OK(topos_dequantize_row(types[t], bx, rx, N));
    CHECK_OK(topos_dequantize_row(types[t], by, ry, N));
    double sum = 0.0;
    for (int i = 0; i < N; ++i) sum += (double)(rx[i] * ry[i]);
    float dot = 0;
    CHECK_OK(tp_vec_dot_ref(types[t], N, bx, by, &dot));
    CHECK_BITS_F32(dot, (float)sum);
  }
}

TEST(quant_qmatmul_ref_dequant_matches_rows) {
  enum { ROWS = 3, COLS = 5, K = 512 };
  static float x[ROWS * K], wsrc[COLS * K], dw[K], out[ROWS * COLS];
  static uint8_t w[COLS * 400]; /* stride 400 > 2 blocks of 144 bytes: gaps allowed */
  static uint8_t act[2 * sizeof(tp_block_q8_K)];
  qt_fill_uniform(x, ROWS * K, 41, 1.0f);
  qt_fill_uniform(wsrc, COLS * K, 42, 0.5f);
  for (int c = 0; c < COLS; ++c) CHECK_OK(topos_quantize_row(TOPOS_Q4_K, wsrc + c * K, w + c * 400, K));
  CHECK_OK(tp_qmatmul_ref_dequant(TOPOS_Q4_K, w, 400, COLS, x, ROWS, K, out));
  for (int c = 0; c < COLS; ++c) {
    CHECK_OK(topos_dequantize_row(TOPOS_Q4_K, w + c * 400, dw, K));
    for (int r = 0; r < ROWS; ++r) {
      double sum = 0.0;
      for (int k = 0; k < K; ++k) sum += (double)dw[k] * (double)x[r * K + k];
      CHECK_BITS_F32(out[r * COLS + c], (float)sum);
      /* the quantized path (activations through Q8_K) stays close */
      float dot = 0;
      CHECK_OK(topos_quantize_row(TOPOS_Q8_K, x + r * K, act, K));
      CHECK_OK(tp_vec_dot_ref(TOPOS_Q4_K, K, w + c * 400, act, &dot));
      double abs_sum = 0.0;
      for (int k = 0; k < K; ++k) abs_sum += fabs((double)dw[k] * (double)x[r * K + k]);
      CHECK_MSG(fabs(dot - sum) <= 0.01 * abs_sum, "r%d c%d: %g vs %g", r, c, dot, sum);
    }
  }
  CHECK_STATUS(tp_qmatmul_ref_dequant(TOPOS_Q4_K, w, 200, COLS, x, ROWS, K, out), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("stride");
  CHECK_STATUS(tp_qmatmul_ref_dequant(TOPOS_Q4_K, w, 400, COLS, x, ROWS, 300, out), TOPOS_ERR_SHAPE);
}
