/* The plain float storage kinds as one-element "blocks", so every row
 * function handles f32, f16 and bf16 alike. f32 -> 16 bits rounds to nearest
 * even (ggml's GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16 agree bit for bit). */
#include "quant/quant_internal.h"

#include <stdint.h>

#include "base/half.h"

void tp_quantize_f32(const float *src, void *dst, int64_t blocks) {
  memcpy(dst, src, (size_t)blocks * sizeof(float));
}

void tp_dequantize_f32(const void *src, float *dst, int64_t blocks) {
  memcpy(dst, src, (size_t)blocks * sizeof(float));
}

/* Rows aligned to 2 bytes (every tensor's) go through the base row
 * converters (F16C where the CPU has it, the same bits as the scalar
 * conversions); others are read byte-wise. */
#define TP_DEFINE_HALF_ROWS(suffix, to_half, from_half, to_row, from_row)    \
  void tp_quantize_##suffix(const float *src, void *dst, int64_t blocks) { \
    if (((uintptr_t)dst & 1u) == 0) {                                      \
      to_row(src, dst, (size_t)blocks);                                    \
      return;                                                              \
    }                                                                      \
    uint8_t *out = dst;                                                    \
    for (int64_t i = 0; i < blocks; ++i) {                                 \
      uint16_t bits = to_half(src[i]);                                     \
      memcpy(out + 2 * i, &bits, 2);                                       \
    }                                                                      \
  }                                                                        \
  void tp_dequantize_##suffix(const void *src, float *dst, int64_t blocks) { \
    if (((uintptr_t)src & 1u) == 0) {                                      \
      from_row(src, dst, (size_t)blocks);                                  \
      return;                                                              \
    }                                                                      \
    const uint8_t *in = src;                                               \
    for (int64_t i = 0; i < blocks; ++i) {                                 \
      uint16_t bits;                                                       \
      memcpy(&bits, in + 2 * i, 2);                                        \
      dst[i] = from_half(bits);                                            \
    }                                                                      \
  }

TP_DEFINE_HALF_ROWS(f16, topos_f32_to_f16, topos_f16_to_f32, tp_f32_to_f16_row, tp_f16_to_f32_row)
TP_DEFINE_HALF_ROWS(bf16, topos_f32_to_bf16, topos_bf16_to_f32, tp_f32_to_bf16_row, tp_bf16_to_f32_row)
#undef TP_DEFINE_HALF_ROWS
