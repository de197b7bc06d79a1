/* Internal: the Fast attention products without packing
 * (attention_gemm_template.h), instanced per ISA; patterns_attention.c picks
 * one. C[m x n] (row stride ldc) = A[m x k] (strides a_rs, a_cs) B[k x n]
 * (row stride ldb, columns adjacent), n a multiple of 16. */
#ifndef TP_ENGINE_ATTENTION_GEMM_H
#define TP_ENGINE_ATTENTION_GEMM_H

#include <stdint.h>

typedef void (*tp_attn_gemm_fn)(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                                int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);

void tp_attn_gemm_avx512(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                         int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);
void tp_attn_gemm_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                       int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);

#endif
