/* Internal: what the two attention runs share (patterns_attention.c for
 * the f32 cache's batched form, patterns_attention_linear.c for the 16-bit
 * cache's per-head qlinear form): the inputs' order, strided views of the
 * masks, the keys a block of rows can see, the block height. */
#ifndef TP_ENGINE_ATTENTION_INTERNAL_H
#define TP_ENGINE_ATTENTION_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "base/error.h"

#include "engine/pattern.h"
#include "engine/softmax_rows.h"

/* inputs: q, kn, mn, vn, then kc, mc, vc when cached; then, where the
 * scores are soft-capped (gemma2: c tanh(s / c), recorded as mul(tanh(mul(s,
 * a)), c)), each part's two broadcast scalars a and c, the chunk's first:
 * 4 or 7 inputs without caps, 6 or 11 with */
enum { AT_Q, AT_KN, AT_MN, AT_VN, AT_KC, AT_MC, AT_VC };

static inline int at_cached(uint32_t n_inputs) { return n_inputs == 7 || n_inputs == 11; }
static inline int at_capped(uint32_t n_inputs) { return n_inputs == 6 || n_inputs == 11; }

/* A part's soft cap: scores s become tanh(s * a) * c (on = 0: none) */
typedef struct at_cap {
  int on;
  float a, c;
} at_cap;

/* the caps of a fusion's inputs: cap[0] the chunk's, cap[1] the cached segment's */
static inline topos_status at_caps_of(uint32_t n_inputs, topos_tensor *const *inputs, at_cap cap[2]) {
  cap[0] = cap[1] = (at_cap){0, 0.0f, 0.0f};
  if (!at_capped(n_inputs)) return TOPOS_OK;
  const uint32_t base = at_cached(n_inputs) ? 7 : 4;
  for (uint32_t part = 0; part < (at_cached(n_inputs) ? 2u : 1u); ++part) {
    double a, c;
    TP_TRY(tp_pattern_filled_value(inputs[base + 2 * part], &a));
    TP_TRY(tp_pattern_filled_value(inputs[base + 2 * part + 1], &c));
    cap[part] = (at_cap){1, (float)a, (float)c};
  }
  return TOPOS_OK;
}

/* rows x n scores p (row stride ld) soft-capped in place, each step the
 * composed one's rounding: x * a, tanh (Exact: the f32 map chain as the tanh
 * step runs it; Fast: the shared vector tanh, 2 ulp), * c */
topos_status at_softcap_rows(const at_cap *cap, float *p, int64_t ld, int64_t rows, int64_t n, int exact);

/* Query rows per task: 60, fewer where the block's scores and
 * probabilities would pass 256 KiB, so they stay in L2, but at least 12; a
 * multiple of 12, which the Fast products' row tiles divide (6 rows on AVX2,
 * 4 on AVX-512): 8-row blocks left AVX2 a 2-row remainder that read the
 * keys and values a second time (8 rows against 12 after 2112 keys: 60 / 52
 * against 70 / 68 GFLOP/s for scores / values, one thread, Zen 3). A
 * function of the shapes alone: the blocks never depend on the threads. */
static inline int64_t at_block_rows(int64_t keys) {
  int64_t rows = (int64_t)(256 * 1024 / sizeof(float)) / (2 * keys) / 12 * 12;
  return rows > 60 ? 60 : rows < 12 ? 12 : rows;
}

/* A strided f32 operand of rank 3 (element (b, i, j) at base[b*s0 + i*s1 +
 * j*s2]) or rank 2 (b = 0, s0 = 0). */
typedef struct at_view {
  const float *base;
  int64_t s0, s1, s2, n1, n2;
} at_view;

static inline at_view at_view_of(const topos_tensor *t) {
  const int64_t *st = topos_tensor_strides(t), *sh = topos_tensor_shape(t);
  if (topos_tensor_rank(t) == 2) return (at_view){topos_tensor_data(t), 0, st[0], st[1], sh[0], sh[1]};
  return (at_view){topos_tensor_data(t), st[0], st[1], st[2], sh[1], sh[2]};
}

/* keys [0, n) of part `part` that some row of the block may see: up to the
 * last whose mask is not -inf in any row (0 when none) */
static inline int64_t at_live_keys(const at_view *m, int64_t b, int64_t i0, int64_t i1, int64_t n) {
  int64_t live = 0;
  for (int64_t i = i0; i < i1; ++i) {
    const float *row = m->base + b * m->s0 + i * m->s1;
    for (int64_t j = n - 1; j >= live; --j)
      if (row[j * m->s2] != -INFINITY) {
        live = j + 1;
        break;
      }
  }
  return live;
}

/* s[r, c] = p[r, c] + mask[b, i0 + r, c] for r < rows, c < n (row strides
 * ld_s, ld_p; s may be p), then + 0 when the scores were concatenated (the
 * composed concat adds the other part's zero: -0 becomes +0) */
static inline void at_add_mask(const at_view *m, int64_t b, int64_t i0, int64_t rows, int64_t n,
                               const float *p, int64_t ld_p, float *s, int64_t ld_s, int concatenated) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *mr = m->base + b * m->s0 + (i0 + r) * m->s1, *pr = p + r * ld_p;
    float *sr = s + r * ld_s;
    if (concatenated)
      for (int64_t c = 0; c < n; ++c) sr[c] = (pr[c] + mr[c * m->s2]) + 0.0f;
    else
      for (int64_t c = 0; c < n; ++c) sr[c] = pr[c] + mr[c * m->s2];
  }
}

/* Rows of scores s (row stride ld, [cached S | chunk T]) to probabilities p:
 * the keys whose scores were not computed (cached ones from nc, the chunk's
 * from nn) set to -inf first, then the posture's softmax row. */
static inline topos_status at_probabilities(float *s, float *p, int64_t rows, int64_t ld, int64_t S,
                                            int64_t nc, int64_t T, int64_t nn, int exact) {
  const int64_t W = S + T;
  for (int64_t r = 0; r < rows; ++r) {
    float *sr = s + r * ld;
    for (int64_t c = nc; c < S; ++c) sr[c] = -INFINITY;
    for (int64_t c = S + nn; c < W; ++c) sr[c] = -INFINITY;
    if (exact)
      tp_softmax_row_exact(sr, p + r * ld, W);
    else
      TP_TRY(tp_softmax_row_fast_gap(sr, p + r * ld, W, nc, S)); /* the span's unwritten slots: -inf */
  }
  return TOPOS_OK;
}

/* The linear form's step (patterns_attention_linear.c). */
topos_status tp_attention_linear_run(const tp_fusion *f, topos_tensor *const *inputs, topos_tensor *dst);

#endif
