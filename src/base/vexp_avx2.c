/* tp_vexp_f32's and tp_vtanh_f32's avx2 instances (base/vexp.h); called only after the runtime
 * CPU check in vexp.c. */
#include <string.h>

#include "base/vexp.h"

#define TP_VMATH_SUFFIX avx2
#define TP_VEXP_MAP_FN tp_vexp_f32_avx2
#define TP_VTANH_MAP_FN tp_vtanh_f32_avx2
#include "base/vlanes_avx2.h"
#include "base/vexp_template.h"
