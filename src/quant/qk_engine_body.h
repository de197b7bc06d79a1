/* The fast engine, one definition for every ISA. The including file defines
 * the vector vocabulary, then includes this file:
 *
 *   QK_FN(name)             name with the ISA suffix
 *   QK_VB, QK_VL            int8 elements / f32 lanes per vector
 *   qk_vi, qk_vf            integer and float vector types
 *   QK_LOAD_I(p), QK_LOAD_F(p), QK_ZERO_I(), QK_ZERO_F()
 *   QK_DPBUSD(acc, u, s, wide)  acc + per-lane sum of 4 u8*s8 products,
 *                           exact; wide: u may exceed 127
 *   QK_DPBUSD0(u, s)        the same from zero (u <= 127)
 *   QK_CVT(vi), QK_MUL(a,b), QK_FMADD(a,b,c) = a*b+c, QK_FNMADD(a,b,c) = c-a*b
 *   QK_EXPAND4(p)           QK_VB/16 floats, each repeated over 4 lanes
 *   QK_REDUCE(vf)           fixed-order horizontal sum
 *   QK_LOADW_F32/F16/BF16(p)  QK_VL weights widened to f32
 *   QK_C                    activation rows per tile (register budget)
 *   QK_DOT_SCALED(acc, u, s, sc2)  optional: acc + per-lane sc * (sum of 4 u8*s8)
 *                           where sc2 holds sc in both 16-bit halves (the same
 *                           integer as QK_DPWSSD(acc, QK_DPBUSD0(u, s), sc)); the
 *                           K panels of types without a bias then hold their
 *                           scales so (decode_panel)
 *   QK_EXPAND4_I(p)         as QK_EXPAND4 for int32
 *   QK_DPWSSD(acc, t, s)    acc + t * s per 32-bit lane (t and s fit in 16 bits, s's high half 0)
 *   QK_STORE_F(p, v)
 *   QK_SET1(x)              broadcast
 *
 * K formats take their own route (ktile): a super-block's lane sums are
 * scaled by the integer sub-block scales in integers, converted once, and
 * the min term is a float dot of the 16 group minima with the activation's
 * scaled group sums.
 *
 * Work is split over panels of QK_R weight rows; a panel is decoded once and
 * meets every activation row, in tiles of QK_C rows then one by one. Each
 * output's operations are the same whatever tile computes it, so results do
 * not depend on m, on the thread count or on the run. */
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/error.h"
#include "quant/qk_act_body.h"
#include "quant/qk_decode_body.h"
#include "quant/qk_shim.h"

#define QK_R 4 /* weight rows per panel; QK_C (activation rows per tile) comes from the ISA file */

#define QK_INLINE static inline __attribute__((always_inline))

/* ---- block-quantized weights ------------------------------------------ */

typedef struct QK_FN(qpanel) {
  const uint8_t *q[QK_R];
  const float *s[QK_R], *mn[QK_R];
} QK_FN(qpanel);

