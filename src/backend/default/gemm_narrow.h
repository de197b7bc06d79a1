/* Internal (default rung): the narrow-C matrix product (gemm_narrow.c). */
#ifndef TP_BACKEND_DEFAULT_GEMM_NARROW_H
#define TP_BACKEND_DEFAULT_GEMM_NARROW_H

#include <stdbool.h>

#include "backend/backend_internal.h"

/* Runs t when C is at most one vector wide and the operands' layout suits
 * the kernel (B's rows contiguous; A's rows or columns adjacent), setting
 * *status, and returns true; else returns false and leaves t alone. Same
 * bits as tp_reference_gemm_*. */
bool tp_default_narrow_gemm_f32(const topos_gemm_task *t, topos_status *status);
bool tp_default_narrow_gemm_f64(const topos_gemm_task *t, topos_status *status);

#endif
