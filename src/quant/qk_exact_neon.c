/* The reference product of float weights (f32, f16, bf16) with f32
 * activations on NEON, with the reference's bits: the x86 twin's scheme
 * (qk_exact_avx2.c) on 128-bit registers. Lanes are outputs, 16 weight rows
 * side by side, each lane its row's own chain: w * a in f32 from the
 * exactly widened weight, summed in f64 in ascending k from +0, rounded to
 * f32 once, the bias added in f32. A panel of 16 rows is widened (by the
 * reference's own conversions, tp_qk_float_at) and transposed once,
 * wt[kk][16]; every activation row then streams it. */
#include <arm_neon.h>
#include "base/temp.h"
#include "quant/qk_internal.h"

#define QN_ROWS TP_QK_EXACT_ROWS

/* wt[kk * 16 + r] = widened w[row r][kk]; rows past `rows` repeat the last
 * (their outputs are dropped). */
static void qn_panel(const tp_qk_task *t, int64_t j, int rows, float *wt) {
  for (int r = 0; r < QN_ROWS; ++r) {
    const uint8_t *src = (const uint8_t *)t->w + (size_t)(j + (r < rows ? r : rows - 1)) * t->row_bytes;
    for (int64_t kk = 0; kk < t->k; ++kk) wt[kk * QN_ROWS + r] = tp_qk_float_at(src, t->wtype, kk);
  }
}

int tp_qk_exact_float_neon(const tp_qk_task *t, int64_t p0, int64_t p1) {
  const int64_t k = t->k;
  float *wt = tp_temp_alloc((size_t)k * QN_ROWS * sizeof(float));
  if (!wt) return 0;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * QN_ROWS;
    const int rows = (int)(t->n - j < QN_ROWS ? t->n - j : QN_ROWS);
    qn_panel(t, j, rows, wt);
    for (int64_t i = 0; i < t->m; ++i) {
      const float *a = t->a + i * k;
      float64x2_t s[8];
      for (int c = 0; c < 8; ++c) s[c] = vdupq_n_f64(0.0);
      for (int64_t kk = 0; kk < k; ++kk) {
        const float *wk = wt + kk * QN_ROWS;
        for (int q = 0; q < 4; ++q) {
          const float32x4_t prod = vmulq_n_f32(vld1q_f32(wk + 4 * q), a[kk]);
          s[2 * q] = vaddq_f64(s[2 * q], vcvt_f64_f32(vget_low_f32(prod)));
          s[2 * q + 1] = vaddq_f64(s[2 * q + 1], vcvt_high_f64_f32(prod));
        }
      }
      float v[QN_ROWS]; /* each f64 sum rounded once, as (float)sum */
      for (int c = 0; c < 8; ++c) vst1_f32(v + 2 * c, vcvt_f32_f64(s[c]));
      float *out = t->out + i * t->n + j;
      for (int r = 0; r < rows; ++r) out[r] = t->bias ? v[r] + t->bias[j + r] : v[r];
    }
  }
  tp_temp_free(wt);
  return 1;
}
