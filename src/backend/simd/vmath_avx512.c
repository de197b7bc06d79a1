/* AVX-512 instantiation of vmath_template.h; called only after the runtime
 * CPU check in vmath.c. */
#define TP_VMATH_SUFFIX avx512
#include "base/vlanes_avx512.h"
#include "backend/simd/vmath_template.h"