QK_INLINE void QK_FN(qtile)(const QK_FN(qpanel) *p, const qk_act *act, int64_t c0, int C,
                            int has_init, int has_min, int wide, float *res) {
  const int64_t kpad = act->kpad, lanes = kpad / 4;
  qk_vf acc[QK_R][QK_C];
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = QK_ZERO_F();
  for (int64_t e = 0; e < kpad; e += QK_VB) {
#pragma GCC unroll 4
    for (int r = 0; r < QK_R; ++r) {
      const qk_vi qv = QK_LOAD_I(p->q[r] + e);
      const qk_vf sv = QK_EXPAND4(p->s[r] + e / 16);
      const qk_vf mv = has_min ? QK_EXPAND4(p->mn[r] + e / 16) : QK_ZERO_F();
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        const int64_t row = c0 + c;
        const qk_vi av = QK_LOAD_I(act->q + row * kpad + e);
        const qk_vf dv = QK_LOAD_F(act->d + row * lanes + e / 4);
        const qk_vi t = has_init ? QK_DPBUSD(QK_LOAD_I(act->init + row * lanes + e / 4), qv, av, wide)
                                 : QK_DPBUSD0(qv, av);
        acc[r][c] = QK_FMADD(QK_CVT(t), QK_MUL(sv, dv), acc[r][c]);
        if (has_min) acc[r][c] = QK_FNMADD(mv, QK_LOAD_F(act->g + row * lanes + e / 4), acc[r][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) res[r * QK_C + c] = QK_REDUCE(acc[r][c]);
}

/* Instantiations: (init, min, wide) per weight family, tiles QK_C and 1. */
#define QK_QTILE(name, init, min, wide)                                                        \
  static void QK_FN(name##_c4)(const QK_FN(qpanel) * p, const qk_act *a, int64_t c0, float *r) { \
    QK_FN(qtile)(p, a, c0, QK_C, init, min, wide, r);                                          \
  }                                                                                            \
  static void QK_FN(name##_c1)(const QK_FN(qpanel) * p, const qk_act *a, int64_t c0, float *r) { \
    QK_FN(qtile)(p, a, c0, 1, init, min, wide, r);                                             \
  }
QK_QTILE(qt_wide, 1, 0, 1) /* Q8_0: q = w + 128 */
QK_QTILE(qt_bias, 1, 0, 0) /* Q4_0, Q5_0, Q3_K, Q6_K */
QK_QTILE(qt_min, 0, 1, 0)  /* Q4_1, Q5_1, Q2_K, Q4_K, Q5_K */

typedef void (*QK_FN(qtile_fn))(const QK_FN(qpanel) *, const qk_act *, int64_t, float *);

/* ---- K formats ------------------------------------------------------------- */

typedef struct QK_FN(kpanel) {
  const uint8_t *q[QK_R];
  const int32_t *sc[QK_R];
  const float *mf[QK_R], *d[QK_R];
#ifdef QK_KTILE_WIDE_H
  const int32_t *sc2[QK_R];  /* paired scales of the wide tile */
  const int32_t *corr[QK_R]; /* its unsigned route's correction (types without a bias) */
#endif
} QK_FN(kpanel);

/* Per super-block and output: isum = sum over lanes of sc * (q - bias) * qa
 * in int32 (exact), then acc += float(isum) * (d * da) and, for types with a
 * min, acc -= mf * bf over the 16 groups. The float accumulators live in
 * memory (touched once per super-block) so the integer sums keep the
 * registers. */
QK_INLINE void QK_FN(ktile)(const QK_FN(kpanel) *p, const qk_act *act, int64_t c0, int C,
                            int has_init, int has_min, float *res) {
  const int64_t kpad = act->kpad, lanes = kpad / 4, nsb = kpad / 256, dstride = kpad / 256 + 1;
  const int64_t ng = kpad / 16;
  float accm[QK_R * QK_C * QK_VL] __attribute__((aligned(64)));
  memset(accm, 0, sizeof accm);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    qk_vi isum[QK_R][QK_C];
#pragma GCC unroll 4
    for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) isum[r][c] = QK_ZERO_I();
#pragma GCC unroll 8
    for (int64_t e = 256 * sb; e < 256 * (sb + 1); e += QK_VB) {
#pragma GCC unroll 4
      for (int r = 0; r < QK_R; ++r) {
        const qk_vi qv = QK_LOAD_I(p->q[r] + e);
        const qk_vi sv = QK_EXPAND4_I(p->sc[r] + e / 16);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const int64_t row = c0 + c;
          const qk_vi av = QK_LOAD_I(act->q + row * kpad + e);
#ifdef QK_DOT_SCALED
          if (!has_init) {
            isum[r][c] = QK_DOT_SCALED(isum[r][c], qv, av, sv); /* sv in pairs (decode_panel) */
            continue;
          }
#endif
          const qk_vi t = has_init ? QK_DPBUSD(QK_LOAD_I(act->init + row * lanes + e / 4), qv, av, 0)
                                   : QK_DPBUSD0(qv, av);
          isum[r][c] = QK_DPWSSD(isum[r][c], t, sv);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < QK_R; ++r) {
      const float dw = p->d[r][sb];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        const int64_t row = c0 + c;
        float *am = accm + (r * QK_C + c) * QK_VL;
        qk_vf acc = QK_FMADD(QK_CVT(isum[r][c]), QK_SET1(dw * act->dsb[row * dstride + sb]), QK_LOAD_F(am));
        if (has_min)
#pragma GCC unroll 2
          for (int i = 0; i < 16; i += QK_VL)
            acc = QK_FNMADD(QK_LOAD_F(p->mf[r] + 16 * sb + i), QK_LOAD_F(act->bf + row * ng + 16 * sb + i), acc);
        QK_STORE_F(am, acc);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) res[r * QK_C + c] = QK_REDUCE(QK_LOAD_F(accm + (r * QK_C + c) * QK_VL));
}

#define QK_KTILE(name, init, min)                                                               \
  static void QK_FN(name##_c4)(const QK_FN(kpanel) * p, const qk_act *a, int64_t c0, float *r) { \
    QK_FN(ktile)(p, a, c0, QK_C, init, min, r);                                                 \
  }                                                                                             \
  static void QK_FN(name##_c1)(const QK_FN(kpanel) * p, const qk_act *a, int64_t c0, float *r) { \
    QK_FN(ktile)(p, a, c0, 1, init, min, r);                                                    \
  }
QK_KTILE(kt_bias, 1, 0) /* Q3_K, Q6_K */
QK_KTILE(kt_min, 0, 1)  /* Q2_K, Q4_K, Q5_K */

typedef void (*QK_FN(ktile_fn))(const QK_FN(kpanel) *, const qk_act *, int64_t, float *);

/* An ISA may add a wider K tile (QK_KW activation rows; results as ktile's,
 * bit for bit), used while at least QK_KW activation rows are left. */
#ifdef QK_KTILE_WIDE_H
#include QK_KTILE_WIDE_H
#else
#define QK_KW QK_C
#endif
#define QK_RES_MAX (QK_R * (QK_KW > QK_C ? QK_KW : QK_C))

/* ---- float weights ------------------------------------------------------ */

QK_INLINE qk_vf QK_FN(loadw)(const uint8_t *row, int64_t e, int wt) {
  if (wt == 0) return QK_LOADW_F32((const float *)(const void *)row + e);
  if (wt == 1) return QK_LOADW_F16((const uint16_t *)(const void *)row + e);
  return QK_LOADW_BF16((const uint16_t *)(const void *)row + e);
}

QK_INLINE float QK_FN(w_scalar)(const uint8_t *row, int64_t e, int wt) {
  if (wt == 0) {
    float v;
    memcpy(&v, row + 4 * e, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, row + 2 * e, 2);
  return wt == 1 ? topos_f16_to_f32(h) : topos_bf16_to_f32(h);
}

QK_INLINE void QK_FN(ftile_r)(const uint8_t *const *wr, const float *a, int64_t k, int64_t c0, int R, int C,
                              int wt, const uint8_t *pf, int64_t pf_step, float *res) {
  qk_vf acc[QK_R][QK_C];
  float tail[QK_R][QK_C];
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = QK_ZERO_F(), tail[r][c] = 0.0f;
  const int64_t kv = k / QK_VL * QK_VL;
  for (int64_t e = 0; e < kv; e += QK_VL) {
    if (pf && e % 64 == 0) qk_prefetch_slice(pf, e / 64, pf_step);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const qk_vf wv = QK_FN(loadw)(wr[r], e, wt);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        acc[r][c] = QK_FMADD(wv, QK_LOAD_F(a + (c0 + c) * k + e), acc[r][c]);
    }
  }
  /* the vector sums first: accumulators live across the scalar tail's
   * calls were kept on the stack for the whole loop (GCC 12, AVX2: every fma
   * a store and a reload, 2.5x slower) */
  float vsum[QK_R][QK_C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) vsum[r][c] = QK_REDUCE(acc[r][c]);
  for (int64_t e = kv; e < k; ++e)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) tail[r][c] += QK_FN(w_scalar)(wr[r], e, wt) * a[(c0 + c) * k + e];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) res[r * QK_C + c] = vsum[r][c] + tail[r][c];
}

QK_INLINE void QK_FN(ftile)(const uint8_t *const *wr, const float *a, int64_t k, int64_t c0, int C,
                            int wt, float *res) {
  QK_FN(ftile_r)(wr, a, k, c0, QK_R, C, wt, NULL, 0, res);
}

/* c4 / c1: tiles of QK_R rows; r1, r2: one or two rows (m < QK_C), fetching
 * ahead (pf) */
#define QK_FTILE(name, wt)                                                                        \
  static void QK_FN(name##_c4)(const uint8_t *const *w, const float *a, int64_t k, int64_t c0,    \
                               float *r) {                                                        \
    QK_FN(ftile)(w, a, k, c0, QK_C, wt, r);                                                       \
  }                                                                                               \
  static void QK_FN(name##_c1)(const uint8_t *const *w, const float *a, int64_t k, int64_t c0,    \
                               float *r) {                                                        \
    QK_FN(ftile)(w, a, k, c0, 1, wt, r);                                                          \
  }                                                                                               \
  static void QK_FN(name##_r1)(const uint8_t *w, const float *a, int64_t k, int64_t c0,           \
                               const uint8_t *pf, int64_t pf_step, float *r) {                   \
    QK_FN(ftile_r)(&w, a, k, c0, 1, 1, wt, pf, pf_step, r);                                       \
  }                                                                                               \
  static void QK_FN(name##_r2)(const uint8_t *const *w, const float *a, int64_t k, int64_t c0,    \
                               const uint8_t *pf, int64_t pf_step, float *r) {                   \
    QK_FN(ftile_r)(w, a, k, c0, 2, 1, wt, pf, pf_step, r);                                        \
  }
QK_FTILE(ft_f32, 0)
QK_FTILE(ft_f16, 1)
QK_FTILE(ft_bf16, 2)

/* A float weight row widened to f32 as the tiles widen it (the vector
 * part by QK_LOADW_*, the tail by w_scalar), so the f32 tiles on the
 * widened row take the same operands, bit for bit. */
static void QK_FN(widen_row)(const uint8_t *row, int64_t k, int wt, float *out) {
  const int64_t kv = k / QK_VL * QK_VL;
  for (int64_t e = 0; e < kv; e += QK_VL) {
    const qk_vf v = QK_FN(loadw)(row, e, wt);
    QK_STORE_F(out + e, v);
  }
  for (int64_t e = kv; e < k; ++e) out[e] = QK_FN(w_scalar)(row, e, wt);
}

typedef void (*QK_FN(ftile_fn))(const uint8_t *const *, const float *, int64_t, int64_t, float *);
typedef void (*QK_FN(frow_fn))(const uint8_t *, const float *, int64_t, int64_t, const uint8_t *, int64_t, float *);
typedef void (*QK_FN(frow2_fn))(const uint8_t *const *, const float *, int64_t, int64_t, const uint8_t *, int64_t,
                                float *);

/* ---- driver ----------------------------------------------------------------- */

typedef struct QK_FN(ctx) {
  const tp_qk_task *task;
  qk_act act;
  qk_decode_fn decode;
  qk_kdecode_fn kdecode;
  QK_FN(qtile_fn) q4, q1;
  QK_FN(ktile_fn) k4, k1;
  /* the wide K tile (QK_KTILE_WIDE_H), or NULL */
  void (*kw)(const QK_FN(kpanel) *, const qk_act *, const uint8_t *, int64_t, float *);
  uint8_t *kw_au; /* its unsigned activations */
  QK_FN(ftile_fn) f4, f1;
  QK_FN(frow_fn) fr1;
  QK_FN(frow2_fn) fr2; /* two rows per call where that reads memory faster (see range_small), else NULL */
  int wt;              /* float weights: 0 f32, 1 f16, 2 bf16 */
  int sc_pairs;        /* K panels' scales in both 16-bit halves (QK_DOT_SCALED, types without a bias) */
  volatile int failed; /* a range could not allocate its panel */
} QK_FN(ctx);

/* res[r * stride + c]: stride QK_C, or QK_KW for the wide tile */
static void QK_FN(store)(const tp_qk_task *t, int64_t n0, int nr, int64_t c0, int C,
                         const float *res) {
  const int stride = C > QK_C ? C : QK_C;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < nr; ++r) {
      float v = res[r * stride + c];
      t->out[(c0 + c) * t->n + n0 + r] = t->bias ? v + t->bias[n0 + r] : v;
    }
}

