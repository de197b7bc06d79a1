/* Scale searches shared by the K formats. Each follows the corresponding
 * ggml helper (make_qkx2_quants, make_qx_quants, make_q3_quants) operation by
 * operation: every sum is accumulated left to right in f32 and products are
 * evaluated in the order written (w*l*l is (w*l)*l), because a different
 * association changes which candidate wins and therefore the stored bits. */
#include "quant/quant_internal.h"

/* Below this magnitude a group counts as all zeros (ggml GROUP_MAX_EPS). */
#define TP_GROUP_MAX_EPS 1e-15f

float tp_fit_scale_min(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                       float *neg_min, uint8_t *scratch, float rmin, float rdelta, int nstep,
                       int use_abs) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0; /* the minimum is only ever subtracted: keep it <= 0 */
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = (float)nmax / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = (uint8_t)tp_clamp_int(tp_nearest_int(iscale * (x[i] - min)), 0, nmax);
    float diff = scale * (float)L[i] + min - x[i];
    diff = use_abs ? fabsf(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * (float)step + (float)nmax) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = tp_clamp_int(tp_nearest_int(iscale * (x[i] - min)), 0, nmax);
      scratch[i] = (uint8_t)l;
      const float w = weights[i];
      sum_l += w * (float)l;
      sum_l2 += w * (float)l * (float)l;
      sum_xl += w * (float)l * x[i];
    }
    /* weighted least squares for x ~ scale*l + min over this candidate's levels */
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0.0f;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * (float)scratch[i] + this_min - x[i];
        diff = use_abs ? fabsf(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < best_error) {
        memcpy(L, scratch, (size_t)n);
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

/* Signed value of largest magnitude (first wins); returns its magnitude. */
static float tp_signed_absmax(int n, const float *x, float *max_out) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float a = fabsf(x[i]);
    if (a > amax) {
      amax = a;
      max = x[i];
    }
  }
  *max_out = max;
  return amax;
}

static inline int tp_symmetric_level(float iscale, float x, int nmax) {
  return tp_clamp_int(tp_nearest_int(iscale * x), -nmax, nmax - 1);
}

float tp_fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
  float max;
  if (tp_signed_absmax(n, x, &max) < TP_GROUP_MAX_EPS) {
    memset(L, 0, (size_t)n);
    return 0.0f;
  }
  /* weights are x^2 (ggml rmse_type 1): large values matter most */
  float iscale = (float)-nmax / max;
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = tp_symmetric_level(iscale, x[i], nmax);
    L[i] = (int8_t)(l + nmax);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * (float)l;
    sum_l2 += w * (float)l * (float)l;
  }
  float scale = sum_l2 != 0.0f ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -((float)nmax + 0.1f * (float)step) / max;
    sum_lx = sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = tp_symmetric_level(iscale, x[i], nmax);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * (float)l;
      sum_l2 += w * (float)l * (float)l;
    }
    /* maximising sum_lx^2 / sum_l2 minimises the weighted squared error */
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) L[i] = (int8_t)(nmax + tp_symmetric_level(iscale, x[i], nmax));
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

float tp_fit_symmetric_descent(int n, int nmax, const float *x, int8_t *L) {
  float max;
  if (tp_signed_absmax(n, x, &max) < TP_GROUP_MAX_EPS) {
    memset(L, 0, (size_t)n);
    return 0.0f;
  }
  const float iscale = (float)-nmax / max;
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = tp_symmetric_level(iscale, x[i], nmax);
    L[i] = (int8_t)l;
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * (float)l;
    sum_l2 += w * (float)l * (float)l;
  }
  /* coordinate descent: move one level at a time to its best value given the
   * others, keeping the move when sum_lx^2/sum_l2 grows; at most 5 sweeps */
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sum_lx - w * x[i] * (float)L[i];
      if (!(slx > 0)) continue;
      float sl2 = sum_l2 - w * (float)L[i] * (float)L[i];
      const int new_l = tp_clamp_int(tp_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      slx += w * x[i] * (float)new_l;
      sl2 += w * (float)new_l * (float)new_l;
      if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        L[i] = (int8_t)new_l;
        sum_lx = slx;
        sum_l2 = sl2;
        ++changed;
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}
