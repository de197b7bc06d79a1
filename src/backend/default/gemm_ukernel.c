/* Default-rung microkernels for the baseline ISA the library is compiled for
 * (SSE2 on x86-64, NEON on aarch64); see gemm_ukernel_template.h. */
#define TP_UK_SUFFIX baseline
#define TP_UK_VECTOR_BYTES 16
#include "backend/default/gemm_ukernel_template.h"
#define TP_NK_ROWS 12
#include "backend/default/gemm_narrow_template.h"
#define TP_SK_VECTORS 1
#include "backend/default/gemm_short_template.h"
