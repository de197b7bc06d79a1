/* Internal: softmax rows, exp(log_softmax(x)) over one row, as the softmax
 * and attention patterns run them (patterns_softmax.c), and the Fast row in
 * vectors (softmax_rows_template.h), instanced per ISA
 * (patterns_softmax_avx512.c, patterns_softmax_avx2.c). */
#ifndef TP_ENGINE_SOFTMAX_ROWS_H
#define TP_ENGINE_SOFTMAX_ROWS_H

#include <stdint.h>

#include "topos/base.h"

/* Exact: the reference's bits (peak, ascending sum of expf, logf, expf);
 * y separate from x. */
void tp_softmax_row_exact(const float *x, float *y, int64_t n);
/* Fast: within the envelope stated in patterns_softmax.c; y separate from
 * x. Fails only when the exp map fails. */
topos_status tp_softmax_row_fast(const float *x, float *y, int64_t n);
/* tp_softmax_row_fast where x[g0, g1) is known to hold only -inf (a cache
 * span's slots past the written positions, in the middle of an attention
 * row): the vector row neither reads nor exponentiates the 64-key blocks
 * inside it and writes +0 there. The same bits as tp_softmax_row_fast: a
 * skipped key's term would have added +0 to its lane. */
topos_status tp_softmax_row_fast_gap(const float *x, float *y, int64_t n, int64_t g0, int64_t g1);

/* p = exp(x - peak) / s over one row of n floats, y separate from x; the
 * 64-key blocks inside [g0, g1), known to be -inf, skipped. Returns
 * 0 (y then holds nothing meaningful) when the row needs the scalar path: no
 * finite peak (NaN, +inf or only -inf), or a sum outside [0.5, 3e38] (a NaN
 * key). */
int tp_softmax_row_vector_avx512(const float *x, float *y, int64_t n, int64_t g0, int64_t g1);
int tp_softmax_row_vector_avx2(const float *x, float *y, int64_t n, int64_t g0, int64_t g1);

/* The CPU's widest instance (isa 0), or AVX2 (1) / AVX-512 (2) pinned;
 * -1 when that instance cannot run here (not x86-64, or the ISA is missing
 * or masked), else the instance's return value. [g0, g1): a known run of
 * -inf (tp_softmax_row_fast_gap), or g0 = g1 for none. */
int tp_softmax_row_vector(const float *x, float *y, int64_t n, int64_t g0, int64_t g1, int isa);

#endif
