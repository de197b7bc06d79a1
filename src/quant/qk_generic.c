/* Fast quantized products in portable C: the same engine as the SIMD files,
 * over 4-lane arrays the compiler may vectorise (NEON on arm64, SSE2 on
 * x86-64). It serves CPUs without AVX2 or NEON dotprod, so FAST does not
 * answer Unsupported there; expect about the reference path's speed.
 * Integer sums are exact as everywhere; multiply and add stay separate (no
 * fused multiply-add in portable C without a library call). */
#include <math.h>
#include <string.h>

#include "quant/qk_internal.h"

#define QK_FN(name) qk_##name##_generic
#define QK_VB 16 /* 4 lanes: wider arrays make GCC's unrolled tiles slow to compile */
#define QK_VL 4
#define QK_C 4
typedef struct { int32_t v[4]; } qk_vi;
typedef struct { float v[4]; } qk_vf;

static inline qk_vf qk_set1_early(float x) {
  qk_vf r;
  for (int l = 0; l < 4; ++l) r.v[l] = x;
  return r;
}
static inline qk_vi qk_load_i(const void *p) { qk_vi r; memcpy(&r, p, sizeof r); return r; }
static inline qk_vf qk_load_f(const float *p) { qk_vf r; memcpy(&r, p, sizeof r); return r; }
static inline qk_vi qk_zero_i(void) { qk_vi r; memset(&r, 0, sizeof r); return r; }
static inline qk_vf qk_zero_f(void) { qk_vf r; memset(&r, 0, sizeof r); return r; }

/* acc + per lane sum of 4 unsigned-byte x signed-byte products. */
static inline qk_vi qk_dpbusd_c(qk_vi acc, qk_vi u, qk_vi s) {
  uint8_t ub[16];
  int8_t sb[16];
  memcpy(ub, &u, 16);
  memcpy(sb, &s, 16);
  for (int l = 0; l < 4; ++l)
    acc.v[l] += ub[4 * l] * sb[4 * l] + ub[4 * l + 1] * sb[4 * l + 1] + ub[4 * l + 2] * sb[4 * l + 2] +
                ub[4 * l + 3] * sb[4 * l + 3];
  return acc;
}
/* acc + per lane products of the signed 16-bit halves, summed. */
static inline qk_vi qk_dpwssd_c(qk_vi acc, qk_vi a, qk_vi b) {
  int16_t ah[8], bh[8];
  memcpy(ah, &a, 16);
  memcpy(bh, &b, 16);
  for (int l = 0; l < 4; ++l) acc.v[l] += ah[2 * l] * bh[2 * l] + ah[2 * l + 1] * bh[2 * l + 1];
  return acc;
}
static inline qk_vf qk_cvt(qk_vi a) { qk_vf r; for (int l = 0; l < 4; ++l) r.v[l] = (float)a.v[l]; return r; }
static inline qk_vf qk_mul(qk_vf a, qk_vf b) { for (int l = 0; l < 4; ++l) a.v[l] *= b.v[l]; return a; }
static inline qk_vf qk_fmadd(qk_vf a, qk_vf b, qk_vf c) {
  for (int l = 0; l < 4; ++l) c.v[l] += a.v[l] * b.v[l];
  return c;
}
static inline qk_vf qk_fnmadd(qk_vf a, qk_vf b, qk_vf c) {
  for (int l = 0; l < 4; ++l) c.v[l] -= a.v[l] * b.v[l];
  return c;
}
static inline qk_vf qk_expand4(const float *p) { return qk_set1_early(p[0]); }
static inline qk_vi qk_expand4_i(const int32_t *p) {
  qk_vi r;
  for (int l = 0; l < 4; ++l) r.v[l] = p[0];
  return r;
}
static inline qk_vf qk_set1(float x) { qk_vf r; for (int l = 0; l < 4; ++l) r.v[l] = x; return r; }
/* Halves, then the pair: a fixed order. */
static inline float qk_reduce_c(qk_vf v) { return (v.v[0] + v.v[2]) + (v.v[1] + v.v[3]); }
static inline qk_vf qk_loadw_f16(const uint16_t *p) {
  qk_vf r;
  for (int l = 0; l < 4; ++l) r.v[l] = topos_f16_to_f32(p[l]);
  return r;
}
static inline qk_vf qk_loadw_bf16(const uint16_t *p) {
  qk_vf r;
  for (int l = 0; l < 4; ++l) r.v[l] = topos_bf16_to_f32(p[l]);
  return r;
}

#define QK_LOAD_I(p) qk_load_i(p)
#define QK_LOAD_F(p) qk_load_f(p)
#define QK_ZERO_I() qk_zero_i()
#define QK_ZERO_F() qk_zero_f()
#define QK_DPBUSD(acc, u, s, wide) ((void)(wide), qk_dpbusd_c((acc), (u), (s)))
#define QK_DPBUSD0(u, s) qk_dpbusd_c(qk_zero_i(), (u), (s))
#define QK_DPWSSD(acc, t, s) qk_dpwssd_c((acc), (t), (s))
#define QK_CVT(v) qk_cvt(v)
#define QK_MUL(a, b) qk_mul((a), (b))
#define QK_FMADD(a, b, c) qk_fmadd((a), (b), (c))
#define QK_FNMADD(a, b, c) qk_fnmadd((a), (b), (c))
#define QK_EXPAND4(p) qk_expand4(p)
#define QK_EXPAND4_I(p) qk_expand4_i(p)
#define QK_SET1(x) qk_set1(x)
#define QK_STORE_F(p, v) memcpy((p), &(v), sizeof(qk_vf))
#define QK_REDUCE(v) qk_reduce_c(v)
#define QK_LOADW_F32(p) qk_load_f(p)
#define QK_LOADW_F16(p) qk_loadw_f16(p)
#define QK_LOADW_BF16(p) qk_loadw_bf16(p)
#define QK_F16_TO_F32(h) topos_f16_to_f32(h)

static inline float qk_absmax(const float *x, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
  return m;
}
static inline void qk_round_away(const float *x, float id, int8_t *q, int n, int *qsum) {
  for (int i = 0; i < n; ++i) {
    const float v = x[i] * id;
    q[i] = v != v ? 0 : (int8_t)roundf(v); /* NaN: 0, as the reference (converting it is undefined) */
  }
  if (qsum) *qsum = qk_sum_bytes(q, n);
}
static inline void qk_round_even(const float *x, float is, int8_t *q, int n) {
  for (int i = 0; i < n; ++i) {
    const float f = x[i] * is;
    const int v = f != f ? 0 : (int)rintf(f); /* NaN: 0, as the reference */
    q[i] = (int8_t)(v < 127 ? v : 127);
  }
}

#include "quant/qk_engine_body.h"

topos_status tp_qk_fast_generic(const tp_qk_task *task) { return QK_FN(run)(task); }
