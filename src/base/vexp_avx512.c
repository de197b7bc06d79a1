/* tp_vexp_f32's avx512 instance (base/vexp.h); called only after the runtime
 * CPU check in vexp.c. Whole vectors, then the tail through a padded one
 * (lanes are independent). */
#include <string.h>

#include "base/vexp.h"

#define TP_VMATH_SUFFIX avx512
#include "base/vlanes_avx512.h"
#include "base/vexp_template.h"

void tp_vexp_f32_avx512(const float *in, float *out, int64_t n) {
  int64_t i = 0;
  for (; i + TP_VW <= n; i += TP_VW) TP_VSTORE(out + i, TP_VM_FN(tp_vexp_)(TP_VLOAD(in + i)));
  if (i < n) {
    float pad[TP_VW];
    memset(pad, 0, sizeof pad);
    memcpy(pad, in + i, (size_t)(n - i) * sizeof *pad);
    TP_VSTORE(pad, TP_VM_FN(tp_vexp_)(TP_VLOAD(pad)));
    memcpy(out + i, pad, (size_t)(n - i) * sizeof *pad);
  }
}
