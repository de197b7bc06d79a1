/* Internal: the SIMD backend's packed GEMM (BLIS-style) for f32 and f64.
 *
 *   C[i][j] = sum_p A[i][p] * B[p][j]      (C is overwritten)
 *
 * A is m x k read as a[i * a_row_stride + p * a_col_stride], B is k x n read as
 * b[p * b_row_stride + j * b_col_stride]; any positive strides work (transposed
 * and narrowed views are packed, never materialized). C is row-major with row
 * stride ldc >= n and must not overlap A or B.
 *
 * Fidelity (ENVELOPE, for the `Fast` posture): every C element is one chain of
 * fused multiply-adds in ascending p, started from +0 — so the result does not
 * depend on the thread count, the tile partition, the cache blocking or the
 * ISA (AVX-512, AVX2, NEON and the scalar kernel give the same bits), but it
 * differs from the reference's unfused, differently ordered sums.
 *
 * Declines with TOPOS_UNSUPPORTED (message set, C untouched) for strides <= 0
 * (a stride of 0 is a broadcast operand) and for extents whose index
 * arithmetic would overflow int64. Negative extents, ldc < n or NULL buffers
 * with a nonzero extent: TOPOS_ERR_INVALID_ARGUMENT. Packing buffers that
 * cannot be allocated: TOPOS_ERR_OUT_OF_MEMORY (C untouched).
 * m == 0 or n == 0 does nothing; k == 0 sets C to zero.
 *
 * Threads (topos_threads(), base's tp_parallel_for): C is cut into disjoint
 * rectangles on MR/NR edges, each computed whole by one worker; k is never
 * split. When the cut is by rows only, the threads also share the packing of
 * B (one fork-join per depth panel); otherwise each rectangle packs its own
 * operands (one fork-join in all). Problems under ~4 MFLOP per extra thread
 * run on the calling thread. */
#ifndef TP_BACKEND_SIMD_GEMM_H
#define TP_BACKEND_SIMD_GEMM_H

#include <stdint.h>

#include "backend/simd/simd_isa.h"
#include "topos/base.h"

topos_status tp_simd_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride,
                              int64_t a_col_stride, const float *b, int64_t b_row_stride,
                              int64_t b_col_stride, float *c, int64_t ldc);
topos_status tp_simd_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t a_row_stride,
                              int64_t a_col_stride, const double *b, int64_t b_row_stride,
                              int64_t b_col_stride, double *c, int64_t ldc);

/* The same with the microkernel ISA chosen by the caller (tests, bench);
 * TOPOS_UNSUPPORTED when tp_simd_isa_available(isa) is 0. */
topos_status tp_simd_gemm_f32_isa(tp_simd_isa isa, int64_t m, int64_t n, int64_t k, const float *a,
                                  int64_t a_row_stride, int64_t a_col_stride, const float *b,
                                  int64_t b_row_stride, int64_t b_col_stride, float *c, int64_t ldc);
topos_status tp_simd_gemm_f64_isa(tp_simd_isa isa, int64_t m, int64_t n, int64_t k, const double *a,
                                  int64_t a_row_stride, int64_t a_col_stride, const double *b,
                                  int64_t b_row_stride, int64_t b_col_stride, double *c, int64_t ldc);

/* Test hooks. Overrides the cache blocking of every kernel (mc, kc, nc; 0
 * keeps the table's value; mc and nc are rounded up to the register tile)
 * the work below which no extra thread is used, and whether threads may
 * share B packing; NULL restores the
 * defaults. Not thread-safe against concurrent GEMMs: call from tests only.
 * None of it may change a result bit — the tests check exactly that. */
typedef struct {
  int64_t mc, kc, nc;
  int64_t min_flops_per_thread;
  /* Threads sharing B packing (rows-only cuts): 0 by size (the default),
   * 1 never (every rectangle packs its own B), 2 always. */
  int shared_b;
} tp_simd_gemm_tuning;
void tp_simd_gemm_set_tuning(const tp_simd_gemm_tuning *tuning);
/* Rectangles (thread work items) of the last GEMM this thread ran. */
int64_t tp_simd_gemm_last_rectangles(void);

/* Describes the kernel tp_simd_gemm_<dtype> uses now, e.g.
 * "avx512 f32 12x32 mc=... kc=... nc=..." (static storage). dtype_bits: 32/64. */
const char *tp_simd_gemm_describe(int dtype_bits);

#endif
