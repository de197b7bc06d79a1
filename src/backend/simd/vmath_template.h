/* Vectorized f32 maps for the simd rung (Fast posture only: envelope), one
 * definition compiled per ISA file (vmath_avx2.c, vmath_avx512.c), which
 * defines the TP_V* operation macros and TP_VMATH_SUFFIX first.
 *
 * Every lane runs the same sequence of correctly rounded operations (FMA
 * included), so results do not depend on the position in the buffer, the
 * thread split or the tail handling; both ISA files use the same sequence.
 *
 *   exp:  n = round(x log2 e); r = x - n ln2 (two-part ln2, FMA); degree-7
 *         Taylor polynomial in r (|r| <= ~0.35, truncation < 6e-9
 *         relative); scaled by 2^n as two power-of-two factors, so
 *         subnormal results are rounded once. Overflow gives +inf,
 *         underflow 0.
 *   ln:   x = m 2^e with m in [sqrt(1/2), sqrt(2)); f = m - 1 (exact),
 *         s = f/(2+f), ln(m) = f - s (f - R(s^2)) with R the atanh series
 *         to s^10; plus e ln2 in two parts. Subnormals are prescaled by 2^23.
 *   tanh: |x| < 0.55: x + x z P(z), z = x^2, the Taylor series to x^19
 *         (truncation < 1e-9 relative); else sign(x) (1 - 2/(exp(2|x|)+1)),
 *         where the result is >= 0.5 so the subtraction does not cancel.
 *   sqrt: the hardware square root (correctly rounded, so the reference's
 *         bits), served here only because the rung already runs the map.
 * Special values: NaN in gives NaN out; ln of a negative is NaN, ln(+-0) is
 * -inf; exp(-inf) = 0, exp(inf) = inf; tanh(+-inf) = +-1. Measured bounds
 * over dense sweeps are in vmath.h and tests/backend/simd/vmath_test.c. */
#include <stdint.h>
#include <string.h>

#define TP_VM_CAT_(a, b) a##b
#define TP_VM_CAT(a, b) TP_VM_CAT_(a, b)
#define TP_VM_FN(name) TP_VM_CAT(name, TP_VMATH_SUFFIX)

static inline TP_V TP_VM_FN(tp_vexp_)(TP_V x) {
  TP_V xc = TP_VMIN(TP_VMAX(x, TP_VSET(-104.0f)), TP_VSET(89.0f));
  TP_V n = TP_VROUND(TP_VMUL(xc, TP_VSET(1.44269504088896341f)));
  TP_V r = TP_VFMA(n, TP_VSET(-0.693359375f), xc);
  r = TP_VFMA(n, TP_VSET(2.12194440e-4f), r);
  TP_V p = TP_VSET(1.0f / 5040.0f);
  p = TP_VFMA(p, r, TP_VSET(1.0f / 720.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 120.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 24.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 6.0f));
  p = TP_VFMA(p, r, TP_VSET(0.5f));
  p = TP_VFMA(p, r, TP_VSET(1.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f));
  TP_VI ni = TP_VCVTI(n);
  TP_VI n1 = TP_VI_SRAI(ni, 1);
  TP_VI n2 = TP_VI_SUB(ni, n1);
  TP_V s1 = TP_VCAST_F(TP_VI_SLLI(TP_VI_ADD(n1, TP_VI_SET(127)), 23));
  TP_V s2 = TP_VCAST_F(TP_VI_SLLI(TP_VI_ADD(n2, TP_VI_SET(127)), 23));
  TP_V y = TP_VMUL(TP_VMUL(p, s1), s2);
  return TP_VSELECT(TP_VCMP(x, x, _CMP_UNORD_Q), x, y);
}

/* exp for y in [0, 20] (tanh's exp(2|x|), clamped): the same polynomial,
 * one power-of-two factor (n <= 29), no special values to sort out. */
static inline TP_V TP_VM_FN(tp_vexp_tanh_)(TP_V y) {
  TP_V n = TP_VROUND(TP_VMUL(y, TP_VSET(1.44269504088896341f)));
  TP_V r = TP_VFMA(n, TP_VSET(-0.693359375f), y);
  r = TP_VFMA(n, TP_VSET(2.12194440e-4f), r);
  TP_V p = TP_VSET(1.0f / 5040.0f);
  p = TP_VFMA(p, r, TP_VSET(1.0f / 720.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 120.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 24.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f / 6.0f));
  p = TP_VFMA(p, r, TP_VSET(0.5f));
  p = TP_VFMA(p, r, TP_VSET(1.0f));
  p = TP_VFMA(p, r, TP_VSET(1.0f));
  TP_V scale = TP_VCAST_F(TP_VI_SLLI(TP_VI_ADD(TP_VCVTI(n), TP_VI_SET(127)), 23));
  return TP_VMUL(p, scale);
}

