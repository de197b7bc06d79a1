/* Test helpers for 16-bit float conversions: an independent decoder and the
 * f32 inputs where rounding decisions happen. */
#ifndef TT_HALF_SAMPLES_H
#define TT_HALF_SAMPLES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float tt_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Value of a non-negative f16 bit pattern from the format definition; the
 * pattern after the largest finite one (0x7c00) counts as 2^16, the value
 * IEEE rounding treats infinity as when deciding overflow. */
static inline double tt_f16_value(uint32_t bits) {
  uint32_t e = bits >> 10, m = bits & 0x3ffu;
  if (e == 0) return ldexp((double)m, -24);
  if (e == 31) return 65536.0;
  return ldexp((double)(1024u + m), (int)e - 25);
}

/* Same for bfloat16 (8 exponent bits, 7 stored mantissa bits); 0x7f80 is 2^128. */
static inline double tt_bf16_value(uint32_t bits) {
  uint32_t e = bits >> 7, m = bits & 0x7fu;
  if (e == 0) return ldexp((double)m, -133);
  if (e == 255) return ldexp(1.0, 128);
  return ldexp((double)(128u + m), (int)e - 134);
}

/* Inputs around every rounding decision of a 16-bit format whose
 * non-negative patterns 0..top (top = the infinity pattern) have the values
 * value(bits): each representable value and each midpoint between
 * neighbours, exactly and one f32 ulp either side, both signs. Returns a
 * malloc'd array (caller frees) and its length in *count. */
static inline float *tt_boundary_samples(uint32_t top, double (*value)(uint32_t), size_t *count) {
  size_t capacity = (size_t)top * 12 + 16, n = 0;
  float *out = malloc(capacity * sizeof *out);
  if (!out) return NULL;
  for (uint32_t b = 0; b < top; ++b) {
    float points[2] = {(float)value(b), (float)((value(b) + value(b + 1)) / 2.0)};
    for (int p = 0; p < 2; ++p) {
      float around[3] = {nextafterf(points[p], -INFINITY), points[p], nextafterf(points[p], INFINITY)};
      for (int a = 0; a < 3; ++a) {
        out[n++] = around[a];
        out[n++] = -around[a];
      }
    }
  }
  *count = n;
  return out;
}

#endif
