/* Fast quantized products with NEON + the dot-product extension (sdot):
 * 4 f32 lanes, 16 bytes per step. Call only after tp_qk_cpu_neon_dotprod().
 *
 * The engine's u8 x s8 lane dot maps onto sdot: weight bytes are at most 127
 * except for Q8_0 ("wide", q = w + 128), where q ^ 0x80 = w goes through
 * sdot and 128 * (sum of the 4 activations) is added back: exact either way.
 * The file is built for baseline armv8-a (no per-file flags): GCC gets a
 * target pragma, clang (whose arm_neon.h hides vdotq_s32 unless the whole
 * unit targets dotprod) an encoded sdot. It only runs after the run-time
 * check. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("arch=armv8.2-a+dotprod") /* for this unit's functions only */
#endif

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "quant/qk_internal.h"

#define QK_FN(name) qk_##name##_neon
#define QK_VB 16
#define QK_VL 4
#define QK_C 4
typedef int32x4_t qk_vi;
typedef float32x4_t qk_vf;

static inline int32x4_t qk_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__clang__)
  /* sdot v0.4s, v1.16b, v2.16b, encoded: clang's assembler wants the unit
   * built for dotprod, which this file is not. */
  register int32x4_t r0 __asm__("v0") = acc;
  register int8x16_t r1 __asm__("v1") = a;
  register int8x16_t r2 __asm__("v2") = b;
  __asm__(".inst 0x4e829420" : "+w"(r0) : "w"(r1), "w"(r2));
  return r0;
#else
  return vdotq_s32(acc, a, b);
#endif
}

static inline qk_vi qk_dpbusd_neon(qk_vi acc, qk_vi u, qk_vi s, int wide) {
  const int8x16_t sb = vreinterpretq_s8_s32(s);
  if (!wide) return qk_sdot(acc, vreinterpretq_s8_s32(u), sb);
  const int8x16_t w = veorq_s8(vreinterpretq_s8_s32(u), vdupq_n_s8((int8_t)-128));
  const int32x4_t sums = qk_sdot(vdupq_n_s32(0), vdupq_n_s8(1), sb);
  return vaddq_s32(qk_sdot(acc, w, sb), vshlq_n_s32(sums, 7));
}

/* acc + t * s where t fits in 16 bits and s holds a signed 16-bit scale in
 * its low half (zero above): the lanes' exact products. */
static inline qk_vi qk_dpwssd_neon(qk_vi acc, qk_vi t, qk_vi s) {
  return vmlaq_s32(acc, t, vshrq_n_s32(vshlq_n_s32(s, 16), 16));
}

static inline float qk_reduce_neon(qk_vf v) {
  const float32x2_t h = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

#define QK_LOAD_I(p) vld1q_s32((const int32_t *)(const void *)(p))
#define QK_LOAD_F(p) vld1q_f32(p)
#define QK_ZERO_I() vdupq_n_s32(0)
#define QK_ZERO_F() vdupq_n_f32(0.0f)
#define QK_DPBUSD(acc, u, s, wide) qk_dpbusd_neon((acc), (u), (s), (wide))
#define QK_DPBUSD0(u, s) qk_sdot(vdupq_n_s32(0), vreinterpretq_s8_s32(u), vreinterpretq_s8_s32(s))
#define QK_DPWSSD(acc, t, s) qk_dpwssd_neon((acc), (t), (s))
#define QK_CVT(v) vcvtq_f32_s32(v)
#define QK_MUL(a, b) vmulq_f32((a), (b))
#define QK_FMADD(a, b, c) vfmaq_f32((c), (a), (b))
#define QK_FNMADD(a, b, c) vfmsq_f32((c), (a), (b))
#define QK_EXPAND4(p) vdupq_n_f32((p)[0])
#define QK_EXPAND4_I(p) vdupq_n_s32((p)[0])
#define QK_SET1(x) vdupq_n_f32(x)
#define QK_STORE_F(p, v) vst1q_f32((p), (v))
#define QK_REDUCE(v) qk_reduce_neon(v)
#define QK_LOADW_F32(p) vld1q_f32(p)
#define QK_LOADW_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))
#define QK_LOADW_BF16(p) vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(vld1_u16(p)), 16))
#define QK_F16_TO_F32(h) topos_f16_to_f32(h)

/* a > m ? a : m per lane (x86's maxps(a, m)): a NaN element leaves the lane
 * as it was, as the reference's maximum does (q8.c). vmaxq_f32 would keep a
 * NaN to the end: a NaN activation inside a block made its scale, so every
 * output of the row, NaN (a test caught it under qemu). No lane holds a NaN,
 * so the lanes reduce in any order. */
static inline float32x4_t qk_max_skip_nan(float32x4_t m, float32x4_t a) { return vbslq_f32(vcgtq_f32(a, m), a, m); }

/* max |x[i]| over the numbers of x (n a multiple of 8). */
static inline float qk_absmax(const float *x, int n) {
  float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
  for (int i = 0; i < n; i += 8) {
    lo = qk_max_skip_nan(lo, vabsq_f32(vld1q_f32(x + i)));
    hi = qk_max_skip_nan(hi, vabsq_f32(vld1q_f32(x + i + 4)));
  }
  return vmaxvq_f32(vmaxq_f32(lo, hi));
}

/* 4 int32 (within int8 range) to 4 bytes. */
static inline void qk_store4(int8_t *q, int32x4_t r) {
  const int8x8_t b = vqmovn_s16(vcombine_s16(vqmovn_s32(r), vdup_n_s16(0)));
  int32_t word = vget_lane_s32(vreinterpret_s32_s8(b), 0);
  memcpy(q, &word, 4);
}

/* roundf: vrndaq rounds to nearest, ties away from zero. */
static inline void qk_round_away(const float *x, float id, int8_t *q, int n, int *qsum) {
  for (int i = 0; i < n; i += 4)
    qk_store4(q + i, vcvtq_s32_f32(vrndaq_f32(vmulq_n_f32(vld1q_f32(x + i), id))));
  if (qsum) *qsum = qk_sum_bytes(q, n);
}

static inline void qk_round_even(const float *x, float is, int8_t *q, int n) {
  for (int i = 0; i < n; i += 4)
    qk_store4(q + i, vminq_s32(vcvtq_s32_f32(vrndnq_f32(vmulq_n_f32(vld1q_f32(x + i), is))), vdupq_n_s32(127)));
}

#include "quant/qk_engine_body.h"

topos_status tp_qk_fast_neon(const tp_qk_task *task) { return QK_FN(run)(task); }