/* Decodes the panel's rows into buf (legacy or K layout); short last
 * panels repeat their last row (those results are dropped). */
typedef struct QK_FN(panels) {
  QK_FN(qpanel) q;
  QK_FN(kpanel) k;
} QK_FN(panels);

static size_t QK_FN(panel_bytes)(int64_t kpad) {
  return (size_t)QK_R * ((size_t)kpad + 2 * (size_t)(kpad / 16) * sizeof(float) +
                         2 * (size_t)(kpad / 256 + 1) * sizeof(float) + (size_t)(kpad / 32) * sizeof(int32_t) +
                         (size_t)(kpad / 16) * sizeof(int32_t) + 128);
}

static void QK_FN(decode_panel)(const QK_FN(ctx) *ctx, uint8_t *buf, int64_t n0, int nr,
                                QK_FN(panels) *out) {
  const tp_qk_task *t = ctx->task;
  const int64_t kpad = ctx->act.kpad, ng = kpad / 16, nsb = kpad / 256 + 1;
  for (int r = 0; r < QK_R; ++r) {
    /* rows one cache line further apart than kpad: kpad is often a
     * multiple of 4 KiB / 8, and the rows would share L1 sets */
    const size_t qrow = (size_t)kpad + 64;
    uint8_t *q = buf + (size_t)r * qrow;
    float *f = (float *)(void *)(buf + (size_t)QK_R * qrow) + (size_t)r * (size_t)(2 * ng + 2 * nsb);
    if (r >= nr) {
      out->q.q[r] = out->q.q[nr - 1], out->q.s[r] = out->q.s[nr - 1], out->q.mn[r] = out->q.mn[nr - 1];
      out->k.q[r] = out->k.q[nr - 1], out->k.sc[r] = out->k.sc[nr - 1];
      out->k.mf[r] = out->k.mf[nr - 1], out->k.d[r] = out->k.d[nr - 1];
#ifdef QK_KTILE_WIDE_H
      out->k.sc2[r] = out->k.sc2[nr - 1], out->k.corr[r] = out->k.corr[nr - 1];
#endif
      continue;
    }
    const uint8_t *src = (const uint8_t *)t->w + (size_t)(n0 + r) * t->row_bytes;
    /* The decoders' scalar scale parsing keeps few misses in flight; fetch
     * the same row of the next panel now, one panel (QK_R rows) ahead. */
    if (n0 + QK_R + r < t->n)
      for (size_t off = 0; off < t->row_bytes; off += 64)
        __builtin_prefetch(src + (size_t)QK_R * t->row_bytes + off, 0, 2);
    if (ctx->kdecode) { /* k is a multiple of 256: no padding */
      int32_t *sc = (int32_t *)(void *)f;
      float *mf = f + ng, *d = f + 2 * ng;
      ctx->kdecode(src, t->k, q, sc, mf, d);
      if (ctx->sc_pairs) /* scales of types with a min are 0..63 */
        for (int64_t g = 0; g < ng; ++g) sc[g] |= (int32_t)((uint32_t)sc[g] << 16);
      out->k.q[r] = q, out->k.sc[r] = sc, out->k.mf[r] = mf, out->k.d[r] = d;
#ifdef QK_KTILE_WIDE_H
      /* the wide tile's paired scales and correction, past all rows' floats */
      int32_t *sc2 = (int32_t *)(void *)((float *)(void *)(buf + (size_t)QK_R * qrow) +
                                         (size_t)QK_R * (size_t)(2 * ng + 2 * nsb)) +
                     (size_t)r * (size_t)(kpad / 32);
      int32_t *corr = sc2 + (size_t)(QK_R - r) * (size_t)(kpad / 32) + (size_t)r * (size_t)ng;
      if (ctx->kw) qk_kw_pair_scales(sc, t->k, sc2), qk_kw_corr(q, sc, t->k, corr);
      out->k.sc2[r] = sc2, out->k.corr[r] = corr;
#endif
    } else {
      float *s = f, *mn = f + ng;
      memset(q + t->k, 0, (size_t)(kpad - t->k));
      for (int64_t g = t->k / 16; g < ng; ++g) s[g] = 0.0f;
      for (int64_t g = 0; g < ng; ++g) mn[g] = 0.0f;
      ctx->decode(src, t->k, q, s, mn);
      out->q.q[r] = q, out->q.s[r] = s, out->q.mn[r] = mn;
    }
  }
}

