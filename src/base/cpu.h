/* Internal: CPU feature bits for run-time ISA dispatch.
 *
 * Kernels in *_avx2.c are compiled with -mavx2 -mfma -mf16c, kernels in
 * *_avx512.c additionally with AVX-512 F/BW/DQ/VL: pick them with
 * tp_cpu_has_avx2_set() / tp_cpu_has_avx512_set(), which check every flag the
 * file was built with. */
#ifndef TP_BASE_CPU_H
#define TP_BASE_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "topos/base.h"

#define TP_CPU_BIT(feature) (UINT32_C(1) << (feature))

/* The detected features after TOPOS_DISABLE_ISA is applied, one bit per
 * topos_cpu_feature. Detected once (thread-safe), then a single load. */
uint32_t tp_cpu_features(void);
/* What the CPU and OS offer, ignoring TOPOS_DISABLE_ISA. AMX counts when the
 * kernel granted tile data permission, or when AMX was masked (then the
 * permission is never requested). */
uint32_t tp_cpu_features_unmasked(void);

/* The bits a TOPOS_DISABLE_ISA value switches off: a comma-separated list of
 * group names (avx512, avx2, avx, vnni, amx, neon, all) and single feature
 * names as topos_cpu_feature_name spells them (f16c, avx512vnni, ...); case
 * and surrounding spaces are ignored. Unknown names are skipped and counted
 * in *unknown (may be NULL). NULL or "" masks nothing. */
uint32_t tp_cpu_disable_mask(const char *spec, int *unknown);

/* Removes features whose prerequisites are missing (AVX-512 without AVX2,
 * AVX-512BW without AVX-512F, dotprod without NEON, ...), so masking a base
 * ISA masks what is built on it. */
uint32_t tp_cpu_close_dependencies(uint32_t features);

/* The CPU's maker, for kernel choices that are tuned per microarchitecture
 * family and measured on each (the bits never depend on it). */
typedef enum { TP_CPU_VENDOR_OTHER = 0, TP_CPU_VENDOR_INTEL, TP_CPU_VENDOR_AMD } tp_cpu_vendor_id;
tp_cpu_vendor_id tp_cpu_vendor(void);

/* The flag sets the ISA-specific source files are compiled for. */
static inline bool tp_cpu_has_avx2_set(void) {
  uint32_t need = TP_CPU_BIT(TOPOS_CPU_AVX2) | TP_CPU_BIT(TOPOS_CPU_FMA) | TP_CPU_BIT(TOPOS_CPU_F16C);
  return (tp_cpu_features() & need) == need;
}
static inline bool tp_cpu_has_avx512_set(void) {
  uint32_t need = TP_CPU_BIT(TOPOS_CPU_AVX2) | TP_CPU_BIT(TOPOS_CPU_FMA) |
                  TP_CPU_BIT(TOPOS_CPU_F16C) | TP_CPU_BIT(TOPOS_CPU_AVX512F) |
                  TP_CPU_BIT(TOPOS_CPU_AVX512BW) | TP_CPU_BIT(TOPOS_CPU_AVX512DQ) |
                  TP_CPU_BIT(TOPOS_CPU_AVX512VL);
  return (tp_cpu_features() & need) == need;
}
static inline bool tp_cpu_has_avx512vnni_set(void) {
  return tp_cpu_has_avx512_set() && (tp_cpu_features() & TP_CPU_BIT(TOPOS_CPU_AVX512VNNI));
}

#endif
