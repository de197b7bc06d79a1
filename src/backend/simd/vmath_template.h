/* Vectorized f32 maps for the simd rung (Fast posture only: envelope), one
 * definition compiled per ISA file (vmath_avx2.c, vmath_avx512.c), which
 * includes the lane operations (base/vlanes_*.h) and defines TP_VMATH_SUFFIX
 * first.
 *
 * Every lane runs the same sequence of correctly rounded operations (FMA
 * included), so results do not depend on the position in the buffer, the
 * thread split or the tail handling; both ISA files use the same sequence.
 *
 *   exp:  base/vexp_template.h (shared with the engine's softmax rows).
 *   ln:   x = m 2^e with m in [sqrt(1/2), sqrt(2)); f = m - 1 (exact),
 *         s = f/(2+f), ln(m) = f - s (f - R(s^2)) with R the atanh series
 *         to s^10; plus e ln2 in two parts. Subnormals are prescaled by 2^23.
 *         Vectors of positive normal floats skip the special-value path.
 *   tanh: on a = |x|, the sign of x put back at the end. a < 0.55:
 *         a + a z P(z), z = a^2, P a degree-4 Chebyshev fit (relative error
 *         < 4e-9); else 1 - 2/(exp(2a)+1), where the result is >= 0.5 so the
 *         subtraction does not cancel, with a degree-6 exp on 2a <= 20 (tanh
 *         rounds to 1 from 9.01; relative error of exp < 1e-8, halved or
 *         better in the result). Both branches run, a blend picks.
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

/* tanh on a = |x|, the sign put back at the end (tanh is odd, and the
 * rounding of every step is symmetric, so this is also what x would give).
 * a NaN stays NaN through every step (min with it second, compares false). */
static inline TP_V TP_VM_FN(tp_vtanh_)(TP_V x) {
  TP_VI sign_bit = TP_VI_SET((int)0x80000000u);
  TP_VI sign = TP_VI_AND(TP_VCAST_I(x), sign_bit);
  TP_V a = TP_VCAST_F(TP_VI_XOR(TP_VCAST_I(x), sign));
  /* a < 0.55: a + a z P(z), z = a^2, P a degree-4 Chebyshev fit of
   * (tanh(a) - a) / a^3 on z <= 0.3025 (relative error of tanh < 4e-9, 0.06
   * ulp; the Taylor series needs nine terms for 1e-9) */
  TP_V z = TP_VMUL(a, a);
  TP_V p = TP_VSET(-6.61022783111e-3f);
  p = TP_VFMA(p, z, TP_VSET(2.13093886644e-2f));
  p = TP_VFMA(p, z, TP_VSET(-5.39094288275e-2f));
  p = TP_VFMA(p, z, TP_VSET(1.3333113729e-1f));
  p = TP_VFMA(p, z, TP_VSET(-3.3333332008e-1f));
  TP_V small = TP_VFMA(TP_VMUL(a, z), p, a);
  /* else 1 - 2/(e^(2a) + 1) >= 0.5 (no cancellation); e^(2a) for 2a in
   * [0, 20] (tanh rounds to 1 from a = 9.01): n in [0, 29], one scale
   * factor, and a degree-6 fit (relative error < 1e-8; an error d in e
   * moves the result by at most d/2) */
  TP_V y2 = TP_VMIN(TP_VSET(20.0f), TP_VADD(a, a));
  TP_V t = TP_VFMA(y2, TP_VSET(1.44269504088896341f), TP_VSET(TP_VM_ROUND_MAGIC + 127.0f));
  TP_V n = TP_VSUB(t, TP_VSET(TP_VM_ROUND_MAGIC + 127.0f));
  TP_V r = TP_VFMA(n, TP_VSET(-0.693359375f), y2);
  r = TP_VFMA(n, TP_VSET(2.12194440e-4f), r);
  TP_V e = TP_VSET(1.39262033616e-3f);
  e = TP_VFMA(e, r, TP_VSET(8.36319488242e-3f));
  e = TP_VFMA(e, r, TP_VSET(4.16665544984e-2f));
  e = TP_VFMA(e, r, TP_VSET(1.66665768946e-1f));
  e = TP_VFMA(e, r, TP_VSET(0.5f));
  e = TP_VFMA(e, r, TP_VSET(1.0f));
  e = TP_VFMA(e, r, TP_VSET(1.0f));
  /* the low mantissa bits of t hold n + 127: shifted up they are 2^n;
   * e^(2a) + 1 in one FMA (one rounding) */
  TP_V e1 = TP_VFMA(e, TP_VCAST_F(TP_VI_SLLI(TP_VCAST_I(t), 23)), TP_VSET(1.0f));
  TP_V large = TP_VSUB(TP_VSET(1.0f), TP_VDIV(TP_VSET(2.0f), e1));
  TP_V y = TP_VSELECT(TP_VCMP(a, TP_VSET(0.55f), _CMP_LT_OQ), small, large);
  return TP_VCAST_F(TP_VI_OR(TP_VCAST_I(y), sign));
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
