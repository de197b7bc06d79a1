/* Gemma 3n's parts of the llama graph (llama_gemma3n.c reads the file):
 * the AltUp streams, their prediction before and correction after each
 * block, the Laurel branch and the sparse gate, as llama.cpp's gemma3n
 * graph. The streams are one tensor [T, N, dim], a token's N streams side
 * by side: the per-token mixes are then batched products over T, and every
 * step stays per token (decoding keeps the full-context bits). */
#include <math.h>

#include "models/llama_graph_internal.h"

/* sqrt(sum over the last axis of x^2): x [T, D] -> [T], [T, K, D] -> [T, K] */
static topos_sym tp_magnitude(tp_rec *r, topos_sym x, int axis) {
  return topos_tape_sqrt(r->t, topos_tape_sum_along(r->t, topos_tape_mul(r->t, x, x), axis));
}

/* x3 [T, K, D] (K = N - 1 rows per token) through their own matrices of w
 * [K, D, D], each result scaled to the token's magnitude target [T] (as
 * llama.cpp: times target, then divided by its own) */
static topos_sym tp_streams_project(tp_rec *r, topos_tensor *w, topos_sym x3, topos_sym target) {
  topos_tape *t = r->t;
  const int64_t K = r->c->altup_streams - 1, D = r->c->dim;
  const topos_sym y = topos_tape_qlinear_id(t, x3, tp_const(r, w), tp_head_ids(r, K));
  const topos_sym goal = topos_tape_broadcast_along(t, topos_tape_broadcast_along(t, target, 1, K), 2, D);
  const topos_sym scaled = topos_tape_mul(t, y, goal);
  return topos_tape_div(t, scaled, topos_tape_broadcast_along(t, tp_magnitude(r, y, 2), 2, D));
}

/* stream k of s [T, N, D], as [T, D] */
static topos_sym tp_stream(tp_rec *r, topos_sym s, int64_t k) {
  return tp_reshape(r, topos_tape_narrow(r->t, s, 1, k, 1), 2, r->T, r->c->dim, 0, 0);
}

topos_sym tp_altup_streams(tp_rec *r, const topos_llama *m, topos_sym x) {
  topos_tape *t = r->t;
  const int64_t T = r->T, K = r->c->altup_streams - 1, D = r->c->dim;
  const topos_sym added = tp_streams_project(r, m->altup_proj, topos_tape_broadcast_along(t, x, 1, K),
                                             tp_magnitude(r, x, 1));
  const topos_sym parts[2] = {tp_reshape(r, x, 3, T, 1, D, 0), added};
  return topos_tape_concat(t, 2, parts, 1);
}

topos_sym tp_altup_merge(tp_rec *r, const topos_llama *m, topos_sym s) {
  topos_tape *t = r->t;
  const int64_t N = r->c->altup_streams;
  const topos_sym target = tp_magnitude(r, tp_stream(r, s, r->c->altup_active), 1);
  const topos_sym back = tp_streams_project(r, m->altup_unembd, topos_tape_narrow(t, s, 1, 1, N - 1), target);
  topos_sym x = tp_stream(r, s, 0);
  for (int64_t k = 0; k < N - 1; ++k) x = topos_tape_add(t, x, tp_stream(r, back, k));
  return tp_scale(r, x, 1.0f / (float)N);
}

/* the router's modalities for x [T, D]: tanh(router . (norm(x) / D)), [T, N] */
static topos_sym tp_altup_router(tp_rec *r, const tp_llama_layer *L, topos_sym x) {
  const int64_t T = r->T, D = r->c->dim;
  const topos_sym y = tp_scale(r, tp_rmsnorm_n(r, x, T, D, L->altup_router_norm), 1.0f / (float)D);
  return topos_tape_tanh(r->t, topos_tape_qlinear(r->t, y, tp_const(r, L->altup_router)));
}

