/* Block layouts of the legacy types for the fused matrix-vector kernels
 * (qk_matvec_*.h): bytes per block, offset of the nibbles or q, of the
 * fifth bits (0: none), of the min (0: none). */
#ifndef TP_QUANT_QK_MATVEC_KINDS_H
#define TP_QUANT_QK_MATVEC_KINDS_H

#include <stddef.h>

typedef struct {
  size_t bytes, qs, qh, min;
} mv_legacy_kind;
#define MV_Q8_0_K ((mv_legacy_kind){34, 2, 0, 0})
#define MV_Q4_0_K ((mv_legacy_kind){18, 2, 0, 0})
#define MV_Q4_1_K ((mv_legacy_kind){20, 4, 0, 2})
#define MV_Q5_0_K ((mv_legacy_kind){22, 6, 2, 0})
#define MV_Q5_1_K ((mv_legacy_kind){24, 8, 4, 2})

#endif