/* Panels per group: the decoded group (or, for float weights, the group's
 * rows) should stay in L2 while every activation tile walks it, so the
 * activation rows are read from memory once per group instead of once per
 * panel, and a tile's activation rows stay in L1 across the group. */
#define QK_GROUP_BYTES ((size_t)384 << 10)

static int64_t QK_FN(group_panels)(size_t panel_bytes) {
  int64_t g = (int64_t)(QK_GROUP_BYTES / (panel_bytes ? panel_bytes : 1));
  return g < 1 ? 1 : g > 32 ? 32 : g;
}

/* Float weights at m < QK_C: one panel at a time, each row fetching its
 * row of the panel two ahead slice by slice (qk_prefetch_slice). */
static void QK_FN(range_small)(QK_FN(ctx) *ctx, int64_t p0, int64_t p1) {
  const tp_qk_task *t = ctx->task;
  const uint8_t *w = t->w;
  float res[QK_R * QK_C];
  /* iterations of a kernel's loop over one row: 64 elements; each fetches
   * one slice of what lies ahead */
  const int64_t units = (t->k + 63) / 64;
  const int64_t row_step = ((int64_t)t->row_bytes + units - 1) / units;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * QK_R;
    const int nr = (int)(t->n - n0 < QK_R ? t->n - n0 : QK_R);
    /* the panel two ahead, past p1 too: a range is one claim of a thread's
     * share (tp_qk_parallel_for), and the next claim is usually the same
     * thread's */
    const uint8_t *pf = n0 + 2 * QK_R < t->n ? w + (size_t)(n0 + 2 * QK_R) * t->row_bytes : NULL;
    const uint8_t *rows[QK_R];
    for (int r = 0; r < QK_R; ++r) rows[r] = w + (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes;
    for (int64_t c = 0; c < t->m; ++c) {
      if (ctx->fr2 && nr == QK_R) /* float weights, rows in pairs (two chains in flight) */
        for (int r = 0; r < nr; r += 2)
          ctx->fr2(rows + r, t->a, t->k, c, c == 0 && pf ? pf + (size_t)r * t->row_bytes : NULL, 2 * row_step,
                   res + r * QK_C);
      else /* float weights: row after row (one stream; at 1 thread 20 % more bandwidth than 4
            * interleaved rows on Zen 4), each fetching its row two panels ahead; same operations per row */
        for (int r = 0; r < nr; ++r)
          ctx->fr1(rows[r], t->a, t->k, c, c == 0 && pf ? pf + (size_t)r * t->row_bytes : NULL, row_step,
                   res + r * QK_C);
      QK_FN(store)(t, n0, nr, c, 1, res);
    }
  }
}