topos_sym tp_altup_predict(tp_rec *r, const tp_llama_layer *L, topos_sym s) {
  topos_tape *t = r->t;
  const int64_t T = r->T, N = r->c->altup_streams;
  /* coefficient (j, i) at j N + i: prediction j takes c(j, i) of stream i */
  const topos_sym modal = tp_altup_router(r, L, tp_stream(r, s, r->c->altup_active));
  const topos_sym coef = tp_reshape(r, topos_tape_qlinear(t, modal, tp_const(r, L->altup_predict)), 3, T, N, N, 0);
  return topos_tape_add(t, topos_tape_matmul(t, coef, s), s);
}

topos_sym tp_altup_active(tp_rec *r, topos_sym pred) { return tp_stream(r, pred, r->c->altup_active); }

topos_sym tp_sparse_gate(tp_rec *r, topos_sym g, int64_t ff, float std_mul) {
  topos_tape *t = r->t;
  const topos_sym mean = topos_tape_mean_along(t, g, 1);
  const topos_sym dev = topos_tape_sub(t, g, topos_tape_broadcast_along(t, mean, 1, ff));
  const topos_sym var = tp_scale(r, topos_tape_sum_along(t, topos_tape_mul(t, dev, dev), 1), 1.0f / (float)(ff - 1));
  const topos_sym cut = topos_tape_add(t, mean, tp_scale(r, topos_tape_sqrt(t, var), std_mul));
  return topos_tape_relu(t, topos_tape_sub(t, g, topos_tape_broadcast_along(t, cut, 1, ff)));
}

topos_sym tp_gemma3n_block(tp_rec *r, const tp_llama_layer *L, topos_sym pred, topos_sym a, topos_sym h, topos_sym o,
                           topos_sym ple, int64_t l) {
  topos_tape *t = r->t;
  const int64_t T = r->T, D = r->c->dim, N = r->c->altup_streams;
  const topos_sym low = topos_tape_qlinear(t, h, tp_const(r, L->laurel_l));
  const topos_sym lr = topos_tape_qlinear(t, low, tp_const(r, L->laurel_r));
  const topos_sym laurel = topos_tape_add(t, h, tp_rmsnorm_n(r, lr, T, D, L->laurel_norm));
  const topos_sym y = topos_tape_add(t, tp_rmsnorm_n(r, o, T, D, L->post_attn_norm), a);
  const topos_sym al = tp_scale(r, topos_tape_add(t, y, laurel), 1.0f / sqrtf(2.0f));
  const topos_sym f = tp_ffn(r, L, tp_rmsnorm_n(r, al, T, D, L->ffn_norm));
  const topos_sym out = topos_tape_add(t, tp_rmsnorm_n(r, f, T, D, L->post_ffn_norm), al);
  /* the correction: every prediction plus the innovation out - a, times 1 + its stream's coefficient */
  topos_sym c2 = topos_tape_qlinear(t, tp_altup_router(r, L, out), tp_const(r, L->altup_correct));
  c2 = topos_tape_add(t, c2, topos_tape_fill_like(t, c2, 1.0));
  const topos_sym innov = topos_tape_broadcast_along(t, topos_tape_sub(t, out, a), 1, N);
  const topos_sym corr = topos_tape_add(t, topos_tape_mul(t, innov, topos_tape_broadcast_along(t, c2, 2, D)), pred);
  if (!L->ple_gate) return corr;
  /* the per-layer embedding branch of the corrected active stream, added to the streams past the first */
  const topos_sym act = topos_tape_mul(t, tp_altup_active(r, corr),
                                       topos_tape_broadcast_along(t, tp_const(r, L->altup_correct_scale), 0, T));
  const topos_sym z = tp_ple_branch(r, L, act, ple, l);
  const topos_sym parts[2] = {topos_tape_narrow(t, corr, 1, 0, 1),
                              topos_tape_add(t, topos_tape_narrow(t, corr, 1, 1, N - 1),
                                             topos_tape_broadcast_along(t, z, 1, N - 1))};
  return topos_tape_concat(t, 2, parts, 1);
}
