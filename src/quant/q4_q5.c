/* The legacy 4- and 5-bit formats: Q4_0, Q5_0 (symmetric, d only) and Q4_1,
 * Q5_1 (scale and minimum), 32 elements a block.
 *
 * Nibble order (all four): byte j holds element j in its low nibble and
 * element j+16 in its high nibble. The 5-bit formats keep the fifth bit of
 * element j in bit j of the little-endian u32 qh.
 *
 * Quantizers follow ggml's reference (quantize_row_q4_0_ref and friends):
 *   symmetric:  max = the signed value of largest magnitude (first one wins),
 *               d = max / -2^(bits-1), id = 1/d (0 when d is 0),
 *               q = min(2^bits - 1, trunc(x*id + 2^(bits-1) + 0.5))
 *               so the extreme maps to level 0 and ties round up.
 *   asymmetric: min, max of the block; d = (max-min)/(2^bits - 1),
 *               q = min(2^bits - 1, trunc((x-min)*id + 0.5)); stores d and min.
 * Every step is a single float operation in the order written, which is what
 * makes the bits match ggml (built without FMA contraction). */
#include "quant/quant_internal.h"

#include <float.h>

/* ---- shared pieces, parametrised by the bit width */

/* Levels q[0..31] (0..2^bits-1) of a symmetric block; returns d (f32). */
static float tp_symmetric_levels(const float *x, int bits, int q[TP_QK]) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < TP_QK; ++j) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  const int half = 1 << (bits - 1);
  const float d = max / (float)-half;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float offset = (float)half + 0.5f; /* 8.5f or 16.5f */
  const int top = (1 << bits) - 1;
  for (int j = 0; j < TP_QK; ++j) q[j] = tp_min_int(top, tp_trunc_to_i8(x[j] * id + offset));
  return d;
}

/* Levels of an asymmetric block; returns d, *min_out receives the minimum. */
static float tp_asymmetric_levels(const float *x, int bits, int q[TP_QK], float *min_out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < TP_QK; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const int top = (1 << bits) - 1;
  const float d = (max - min) / (float)top;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < TP_QK; ++j)
    q[j] = tp_clamp_int(tp_trunc_to_i8((x[j] - min) * id + 0.5f), 0, top);
  *min_out = min;
  return d;
}

static void tp_pack_nibbles(const int q[TP_QK], uint8_t qs[TP_QK / 2]) {
  for (int j = 0; j < TP_QK / 2; ++j)
    qs[j] = (uint8_t)((q[j] & 0xF) | ((q[j + TP_QK / 2] & 0xF) << 4));
}

static void tp_pack_fifth_bits(const int q[TP_QK], uint8_t qh[4]) {
  uint32_t bits = 0;
  for (int j = 0; j < TP_QK; ++j) bits |= (uint32_t)((q[j] >> 4) & 1) << j;
  for (int b = 0; b < 4; ++b) qh[b] = (uint8_t)(bits >> (8 * b));
}

void tp_legacy_levels(const uint8_t qs[TP_QK / 2], const uint8_t *qh, int q[TP_QK]) {
  uint32_t high = 0;
  if (qh) high = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
  for (int j = 0; j < TP_QK / 2; ++j) {
    q[j] = (qs[j] & 0xF) | (int)(((high >> j) & 1u) << 4);
    q[j + TP_QK / 2] = (qs[j] >> 4) | (int)(((high >> (j + TP_QK / 2)) & 1u) << 4);
  }
}

/* ---- the four formats from one definition each for quantize / dequantize.
 *   SYM: y = (q - bias)*d          ASYM: y = q*d + m                    */
#define TP_DEFINE_SYMMETRIC(suffix, bits, HAS_QH)                                 \
  void tp_quantize_##suffix(const float *src, void *dst, int64_t blocks) {        \
    for (int64_t i = 0; i < blocks; ++i) {                                        \
      tp_block_##suffix b;                                                        \
      int q[TP_QK];                                                               \
      b.d = tp_f2h(tp_symmetric_levels(src + i * TP_QK, bits, q));                \
      tp_pack_nibbles(q, b.qs);                                                   \
      HAS_QH(tp_pack_fifth_bits(q, b.qh);)                                        \
      memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);               \
    }                                                                             \
  }                                                                               \
  void tp_dequantize_##suffix(const void *src, float *dst, int64_t blocks) {      \
    for (int64_t i = 0; i < blocks; ++i) {                                        \
      tp_block_##suffix b;                                                        \
      int q[TP_QK];                                                               \
      memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);         \
      tp_legacy_levels(b.qs, TP_QH_OF_##suffix(b), q);                          \
      const float d = tp_h2f(b.d);                                                \
      for (int j = 0; j < TP_QK; ++j) dst[i * TP_QK + j] = (float)(q[j] - (1 << (bits - 1))) * d; \
    }                                                                             \
  }

#define TP_DEFINE_ASYMMETRIC(suffix, bits, HAS_QH)                                \
  void tp_quantize_##suffix(const float *src, void *dst, int64_t blocks) {        \
    for (int64_t i = 0; i < blocks; ++i) {                                        \
      tp_block_##suffix b;                                                        \
      int q[TP_QK];                                                               \
      float min;                                                                  \
      b.d = tp_f2h(tp_asymmetric_levels(src + i * TP_QK, bits, q, &min));         \
      b.m = tp_f2h(min);                                                          \
      tp_pack_nibbles(q, b.qs);                                                   \
      HAS_QH(tp_pack_fifth_bits(q, b.qh);)                                        \
      memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);               \
    }                                                                             \
  }                                                                               \
  void tp_dequantize_##suffix(const void *src, float *dst, int64_t blocks) {      \
    for (int64_t i = 0; i < blocks; ++i) {                                        \
      tp_block_##suffix b;                                                        \
      int q[TP_QK];                                                               \
      memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);         \
      tp_legacy_levels(b.qs, TP_QH_OF_##suffix(b), q);                          \
      const float d = tp_h2f(b.d), m = tp_h2f(b.m);                               \
      for (int j = 0; j < TP_QK; ++j) dst[i * TP_QK + j] = (float)q[j] * d + m;   \
    }                                                                             \
  }

#define TP_WITH_QH(...) __VA_ARGS__
#define TP_NO_QH(...)
#define TP_QH_OF_q4_0(b) NULL
#define TP_QH_OF_q4_1(b) NULL
#define TP_QH_OF_q5_0(b) (b).qh
#define TP_QH_OF_q5_1(b) (b).qh

TP_DEFINE_SYMMETRIC(q4_0, 4, TP_NO_QH)
TP_DEFINE_SYMMETRIC(q5_0, 5, TP_WITH_QH)
TP_DEFINE_ASYMMETRIC(q4_1, 4, TP_NO_QH)
TP_DEFINE_ASYMMETRIC(q5_1, 5, TP_WITH_QH)
