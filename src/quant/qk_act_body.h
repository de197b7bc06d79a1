/* Activation preparation of the fast engine (included by each ISA file):
 * quantizes each activation row to the partner format of the weight type,
 * producing exactly the integers and scales of the reference quantizer
 * (topos_quantize_row: Q8_0 / Q8_1 round half away from zero with the f32
 * reciprocal, Q8_K rounds half to even), then lays the scales out per lane
 * of 4 elements (see qk_internal.h). */
#ifndef TP_QUANT_QK_ACT_BODY_H
#define TP_QUANT_QK_ACT_BODY_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"

typedef struct qk_act {
  int64_t m, kpad;
  int8_t *q;       /* m * kpad */
  int32_t *init;   /* m * kpad/4: -bias * lane sum */
  /* legacy partners (Q8_0, Q8_1) */
  float *d;        /* m * kpad/4: scale of each lane */
  float *g;        /* m * kpad/4: Q8_1's s/8 per lane (the min term's partner) */
  /* Q8_K partner */
  float *dsb;      /* m * kpad/256: d of each super-block */
  float *bf;       /* m * kpad/16: d * sum of each 16 q (the min term's partner; has_min only) */
  int8_t *qn;      /* NULL, or q in a kernel's own order (fused matrix-vector kernels) */
  void *mem;
} qk_act;

/* The including ISA file provides, with the reference's exact semantics:
 *   float qk_absmax(const float *x, int n)            max |x[i]| over the numbers
 *        of x (a NaN skipped: the reference's a > amax ? a : amax)
 *   void qk_round_away(const float *x, float id, int8_t *q, int n, int *qsum)
 *        q = roundf(x * id) (half away from zero; |x * id| <= 127.5);
 *        *qsum = the sum of the n values of q when qsum is not NULL
 *   void qk_round_even(const float *x, float is, int8_t *q, int n)
 *        q = min(127, rint(x * is)) (half to even)
 * n is a multiple of 32. Products are the same single f32 multiply as the
 * scalar reference, so the integers are bit for bit the reference's. */

/* x rounded to f16 and back; an ISA file may supply a hardware form. */
#ifndef QK_F16_ROUND
#define QK_F16_ROUND(x) topos_f16_to_f32(topos_f32_to_f16(x))
#endif

/* One Q8_0 block: d = amax / 127, q = roundf(x / d) with the f32
 * reciprocal; returns the f16-rounded scale the dot uses; *ssum gets the
 * Q8_1 s (f16 of d * sum q, d unrounded) when non-NULL. */
static inline float qk_quant_q8_0_block(const float *x, int8_t *q, float *ssum) {
  const float amax = qk_absmax(x, 32);
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  qk_round_away(x, id, q, 32, ssum ? &sum : NULL);
  if (ssum) *ssum = QK_F16_ROUND((float)sum * d);
  return QK_F16_ROUND(d);
}

/* Blocks b0 .. b1 - 1 of a row as Q8_0 (or Q8_1: q81) blocks, one at a
 * time, each block's scale (and Q8_1's s / 8) written to its 8 lanes of d
 * (g; 0 for Q8_0): qk_quant_q8_0_block's values. */
static inline void qk_quant_q8_0_blocks(const float *x, int64_t b0, int64_t b1, int8_t *q, float *d, float *g,
                                        int q81) {
  for (int64_t b = b0; b < b1; ++b) {
    float s = 0.0f;
    const float db = qk_quant_q8_0_block(x + 32 * b, q + 32 * b, q81 ? &s : NULL);
    for (int l = 0; l < 8; ++l) d[8 * b + l] = db, g[8 * b + l] = s * 0.125f;
  }
}

/* A row of k (a multiple of 32): qk_quant_q8_0_blocks over all of it. An
 * ISA file may supply a form that takes several blocks at a time
 * (QK_HAS_Q8_0_ROW), with the same values. */
#ifdef QK_HAS_Q8_0_ROW
static void qk_quant_q8_0_row(const float *x, int64_t k, int8_t *q, float *d, float *g, int q81);
#else
static void qk_quant_q8_0_row(const float *x, int64_t k, int8_t *q, float *d, float *g, int q81) {
  qk_quant_q8_0_blocks(x, 0, k / 32, q, d, g, q81);
}
#endif

/* The first x[i] with |x[i]| == amax (amax when none: NaNs). An ISA file
 * may supply a vector scan (QK_HAS_FIRST_OF_MAGNITUDE). */
#ifndef QK_HAS_FIRST_OF_MAGNITUDE
static inline float qk_first_of_magnitude(const float *x, int n, float amax) {
  for (int j = 0; j < n; ++j)
    if (fabsf(x[j]) == amax) return x[j];
  return amax;
}
#endif

/* out[l] = mul * (q[4l] + ... + q[4l + 3]) for l < lanes (a multiple of 8);
 * an ISA file may supply a vector form (QK_HAS_LANE_SUMS). */