static inline TP_V TP_VM_FN(tp_vln_)(TP_V x) {
  TP_V sub = TP_VCMP(x, TP_VSET(1.17549435e-38f), _CMP_LT_OQ);
  TP_V xs = TP_VSELECT(sub, TP_VMUL(x, TP_VSET(8388608.0f)), x);
  TP_VI bits = TP_VCAST_I(xs);
  TP_V e = TP_VCVTF(TP_VI_SUB(TP_VI_SRLI(bits, 23), TP_VI_SET(127)));
  e = TP_VSELECT(sub, TP_VSUB(e, TP_VSET(23.0f)), e);
  TP_V m = TP_VCAST_F(TP_VI_OR(TP_VI_AND(bits, TP_VI_SET(0x007fffff)), TP_VI_SET(0x3f800000)));
  TP_V big = TP_VCMP(m, TP_VSET(1.41421356f), _CMP_GT_OQ);
  m = TP_VSELECT(big, TP_VMUL(m, TP_VSET(0.5f)), m);
  e = TP_VSELECT(big, TP_VADD(e, TP_VSET(1.0f)), e);
  TP_V f = TP_VSUB(m, TP_VSET(1.0f));
  TP_V s = TP_VDIV(f, TP_VADD(TP_VSET(2.0f), f));
  TP_V z = TP_VMUL(s, s);
  TP_V R = TP_VSET(2.0f / 11.0f);
  R = TP_VFMA(R, z, TP_VSET(2.0f / 9.0f));
  R = TP_VFMA(R, z, TP_VSET(2.0f / 7.0f));
  R = TP_VFMA(R, z, TP_VSET(2.0f / 5.0f));
  R = TP_VFMA(R, z, TP_VSET(2.0f / 3.0f));
  R = TP_VMUL(R, z);
  TP_V lnm = TP_VFNMA(s, TP_VSUB(f, R), f); /* f - s (f - R) */
  TP_V lo = TP_VFMA(e, TP_VSET(-2.12194440e-4f), lnm);
  TP_V y = TP_VFMA(e, TP_VSET(0.693359375f), lo);
  TP_V inf = TP_VSET(__builtin_inff());
  y = TP_VSELECT(TP_VCMP(x, inf, _CMP_EQ_OQ), inf, y);
  y = TP_VSELECT(TP_VCMP(x, TP_VSET(0.0f), _CMP_EQ_OQ), TP_VSET(-__builtin_inff()), y);
  y = TP_VSELECT(TP_VCMP(x, TP_VSET(0.0f), _CMP_LT_OQ), TP_VSET(__builtin_nanf("")), y);
  return TP_VSELECT(TP_VCMP(x, x, _CMP_UNORD_Q), x, y);
}

static inline TP_V TP_VM_FN(tp_vtanh_)(TP_V x) {
  TP_VI sign_bit = TP_VI_SET((int)0x80000000u);
  TP_V a = TP_VCAST_F(TP_VI_AND(TP_VCAST_I(x), TP_VI_SET(0x7fffffff)));
  TP_V z = TP_VMUL(x, x);
  TP_V p = TP_VSET(-2.3912911424355248e-4f);
  p = TP_VFMA(p, z, TP_VSET(5.9002744094558595e-4f));
  p = TP_VFMA(p, z, TP_VSET(-1.4558343870513183e-3f));
  p = TP_VFMA(p, z, TP_VSET(3.5921280365724811e-3f));
  p = TP_VFMA(p, z, TP_VSET(-8.8632355299021973e-3f));
  p = TP_VFMA(p, z, TP_VSET(2.1869488536155203e-2f));
  p = TP_VFMA(p, z, TP_VSET(-5.3968253968253971e-2f));
  p = TP_VFMA(p, z, TP_VSET(1.3333333333333333e-1f));
  p = TP_VFMA(p, z, TP_VSET(-3.3333333333333331e-1f));
  TP_V small = TP_VFMA(TP_VMUL(x, z), p, x);
  TP_V e = TP_VM_FN(tp_vexp_tanh_)(TP_VMIN(TP_VADD(a, a), TP_VSET(20.0f)));
  TP_V q = TP_VDIV(TP_VSET(2.0f), TP_VADD(e, TP_VSET(1.0f)));
  TP_V large = TP_VSUB(TP_VSET(1.0f), q);
  TP_V y = TP_VSELECT(TP_VCMP(a, TP_VSET(0.55f), _CMP_LT_OQ), small, large);
  /* tanh is odd and |small| < |x|: the sign of x, also for -0 (which the
   * polynomial would turn into +0). */
  y = TP_VCAST_F(TP_VI_OR(TP_VI_AND(TP_VCAST_I(y), TP_VI_SET(0x7fffffff)),
                          TP_VI_AND(TP_VCAST_I(x), sign_bit)));
  return TP_VSELECT(TP_VCMP(x, x, _CMP_UNORD_Q), x, y);
}

static inline TP_V TP_VM_FN(tp_vsqrt_)(TP_V x) { return TP_VSQRT(x); }

/* Whole vectors, then the tail through a zero-padded vector (lanes are
 * independent, so padding never changes the live lanes). */
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
