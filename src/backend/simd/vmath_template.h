/* Vectorized f32 maps for the simd rung (Fast posture only: envelope), one
 * definition compiled per ISA file (vmath_avx2.c, vmath_avx512.c), which
 * includes the lane operations (base/vlanes_*.h) and defines TP_VMATH_SUFFIX
 * first.
 *
 * Every lane runs the same sequence of correctly rounded operations (FMA
 * included), so results do not depend on the position in the buffer, the
 * thread split or the tail handling; both ISA files use the same sequence.
 *
 *   exp, tanh: base/vexp_template.h (shared with the engine's fused steps).
 *   ln:   x = m 2^e with m in [sqrt(1/2), sqrt(2)); f = m - 1 (exact),
 *         s = f/(2+f), ln(m) = f - s (f - R(s^2)) with R the atanh series
 *         to s^10; plus e ln2 in two parts. Subnormals are prescaled by 2^23.
 *         Vectors of positive normal floats skip the special-value path.
 *   sqrt: the hardware square root (correctly rounded, so the reference's
 *         bits), served here only because the rung already runs the map.
 * Special values: NaN in gives NaN out; ln of a negative is NaN, ln(+-0) is
 * -inf; exp(-inf) = 0, exp(inf) = inf; tanh(+-inf) = +-1. Measured bounds
 * over dense sweeps are in vmath.h and tests/backend/simd/vmath_test.c. */
#include <stdint.h>
#include <string.h>

#include "base/vexp_template.h"

/* ln of a positive normal xs, minus `shift` in the exponent. The integer
 * add moves m = 1.M >= sqrt(2) (mantissa bits from 0x3504f4 up) into the
 * next binade before e and m are split, so m lands in [sqrt(1/2), sqrt(2))
 * halved exactly, with e one up: a compare, two selects, a multiply and an
 * add in one integer add. */
#define TP_VM_LN_CORE(xs, shift, y)                                                       \
  do {                                                                                    \
    TP_VI ix_ = TP_VI_ADD(TP_VCAST_I(xs), TP_VI_SET(0x3f800000 - 0x3f3504f4));            \
    TP_V e_ = TP_VSUB(TP_VCVTF(TP_VI_SUB(TP_VI_SRLI(ix_, 23), TP_VI_SET(127))), shift);  \
    TP_V m_ = TP_VCAST_F(TP_VI_ADD(TP_VI_AND(ix_, TP_VI_SET(0x007fffff)), TP_VI_SET(0x3f3504f4))); \
    TP_V f_ = TP_VSUB(m_, TP_VSET(1.0f));                                                 \
    TP_V s_ = TP_VDIV(f_, TP_VADD(TP_VSET(2.0f), f_));                                    \
    TP_V z_ = TP_VMUL(s_, s_);                                                            \
    TP_V R_ = TP_VSET(2.0f / 11.0f);                                                      \
    R_ = TP_VFMA(R_, z_, TP_VSET(2.0f / 9.0f));                                           \
    R_ = TP_VFMA(R_, z_, TP_VSET(2.0f / 7.0f));                                           \
    R_ = TP_VFMA(R_, z_, TP_VSET(2.0f / 5.0f));                                           \
    R_ = TP_VFMA(R_, z_, TP_VSET(2.0f / 3.0f));                                           \
    R_ = TP_VMUL(R_, z_);                                                                 \
    TP_V lnm_ = TP_VFNMA(s_, TP_VSUB(f_, R_), f_); /* f - s (f - R) */                    \
    TP_V lo_ = TP_VFMA(e_, TP_VSET(-2.12194440e-4f), lnm_);                               \
    y = TP_VFMA(e_, TP_VSET(0.693359375f), lo_);                                          \
  } while (0)

/* A vector of positive normal floats (the common case) takes the core
 * alone; any other lane sends the whole vector through the prescale of
 * subnormals and the special-value selects. Both give a normal lane the
 * same operations, so the branch never changes a bit. */
static inline TP_V TP_VM_FN(tp_vln_)(TP_V x) {
  TP_VMASK odd = TP_VMASK_OR(TP_VCMP(x, TP_VSET(1.17549435e-38f), _CMP_NGE_UQ),
                             TP_VCMP(x, TP_VSET(3.40282347e+38f), _CMP_NLE_UQ));
  TP_V y;
  if (!TP_VMASK_ANY(odd)) {
    TP_VM_LN_CORE(x, TP_VSET(0.0f), y);
    return y;
  }
  TP_VMASK sub = TP_VCMP(x, TP_VSET(1.17549435e-38f), _CMP_LT_OQ);
  TP_V xs = TP_VSELECT(sub, TP_VMUL(x, TP_VSET(8388608.0f)), x);
  TP_VM_LN_CORE(xs, TP_VSELECT(sub, TP_VSET(23.0f), TP_VSET(0.0f)), y);
  TP_V inf = TP_VSET(__builtin_inff());
  y = TP_VSELECT(TP_VCMP(x, inf, _CMP_EQ_OQ), inf, y);
  y = TP_VSELECT(TP_VCMP(x, TP_VSET(0.0f), _CMP_EQ_OQ), TP_VSET(-__builtin_inff()), y);
  y = TP_VSELECT(TP_VCMP(x, TP_VSET(0.0f), _CMP_LT_OQ), TP_VSET(__builtin_nanf("")), y);
  return TP_VSELECT(TP_VCMP(x, x, _CMP_UNORD_Q), x, y);
}

static inline TP_V TP_VM_FN(tp_vsqrt_)(TP_V x) { return TP_VSQRT(x); }

/* op: 0 exp, 1 ln, 2 sqrt, 3 tanh (topos_map_op order). Returns 0 for
 * other ops (not served). */
int TP_VM_FN(tp_vmath_f32_)(int op, const float *in, float *out, int64_t count) {
  switch (op) {
    case 0: TP_VM_LOOP(TP_VM_FN(tp_vexp_)); return 1;
    case 1: TP_VM_LOOP(TP_VM_FN(tp_vln_)); return 1;
    case 2: TP_VM_LOOP(TP_VM_FN(tp_vsqrt_)); return 1;
    case 3: TP_VM_LOOP(TP_VM_FN(tp_vtanh_)); return 1;
    default: return 0;
  }
}