#ifndef QK_HAS_LANE_SUMS
static inline void qk_lane_sums(const int8_t *q, int64_t lanes, int32_t mul, int32_t *out) {
  for (int64_t l = 0; l < lanes; ++l) out[l] = mul * (q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
}
#endif

/* One Q8_K block of 256 whose max |x| is amax: returns d (f32). The signed extreme is the first
 * element of largest magnitude, as in the reference scan. */
static float qk_quant_q8_K_block(const float *x, int8_t *q, float amax) {
  if (amax == 0.0f) {
    memset(q, 0, 256);
    return 0.0f;
  }
  const float max = qk_first_of_magnitude(x, 256, amax);
  const float iscale = -127.0f / max;
  qk_round_even(x, iscale, q, 256);
  return 1.0f / iscale;
}

static void qk_act_free(qk_act *act) {
  tp_temp_free(act->qn);
  tp_temp_free(act->mem);
  memset(act, 0, sizeof *act);
}

/* Quantizes a[m][k] for a weight type with traits tr. Returns 0 on
 * allocation failure (sizes were checked by the caller). */
typedef struct {
  const tp_qk_traits *tr;
  const float *a;
  int64_t k;
  qk_act *act;
} qk_act_job;

static void qk_act_rows(void *vjob, int64_t r0, int64_t r1);

/* Rows are independent: they are quantized in parallel (threads as in
 * tp_qk_parallel_for), the results do not depend on the split. */
static int qk_act_prepare(const tp_qk_traits *tr, const float *a, int64_t m, int64_t k, qk_act *act,
                          int threads) {
  memset(act, 0, sizeof *act);
  const int64_t kpad = (k + TP_QK_STEP - 1) / TP_QK_STEP * TP_QK_STEP, lanes = kpad / 4;
  const size_t mm = (size_t)m;
  size_t bytes = mm * (size_t)kpad + 3 * mm * (size_t)lanes * 4 + mm * (size_t)(kpad / 256 + 1) * 4 +
                 mm * (size_t)(kpad / 16) * 4 + 256;
  char *mem = tp_temp_alloc(bytes);
  if (!mem) return 0;
  act->mem = mem;
  act->m = m;
  act->kpad = kpad;
  act->d = (float *)mem;
  act->g = act->d + m * lanes;
  act->init = (int32_t *)(act->g + m * lanes);
  act->dsb = (float *)(act->init + m * lanes);
  act->bf = act->dsb + m * (kpad / 256 + 1);
  act->q = (int8_t *)(act->bf + m * (kpad / 16));
  qk_act_job job = {tr, a, k, act};
  tp_qk_parallel_for(threads, m, 4, qk_act_rows, &job);
  return 1;
}

static void qk_act_rows(void *vjob, int64_t r0, int64_t r1) {
  const qk_act_job *job = vjob;
  const tp_qk_traits *tr = job->tr;
  const float *a = job->a;
  const int64_t k = job->k;
  qk_act *act = job->act;
  const int64_t kpad = act->kpad, lanes = kpad / 4;
  const int kq = tr->act == TP_QK_ACT_Q8_K;
  for (int64_t r = r0; r < r1; ++r) {
    const float *x = a + r * k;
    int8_t *q = act->q + r * kpad;
    float *d = act->d + r * lanes, *g = act->g + r * lanes;
    int32_t *init = act->init + r * lanes;
    memset(q + k, 0, (size_t)(kpad - k));
    if (kq) {
      float *dsb = act->dsb + r * (kpad / 256 + 1);
      float *bf = act->bf + r * (kpad / 16);
      /* the maxima of up to 16 blocks first: each is a chain of dependent
       * max operations, and the blocks' chains overlap this way */
      for (int64_t b0 = 0; b0 < k / 256; b0 += 16) {
        const int nb = k / 256 - b0 < 16 ? (int)(k / 256 - b0) : 16;
        float amax[16];
        for (int i = 0; i < nb; ++i) amax[i] = qk_absmax(x + 256 * (b0 + i), 256);
        for (int i = 0; i < nb; ++i) dsb[b0 + i] = qk_quant_q8_K_block(x + 256 * (b0 + i), q + 256 * (b0 + i), amax[i]);
      }
      if (tr->has_min) /* the engine's float min term; kernels that take it in integers clear has_min */
        for (int64_t j = 0; j < k / 16; ++j) {
          int sum = 0;
          for (int l = 0; l < 16; ++l) sum += q[16 * j + l];
          bf[j] = dsb[j / 16] * (float)sum;
        }
    } else {
      qk_quant_q8_0_row(x, k, q, d, g, tr->act == TP_QK_ACT_Q8_1);
      for (int64_t l = k / 4; l < lanes; ++l) d[l] = g[l] = 0.0f;
    }
    for (int64_t l = k / 4; l < lanes; ++l) init[l] = 0;
    if (tr->bias) qk_lane_sums(q, k / 4, -tr->bias, init); /* types without a bias never read init */
  }
}

#endif
