/* AVX2 + FMA instantiation of vmath_template.h; called only after the
 * runtime CPU check in vmath.c. */
#define TP_VMATH_SUFFIX avx2
#include "base/vlanes_avx2.h"
#include "backend/simd/vmath_template.h"
