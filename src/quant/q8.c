/* The 8-bit formats: Q8_0 (weights and the activation partner of
 * Q4_0/Q5_0/Q8_0), Q8_1 (activation partner of Q4_1/Q5_1: carries
 * s = d * sum(q) for the min term) and Q8_K (activation partner of the K
 * formats: f32 d and per-16 sums `bsums`).
 *
 * Q8_0 / Q8_1 (ggml quantize_row_q8_0_ref / _q8_1_ref): amax = max |x|,
 * d = amax/127 in f32, id = 1/d (0 when d is 0), q = roundf(x*id) — ties away
 * from zero — and d is stored as f16 after quantization used the f32 value.
 * Q8_1 stores s = f16((float)sum(q) * d) with the same f32 d.
 *
 * Q8_K (ggml quantize_row_q8_K_ref): max = signed value of largest magnitude
 * (first wins), iscale = -127/max, q = min(127, nearest_even(iscale*x)),
 * d = 1/iscale; an all-zero block stores d = 0, q = 0 and bsums = 0 (ggml
 * leaves its bsums untouched there). */
#include "quant/quant_internal.h"

/* Shared by Q8_0 and Q8_1: levels of one 32-block; returns the f32 d. */
static float tp_q8_levels(const float *x, int8_t qs[TP_QK]) {
  float amax = 0.0f;
  for (int j = 0; j < TP_QK; ++j) {
    const float a = fabsf(x[j]);
    amax = a > amax ? a : amax; /* a NaN leaves amax as it was (as Q8_K's maximum does) */
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < TP_QK; ++j) qs[j] = (int8_t)tp_round_to_i8(x[j] * id);
  return d;
}

void tp_quantize_q8_0(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q8_0 b;
    b.d = tp_f2h(tp_q8_levels(src + i * TP_QK, b.qs));
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_quantize_q8_1(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q8_1 b;
    const float d = tp_q8_levels(src + i * TP_QK, b.qs);
    int sum = 0;
    for (int j = 0; j < TP_QK; ++j) sum += b.qs[j];
    b.d = tp_f2h(d);
    b.s = tp_f2h((float)sum * d);
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

/* Q8_0 and Q8_1 decode alike: y = q*d (Q8_1's s is redundant). */
#define TP_DEFINE_Q8_DEQUANT(suffix)                                              \
  void tp_dequantize_##suffix(const void *src, float *dst, int64_t blocks) {      \
    for (int64_t i = 0; i < blocks; ++i) {                                        \
      tp_block_##suffix b;                                                        \
      memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);         \
      const float d = tp_h2f(b.d);                                                \
      for (int j = 0; j < TP_QK; ++j) dst[i * TP_QK + j] = (float)b.qs[j] * d;    \
    }                                                                             \
  }
TP_DEFINE_Q8_DEQUANT(q8_0)
TP_DEFINE_Q8_DEQUANT(q8_1)
#undef TP_DEFINE_Q8_DEQUANT

void tp_quantize_q8_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const float *x = src + i * TP_QK_K;
    tp_block_q8_K b;
    memset(&b, 0, sizeof b);
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < TP_QK_K; ++j) {
      const float a = fabsf(x[j]);
      if (a > amax) {
        amax = a;
        max = x[j];
      }
    }
    if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < TP_QK_K; ++j)
        b.qs[j] = (int8_t)tp_clamp_int(tp_nearest_int(iscale * x[j]), -128, 127);
      for (int g = 0; g < TP_QK_K / 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
        b.bsums[g] = (int16_t)sum;
      }
      b.d = 1.0f / iscale;
    }
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_dequantize_q8_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q8_K b;
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    for (int j = 0; j < TP_QK_K; ++j) dst[i * TP_QK_K + j] = b.d * (float)b.qs[j];
  }
}
