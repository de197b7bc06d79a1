/* ISA choice for the SIMD backend, from base's CPU feature bits. The kernel
 * files are compiled with the flag sets tp_cpu_has_avx2_set() and
 * tp_cpu_has_avx512_set() check, so those are the exact conditions. */
#include "backend/simd/simd_isa.h"

#include "base/cpu.h"

const char *tp_simd_isa_name(tp_simd_isa isa) {
  switch (isa) {
    case TP_SIMD_ISA_SCALAR: return "scalar";
    case TP_SIMD_ISA_AVX2: return "avx2";
    case TP_SIMD_ISA_AVX512: return "avx512";
    case TP_SIMD_ISA_NEON: return "neon";
    case TP_SIMD_ISA_COUNT: break;
  }
  return "unknown";
}

int tp_simd_isa_available(tp_simd_isa isa) {
  switch (isa) {
    case TP_SIMD_ISA_SCALAR: return 1;
#if defined(__x86_64__)
    case TP_SIMD_ISA_AVX2: return tp_cpu_has_avx2_set();
    case TP_SIMD_ISA_AVX512: return tp_cpu_has_avx512_set();
#endif
#if defined(__aarch64__)
    case TP_SIMD_ISA_NEON: return (tp_cpu_features() & TP_CPU_BIT(TOPOS_CPU_NEON)) != 0;
#endif
    default: return 0;
  }
}

tp_simd_isa tp_simd_isa_best(void) {
  static const tp_simd_isa order[] = {TP_SIMD_ISA_AVX512, TP_SIMD_ISA_NEON, TP_SIMD_ISA_AVX2};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; ++i)
    if (tp_simd_isa_available(order[i])) return order[i];
  return TP_SIMD_ISA_SCALAR;
}
