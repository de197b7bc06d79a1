/* MXFP4 quantize / dequantize, bit for bit ggml's quantize_row_mxfp4_ref
 * and dequantize_row_mxfp4.
 *
 * Quantizer, per block of 32:
 *   amax = max |x| (the scan `amax < |x|`, so a NaN is skipped);
 *   e = floor(log2f(amax)) - 2 + 127 as a byte, or 0 when amax is 0: the
 *       largest level, 12 = 6 doubled, then spans amax's octave;
 *   d = tp_e8m0_half(e) = 2^(e - 128);
 *   each nibble = the first index i (scanning 0..15) minimising
 *       |level[i] * d - x|, every step one f32 operation in that order.
 * log2f is the C library's, as in ggml: near a power of two it decides
 * the octave, so bits match ggml built against the same libm.
 *
 * ggml converts that float to uint8_t, which C leaves undefined when the
 * value is out of range: for amax < 2^-125 (the float is -24..-1) and for
 * amax = inf. We define it as ggml's x86-64 builds compute it (a truncation
 * to int32, out-of-range and non-finite values giving INT32_MIN, then the
 * low byte), which gguf-py's numpy quantizer reproduces too; so topos
 * writes the bytes of llama-quantize on x86-64 for every input:
 *  - tiny blocks (amax < 2^-125, denormals included) get e = 232..255 and
 *    every nibble 0 (each x is nearer 0 than the huge levels): they decode
 *    to zeros, as the closest block would. e = 255 is NaN in the OCP spec
 *    and ggml's row validation refuses it; ggml writes it all the same.
 *    (arm64 builds of ggml saturate instead, e = 0, and differ here.)
 *  - a block holding +-inf gets e = 0; the infinity's nibble is 0 (no
 *    level is nearer to it) and the other values round to the levels of
 *    2^-128, so such a block decodes to (near) zeros.
 *  - NaN (defined in ggml): skipped by the maximum, nibble 0.
 * Huge finite values need no care: floor(log2f(FLT_MAX)) rounds to 128,
 * e = 253, and levels 8 and 12 times d = 2^125 overflow to inf, which the
 * nearest-level scan handles like any other float (as ggml does). */
#include <float.h>

#include "quant/quant_internal.h"

/* The exponent byte of a block whose maximum magnitude is amax. */
static uint8_t tp_mxfp4_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float e = floorf(log2f(amax)) - 2 + 127; /* an integer, exact: -24..253 or inf */
  if (!(e <= FLT_MAX)) return 0;                 /* inf: x86's INT32_MIN, low byte 0 */
  return (uint8_t)((unsigned)(int)e & 0xFFu);    /* -24..-1 wrap to 232..255 */
}

/* The nibble of x at scale d: ggml's first minimum of |level * d - x|
 * (a NaN or infinite x never improves on level 0, so its nibble is 0). */
static unsigned tp_mxfp4_nearest(float x, float d) {
  unsigned best = 0;
  float best_err = fabsf((float)tp_mxfp4_level(0) * d - x);
  for (unsigned i = 1; i < 16; ++i) {
    const float err = fabsf((float)tp_mxfp4_level(i) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

void tp_quantize_mxfp4(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const float *x = src + i * TP_QK;
    float amax = 0.0f;
    for (int j = 0; j < TP_QK; ++j)
      if (amax < fabsf(x[j])) amax = fabsf(x[j]); /* a NaN never wins */
    tp_block_mxfp4 b;
    b.e = tp_mxfp4_exponent(amax);
    const float d = tp_e8m0_half(b.e);
    for (int j = 0; j < TP_QK / 2; ++j)
      b.qs[j] = (uint8_t)(tp_mxfp4_nearest(x[j], d) | tp_mxfp4_nearest(x[j + TP_QK / 2], d) << 4);
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_mxfp4_levels(const uint8_t qs[TP_QK / 2], int q[TP_QK]) {
  for (int j = 0; j < TP_QK / 2; ++j) {
    q[j] = tp_mxfp4_level(qs[j] & 15u);
    q[j + TP_QK / 2] = tp_mxfp4_level(qs[j] >> 4);
  }
}

void tp_dequantize_mxfp4(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_mxfp4 b;
    int q[TP_QK];
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_mxfp4_levels(b.qs, q);
    const float d = tp_e8m0_half(b.e);
    for (int j = 0; j < TP_QK; ++j) dst[i * TP_QK + j] = (float)q[j] * d;
  }
}