static void QK_FN(range)(void *vctx, int64_t p0, int64_t p1) {
  QK_FN(ctx) *ctx = vctx;
  const tp_qk_task *t = ctx->task;
  const int quantized = ctx->decode || ctx->kdecode;
  if (t->m < QK_C && !quantized) {
    QK_FN(range_small)(ctx, p0, p1);
    return;
  }
  const uint8_t *w = t->w;
  float res[QK_RES_MAX];
  /* 16-bit float weights meeting several tiles are widened once per group
   * into f32 rows the f32 tiles read (each tile would widen every weight
   * again: on Zen 1 the f16 tile ran at 63 % of the f32 tile's rate) */
  int widen = !quantized && ctx->wt != 0 && t->m >= 2 * QK_C;
  size_t pbytes = quantized ? QK_FN(panel_bytes)(ctx->act.kpad)
                            : (size_t)QK_R * (widen ? (size_t)t->k * sizeof(float) : t->row_bytes);
  int64_t gp = QK_FN(group_panels)(pbytes);
  float *wide = widen ? tp_temp_alloc((size_t)gp * pbytes) : NULL;
  if (widen && !wide) { /* no scratch: widen in the tiles */
    widen = 0, pbytes = (size_t)QK_R * t->row_bytes, gp = QK_FN(group_panels)(pbytes);
  }
  uint8_t *buf = NULL;
  QK_FN(panels) *use = NULL;
  if (quantized) {
    buf = tp_temp_alloc((size_t)gp * pbytes);
    use = tp_temp_alloc((size_t)gp * sizeof *use);
    if (!buf || !use) {
      tp_temp_free(use), tp_temp_free(buf);
      ctx->failed = 1;
      return;
    }
  }
  const int64_t k = t->k;
  /* float weights: the tiles and row stride the widened rows take */
  const QK_FN(ftile_fn) f4 = widen ? QK_FN(ft_f32_c4) : ctx->f4, f1 = widen ? QK_FN(ft_f32_c1) : ctx->f1;
  const size_t frow = widen ? (size_t)k * sizeof(float) : t->row_bytes;
  for (int64_t g0 = p0; g0 < p1; g0 += gp) {
    const int64_t g1 = g0 + gp < p1 ? g0 + gp : p1;
    if (quantized)
      for (int64_t p = g0; p < g1; ++p) {
        const int64_t n0 = p * QK_R;
        const int nr = (int)(t->n - n0 < QK_R ? t->n - n0 : QK_R);
        QK_FN(decode_panel)(ctx, buf + (size_t)(p - g0) * pbytes, n0, nr, &use[p - g0]);
      }
    if (widen)
      for (int64_t p = g0; p < g1; ++p) {
        const int64_t n0 = p * QK_R;
        const int nr = (int)(t->n - n0 < QK_R ? t->n - n0 : QK_R);
        for (int r = 0; r < nr; ++r)
          QK_FN(widen_row)(w + (size_t)(n0 + r) * t->row_bytes, k, ctx->wt, wide + ((p - g0) * QK_R + r) * k);
      }
    for (int64_t c = 0, C; c < t->m; c += C) {
      /* wide tiles, tiles, then the rest one by one */
      C = ctx->kw && t->m - c >= QK_KW ? QK_KW : t->m - c >= QK_C ? QK_C : 1;
      for (int64_t p = g0; p < g1; ++p) {
        const int64_t n0 = p * QK_R;
        const int nr = (int)(t->n - n0 < QK_R ? t->n - n0 : QK_R);
        if (ctx->kw && C == QK_KW) ctx->kw(&use[p - g0].k, &ctx->act, ctx->kw_au, c, res);
        else if (ctx->kdecode) (C == QK_C ? ctx->k4 : ctx->k1)(&use[p - g0].k, &ctx->act, c, res);
        else if (quantized) (C == QK_C ? ctx->q4 : ctx->q1)(&use[p - g0].q, &ctx->act, c, res);
        else { /* float weights: the group's widened rows, or the rows as stored */
          const uint8_t *base = widen ? (const uint8_t *)(wide + (p - g0) * QK_R * k) : w + (size_t)n0 * t->row_bytes;
          const uint8_t *rows[QK_R];
          for (int r = 0; r < QK_R; ++r) rows[r] = base + (size_t)(r < nr ? r : nr - 1) * frow;
          (C == QK_C ? f4 : f1)(rows, t->a, k, c, res);
        }
        QK_FN(store)(t, n0, nr, c, C, res);
      }
    }
  }
  tp_temp_free(use);
  tp_temp_free(buf);
  tp_temp_free(wide);
}

