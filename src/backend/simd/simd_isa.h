/* Internal: which instruction set the SIMD backend's microkernels may use.
 * Built on base's CPU detection (src/base/cpu.h), so TOPOS_DISABLE_ISA
 * (avx512, avx2, neon, all, ...) masks kernels off for tests and valgrind. */
#ifndef TP_BACKEND_SIMD_ISA_H
#define TP_BACKEND_SIMD_ISA_H

/* Instruction sets with microkernels, weakest first. */
typedef enum tp_simd_isa {
  TP_SIMD_ISA_SCALAR, /* portable C with fma(): everywhere */
  TP_SIMD_ISA_AVX2,   /* x86-64 AVX2 + FMA + F16C */
  TP_SIMD_ISA_AVX512, /* x86-64 AVX-512 F/BW/DQ/VL (+ the AVX2 set) */
  TP_SIMD_ISA_NEON,   /* aarch64 Advanced SIMD */
  TP_SIMD_ISA_COUNT
} tp_simd_isa;

/* "scalar", "avx2", "avx512", "neon". */
const char *tp_simd_isa_name(tp_simd_isa isa);
/* 1 when this build has the ISA's kernels and the CPU (after the
 * TOPOS_DISABLE_ISA mask) can run them. Scalar is always available. */
int tp_simd_isa_available(tp_simd_isa isa);
/* The strongest available ISA. */
tp_simd_isa tp_simd_isa_best(void);

#endif
