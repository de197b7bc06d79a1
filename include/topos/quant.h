/* topos — quant tier: GGUF block formats.
 *
 * Reference quantization and dequantization of the ggml block formats (F16,
 * BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K..Q6_K, Q8_K), bit for bit
 * what ggml's reference path (`quantize_row_*_ref`, `dequantize_row_*`,
 * without importance matrix) produces on x86-64 without FMA contraction, so
 * that files we write load in llama.cpp and files llama.cpp writes dequantize
 * here to the same floats.
 *
 * Rounding follows ggml per type: Q8_0/Q8_1 round half away from zero
 * (roundf); Q4_0/Q5_0/Q4_1/Q5_1 truncate x*id + 8.5 (+16.5, +0.5), i.e. round
 * half up; the K-quants and Q8_K round half to even.
 *
 * Rows: `n` counts elements and must be a whole number of blocks of the
 * dtype (topos_dtype_block_size); otherwise TOPOS_ERR_SHAPE. Plain float
 * dtypes (f32, f16, bf16) are accepted as one-element "blocks" so callers can
 * treat every storage kind alike. Inputs must be finite (NaN/Inf give
 * unspecified but in-bounds results, as in ggml). */
#ifndef TOPOS_QUANT_H
#define TOPOS_QUANT_H

#include "base.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quantizes n f32 values into n/block_size blocks of dtype written to dst
 * (topos_dtype_bytes(dtype, n) bytes; the caller owns both buffers).
 * TOPOS_ERR_DTYPE for integer dtypes and f64, TOPOS_ERR_SHAPE when n is not a
 * multiple of the block size or negative, TOPOS_ERR_INVALID_ARGUMENT for NULL
 * buffers with n > 0. */
TOPOS_API topos_status topos_quantize_row(topos_dtype dtype, const float *src, void *dst,
                                          int64_t n);

/* Decodes n elements stored as dtype into f32 (same errors as above). */
TOPOS_API topos_status topos_dequantize_row(topos_dtype dtype, const void *src, float *dst,
                                            int64_t n);

/* The activation format a weight dtype's dot product pairs with in ggml:
 * Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for Q2_K..Q6_K, the dtype
 * itself for f32/f16/bf16. TOPOS_ERR_DTYPE for the activation-only formats
 * Q8_1 and Q8_K and for non-float dtypes. */
TOPOS_API topos_status topos_quant_vec_dot_type(topos_dtype weight_dtype, topos_dtype *out);

/* Quantizes a float tensor (f32, f64, f16 or bf16; any layout) to dtype,
 * row by row along the last axis, whose extent must be a multiple of the
 * block size. The result is a new contiguous tensor of the same shape; the
 * caller owns one reference. */
TOPOS_API topos_status topos_quantize(const topos_tensor *source, topos_dtype dtype,
                                      topos_tensor **out);

/* Decodes a block-quantized (or f16/bf16/f32) tensor into a new contiguous
 * f32 tensor of the same shape; the caller owns one reference. */
TOPOS_API topos_status topos_dequantize(const topos_tensor *source, topos_tensor **out_f32);

#ifdef __cplusplus
}
#endif
#endif
