/* The bodies of llama_layernorm_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

void lt_norm(float *o, const float *x, const float *w, const float *b, int64_t n, float eps) {
  if (!b) {
    lt_rmsnorm(o, x, w, n, eps);
    return;
  }
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double r = 1.0 / sqrt(var / (double)n + eps);
  for (int64_t i = 0; i < n; ++i) o[i] = (float)((x[i] - mean) * r * (w ? w[i] : 1.0f) + b[i]); /* OLMo 1: no w */
}

void lt_plain_ffn(const float *up, const float *bu, const float *down, const float *bd, const float *h,
                  float *mid, float *out, int64_t D, int64_t F, int act, int64_t l) {
  lt_matvec(up, h, mid, F, D);
  for (int64_t i = 0; i < F; ++i) {
    const double u = (double)mid[i] + (bu ? bu[i] : 0.0);
    mid[i] = act == 2 ? (float)lt_xielu(u, l) : act == 1 ? (float)(u > 0 ? u * u : 0.0) : (float)lt_gelu(u); /* arcee: ReLU squared */
  }
  lt_matvec(down, mid, out, D, F);
  for (int64_t i = 0; bd && i < D; ++i) out[i] += bd[i];
}
