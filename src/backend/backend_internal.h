/* Internal: what the chain needs from each backend and what the op kernels
 * call.
 *
 * Every backend has a kernel table (tp_kernels_<name>) defined inside its
 * folder, which is compiled only when its build option is on; the chain,
 * coverage, thresholds and status (chain.c) are compiled in every build and
 * refer to a table only under TOPOS_HAVE_<NAME>. */
#ifndef TP_BACKEND_INTERNAL_H
#define TP_BACKEND_INTERNAL_H

#include <stdbool.h>

#include "base/error.h"
#include "topos/backend.h"
#include "topos/ops.h"

/* Kernels answer TOPOS_OK, TOPOS_UNSUPPORTED (decline: a layout or case they
 * cannot express; the output is untouched) or a failure (the chain poisons
 * the backend with the message and moves on). NULL = not covered. */
typedef topos_status (*tp_gemm_kernel)(const topos_gemm_task *task);
typedef topos_status (*tp_map_kernel)(topos_map_op op, const void *in, void *out, int64_t count);

typedef struct tp_kernels {
  /* Lazy one-time setup (open libraries, find a device, warm up). Failure =
   * unavailable with the message as reason. NULL: always ready. */
  topos_status (*setup)(void);
  tp_gemm_kernel gemm_f32, gemm_f64;
  tp_map_kernel map_f32, map_f64;
  /* One line describing the kernels in use ("openblas 0.3.21 SkylakeX"). */
  const char *(*describe)(void);
} tp_kernels;

extern const tp_kernels tp_kernels_default;
#ifdef TOPOS_HAVE_SIMD
extern const tp_kernels tp_kernels_simd;
#endif
#ifdef TOPOS_HAVE_BLAS
extern const tp_kernels tp_kernels_blas;
#endif
#ifdef TOPOS_HAVE_CUDA
extern const tp_kernels tp_kernels_cuda;
#endif
#ifdef TOPOS_HAVE_ACCELERATE
extern const tp_kernels tp_kernels_accelerate;
#endif
#ifdef TOPOS_HAVE_METAL
extern const tp_kernels tp_kernels_metal;
#endif

/* ---- the chain (chain.c). Run a task through the formula's chain:
 * TOPOS_OK when a member served it, TOPOS_UNSUPPORTED when every member
 * declined (the caller runs its built-in path), TOPOS_ERR_BACKEND in loud
 * mode when a member was unavailable or failed. */
topos_status tp_chain_gemm(topos_formula formula, const topos_gemm_task *task);
topos_status tp_chain_map(topos_formula formula, topos_map_op op, const void *in, void *out,
                          int64_t count);
/* Poisons a backend with a reason (kept for topos_backend_status). */
void tp_backend_poison(topos_backend backend, const char *reason);
/* Tests: the next kernel call of this backend through the chain fails as if
 * the kernel had failed; and a reset that clears poison and setup. */
void tp_backend_inject_failure(topos_backend backend);
void tp_backend_reset(topos_backend backend);
/* Which member served the last task on this thread (tests, bench);
 * TOPOS_BACKEND_COUNT when the built-in path ran. Reset by each chain call. */
topos_backend tp_backend_last_served(void);

/* ---- the built-in f32/f64 paths (default rung; default/) */
topos_status tp_default_gemm_f32(const topos_gemm_task *task);
topos_status tp_default_gemm_f64(const topos_gemm_task *task);
/* The reference order as plain strided loops (the ground floor, never declines). */
void tp_reference_gemm_f32(const topos_gemm_task *task);
void tp_reference_gemm_f64(const topos_gemm_task *task);
topos_status tp_default_map_f32(topos_map_op op, const void *in, void *out, int64_t count);
topos_status tp_default_map_f64(topos_map_op op, const void *in, void *out, int64_t count);
/* The reference's libm loop, one thread (the floor under every map). */
topos_status tp_reference_map_f32(topos_map_op op, const void *in, void *out, int64_t count);
topos_status tp_reference_map_f64(topos_map_op op, const void *in, void *out, int64_t count);
/* "avx512 6x32 kc=... (bit-identical)" */
const char *tp_default_describe(void);

/* Elementwise binaries over operands with the output's shape and any layout
 * (the run walker, default/elementwise.c). op is a binary topos_op. Writes the
 * contiguous out. TOPOS_UNSUPPORTED for dtypes other than f32/f64. */
topos_status tp_default_binary(topos_op op, const topos_tensor *a, const topos_tensor *b,
                               topos_tensor *out);

/* ---- the seam the op kernels call (dispatch.c). Each returns
 * TOPOS_UNSUPPORTED when the op kernel should run its reference loop. */
/* Builds *out = a x b (batched, new contiguous tensor). */
topos_status tp_backend_matmul(const topos_tensor *a, const topos_tensor *b, topos_tensor **out);
/* Builds *out (a new tensor, or a broadcast view over a smaller one when a has
 * stride-0 axes: only the distinct elements are computed). */
topos_status tp_backend_unary(int op, topos_tensor *a, topos_tensor **out);
/* Builds *out = a op b (new contiguous tensor). op: a binary topos_op (int so
 * the lower-case ids below pass without a cast). */
topos_status tp_backend_binary(int op, const topos_tensor *a, const topos_tensor *b,
                               topos_tensor **out);

/* topos_op ids by lower-case name, so X-macros written over lower-case names
 * (the op kernels) can name the enum: tp_op_id_add == TOPOS_OP_ADD. */
enum {
#define TP_OP_ID_ROW(E, lower, arity) tp_op_id_##lower = TOPOS_OP_##E,
  TOPOS_OP_LIST(TP_OP_ID_ROW)
#undef TP_OP_ID_ROW
};

#endif
