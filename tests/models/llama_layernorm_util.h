/* The LayerNorm files' pieces of the plain forward (included by
 * llama_util.h): LayerNorm with a bias (RMSNorm without), GELU's tanh form
 * and the gateless feed-forward of starcoder2, phi2, gpt2, gptneox and
 * falcon. */
#ifndef TESTS_MODELS_LLAMA_LAYERNORM_UTIL_H
#define TESTS_MODELS_LLAMA_LAYERNORM_UTIL_H

/* RMSNorm, or with a bias b LayerNorm: (x - mean) / sqrt(var + eps) * w + b */
void lt_norm(float *o, const float *x, const float *w, const float *b, int64_t n, float eps);

/* GELU, tanh form */
static inline double lt_gelu(double a) {
  return 0.5 * a * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (a + 0.044715 * a * a * a)));
}

/* The gateless feed-forward (starcoder2, phi2): out[D] = down(GELU(up h + bu)) + bd,
 * up [F, D], down [D, F], biases NULL for none; mid holds F values. */
/* Apertus's xIELU of u for block l: the file's raw parameters (lt_xielu_raw)
 * as llama.cpp takes them, alpha_n' = beta + softplus(alpha_n), alpha_p' =
 * softplus(alpha_p): u > 0 ? alpha_p' u^2 + beta u : (expm1(min(u, eps)) - u)
 * alpha_n' + beta u, in double */
static inline void lt_xielu_raw(int64_t l, double p[4]) {
  p[0] = 0.8 + 0.1 * (double)l, p[1] = 0.8 - 0.1 * (double)l, p[2] = 0.5, p[3] = -1e-6;
}
static inline double lt_xielu(double u, int64_t l) {
  double p[4];
  lt_xielu_raw(l, p);
  const double an = p[2] + log1p(exp((double)(float)p[0])), ap = log1p(exp((double)(float)p[1]));
  return u > 0 ? ap * u * u + p[2] * u : (expm1(fmin(u, p[3])) - u) * an + p[2] * u;
}

/* The gateless feed-forward (starcoder2, phi2): out[D] = down(GELU(up h + bu)) + bd,
 * up [F, D], down [D, F], biases NULL for none; mid holds F values. ReLU
 * squared instead of GELU (act 1), Apertus's xIELU of block l (act 2). */
void lt_plain_ffn(const float *up, const float *bu, const float *down, const float *bd, const float *h,
                  float *mid, float *out, int64_t D, int64_t F, int act, int64_t l);

#endif
