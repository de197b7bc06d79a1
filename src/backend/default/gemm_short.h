/* Internal (default rung): the short-C matrix product (gemm_short.c). */
#ifndef TP_BACKEND_DEFAULT_GEMM_SHORT_H
#define TP_BACKEND_DEFAULT_GEMM_SHORT_H

#include <stdbool.h>

#include "backend/backend_internal.h"

/* Runs t and returns true when C has at most 8 rows, at least one chunk of
 * columns and B's rows are contiguous; else returns false and leaves t
 * alone. Same bits as tp_reference_gemm_*; cannot fail. */
bool tp_default_short_gemm_f32(const topos_gemm_task *t);
bool tp_default_short_gemm_f64(const topos_gemm_task *t);

#endif
