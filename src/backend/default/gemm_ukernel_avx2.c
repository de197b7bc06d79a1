/* Default-rung microkernels for avx2 (see gemm_ukernel_template.h); called
 * only after the runtime CPU check in gemm.c. */
#define TP_UK_SUFFIX avx2
#define TP_UK_VECTOR_BYTES 32
#include "backend/default/gemm_ukernel_template.h"
#define TP_NK_ROWS 12
#include "backend/default/gemm_narrow_template.h"
#define TP_SK_VECTORS 1
#include "backend/default/gemm_short_template.h"
