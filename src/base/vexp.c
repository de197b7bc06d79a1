/* The runtime choice of tp_vexp_f32's and tp_vtanh_f32's instances (vexp_avx512.c, vexp_avx2.c). */
#include "base/vexp.h"

#include "base/cpu.h"

typedef void (*tp_vmap_fn)(const float *, float *, int64_t);

/* the AVX-512 instance where the CPU has it, else the AVX2 one; false where neither */
static bool tp_vmap(tp_vmap_fn avx512, tp_vmap_fn avx2, const float *in, float *out, int64_t n) {
#if defined(__x86_64__)
  tp_vmap_fn fn = tp_cpu_has_avx512_set() ? avx512 : tp_cpu_has_avx2_set() ? avx2 : NULL;
  if (fn) fn(in, out, n);
  return fn != NULL;
#else
  (void)avx512, (void)avx2, (void)in, (void)out, (void)n;
  return false;
#endif
}

bool tp_vexp_f32(const float *in, float *out, int64_t n) {
#if defined(__x86_64__)
  return tp_vmap(tp_vexp_f32_avx512, tp_vexp_f32_avx2, in, out, n);
#else
  return tp_vmap(NULL, NULL, in, out, n);
#endif
}

bool tp_vtanh_f32(const float *in, float *out, int64_t n) {
#if defined(__x86_64__)
  return tp_vmap(tp_vtanh_f32_avx512, tp_vtanh_f32_avx2, in, out, n);
#else
  return tp_vmap(NULL, NULL, in, out, n);
#endif
}
