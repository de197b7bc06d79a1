/* Patterns conv_forward / conv_wgrad: the avx512 instance of conv_direct_template.h;
 * called only after the runtime CPU check in patterns_conv_direct.c. */
#define TP_CD_SUFFIX avx512
#include "engine/conv_direct_template.h"
