/* The Fast attention products (attention_gemm_template.h), avx512 instance;
 * called only after the runtime CPU check in patterns_attention.c. */
#include "engine/attention_gemm.h"

#define TP_VMATH_SUFFIX avx512
#include "base/vlanes_avx512.h"
#include "engine/attention_gemm_template.h"
