/* Internal: 16-bit float rows, for quant, GGUF loading and kernels. Every
 * row converter gives exactly the bits of the scalar topos_* conversions
 * (f32 -> 16 bits rounds to nearest even; NaN stays NaN), whichever path
 * (scalar, F16C) runs. src and dst must not overlap; n may be 0. */
#ifndef TP_BASE_HALF_H
#define TP_BASE_HALF_H

#include <stddef.h>
#include <stdint.h>

#include "topos/base.h"

void tp_f16_to_f32_row(const uint16_t *src, float *dst, size_t n);
void tp_f32_to_f16_row(const float *src, uint16_t *dst, size_t n);
void tp_bf16_to_f32_row(const uint16_t *src, float *dst, size_t n);
void tp_f32_to_bf16_row(const float *src, uint16_t *dst, size_t n);

/* Portable scalar loops (what the dispatching versions fall back to). */
void tp_f16_to_f32_row_scalar(const uint16_t *src, float *dst, size_t n);
void tp_f32_to_f16_row_scalar(const float *src, uint16_t *dst, size_t n);

/* F16C versions (half_avx2.c); call only when tp_cpu_has_avx2_set(). */
void tp_f16_to_f32_row_f16c(const uint16_t *src, float *dst, size_t n);
void tp_f32_to_f16_row_f16c(const float *src, uint16_t *dst, size_t n);

#endif
