/* Pattern pool_backward's 2x2 kernel, avx2 instance of
 * pool_backward_2x2_template.h; called only after the runtime CPU check. */
#define TP_PB2_SUFFIX avx2
#include "engine/pool_backward_2x2_template.h"
