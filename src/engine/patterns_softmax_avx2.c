/* The Fast softmax row (softmax_rows_template.h), avx2 instance; called
 * only after the runtime CPU check in patterns_softmax.c. */
#include "engine/softmax_rows.h"

#define TP_VMATH_SUFFIX avx2
#include "base/vlanes_avx2.h"
#include "engine/softmax_rows_template.h"
