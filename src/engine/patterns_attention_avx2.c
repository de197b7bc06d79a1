/* The Fast attention products (attention_gemm_template.h), avx2 instance;
 * called only after the runtime CPU check in patterns_attention.c. */
#include "engine/attention_gemm.h"

#define TP_VMATH_SUFFIX avx2
#include "base/vlanes_avx2.h"
#include "engine/attention_gemm_template.h"