static topos_status QK_FN(run)(const tp_qk_task *t) {
  QK_FN(ctx) ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.task = t;
  tp_qk_traits tr;
  if (!tp_qk_traits_of(t->wtype, &tr))
    return tp_fail(TOPOS_UNSUPPORTED, "qmatmul: no fast kernel for weight dtype %d", (int)t->wtype);
  switch (t->wtype) {
    case TOPOS_F32:
      ctx.f4 = QK_FN(ft_f32_c4), ctx.f1 = QK_FN(ft_f32_c1);
      ctx.fr1 = QK_FN(ft_f32_r1), ctx.fr2 = QK_FN(ft_f32_r2);
      break;
    case TOPOS_F16:
      ctx.wt = 1;
      ctx.f4 = QK_FN(ft_f16_c4), ctx.f1 = QK_FN(ft_f16_c1);
      ctx.fr1 = QK_FN(ft_f16_r1), ctx.fr2 = QK_FN(ft_f16_r2);
      break;
    case TOPOS_BF16:
      ctx.wt = 2;
      ctx.f4 = QK_FN(ft_bf16_c4), ctx.f1 = QK_FN(ft_bf16_c1);
      ctx.fr1 = QK_FN(ft_bf16_r1), ctx.fr2 = QK_FN(ft_bf16_r2);
      break;
    default:
      ctx.decode = qk_decoder_of(t->wtype);
      ctx.kdecode = qk_kdecoder_of(t->wtype);
      if (!ctx.decode && !ctx.kdecode)
        return tp_fail(TOPOS_UNSUPPORTED, "qmatmul: no fast kernel for weight dtype %d", (int)t->wtype);
      if (ctx.kdecode) {
        if (tr.has_min) {
          ctx.k4 = QK_FN(kt_min_c4), ctx.k1 = QK_FN(kt_min_c1);
#ifdef QK_DOT_SCALED
          ctx.sc_pairs = 1;
#endif
        } else {
          ctx.k4 = QK_FN(kt_bias_c4), ctx.k1 = QK_FN(kt_bias_c1);
        }
#ifdef QK_KTILE_WIDE_H
        if (t->m >= QK_KW && tr.has_min) ctx.kw = QK_FN(kt_min_w8);
#endif
      } else if (t->wtype == TOPOS_Q8_0) {
        ctx.q4 = QK_FN(qt_wide_c4), ctx.q1 = QK_FN(qt_wide_c1);
      } else if (tr.has_min) {
        ctx.q4 = QK_FN(qt_min_c4), ctx.q1 = QK_FN(qt_min_c1);
      } else {
        ctx.q4 = QK_FN(qt_bias_c4), ctx.q1 = QK_FN(qt_bias_c1);
      }
      /* the activations, then what the wide tile reads of them */
      int act_ok = qk_act_prepare(&tr, t->a, t->m, t->k, &ctx.act, t->threads);
#ifdef QK_KTILE_WIDE_H
      if (act_ok && ctx.kw) act_ok = (ctx.kw_au = qk_kw_unsigned_act(&ctx.act)) != NULL;
#endif
      if (!act_ok) {
        tp_temp_free(ctx.kw_au);
        qk_act_free(&ctx.act);
        return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld",
                       (long long)t->m, (long long)t->k);
      }
  }
  /* Float-weight decoding: two rows per call on Intel cores and on 8-lane
   * ISAs, one on others (AMD with AVX-512).
   * Measured (plans alternating in one process, TinyLlama F16): Sapphire
   * Rapids 1 thread 194.5 -> 175.6 ms per token, 2 threads 95.8 -> 90.9;
   * Zen 4 1 thread 80.9 -> 92.8 (its memory reads one stream per core
   * fastest; docs/LLM.md). Each row's operations are the same either way.
   * With 8 lanes (AVX2) one row's fma chain cannot keep up with memory
   * (8 multiply-adds per fma latency: Zen 3, one thread, a 2048 x 2048 F16
   * product 4.1 GMAC/s): two rows everywhere there. */
  if (tp_cpu_vendor() != TP_CPU_VENDOR_INTEL && QK_VL >= 16) ctx.fr2 = NULL;

  const int64_t panels = (t->n + QK_R - 1) / QK_R;
  /* at least ~64K multiply-adds per range: waking a worker costs more below */
  const int64_t grain = 1 + ((int64_t)1 << 16) / (QK_R * t->k * t->m);
  /* Float tiles read every activation row once per weight panel, as
   * vectors: from a buffer not aligned to the vector (malloc gives 16
   * bytes) half of those loads split a cache line (Zen 3, F16 192 x 2048 x
   * 2048, one thread: 18 GMAC/s, 38 from an aligned copy). The copy of the
   * m x k activations costs 1/n of the products' reads; the values, so the
   * bits, are the same. Rows stay k apart: only k a multiple of the vector
   * length (every row aligned) gains. */
  tp_qk_task aligned_task;
  float *a_copy = NULL;
  if (ctx.f4 && t->m >= QK_C && t->k % QK_VL == 0 && (uintptr_t)(const void *)t->a % (QK_VL * 4) != 0 &&
      (a_copy = tp_temp_alloc((size_t)t->m * (size_t)t->k * sizeof(float))) != NULL) {
    memcpy(a_copy, t->a, (size_t)t->m * (size_t)t->k * sizeof(float));
    aligned_task = *t;
    aligned_task.a = a_copy;
    ctx.task = &aligned_task;
  }
  tp_qk_parallel_for(t->threads, panels, grain, QK_FN(range), &ctx);
  tp_temp_free(a_copy);
  tp_temp_free(ctx.kw_au);
  qk_act_free(&ctx.act);
  if (ctx.failed) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: weight panel buffer");
  return TOPOS_OK;
}
