/* Internal: the simd rung's vectorized f32 maps (exp, ln, sqrt, tanh) with
 * runtime ISA choice (AVX-512, then AVX2; other CPUs decline and the default
 * rung serves). Envelope fidelity: Fast posture only. Algorithms in
 * vmath_template.h.
 *
 * Stated maximum errors against the correctly rounded result (measured by
 * the dense sweeps in tests/backend/simd/vmath_test.c, which fail above
 * them): exp 1 ulp, ln 1 ulp, tanh 2 ulp, sqrt 0 ulp (exact); measured
 * maxima at the time of writing: exp 0.89, ln 0.88, tanh 1.48. Results are
 * identical on AVX-512 and AVX2 and at every thread count. */
#ifndef TP_BACKEND_SIMD_VMATH_H
#define TP_BACKEND_SIMD_VMATH_H

#include <stdint.h>

#include "topos/backend.h"

#define TP_VMATH_ULP_EXP 1
#define TP_VMATH_ULP_LN 1
#define TP_VMATH_ULP_TANH 2
#define TP_VMATH_ULP_SQRT 0

/* Maps count floats (in == out allowed). isa: 0 best available, 1 AVX2,
 * 2 AVX-512 (tests pin one). TOPOS_UNSUPPORTED when the op is not exp, ln,
 * sqrt or tanh, or the ISA is not available. Splits over threads. */
topos_status tp_vmath_map_f32(topos_map_op op, const float *in, float *out, int64_t count,
                              int isa);

#endif
