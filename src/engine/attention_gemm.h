/* Internal: the Fast attention products without packing
 * (attention_gemm_template.h), instanced per ISA; tp_attn_gemm_best picks
 * the one the CPU runs for both attention forms. C[m x n] (row stride ldc) = A[m x k] (strides a_rs, a_cs) B[k x n]
 * (row stride ldb, columns adjacent), n a multiple of 16. */
#ifndef TP_ENGINE_ATTENTION_GEMM_H
#define TP_ENGINE_ATTENTION_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "backend/platform.h"

typedef void (*tp_attn_gemm_fn)(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                                int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);

void tp_attn_gemm_avx512(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                         int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);
void tp_attn_gemm_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                       int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc);

/* The widest instance this CPU runs; NULL where none does (not x86-64, or
 * no AVX2). */
static inline tp_attn_gemm_fn tp_attn_gemm_best(void) {
#if defined(__x86_64__)
  if (tp_vector_isa_best() == TP_VECTOR_AVX512) return tp_attn_gemm_avx512;
  if (tp_vector_isa_best() == TP_VECTOR_AVX2) return tp_attn_gemm_avx2;
#endif
  return NULL;
}

#endif
