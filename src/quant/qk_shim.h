/* Internal: the few base services the quantized products need (thread
 * ranges, CPU feature checks), behind names of our own so the kernels do not
 * care whether they come from src/base or from the stop-gap in qk_shim.c. */
#ifndef TP_QUANT_QK_SHIM_H
#define TP_QUANT_QK_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "topos/base.h"

typedef void (*tp_qk_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn over contiguous ranges covering [0, n) once each, on up to
 * `threads` threads (threads <= 0: the library default). */
void tp_qk_parallel_for(int threads, int64_t n, int64_t grain, tp_qk_range_fn fn, void *ctx);

/* The ISA sets the *_avx2.c / *_avx512vnni.c files are built for, after
 * TOPOS_DISABLE_ISA masking. */
bool tp_qk_cpu_avx2(void);
bool tp_qk_cpu_avx512vnni(void);


/* Caps the fast path's ISA for tests: TP_QK_ISA_NONE (no fast kernel),
 * TP_QK_ISA_AVX2, TP_QK_ISA_AVX512VNNI, TP_QK_ISA_ANY (default). The CPU
 * and TOPOS_DISABLE_ISA still apply. Not thread-safe: set it between calls. */
enum { TP_QK_ISA_NONE = 0, TP_QK_ISA_AVX2 = 1, TP_QK_ISA_AVX512VNNI = 2, TP_QK_ISA_ANY = 3 };
void tp_qk_set_isa_cap(int cap);
int tp_qk_isa_cap(void);

#endif
