/* Pattern col2im's lines kernel for avx512 (col2im_lines_template.h); called
 * only after the runtime CPU check in patterns_col2im.c. */
#define TP_C2I_SUFFIX avx512
#include "engine/col2im_lines_template.h"
