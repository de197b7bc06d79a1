/* Internal: exp (and tanh) over a buffer with the shared vector exp (vexp_template.h:
 * at most 1 ulp, the same bits on AVX-512 and AVX2, at any position or
 * split). For Fast-posture kernels that would otherwise call libm per
 * element. */
#ifndef TP_BASE_VEXP_H
#define TP_BASE_VEXP_H

#include <stdbool.h>
#include <stdint.h>

/* out[i] = exp(in[i]) for i < n (in == out allowed); false, with nothing
 * written, where the CPU has neither AVX-512 nor AVX2 (or they are masked
 * by TOPOS_DISABLE_ISA). */
bool tp_vexp_f32(const float *in, float *out, int64_t n);
/* out[i] = tanh(in[i]) likewise (at most 2 ulp: vexp_template.h) */
bool tp_vtanh_f32(const float *in, float *out, int64_t n);

void tp_vexp_f32_avx512(const float *in, float *out, int64_t n);
void tp_vexp_f32_avx2(const float *in, float *out, int64_t n);
void tp_vtanh_f32_avx512(const float *in, float *out, int64_t n);
void tp_vtanh_f32_avx2(const float *in, float *out, int64_t n);

#endif
