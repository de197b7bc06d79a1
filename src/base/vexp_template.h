/* The vector exp and tanh of the Fast posture, one definition for every ISA: the
 * including file defines the lane operations first (base/vlanes_avx512.h or
 * base/vlanes_avx2.h) and TP_VMATH_SUFFIX, which names the instance. Used
 * by the simd rung's maps (backend/simd/vmath_template.h) and by the
 * engine's fused steps (softmax rows, swiglu, geglu).
 *
 * Every lane runs the same sequence of correctly rounded operations (FMA
 * included), so a result does not depend on its position, the vector width
 * or the thread split: AVX-512 and AVX2 give the same bits.
 *
 *   n = round(x log2 e) (one FMA with the 1.5 * 2^23 trick, which also
 *   gives n's integer bits); r = x - n ln2 (two-part ln2, FMA); degree-7
 *   polynomial in r (|r| <= ~0.35, Chebyshev fit, relative error < 3e-10);
 *   scaled by 2^n as two power-of-two factors, so subnormal results are
 *   rounded once. Overflow gives +inf, underflow (and -inf) 0, NaN stays
 *   NaN. Measured against the correctly rounded exp: at most 1 ulp
 *   (tests/backend/simd/vmath_test.c).
 *
 *   tanh: on a = |x|, the sign of x put back at the end. a < 0.55:
 *   a + a z P(z), z = a^2, P a degree-4 Chebyshev fit (relative error
 *   < 4e-9); else 1 - 2/(exp(2a)+1), where the result is >= 0.5 so the
 *   subtraction does not cancel, with a degree-6 exp on 2a <= 20 (tanh
 *   rounds to 1 from 9.01; relative error of exp < 1e-8, halved or better
 *   in the result). Both branches run, a blend picks. tanh(+-inf) = +-1,
 *   NaN stays NaN. At most 2 ulp (measured 1.48). */
#include <stdint.h>
#include <string.h>

#ifndef TP_VMATH_SUFFIX
#error "define TP_VMATH_SUFFIX and the lane operations before including vexp_template.h"
#endif

#ifndef TP_VM_FN
#define TP_VM_CAT_(a, b) a##b
#define TP_VM_CAT(a, b) TP_VM_CAT_(a, b)
#define TP_VM_FN(name) TP_VM_CAT(name, TP_VMATH_SUFFIX)
#endif

/* Round-to-nearest through the float adder: adding 1.5 * 2^23 leaves the
 * nearest integer in the low mantissa bits (|v| < 2^22), so one FMA gives
 * both n (as a float, after subtracting the constant again) and its integer
 * bits, where a round + convert pair would cost three instructions. */
#define TP_VM_ROUND_MAGIC 12582912.0f /* 1.5 * 2^23, bits 0x4b400000 */

/* e^r - 1 - r = r^2 S(r) on |r| <= ln2/2: S is a degree-5 Chebyshev fit
 * (relative error of e^r below 3e-10, vs 6e-9 for the Taylor terms to r^7
 * at the same cost). Coefficients from mpmath.chebyfit. */
#define TP_VM_EXP_POLY(r, p)                                  \
  do {                                                        \
    p = TP_VSET(1.98910171843e-4f);                           \
    p = TP_VFMA(p, r, TP_VSET(1.39336737329e-3f));            \
    p = TP_VFMA(p, r, TP_VSET(8.33331090173e-3f));            \
    p = TP_VFMA(p, r, TP_VSET(4.16664647114e-2f));            \
    p = TP_VFMA(p, r, TP_VSET(1.66666666816e-1f));            \
    p = TP_VFMA(p, r, TP_VSET(5.00000001349e-1f));            \
    p = TP_VFMA(p, r, TP_VSET(1.0f));                         \
    p = TP_VFMA(p, r, TP_VSET(1.0f));                         \
  } while (0)

static inline TP_V TP_VM_FN(tp_vexp_)(TP_V x) {
  /* max/min with x second: a NaN x passes through both (the instructions
   * return the second operand when either is NaN) and stays NaN to the end */
  TP_V xc = TP_VMIN(TP_VSET(89.0f), TP_VMAX(TP_VSET(-104.0f), x));
  TP_V t = TP_VFMA(xc, TP_VSET(1.44269504088896341f), TP_VSET(TP_VM_ROUND_MAGIC));
  TP_V n = TP_VSUB(t, TP_VSET(TP_VM_ROUND_MAGIC));
  TP_V r = TP_VFMA(n, TP_VSET(-0.693359375f), xc);
  r = TP_VFMA(n, TP_VSET(2.12194440e-4f), r);
  TP_V p;
  TP_VM_EXP_POLY(r, p);
  TP_VI ni = TP_VI_SUB(TP_VCAST_I(t), TP_VCAST_I(TP_VSET(TP_VM_ROUND_MAGIC)));
  TP_VI n1 = TP_VI_SRAI(ni, 1);
  TP_VI n2 = TP_VI_SUB(ni, n1);
  TP_V s1 = TP_VCAST_F(TP_VI_SLLI(TP_VI_ADD(n1, TP_VI_SET(127)), 23));
  TP_V s2 = TP_VCAST_F(TP_VI_SLLI(TP_VI_ADD(n2, TP_VI_SET(127)), 23));
  return TP_VMUL(TP_VMUL(p, s1), s2);
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

/* fn over in[0..count) into out (the names in scope): whole vectors, then
 * the tail through a zero-padded vector (lanes are independent, so padding
 * never changes the live lanes). Also the simd rung's maps' loop. */
#define TP_VM_LOOP(fn)                                               \
  do {                                                               \
    int64_t i = 0;                                                   \
    for (; i + TP_VW <= count; i += TP_VW)                           \
      TP_VSTORE(out + i, fn(TP_VLOAD(in + i)));                      \
    if (i < count) {                                                 \
      float pad[TP_VW];                                              \
      memset(pad, 0, sizeof pad);                                    \
      memcpy(pad, in + i, (size_t)(count - i) * sizeof(float));      \
      TP_VSTORE(pad, fn(TP_VLOAD(pad)));                             \
      memcpy(out + i, pad, (size_t)(count - i) * sizeof(float));     \
    }                                                                \
  } while (0)

/* out[i] = exp(in[i]) and tanh(in[i]) over a buffer, for an instance that
 * defines TP_VEXP_MAP_FN and TP_VTANH_MAP_FN (base/vexp_avx512.c,
 * base/vexp_avx2.c). */
#ifdef TP_VEXP_MAP_FN
void TP_VEXP_MAP_FN(const float *in, float *out, int64_t count) { TP_VM_LOOP(TP_VM_FN(tp_vexp_)); }
void TP_VTANH_MAP_FN(const float *in, float *out, int64_t count) { TP_VM_LOOP(TP_VM_FN(tp_vtanh_)); }
#endif
