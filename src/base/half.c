/* IEEE binary16 and bfloat16 conversions, scalar and exact.
 * f32 -> 16 bits rounds to nearest, ties to even; NaN stays NaN (made quiet,
 * sign kept); overflow goes to infinity; f16 subnormals are produced and read
 * exactly. The wide conversions (16 -> f32) are exact. */
#include <string.h>

#include "base/cpu.h"
#include "base/half.h"
#include "topos/base.h"

static inline uint32_t tp_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float tp_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t tp_f32_to_bf16(float value) {
  uint32_t u = tp_f32_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and top payload, force quiet */
    return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even; carries into the exponent */
  return (uint16_t)(u >> 16);
}

static inline float tp_bf16_to_f32(uint16_t bits) { return tp_bits_f32((uint32_t)bits << 16); }

static inline uint16_t tp_f32_to_f16(float value) {
  uint32_t u = tp_f32_bits(value);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) /* NaN: quiet, keep the top of the payload */
    return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu));
  if (magnitude >= 0x477ff000u) /* >= 65520 rounds to infinity (65504 is the largest half) */
    return (uint16_t)(sign | 0x7c00u);
  if (magnitude < 0x38800000u) { /* below 2^-14: half subnormal or zero */
    if (magnitude < 0x33000000u) /* below 2^-25: rounds to zero (2^-25 itself is a tie to 0) */
      return sign;
    /* value = mantissa_with_hidden * 2^(exponent-150); half subnormal unit is 2^-24 */
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x007fffffu) | 0x00800000u;
    uint32_t shift = 126u - exponent; /* 150 - 24 - exponent, in 14..24 */
    uint32_t result = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return (uint16_t)(sign | result);
  }
  /* normal: rebias exponent 127 -> 15 and round the 13 dropped bits to even */
  uint32_t rebiased = magnitude - 0x38000000u; /* (127-15) << 23 */
  uint32_t result = rebiased >> 13;
  uint32_t remainder = rebiased & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result; /* may carry to inf */
  return (uint16_t)(sign | result);
}

static inline float tp_f16_to_f32(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x03ffu;
  if (exponent == 0x1fu) /* inf or NaN: payload kept */
    return tp_bits_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return tp_bits_f32(sign);
    /* subnormal: mantissa * 2^-24, exact in f32 */
    float magnitude = (float)mantissa * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return tp_bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* The public functions wrap the inline bodies so row loops inline them. */
uint16_t topos_f32_to_bf16(float value) { return tp_f32_to_bf16(value); }
float topos_bf16_to_f32(uint16_t bits) { return tp_bf16_to_f32(bits); }
uint16_t topos_f32_to_f16(float value) { return tp_f32_to_f16(value); }
float topos_f16_to_f32(uint16_t bits) { return tp_f16_to_f32(bits); }

/* ---- rows */

void tp_f16_to_f32_row_scalar(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = tp_f16_to_f32(src[i]);
}

void tp_f32_to_f16_row_scalar(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = tp_f32_to_f16(src[i]);
}

/* F16C pays off from a couple of vectors on; below that the scalar loop wins. */
#define TP_HALF_F16C_MIN 16

void tp_f16_to_f32_row(const uint16_t *src, float *dst, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (n >= TP_HALF_F16C_MIN && tp_cpu_has_avx2_set()) {
    tp_f16_to_f32_row_f16c(src, dst, n);
    return;
  }
#endif
  tp_f16_to_f32_row_scalar(src, dst, n);
}

void tp_f32_to_f16_row(const float *src, uint16_t *dst, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (n >= TP_HALF_F16C_MIN && tp_cpu_has_avx2_set()) {
    tp_f32_to_f16_row_f16c(src, dst, n);
    return;
  }
#endif
  tp_f32_to_f16_row_scalar(src, dst, n);
}

/* bf16 is a plain shift one way and an integer rounding the other; the
 * compiler vectorises these loops well enough. */
void tp_bf16_to_f32_row(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = tp_bf16_to_f32(src[i]);
}

void tp_f32_to_bf16_row(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = tp_f32_to_bf16(src[i]);
}
