/* The runtime choice of tp_vexp_f32's and tp_vtanh_f32's instances (vexp_avx512.c, vexp_avx2.c). */
#include "base/vexp.h"

#include "base/cpu.h"

bool tp_vexp_f32(const float *in, float *out, int64_t n) {
#if defined(__x86_64__)
  if (tp_cpu_has_avx512_set()) {
    tp_vexp_f32_avx512(in, out, n);
    return true;
  }
  if (tp_cpu_has_avx2_set()) {
    tp_vexp_f32_avx2(in, out, n);
    return true;
  }
#else
  (void)in, (void)out, (void)n;
#endif
  return false;
}

bool tp_vtanh_f32(const float *in, float *out, int64_t n) {
#if defined(__x86_64__)
  if (tp_cpu_has_avx512_set()) {
    tp_vtanh_f32_avx512(in, out, n);
    return true;
  }
  if (tp_cpu_has_avx2_set()) {
    tp_vtanh_f32_avx2(in, out, n);
    return true;
  }
#else
  (void)in, (void)out, (void)n;
#endif
  return false;
}
