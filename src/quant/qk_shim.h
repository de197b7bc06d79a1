/* Internal: the base services the quantized products use (thread ranges,
 * CPU feature checks), in the shape the kernels want. */
#ifndef TP_QUANT_QK_SHIM_H
#define TP_QUANT_QK_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "topos/base.h"

typedef void (*tp_qk_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn over contiguous ranges covering [0, n), every index once: one
 * share per thread (threads <= 0: topos_threads(); threads > 0: that many
 * shares, for tests and benches), each taken from its front a chunk at a
 * time, and a thread done with its share takes the back half of what is
 * left of another's (qk_shim.c). Results never depend on the cut. */
void tp_qk_parallel_for(int threads, int64_t n, int64_t grain, tp_qk_range_fn fn, void *ctx);

/* The ISA sets the *_avx2.c / *_avx512vnni.c files are built for, after
 * TOPOS_DISABLE_ISA masking. */
bool tp_qk_cpu_avx2(void);
bool tp_qk_cpu_avx512vnni(void);
bool tp_qk_cpu_neon_dotprod(void);
/* AMX-INT8 granted by CPU and OS, not masked, and allowed by the ISA cap. */
bool tp_qk_amx_usable(void);
/* The same for AMX-BF16: float weights (F16, BF16) in Fast go through its
 * tiles from m >= TP_QK_AMXF_MIN_M (qk_amx_float.h; each product's error
 * within 2^-14 of sum |w * a| beyond the vector route's). */
bool tp_qk_amx_bf16_usable(void);
#define TP_QK_AMXF_MIN_M 24


/* Caps the fast path's ISA for tests: TP_QK_ISA_NONE (no fast kernel),
 * TP_QK_ISA_GENERIC (portable C),
 * TP_QK_ISA_AVX2, TP_QK_ISA_AVX512VNNI, TP_QK_ISA_AMX (AVX-512 VNNI plus AMX
 * tiles from m >= 4), TP_QK_ISA_ANY (default). The CPU
 * and TOPOS_DISABLE_ISA still apply. Not thread-safe: set it between calls. */
enum {
  TP_QK_ISA_NONE = 0,
  TP_QK_ISA_GENERIC = 1,
  TP_QK_ISA_AVX2 = 2, /* also the level of arm64's NEON + dotprod */
  TP_QK_ISA_AVX512VNNI = 3,
  TP_QK_ISA_AMX = 4,
  TP_QK_ISA_ANY = 5
};
void tp_qk_set_isa_cap(int cap);
int tp_qk_isa_cap(void);

#endif
