/* The llama forward as a recorded graph over one chunk of T tokens, compiled
 * to a plan. Composites only (rmsnorm, rope, attention are built from
 * primitive ops); the products are `qlinear` rows over the mapped weights.
 *
 * Attention keys are two segments: the cache (its first S slots, a power of
 * two >= the position, as views; slots beyond the written positions masked)
 * and the chunk's own keys (causal mask). Their scores are joined along one
 * axis so the softmax sees every key in position order; masked keys
 * contribute exact zeros. The value sum is matmul(p_cache, V_cache) +
 * matmul(p_chunk, V_chunk), each the reference matmul's ascending f32 sum:
 * for a one-token chunk this is exactly the ascending sum over all
 * positions, which is why token-by-token decoding
 * reproduces the full-context bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_graph_internal.h"

static topos_sym tp_permute(tp_rec *r, topos_sym a, int rank, int o0, int o1, int o2, int o3) {
  int o[4] = {o0, o1, o2, o3};
  (void)rank;
  return topos_tape_permute(r->t, a, o);
}

/* x [rows, dim] * rsqrt(mean(x^2) + eps) * w (w [dim]; NULL: none) */
topos_sym tp_rmsnorm_n(tp_rec *r, topos_sym x, int64_t rows, int64_t dim, topos_tensor *w) {
  topos_tape *t = r->t;
  topos_sym ms = topos_tape_mean_along(t, topos_tape_mul(t, x, x), 1);
  topos_sym eps = topos_tape_fill_like(t, ms, r->c->rms_eps);
  topos_sym den = topos_tape_sqrt(t, topos_tape_add(t, ms, eps));
  topos_sym inv = topos_tape_div(t, topos_tape_fill_like(t, den, 1.0), den);
  topos_sym y = topos_tape_mul(t, x, topos_tape_broadcast_along(t, inv, 1, dim));
  if (!w) return y;
  return topos_tape_mul(t, y, topos_tape_broadcast_along(t, tp_const(r, w), 0, rows));
}

static topos_sym tp_rmsnorm(tp_rec *r, topos_sym x, int64_t rows, topos_tensor *w) {
  return tp_rmsnorm_n(r, x, rows, r->c->dim, w);
}

/* y [rows, n] + b (NULL: y) */
topos_sym tp_bias(tp_rec *r, topos_sym y, topos_tensor *b, int64_t rows) {
  if (!b) return y;
  return topos_tape_add(r->t, y, topos_tape_broadcast_along(r->t, tp_const(r, b), 0, rows));
}

/* A block's or the output's norm: RMSNorm (+ b where the file has one:
 * phimoe), or for layer_norm files LayerNorm, (x - mean) * rsqrt(biased
 * variance + eps) * w + b (w, b NULL: none), over x [rows, dim]. */
static topos_sym tp_norm_n(tp_rec *r, topos_sym x, int64_t rows, int64_t dim, topos_tensor *w, topos_tensor *b) {
  if (!r->c->layer_norm) return tp_bias(r, tp_rmsnorm_n(r, x, rows, dim, w), b, rows);
  topos_tape *t = r->t;
  topos_sym xc = topos_tape_sub(t, x, topos_tape_broadcast_along(t, topos_tape_mean_along(t, x, 1), 1, dim));
  topos_sym var = topos_tape_mean_along(t, topos_tape_mul(t, xc, xc), 1);
  topos_sym den = topos_tape_sqrt(t, topos_tape_add(t, var, topos_tape_fill_like(t, var, r->c->rms_eps)));
  topos_sym inv = topos_tape_div(t, topos_tape_fill_like(t, den, 1.0), den);
  topos_sym y = topos_tape_mul(t, xc, topos_tape_broadcast_along(t, inv, 1, dim));
  if (w) y = topos_tape_mul(t, y, topos_tape_broadcast_along(t, tp_const(r, w), 0, rows)); /* OLMo 1: none */
  return tp_bias(r, y, b, rows); /* command-r's have none */
}

static topos_sym tp_norm(tp_rec *r, topos_sym x, int64_t rows, topos_tensor *w, topos_tensor *b) {
  return tp_norm_n(r, x, rows, r->c->dim, w, b);
}

/* x [T, heads * hd] normalised per head by w [hd] (qwen3, gemma3's q and k norms; NULL: no weight, Llama 4's) */
static topos_sym tp_head_norm(tp_rec *r, topos_sym x, int64_t heads, topos_tensor *w) {
  const int64_t T = r->T, hd = r->hd;
  topos_sym y = tp_rmsnorm_n(r, tp_reshape(r, x, 2, T * heads, hd, 0, 0), T * heads, hd, w);
  return tp_reshape(r, y, 2, T, heads * hd, 0, 0);
}

/* x [T, heads * hd] normalised per head by the block norms' kind, then times
 * w [heads, hd], a weight per head (Command R+, StableLM 2 12B) */
static topos_sym tp_head_norm_weights(tp_rec *r, topos_sym x, int64_t heads, topos_tensor *w) {
  const int64_t T = r->T, hd = r->hd;
  topos_sym y = tp_norm_n(r, tp_reshape(r, x, 2, T * heads, hd, 0, 0), T * heads, hd, NULL, NULL);
  topos_sym wf = tp_reshape(r, tp_const(r, w), 1, heads * hd, 0, 0, 0);
  return topos_tape_mul(r->t, tp_reshape(r, y, 2, T, heads * hd, 0, 0), topos_tape_broadcast_along(r->t, wf, 0, T));
}

/* the same over x [T, heads, hd] */
static topos_sym tp_head_norm3(tp_rec *r, topos_sym x, int64_t heads, topos_tensor *w) {
  const int64_t T = r->T, hd = r->hd;
  return tp_reshape(r, tp_head_norm(r, tp_reshape(r, x, 2, T, heads * hd, 0, 0), heads, w), 3, T, heads, hd, 0);
}

/* s * v (v 1: s) */
topos_sym tp_scale(tp_rec *r, topos_sym s, float v) {
  if (v == 1.0f) return s;
  return topos_tape_mul(r->t, s, topos_tape_fill_like(r->t, s, v));
}

/* c tanh(s / c): gemma2's soft-capping of scores and logits (c 0: s) */
static topos_sym tp_softcap(tp_rec *r, topos_sym s, float cap) {
  if (cap == 0.0f) return s;
  topos_tape *t = r->t;
  topos_sym y = topos_tape_tanh(t, topos_tape_mul(t, s, topos_tape_fill_like(t, s, 1.0f / cap)));
  return topos_tape_mul(t, y, topos_tape_fill_like(t, y, cap));
}

/* x [T, heads, d] (d = rope_dim), every pair rotated */
static topos_sym tp_rope_pairs(tp_rec *r, topos_sym x, int64_t heads, topos_sym cos, topos_sym sin) {
  topos_tape *t = r->t;
  const int neox = r->c->rope_neox, axis = neox ? 2 : 3;
  int64_t T = r->T, half = r->rd / 2;
  topos_sym p = neox ? tp_reshape(r, x, 4, T, heads, 2, half) : tp_reshape(r, x, 4, T, heads, half, 2);
  if (neox) cos = tp_reshape(r, cos, 3, T, 1, half, 0), sin = tp_reshape(r, sin, 3, T, 1, half, 0);
  topos_sym x0 = topos_tape_narrow(t, p, axis, 0, 1), x1 = topos_tape_narrow(t, p, axis, 1, 1);
  topos_sym c = topos_tape_broadcast_along(t, cos, 1, heads);
  topos_sym s = topos_tape_broadcast_along(t, sin, 1, heads);
  topos_sym y0 = topos_tape_sub(t, topos_tape_mul(t, x0, c), topos_tape_mul(t, x1, s));
  topos_sym y1 = topos_tape_add(t, topos_tape_mul(t, x0, s), topos_tape_mul(t, x1, c));
  topos_sym parts[2] = {y0, y1};
  return tp_reshape(r, topos_tape_concat(t, 2, parts, axis), 3, T, heads, 2 * half, 0);
}

/* x [T, heads, hd]: pairs rotated by the tables, adjacent ones (x[2i],
 * x[2i+1]), or for qwen2 (NEOX) (x[i], x[i + d/2]): the halves of a pair
 * lie along axis 3 of [T, heads, d/2, 2] or axis 2 of [T, heads, 2, d/2].
 * d is the rotated width: the head's, or with partial rotary (rope_dim <
 * hd) its first rope_dim dimensions, the rest passed through. */
static topos_sym tp_rope(tp_rec *r, topos_sym x, int64_t heads, topos_sym cos, topos_sym sin) {
  topos_tape *t = r->t;
  const int64_t hd = r->hd, rd = r->rd;
  if (rd < hd) {
    topos_sym rot = topos_tape_narrow(t, x, 2, 0, rd), pass = topos_tape_narrow(t, x, 2, rd, hd - rd);
    rot = tp_rope_pairs(r, rot, heads, cos, sin);
    topos_sym parts[2] = {rot, pass};
    return topos_tape_concat(t, 2, parts, 2);
  }
  return tp_rope_pairs(r, x, heads, cos, sin);
}

/* A set of attention masks (inputs named mask_cache / mask_chunk + suffix)
 * and their broadcasts: c_rows [G*T, S] and n_rows [G*T, T] (the 16-bit
 * caches' per-head products), c and n over the KVH heads (f32 caches). */
typedef struct tp_masks {
  topos_sym c_rows, c, n_rows, n;
} tp_masks;

static void tp_mask_inputs(tp_rec *r, const tp_llama_graph *g, int row_mask, const char *suffix, topos_sym *in_c,
                           topos_sym *in_n, tp_masks *out) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, S = r->S, KVH = c->n_kv_heads, G = c->n_heads / KVH;
  char name[48];
  /* every row of the chunk sees the same cached slots (those written before
   * it): the cache's mask is one row of S, broadcast to the G*T query rows
   * (a [G*T, S] input was 1.5 MB at 128 rows after 1024 tokens); only where
   * a sliding window cuts in (row_mask) does each row get its own */
  topos_tensor_desc mc = {TOPOS_F32, 1, {S}}, mn = {TOPOS_F32, 2, {G * T, T}};
  if (row_mask) mc = (topos_tensor_desc){TOPOS_F32, 2, {G * T, S}};
  /* ALiBi: each head's own, slope * (key position - query position) added
   * to the mask ([KVH, G*T, S] and [KVH, G*T, T]: the rows' views per head
   * are taken where the 16-bit caches need them, tp_mask_head) */
  const int alibi = c->alibi_max_bias > 0.0f;
  if (alibi) {
    mc = (topos_tensor_desc){TOPOS_F32, 3, {KVH, G * T, S}};
    mn = (topos_tensor_desc){TOPOS_F32, 3, {KVH, G * T, T}};
  }
  out->c_rows = out->c = TOPOS_SYM_INVALID;
  if (g->has_cache) {
    snprintf(name, sizeof name, "mask_cache%s", suffix);
    *in_c = topos_tape_input_desc(t, &mc, name);
    out->c_rows = alibi ? TOPOS_SYM_INVALID : row_mask ? *in_c : topos_tape_broadcast_along(t, *in_c, 0, G * T);
    out->c = alibi ? *in_c : topos_tape_broadcast_along(t, out->c_rows, 0, KVH);
  }
  snprintf(name, sizeof name, "mask_chunk%s", suffix);
  *in_n = topos_tape_input_desc(t, &mn, name);
  out->n_rows = alibi ? TOPOS_SYM_INVALID : *in_n;
  out->n = alibi ? *in_n : topos_tape_broadcast_along(t, *in_n, 0, KVH);
}

/* kv head kh's rows [G*T, cols] of a mask: the shared rows, or (ALiBi) a
 * view of the head's own */
static topos_sym tp_mask_head(tp_rec *r, topos_sym rows, topos_sym all, int64_t kh, int64_t G, int64_t cols) {
  if (topos_sym_is_valid(rows)) return rows;
  return tp_reshape(r, topos_tape_narrow(r->t, all, 0, kh, 1), 2, G * r->T, cols, 0, 0);
}

/* The masks of a block of G query heads per kv head and KVH kv heads
 * (Gemma 4's differ from block to block; tp_block_masks calls this where
 * either differs from the model's) from the inputs in_c, in_n made
 * for the model's G0 = heads / n_kv_heads: every group's rows are the same,
 * so the first group's T rows are broadcast to G (no ALiBi: its rows are
 * per head). */
static tp_masks tp_masks_regroup(tp_rec *r, const tp_llama_graph *g, const tp_masks *base, topos_sym in_c,
                                 topos_sym in_n, int row_mask, int64_t G, int64_t KVH) {
  topos_tape *t = r->t;
  const int64_t T = r->T, G0 = r->c->n_heads / r->c->n_kv_heads;
  tp_masks m;
  m.n_rows = G == G0 ? base->n_rows
                     : tp_reshape(r, topos_tape_broadcast_along(t, topos_tape_narrow(t, in_n, 0, 0, T), 0, G), 2,
                                  G * T, T, 0, 0);
  m.n = topos_tape_broadcast_along(t, m.n_rows, 0, KVH);
  m.c_rows = m.c = TOPOS_SYM_INVALID;
  if (g->has_cache) {
    const int64_t S = r->S;
    m.c_rows = G == G0  ? base->c_rows
               : row_mask ? tp_reshape(r, topos_tape_broadcast_along(t, topos_tape_narrow(t, in_c, 0, 0, T), 0, G), 2,
                                       G * T, S, 0, 0)
                          : topos_tape_broadcast_along(t, in_c, 0, G * T);
    m.c = topos_tape_broadcast_along(t, m.c_rows, 0, KVH);
  }
  return m;
}

/* The masks of a chunk's last query row alone, from masks of its Tk rows
 * (G groups of them; no ALiBi): [KVH, G, Tk] and [KVH, G, S]. */
static tp_masks tp_masks_last_row(tp_rec *r, const tp_llama_graph *g, const tp_masks *all, int64_t G, int64_t KVH,
                                  int64_t Tk) {
  topos_tape *t = r->t;
  tp_masks m;
  m.n_rows = tp_reshape(r, topos_tape_narrow(t, tp_reshape(r, all->n_rows, 3, G, Tk, Tk, 0), 1, Tk - 1, 1), 2, G, Tk,
                        0, 0);
  m.n = topos_tape_broadcast_along(t, m.n_rows, 0, KVH);
  m.c_rows = m.c = TOPOS_SYM_INVALID;
  if (g->has_cache) {
    m.c_rows = tp_reshape(r, topos_tape_narrow(t, tp_reshape(r, all->c_rows, 3, G, Tk, r->S, 0), 1, Tk - 1, 1), 2, G,
                          r->S, 0, 0);
    m.c = topos_tape_broadcast_along(t, m.c_rows, 0, KVH);
  }
  return m;
}

/* xIELU of x with p = {beta + softplus(alpha_n), softplus(alpha_p), beta,
 * eps} (llama_config.c): p1 relu(x)^2 + p2 x, plus (exp(min(x, eps)) - 1 -
 * x) p0 where x <= 0 (each term where the other branch is taken is an exact
 * zero) */
static topos_sym tp_xielu(tp_rec *r, topos_sym x, const float *p) {
  topos_tape *t = r->t;
  const topos_sym rx = topos_tape_relu(t, x);
  const topos_sym pos = topos_tape_mul(t, topos_tape_mul(t, rx, rx), topos_tape_fill_like(t, x, p[1]));
  const topos_sym lin = topos_tape_mul(t, x, topos_tape_fill_like(t, x, p[2]));
  const topos_sym nx = topos_tape_neg(t, x);
  const topos_sym low = topos_tape_neg(t, topos_tape_maximum(t, nx, topos_tape_fill_like(t, x, -p[3])));
  const topos_sym em1 = topos_tape_sub(t, topos_tape_exp(t, low), topos_tape_fill_like(t, x, 1.0));
  const topos_sym neg = topos_tape_mul(t, topos_tape_mul(t, topos_tape_sub(t, em1, x), topos_tape_fill_like(t, x, p[0])),
                                       topos_tape_step(t, nx, topos_tape_fill_like(t, x, 0.0)));
  return topos_tape_add(t, topos_tape_add(t, pos, lin), neg);
}

/* The gated feed-forward: act(h . gate + b) * (h . up + b), down, + b.
 * One row (decoding): gate and up in one product where the file has them
 * back to back (or in the file's order joined: gate first). Without a gate
 * (starcoder2, phi2): down(GELU(h . up + b)) + b; arcee's: ReLU(.)^2; apertus's: xIELU. */
topos_sym tp_ffn(tp_rec *r, const tp_llama_layer *L, topos_sym h) {
  topos_tape *t = r->t;
  const int64_t T = r->T;
  if (!L->w_gate) {
    topos_sym up = tp_bias(r, topos_tape_qlinear(t, h, tp_const(r, L->w_up)), L->b_up, T);
    if (r->c->ffn_xielu) {
      up = tp_xielu(r, up, L->xielu);
    } else if (r->c->ffn_relu2) {
      up = topos_tape_relu(t, up);
      up = topos_tape_mul(t, up, up);
    } else {
      up = topos_tape_gelu(t, up);
    }
    return tp_bias(r, topos_tape_qlinear(t, up, tp_const(r, L->w_down)), L->b_down, T);
  }
  const int64_t ff = topos_tensor_shape(L->w_gate)[0];
  topos_sym gate, up;
  if (T == 1) {
    topos_sym gu;
    if (L->w_ffn_in) {
      gu = topos_tape_qlinear(t, h, tp_const(r, L->w_ffn_in));
    } else {
      topos_sym parts[2] = {topos_tape_qlinear(t, h, tp_const(r, L->w_gate)),
                            topos_tape_qlinear(t, h, tp_const(r, L->w_up))};
      gu = topos_tape_concat(t, 2, parts, 1);
    }
    const int up_first = L->w_ffn_in && L->ffn_up_first;
    gate = topos_tape_narrow(t, gu, 1, up_first ? ff : 0, ff);
    up = topos_tape_narrow(t, gu, 1, up_first ? 0 : ff, ff);
  } else {
    gate = topos_tape_qlinear(t, h, tp_const(r, L->w_gate));
    up = topos_tape_qlinear(t, h, tp_const(r, L->w_up));
  }
  gate = tp_bias(r, gate, L->b_gate, T);
  if (L->gate_sparse) gate = tp_sparse_gate(r, gate, ff, L->sparsity_mul); /* Gemma 3n's first blocks */
  gate = r->c->ffn_gelu ? topos_tape_gelu(t, gate) : topos_tape_silu(t, gate);
  up = tp_bias(r, up, L->b_up, T);
  return tp_bias(r, topos_tape_qlinear(t, topos_tape_mul(t, gate, up), tp_const(r, L->w_down)), L->b_down, T);
}

/* A mixture of experts over h [T, dim]: the router's softmax over the
 * experts, the n_experts_used best per token (top_k: ties to the lower
 * expert; ranked with exp_probs_b added where the file has it), their
 * probabilities as weights (renormalised to sum 1 where the
 * architecture does, times experts_scale), each chosen expert's SwiGLU
 * feed-forward (qlinear_id: a token's rows through its experts), and the
 * weighted sum in rank order (slot 0, the router's first choice, first).
 * Every step is per token, so decoding keeps the full-context bits. */
/* y [T, K, n] plus row ids[t, k] of the experts' bias table [E, n] (NULL: y) */
static topos_sym tp_expert_bias(tp_rec *r, topos_sym y, topos_tensor *table, topos_sym ids) {
  if (!table) return y;
  const int64_t T = r->T, K = r->c->n_experts_used, n = topos_tensor_shape(table)[1];
  topos_sym rows = topos_tape_gather(r->t, tp_const(r, table), tp_reshape(r, ids, 1, T * K, 0, 0, 0));
  return topos_tape_add(r->t, y, tp_reshape(r, rows, 3, T, K, n, 0));
}

/* min(v, hi) as -max(-v, -hi) (the op table has maximum only) */
static topos_sym tp_min_const(tp_rec *r, topos_sym v, float hi) {
  topos_tape *t = r->t;
  return topos_tape_neg(t, topos_tape_maximum(t, topos_tape_neg(t, v), topos_tape_fill_like(t, v, -hi)));
}

/* v clamped to [-bound, bound] (bound 0: v) */
static topos_sym tp_clamp(tp_rec *r, topos_sym v, float bound) {
  if (bound <= 0.0f) return v;
  return tp_min_const(r, topos_tape_maximum(r->t, v, topos_tape_fill_like(r->t, v, -bound)), bound);
}

/* gpt-oss's activation: g' = min(g, 7), u' = clamp(u, -7, 7),
 * g' sigmoid(1.702 g') (u' + 1) (llama.cpp's swiglu_oai) */
static topos_sym tp_swiglu_oai(tp_rec *r, topos_sym gate, topos_sym up) {
  topos_tape *t = r->t;
  const float limit = 7.0f, alpha = 1.702f;
  topos_sym g = tp_min_const(r, gate, limit);
  topos_sym u = tp_min_const(r, topos_tape_maximum(t, up, topos_tape_fill_like(t, up, -limit)), limit);
  topos_sym glu = topos_tape_mul(t, g, topos_tape_sigmoid(t, tp_scale(r, g, alpha)));
  return topos_tape_mul(t, glu, topos_tape_add(t, u, topos_tape_fill_like(t, u, 1.0)));
}

/* DeepSeek-V3's group-limited routing over rank [T, E]: the experts in
 * expert_groups groups of E / G, each group scored by the sum of its two
 * best ranks; the experts of all but the expert_groups_used best groups
 * drop to -1e30 (below any score; -inf would make 0 x inf a NaN here), so
 * top_k chooses within the best groups only, as llama.cpp's -inf fill. */
static topos_sym tp_expert_groups(tp_rec *r, topos_sym rank) {
  topos_tape *t = r->t;
  const int64_t T = r->T, E = r->c->n_experts, G = r->c->expert_groups, P = E / G;
  topos_sym groups = tp_reshape(r, rank, 3, T, G, P, 0);
  topos_sym best = topos_tape_gather(t, groups, topos_tape_top_k(t, groups, 2)); /* [T, G, 2] */
  topos_sym score = topos_tape_sum_along(t, best, 2);                             /* [T, G] */
  topos_sym chosen = topos_tape_top_k(t, score, r->c->expert_groups_used);       /* [T, Gu] */
  topos_sym ones = topos_tape_fill_like(t, topos_tape_gather(t, score, chosen), 1.0);
  topos_sym keep = topos_tape_broadcast_along(t, topos_tape_scatter(t, ones, chosen, G), 2, P); /* 1 or 0 */
  topos_sym drop = topos_tape_mul(t, topos_tape_sub(t, keep, topos_tape_fill_like(t, keep, 1.0)),
                                  topos_tape_fill_like(t, keep, 1e30));
  return tp_reshape(r, topos_tape_add(t, topos_tape_mul(t, groups, keep), drop), 2, T, E, 0, 0);
}

/* A mixture's output for h; the router reads rin (h, or smallthinker's block input). */
topos_sym tp_experts(tp_rec *r, const tp_llama_layer *L, topos_sym h, topos_sym rin) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, K = c->n_experts_used, D = c->dim;
  topos_sym logits = tp_bias(r, topos_tape_qlinear(t, rin, tp_const(r, L->gate_inp)), L->gate_inp_b, T);
  topos_sym ids, w;
  if (c->experts_oai) { /* the logits rank; a softmax over the chosen ones weighs */
    ids = topos_tape_top_k(t, logits, K);
    w = topos_tape_softmax(t, topos_tape_gather(t, logits, ids), 1);
  } else if (c->experts_llama4) { /* the logits rank; the chosen ones' sigmoids weigh */
    ids = topos_tape_top_k(t, logits, K);
    w = topos_tape_sigmoid(t, topos_tape_gather(t, logits, ids));
  } else {
    topos_sym probs = c->experts_sigmoid ? topos_tape_sigmoid(t, logits) : topos_tape_softmax(t, logits, 1);
    topos_sym rank = probs; /* exp_probs_b: a bias that moves the choice, not the weights */
    if (L->exp_probs_b)
      rank = topos_tape_add(t, probs, topos_tape_broadcast_along(t, tp_const(r, L->exp_probs_b), 0, T));
    if (c->expert_groups > 1) rank = tp_expert_groups(r, rank);
    ids = topos_tape_top_k(t, rank, K); /* [T, K] */
    w = topos_tape_gather(t, probs, ids);
  }
  if (c->experts_norm) { /* the sum at least 2^-14, as llama.cpp (a sigmoid router's weights may all be ~0) */
    topos_sym sum = topos_tape_sum_along(t, w, 1);
    sum = topos_tape_maximum(t, sum, topos_tape_fill_like(t, sum, 6.103515625e-5));
    w = topos_tape_div(t, w, topos_tape_broadcast_along(t, sum, 1, K));
  }
  w = tp_scale(r, w, c->experts_scale);
  /* Nemotron 3 Super's latent mixtures: the experts read and write X wide */
  const int64_t X = L->latent_down ? topos_tensor_shape(L->latent_down)[0] : D;
  const topos_sym hx = L->latent_down ? topos_tape_qlinear(t, h, tp_const(r, L->latent_down)) : h;
  topos_sym x3 = tp_reshape(r, hx, 3, T, 1, X, 0);
  if (c->experts_llama4) /* the weight scales each chosen expert's input, not its output */
    x3 = topos_tape_mul(t, topos_tape_broadcast_along(t, h, 1, K), topos_tape_broadcast_along(t, w, 2, D));
  topos_sym gate = TOPOS_SYM_INVALID, up, act; /* [T, K, ff_expert] */
  if (L->gate_up_exps) { /* Gemma 4's gate and up rows in one product */
    const int64_t F = c->ff_expert;
    topos_sym gu = topos_tape_qlinear_id(t, x3, tp_const(r, L->gate_up_exps), ids);
    gate = topos_tape_narrow(t, gu, 2, 0, F), up = topos_tape_narrow(t, gu, 2, F, F);
  } else {
    up = tp_expert_bias(r, topos_tape_qlinear_id(t, x3, tp_const(r, L->up_exps), ids), L->up_exps_b, ids);
    if (L->gate_exps)
      gate = tp_expert_bias(r, topos_tape_qlinear_id(t, x3, tp_const(r, L->gate_exps), ids), L->gate_exps_b, ids);
  }
  if (!topos_sym_is_valid(gate)) { /* nemotron_h_moe: no gate, ReLU squared */
    act = topos_tape_relu(t, up);
    act = topos_tape_mul(t, act, act);
  } else {
    act = c->experts_oai    ? tp_swiglu_oai(r, gate, up)
          : c->experts_relu ? topos_tape_mul(t, topos_tape_relu(t, gate), up)
          : c->experts_gelu ? topos_tape_mul(t, topos_tape_gelu(t, gate), up)
                            : topos_tape_mul(t, topos_tape_silu(t, gate), up);
  }
  topos_sym y = tp_expert_bias(r, topos_tape_qlinear_id(t, act, tp_const(r, L->down_exps), ids), L->down_exps_b,
                               ids); /* [T, K, D] */
  if (L->down_exps_s) { /* Gemma 4: each chosen expert's output times its scale */
    topos_sym sc = topos_tape_gather(t, tp_const(r, L->down_exps_s), tp_reshape(r, ids, 1, T * K, 0, 0, 0));
    y = topos_tape_mul(t, y, topos_tape_broadcast_along(t, tp_reshape(r, sc, 2, T, K, 0, 0), 2, X));
  }
  if (!c->experts_llama4) y = topos_tape_mul(t, y, topos_tape_broadcast_along(t, w, 2, X));
  const topos_sym out = tp_reshape(r, topos_tape_sum_along(t, y, 1), 2, T, X, 0, 0);
  return L->latent_up ? topos_tape_qlinear(t, out, tp_const(r, L->latent_up)) : out;
}

/* ids [T, H] with ids[t, h] = h: qlinear_id then takes head h's rows of a
 * per-head weight [H, n, k] for row (t, h) */
topos_sym tp_head_ids(tp_rec *r, int64_t H) {
  const int64_t shape[2] = {r->T, H};
  int32_t *v = malloc((size_t)(r->T * H) * sizeof *v);
  topos_tensor *ids = NULL;
  if (v) {
    for (int64_t i = 0; i < r->T * H; ++i) v[i] = (int32_t)(i % H);
    if (topos_tensor_from_data(TOPOS_I32, 2, shape, v, (size_t)(r->T * H) * sizeof *v, &ids) != TOPOS_OK) ids = NULL;
  }
  free(v);
  if (!ids) return topos_tape_constant(r->t, NULL); /* the tape's error: what failed */
  topos_sym s = topos_tape_constant(r->t, ids);
  topos_tensor_release(ids);
  return s;
}

/* DeepSeek-V2's latent attention in its absorbed form (llama.cpp's MLA
 * path): each head's q is [q_nope k_b | rope(q_pe)] (kv_rank + rope_dim)
 * and every head reads one key row [latent | rope(k_pe)] (one kv head), so
 * the cache keeps the latent and the shared rotated key only. The value row
 * is the same row (its last rope_dim columns fall outside what v_b reads).
 * One row (decoding): q (or q_a) and kv_a in one dispatch. */
static void tp_mla_qkv(tp_rec *r, const tp_llama_layer *L, topos_sym h, topos_sym cos, topos_sym sin,
                       topos_sym ids, topos_sym *q, topos_sym *k, topos_sym *v) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, H = c->n_heads, R = c->mla_kv_rank, P = c->rope_dim, N = c->mla_nope;
  topos_tensor *first = L->wq_a ? L->wq_a : L->wq;
  const int64_t qn = topos_tensor_shape(first)[0];
  topos_sym qa, kv;
  if (T == 1) {
    topos_sym parts[2] = {topos_tape_qlinear(t, h, tp_const(r, first)), topos_tape_qlinear(t, h, tp_const(r, L->wkv_a))};
    topos_sym both = topos_tape_concat(t, 2, parts, 1);
    qa = topos_tape_narrow(t, both, 1, 0, qn);
    kv = topos_tape_narrow(t, both, 1, qn, R + P);
  } else {
    qa = topos_tape_qlinear(t, h, tp_const(r, first));
    kv = topos_tape_qlinear(t, h, tp_const(r, L->wkv_a));
  }
  topos_sym qf = L->wq_a ? topos_tape_qlinear(t, tp_rmsnorm_n(r, qa, T, qn, L->q_a_norm), tp_const(r, L->wq)) : qa;
  qf = tp_reshape(r, qf, 3, T, H, N + P, 0);
  topos_sym q_abs = topos_tape_qlinear_id(t, topos_tape_narrow(t, qf, 2, 0, N), tp_const(r, L->wk_b), ids);
  topos_sym q_pe = topos_tape_narrow(t, qf, 2, N, P);
  if (!L->nope) q_pe = tp_rope_pairs(r, q_pe, H, cos, sin); /* Kimi Linear's latent attention does not rotate */
  topos_sym qparts[2] = {q_abs, q_pe};
  *q = topos_tape_concat(t, 2, qparts, 2); /* [T, H, R + P] */
  topos_sym latent = tp_reshape(r, tp_rmsnorm_n(r, topos_tape_narrow(t, kv, 1, 0, R), T, R, L->kv_a_norm), 3, T, 1,
                                R, 0);
  topos_sym k_pe = tp_reshape(r, topos_tape_narrow(t, kv, 1, R, P), 3, T, 1, P, 0);
  if (!L->nope) k_pe = tp_rope_pairs(r, k_pe, 1, cos, sin);
  topos_sym kparts[2] = {latent, k_pe};
  *k = topos_tape_concat(t, 2, kparts, 2); /* [T, 1, R + P] */
  *v = topos_tape_concat(t, 2, kparts, 2);
}

/* the heads' latent outputs o [T, H * (R + P)] through v_b: [T, H * v_dim] */
static topos_sym tp_mla_out(tp_rec *r, const tp_llama_layer *L, topos_sym o, topos_sym ids) {
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, H = c->n_heads, R = c->mla_kv_rank;
  topos_sym lat = topos_tape_narrow(r->t, tp_reshape(r, o, 3, T, H, R + c->rope_dim, 0), 2, 0, R);
  return tp_reshape(r, topos_tape_qlinear_id(r->t, lat, tp_const(r, L->wv_b), ids), 2, T, H * c->mla_v_dim, 0, 0);
}

/* Block L's feed-forward of h [T, dim]: its mixture of experts (the router
 * reading rin) plus its shared expert (qwen2moe's behind a sigmoid gate),
 * or its dense feed-forward */
static topos_sym tp_ffn_all(tp_rec *r, const tp_llama_layer *L, topos_sym h, topos_sym rin) {
  topos_tape *t = r->t;
  topos_sym f = L->gate_inp ? tp_experts(r, L, h, rin) : TOPOS_SYM_INVALID;
  if (L->w_down) { /* the dense feed-forward, or a mixture's shared expert */
    topos_sym d = tp_ffn(r, L, h);
    if (L->gate_inp_shexp) { /* times sigmoid(h . w), one gate per token */
      topos_sym z = topos_tape_qlinear(t, h, tp_const(r, L->gate_inp_shexp));
      d = topos_tape_mul(t, d, topos_tape_broadcast_along(t, tp_reshape(r, topos_tape_sigmoid(t, z), 1, r->T, 0, 0, 0),
                                                          1, r->c->dim));
    }
    f = L->gate_inp ? topos_tape_add(t, f, d) : d;
  }
  return f;
}

/* A block's end from its token mixer's output o (attention's, a recurrent
 * mixer's or both), x the block's input and h its norm: o's norm and scale,
 * the residual, the feed-forward (dense, experts or both; none for
 * nemotron_h's mixers) and its residual. */
static topos_sym tp_block_out(tp_rec *r, const tp_llama_layer *L, topos_sym x, topos_sym h, topos_sym o) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T;
  const topos_sym block_in = x;
  if (L->post_attn_norm) o = tp_rmsnorm(r, o, T, L->post_attn_norm);
  o = tp_scale(r, o, c->residual_scale);
  if (c->parallel_residual) { /* x + (attn + ffn): from the one norm (phi2) or each its own (gptneox) */
    topos_sym hf = L->ffn_norm ? tp_norm(r, x, T, L->ffn_norm, L->ffn_norm_b) : h;
    return topos_tape_add(t, x, topos_tape_add(t, o, tp_ffn(r, L, hf)));
  }
  x = topos_tape_add(t, x, o);
  if (!L->w_down && !L->gate_inp) return x; /* nemotron_h: a mixer alone */
  if (L->pre_ffn_norm_2) return topos_tape_add(t, x, tp_gemma4_ffn(r, L, x)); /* Gemma 4's mixtures */
  h = L->ffn_norm || c->norm_weightless ? tp_norm(r, x, T, L->ffn_norm, L->ffn_norm_b) : x;
  topos_sym f;
  if (L->ffn_norm_exps) { /* arctic: the dense feed-forward of h, the mixture of the block's input's own norm */
    const topos_sym he = tp_rmsnorm(r, block_in, T, L->ffn_norm_exps);
    f = topos_tape_add(t, tp_ffn(r, L, h), tp_experts(r, L, he, he));
  } else {
    f = tp_ffn_all(r, L, h, c->router_input ? block_in : h);
  }
  if (L->post_ffn_norm) f = tp_rmsnorm(r, f, T, L->post_ffn_norm);
  f = tp_scale(r, f, c->residual_scale);
  return topos_tape_add(t, x, f);
}

/* q or k [T, heads hd] through block L's norm w (bias b): per head, over
 * the whole row (qk_norm 2) or per head with a weight per head (3) */
static topos_sym tp_qk_norm(tp_rec *r, topos_sym x, int64_t heads, topos_tensor *w, topos_tensor *b) {
  const int kind = r->c->qk_norm;
  if (kind == 2) return tp_norm_n(r, x, r->T, heads * r->hd, w, b);
  return kind == 3 ? tp_head_norm_weights(r, x, heads, w) : tp_head_norm(r, x, heads, w);
}

/* Block L's keys and values [T, KVH, hd] from their products k, v [T, KVH
 * hd]: biases, clamps, norms (before or after the rotation), the rotation
 * (cos, sin), Gemma 4's value norm */
static void tp_kv_prep(tp_rec *r, const tp_llama_layer *L, topos_sym *k, topos_sym *v, topos_sym cos, topos_sym sin) {
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, KVH = L->kv_heads, hd = L->hd;
  topos_sym kk = tp_clamp(r, tp_bias(r, *k, L->bk, T), c->clamp_kqv);
  topos_sym vv = tp_clamp(r, tp_bias(r, *v, L->bv, T), c->clamp_kqv);
  const int late = c->qk_norm_after_rope; /* hunyuan: the norms follow the rotation */
  if (L->k_norm && !late) kk = tp_qk_norm(r, kk, KVH, L->k_norm, L->k_norm_b);
  kk = tp_reshape(r, kk, 3, T, KVH, hd, 0);
  if (!L->nope) kk = tp_rope(r, kk, KVH, cos, sin);
  /* norms after the rotation, per head: hunyuan's (weights; no whole-row norm
   * takes this order), Llama 4's L2 norm of the rotated layers (none) */
  if (late && L->k_norm) kk = tp_head_norm3(r, kk, KVH, L->k_norm);
  if (c->qk_l2_norm && !L->nope) kk = tp_head_norm3(r, kk, KVH, NULL);
  vv = tp_reshape(r, vv, 3, T, KVH, hd, 0);
  if (c->v_norm) vv = tp_head_norm3(r, vv, KVH, NULL); /* Gemma 4: per head, no weight */
  *k = kk, *v = vv;
}

/* Block L's queries [T, H, hd] from their product q [T, H hd], as the keys */
static topos_sym tp_q_prep(tp_rec *r, const tp_llama_layer *L, topos_sym q, topos_sym cos, topos_sym sin) {
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, H = L->heads, hd = L->hd;
  q = tp_clamp(r, tp_bias(r, q, L->bq, T), c->clamp_kqv);
  const int late = c->qk_norm_after_rope;
  if (L->q_norm && !late) q = tp_qk_norm(r, q, H, L->q_norm, L->q_norm_b);
  q = tp_reshape(r, q, 3, T, H, hd, 0);
  if (!L->nope) q = tp_rope(r, q, H, cos, sin);
  if (late && L->q_norm) q = tp_head_norm3(r, q, H, L->q_norm);
  if (c->qk_l2_norm && !L->nope) q = tp_head_norm3(r, q, H, NULL);
  return q;
}

/* each valid one of the n chunk-row tensors at rows[i] narrowed to its last
 * row, of Tk (the last-row cuts: the row's own ops, the same bits) */
static void tp_last_rows(tp_rec *r, topos_sym *const *rows, int n, int64_t Tk) {
  for (int i = 0; i < n; ++i)
    if (topos_sym_is_valid(*rows[i])) *rows[i] = topos_tape_narrow(r->t, *rows[i], 0, Tk - 1, 1);
}

/* Masks made for a block shape: G groups of KVH kv heads, windowed or not,
 * for the chunk's rows or (last) its last row's alone */
typedef struct tp_made_masks {
  int64_t G, KVH;
  int windowed, last;
  tp_masks m;
} tp_made_masks;
#define TP_MADE_MASKS 16

/* *mk (the model's masks of L's kind) for block L: regrouped where its
 * head groups differ from the model's (Gemma 4), then the last row's where
 * `last`; each shape made once (made, *n_made) */
static topos_status tp_block_masks(tp_rec *r, const tp_llama_graph *g, tp_made_masks *made, int *n_made,
                                   const tp_llama_layer *L, int64_t G, int64_t KVH, int last, int64_t Tk,
                                   const tp_masks **mk) {
  const int regroup = G != r->c->n_heads / r->c->n_kv_heads || KVH != r->c->n_kv_heads;
  for (int want_last = 0; want_last <= last; ++want_last) {
    if (!want_last && !regroup) continue;
    int found = 0;
    for (int i = 0; i < *n_made && !found; ++i)
      if (made[i].G == G && made[i].KVH == KVH && made[i].windowed == L->windowed && made[i].last == want_last)
        *mk = &made[i].m, found = 1;
    if (found) continue;
    if (*n_made == TP_MADE_MASKS)
      return tp_fail(TOPOS_UNSUPPORTED, "llama: more than %d shapes of attention masks in one model", TP_MADE_MASKS);
    tp_made_masks *n = &made[(*n_made)++];
    const int own = L->windowed && g->window_masks;
    const int64_t Tq = r->T;
    r->T = Tk; /* (built from the whole chunk's masks) */
    n->G = G, n->KVH = KVH, n->windowed = L->windowed, n->last = want_last;
    n->m = want_last ? tp_masks_last_row(r, g, *mk, G, KVH, Tk)
                     : tp_masks_regroup(r, g, *mk, own ? g->mask_cw : g->mask_c, own ? g->mask_nw : g->mask_n,
                                        own || !g->window_masks ? g->row_mask : 0, G, KVH);
    r->T = Tq;
    *mk = &n->m;
  }
  return TOPOS_OK;
}

static topos_status tp_record(const topos_llama *m, tp_rec *r, tp_llama_graph *g) {
  topos_tape *t = r->t;
  const topos_llama_config *c = m->config.n_layers ? &m->config : NULL;
  int64_t T = r->T, C = r->C, S = r->S, D = c->dim;
  const float cap = c->attn_softcap;
  topos_tensor_desc d = {TOPOS_F32, 2, {T, D}};
  g->x0 = topos_tape_input_desc(t, &d, "x0");
  topos_tensor_desc rd = {TOPOS_F32, 3, {T, c->rope_dim / 2, 1}}, rdw = {TOPOS_F32, 3, {T, c->rope_dim_swa / 2, 1}};
  g->cos = topos_tape_input_desc(t, &rd, "rope_cos");
  g->sin = topos_tape_input_desc(t, &rd, "rope_sin");
  const int own_rope = c->rope_base_swa != 0.0f && c->n_swa_layers > 0;
  if (!own_rope && c->n_swa_layers > 0 && c->rope_dim_swa != c->rope_dim)
    return tp_fail(TOPOS_ERR_INTERNAL, "llama: windowed blocks rotating %lld dimensions without tables of their own",
                   (long long)c->rope_dim_swa);
  g->cos_w = own_rope ? topos_tape_input_desc(t, &rdw, "rope_cos_window") : TOPOS_SYM_INVALID;
  g->sin_w = own_rope ? topos_tape_input_desc(t, &rdw, "rope_sin_window") : TOPOS_SYM_INVALID;
  if (c->attn_temp_scale != 0.0f) {
    topos_tensor_desc td = {TOPOS_F32, 1, {T}};
    g->temp = topos_tape_input_desc(t, &td, "attn_temp");
  }
  int cached = g->has_cache;
  tp_masks full, window;
  tp_mask_inputs(r, g, g->window_masks ? 0 : g->row_mask, "", &g->mask_c, &g->mask_n, &full);
  window = full;
  if (g->window_masks) tp_mask_inputs(r, g, g->row_mask, "_window", &g->mask_cw, &g->mask_nw, &window);
  topos_sym x = g->x0;
  if (m->embd_norm) x = tp_norm(r, x, T, m->embd_norm, m->embd_norm_b); /* bloom: the embedding's LayerNorm */
  topos_sym ple = m->ple_embd ? tp_ple_inputs(r, m, g) : TOPOS_SYM_INVALID; /* Gemma 4 */
  const topos_sym head_ids = c->mla_kv_rank ? tp_head_ids(r, c->n_heads) : TOPOS_SYM_INVALID;
  /* Gemma 3n: the residual is altup_streams streams [T, N, dim], each block
   * running on its prediction's active stream */
  topos_sym streams = c->altup_streams ? tp_altup_streams(r, m, x) : TOPOS_SYM_INVALID;
  /* Gemma 4: past the last block with a cache of its own, the blocks only
   * read earlier keys and values, so where a chunk's logits are its last
   * row's those blocks run for that row alone (the row's own ops, the same
   * bits); blocks from `cut` on are such blocks */
  int64_t cut = c->n_layers;
  if (g->logits_rows == TP_LOGITS_LAST && T > 1)
    while (cut > 1 && m->layers[cut - 1].kv_shared) --cut;
  const int64_t Tk = T; /* the chunk's keys */
  /* Any model: where the logits are the last row's and the last block is
   * an attention block of its own keys, that block computes its keys and
   * values for every row (the cache needs them) and the rest (q, the
   * attention, the output, the feed-forward) for the last row alone, as
   * llama.cpp's out_ids; -1: no such block */
  const tp_llama_layer *final = &m->layers[c->n_layers - 1];
  const int64_t final_cut = cut == c->n_layers && g->logits_rows == TP_LOGITS_LAST && T > 1 &&
                                    tp_llama_layer_attends(final) && !final->kv_shared && !final->ssm_in &&
                                    !c->mla_kv_rank && !c->altup_streams && c->alibi_max_bias == 0.0f
                                ? c->n_layers - 1
                                : -1;
  topos_sym cos_f = g->cos, sin_f = g->sin, cos_wf = g->cos_w, sin_wf = g->sin_w, temp = g->temp;
  tp_made_masks made[TP_MADE_MASKS]; /* masks of other shapes than the model's, made once */
  int n_made = 0;
  for (int64_t l = 0; l < c->n_layers; ++l) {
    const tp_llama_layer *L = &m->layers[l];
    const int64_t H = L->heads, KVH = L->kv_heads, hd = L->hd, G = KVH ? H / KVH : 1;
    r->hd = L->hd, r->rd = L->rd;
    if (l == cut) { /* the last row from here on (Gemma 3n: its streams; x is each block's prediction) */
      topos_sym *const rows[7] = {topos_sym_is_valid(streams) ? &streams : &x, &cos_f, &sin_f, &cos_wf, &sin_wf,
                                  &temp, &ple};
      tp_last_rows(r, rows, 7, Tk);
      T = r->T = 1;
    }
    const tp_masks *mk = L->windowed ? &window : &full;
    if (tp_llama_layer_attends(L))
      TP_TRY(tp_block_masks(r, g, made, &n_made, L, G, KVH, l >= cut || l == final_cut, Tk, &mk));
    const topos_sym mask_c_rows = mk->c_rows, mask_c = mk->c, mask_n_rows = mk->n_rows, mask_n = mk->n;
    topos_sym cos = L->windowed && own_rope ? cos_wf : cos_f;
    topos_sym sin = L->windowed && own_rope ? sin_wf : sin_f;
    int kv_ready = 0; /* tp_kv_prep done (the final block's cut) */
    char name[48];
    topos_dtype kvt = r->kv_dtype;
    topos_tensor_desc kd = {kvt, 3, {KVH, hd, C}}, vd = {kvt, 3, {KVH, C, hd}};
    if (kvt != TOPOS_F32) { /* 16-bit caches are read by qlinear: K rows, V transposed */
      kd = (topos_tensor_desc){kvt, 3, {KVH, C, hd}};
      vd = (topos_tensor_desc){kvt, 3, {KVH, hd, C}};
    }
    if (cached && tp_llama_layer_caches(L)) {
      snprintf(name, sizeof name, "k_cache.%d", (int)l);
      g->k_cache[l] = topos_tape_input_desc(t, &kd, name);
      snprintf(name, sizeof name, "v_cache.%d", (int)l);
      g->v_cache[l] = topos_tape_input_desc(t, &vd, name);
    }
    /* (Gemma 4's shared blocks: the cache and the chunk's keys of block kv_src) */
    const topos_sym k_cache = g->k_cache[L->kv_src], v_cache = g->v_cache[L->kv_src];
    const topos_sym pred = topos_sym_is_valid(streams) ? tp_altup_predict(r, L, streams) : TOPOS_SYM_INVALID;
    if (topos_sym_is_valid(pred)) x = tp_altup_active(r, pred); /* Gemma 3n: the block's input */

    topos_sym h = L->attn_norm || c->norm_weightless ? tp_norm(r, x, T, L->attn_norm, L->attn_norm_b)
                                                    : x; /* olmo2: the residual itself */
    if (L->ffn_only) { /* nemotron_h: a feed-forward alone, through the block's one norm */
      x = topos_tape_add(t, x, tp_ffn_all(r, L, h, h));
      continue;
    }
    if (L->conv_taps || (L->ssm_in && !L->wo)) { /* LFM2's short convolution or a recurrent mixer instead of attention */
      x = tp_block_out(r, L, x, h, L->ssm_in ? tp_ssm_mixer(r, g, L, l, h) : tp_shortconv(r, g, L, l, h));
      continue;
    }
    /* Falcon-40B: the attention reads a second norm of x, the feed-forward h */
    topos_sym ha = L->attn_norm_2 ? tp_norm(r, x, T, L->attn_norm_2, L->attn_norm_2_b) : h;
    topos_sym q, k, v;
    if (c->mla_kv_rank) {
      tp_mla_qkv(r, L, ha, cos, sin, head_ids, &q, &k, &v);
    } else if (L->kv_shared) { /* q alone: the keys and values are block kv_src's */
      q = topos_tape_qlinear(t, ha, tp_const(r, L->wq));
      k = v = TOPOS_SYM_INVALID;
    } else if (T == 1) { /* one row [q | k | v], cut in parts (views) */
      const int64_t qd = (c->attn_gate ? 2 : 1) * H * hd, kvd = KVH * hd;
      topos_sym qkv;
      if (L->attn_in_parts == 3) { /* back to back in the file: one product */
        qkv = topos_tape_qlinear(t, ha, tp_const(r, L->w_attn_in));
      } else { /* products joined (the qlinear_concat step: one dispatch) */
        topos_sym parts[3];
        size_t n = 0;
        if (L->attn_in_parts == 2) {
          parts[n++] = topos_tape_qlinear(t, ha, tp_const(r, L->w_attn_in));
        } else {
          parts[n++] = topos_tape_qlinear(t, ha, tp_const(r, L->wq));
          parts[n++] = topos_tape_qlinear(t, ha, tp_const(r, L->wk));
        }
        if (L->wv) parts[n++] = topos_tape_qlinear(t, ha, tp_const(r, L->wv));
        qkv = n > 1 ? topos_tape_concat(t, n, parts, 1) : parts[0];
      }
      q = topos_tape_narrow(t, qkv, 1, 0, qd);
      k = topos_tape_narrow(t, qkv, 1, qd, kvd);
      v = L->wv ? topos_tape_narrow(t, qkv, 1, qd + kvd, kvd) : k; /* (Gemma 4 without attn_v: v is k) */
    } else {
      k = topos_tape_qlinear(t, ha, tp_const(r, L->wk));
      v = L->wv ? topos_tape_qlinear(t, ha, tp_const(r, L->wv)) : k;
      if (l == final_cut) { /* the keys and values of every row, then the last row alone */
        tp_kv_prep(r, L, &k, &v, cos, sin);
        kv_ready = 1;
        topos_sym *const rows[7] = {&x, &h, &ha, &cos, &sin, &temp, &ple};
        tp_last_rows(r, rows, 7, Tk);
        T = r->T = 1;
      }
      q = topos_tape_qlinear(t, ha, tp_const(r, L->wq));
    }
    topos_sym gate = TOPOS_SYM_INVALID;
    if (c->attn_gate) { /* each head's q rows, then its gate's */
      const topos_sym qg = tp_reshape(r, q, 3, T, H, 2 * hd, 0);
      gate = topos_tape_sigmoid(t, tp_reshape(r, topos_tape_narrow(t, qg, 2, hd, hd), 2, T, H * hd, 0, 0));
      q = tp_reshape(r, topos_tape_narrow(t, qg, 2, 0, hd), 2, T, H * hd, 0, 0);
    }
    if (!c->mla_kv_rank) {
      if (!L->kv_shared && !kv_ready) tp_kv_prep(r, L, &k, &v, cos, sin);
      q = tp_q_prep(r, L, q, cos, sin);
    }
    if (L->kv_shared) {
      k = g->k_new[L->kv_src], v = g->v_new[L->kv_src];
    } else {
      g->k_new[l] = k;
      g->v_new[l] = v;
    }
    if (topos_sym_is_valid(temp) && (L->nope || !c->attn_temp_nope_only)) /* the temperature, per position */
      q = topos_tape_mul(t, q, topos_tape_broadcast_along(t, topos_tape_broadcast_along(t, temp, 1, H), 2, hd));
    q = topos_tape_mul(t, q, topos_tape_fill_like(t, q, c->attn_scale));
    /* q rows grouped by kv head: [KVH, G*T, hd], row g*T + t */
    q = tp_reshape(r, tp_permute(r, tp_reshape(r, q, 4, T, KVH, G, hd), 4, 1, 2, 0, 3), 3, KVH,
                   G * T, hd, 0);
    topos_sym o;
    /* attention sinks: one more logit per row, its head's, whose share of
     * the softmax goes nowhere: [KVH, G*T, 1] in the rows' order */
    topos_sym sink = TOPOS_SYM_INVALID;
    if (L->attn_sinks)
      sink = tp_reshape(r, topos_tape_broadcast_along(t, tp_reshape(r, tp_const(r, L->attn_sinks), 2, KVH, G, 0, 0), 2, T),
                        3, KVH, G * T, 1, 0);
    const size_t with_sink = L->attn_sinks ? 1 : 0;
    if (kvt == TOPOS_F32) {
      topos_sym kT = tp_permute(r, k, 3, 1, 2, 0, 0); /* [KVH, hd, T] */
      topos_sym s_n = topos_tape_add(t, tp_softcap(r, topos_tape_matmul(t, q, kT), cap), mask_n);
      topos_sym vT = tp_permute(r, v, 3, 1, 0, 2, 0); /* [KVH, T, hd] */
      if (cached) { /* the first S slots of the cache, as views */
        topos_sym kc = topos_tape_narrow(t, k_cache, 2, 0, S);
        topos_sym vc = topos_tape_narrow(t, v_cache, 1, 0, S);
        topos_sym s_c = topos_tape_add(t, tp_softcap(r, topos_tape_matmul(t, q, kc), cap), mask_c);
        topos_sym parts[3] = {s_c, s_n, sink};
        topos_sym p =
            topos_tape_exp(t, topos_tape_log_softmax(t, topos_tape_concat(t, 2 + with_sink, parts, 2), 2));
        topos_sym p_c = topos_tape_narrow(t, p, 2, 0, S), p_n = topos_tape_narrow(t, p, 2, S, Tk);
        o = topos_tape_add(t, topos_tape_matmul(t, p_c, vc), topos_tape_matmul(t, p_n, vT));
      } else { /* nothing cached yet: the chunk's own keys (and the sink) */
        topos_sym parts[2] = {s_n, sink};
        topos_sym all = with_sink ? topos_tape_concat(t, 2, parts, 2) : s_n;
        topos_sym p = topos_tape_exp(t, topos_tape_log_softmax(t, all, 2));
        o = topos_tape_matmul(t, with_sink ? topos_tape_narrow(t, p, 2, 0, Tk) : p, vT);
      }
    } else {
      topos_sym heads[TP_LLAMA_MAX_KV_HEADS];
      for (int64_t kh = 0; kh < KVH; ++kh) {
        topos_sym qh = tp_reshape(r, topos_tape_narrow(t, q, 0, kh, 1), 2, G * T, hd, 0, 0);
        topos_sym kn = tp_reshape(r, topos_tape_narrow(t, k, 1, kh, 1), 2, Tk, hd, 0, 0);
        topos_sym vn = topos_tape_transpose(
            t, tp_reshape(r, topos_tape_narrow(t, v, 1, kh, 1), 2, Tk, hd, 0, 0));
        topos_sym s_n = topos_tape_add(t, tp_softcap(r, topos_tape_qlinear(t, qh, kn), cap),
                                       tp_mask_head(r, mask_n_rows, mask_n, kh, G, Tk));
        topos_sym sink_h = with_sink ? tp_reshape(r, topos_tape_narrow(t, sink, 0, kh, 1), 2, G * T, 1, 0, 0)
                                     : TOPOS_SYM_INVALID;
        if (!cached) {
          topos_sym parts[2] = {s_n, sink_h};
          topos_sym all = with_sink ? topos_tape_concat(t, 2, parts, 1) : s_n;
          topos_sym p = topos_tape_exp(t, topos_tape_log_softmax(t, all, 1));
          heads[kh] = topos_tape_qlinear(t, with_sink ? topos_tape_narrow(t, p, 1, 0, Tk) : p, vn);
          continue;
        }
        topos_sym kc = topos_tape_narrow(t, topos_tape_narrow(t, k_cache, 0, kh, 1), 1, 0, S);
        topos_sym vc = topos_tape_narrow(t, topos_tape_narrow(t, v_cache, 0, kh, 1), 2, 0, S);
        kc = tp_reshape(r, kc, 2, S, hd, 0, 0);
        vc = tp_reshape(r, vc, 2, hd, S, 0, 0);
        topos_sym s_c = topos_tape_add(t, tp_softcap(r, topos_tape_qlinear(t, qh, kc), cap),
                                       tp_mask_head(r, mask_c_rows, mask_c, kh, G, S));
        topos_sym parts[3] = {s_c, s_n, sink_h};
        topos_sym p =
            topos_tape_exp(t, topos_tape_log_softmax(t, topos_tape_concat(t, 2 + with_sink, parts, 1), 1));
        topos_sym p_c = topos_tape_narrow(t, p, 1, 0, S), p_n = topos_tape_narrow(t, p, 1, S, Tk);
        heads[kh] =
            topos_tape_add(t, topos_tape_qlinear(t, p_c, vc), topos_tape_qlinear(t, p_n, vn));
      }
      o = topos_tape_concat(t, (size_t)KVH, heads, 0); /* [KVH*G*T, hd] */
    }
    o = tp_reshape(r, tp_permute(r, tp_reshape(r, o, 4, KVH, G, T, hd), 4, 2, 0, 1, 3), 2, T, H * hd, 0,
                   0);
    if (c->mla_kv_rank) o = tp_mla_out(r, L, o, head_ids);
    if (topos_sym_is_valid(gate)) o = topos_tape_mul(t, o, gate); /* qwen3next: the heads' outputs gated */
    o = tp_bias(r, topos_tape_qlinear(t, o, tp_const(r, L->wo)), L->bo, T);
    if (L->ssm_in) o = topos_tape_add(t, o, tp_ssm_mixer(r, g, L, l, h)); /* falcon-h1: the mixer beside it */
    if (topos_sym_is_valid(pred)) { /* Gemma 3n: Laurel, the feed-forward, the streams corrected */
      streams = tp_gemma3n_block(r, L, pred, x, h, o, ple, l);
      continue;
    }
    x = tp_block_out(r, L, x, h, o);
    if (L->ple_gate) x = tp_ple_block(r, L, x, ple, l); /* Gemma 4 */
    if (L->out_scaled) x = topos_tape_mul(t, x, topos_tape_fill_like(t, x, L->out_scale));
  }
  if (g->logits_rows == TP_LOGITS_NONE) {
    g->logits = TOPOS_SYM_INVALID;
    return topos_tape_status(t);
  }
  int64_t rows = T;
  if (g->logits_rows == TP_LOGITS_LAST && T > 1) {
    if (topos_sym_is_valid(streams)) streams = topos_tape_narrow(t, streams, 0, T - 1, 1);
    else x = topos_tape_narrow(t, x, 0, T - 1, 1);
    rows = 1;
  }
  if (topos_sym_is_valid(streams)) { /* Gemma 3n: the streams merged into one */
    r->T = rows;
    x = tp_altup_merge(r, m, streams);
  }
  x = tp_norm(r, x, rows, m->output_norm, m->output_norm_b);
  topos_sym logits = tp_bias(r, topos_tape_qlinear(t, x, tp_const(r, m->output)), m->output_b, rows);
  logits = tp_scale(r, logits, c->logit_scale != 1.0f ? 1.0f / c->logit_scale : 1.0f);
  g->logits = tp_softcap(r, logits, c->final_softcap);
  return topos_tape_status(t);
}

topos_status tp_llama_graph_build(const topos_llama *m, int64_t T, int64_t C, int64_t span,
                                  tp_logits_rows logits_rows, int has_cache, int row_mask, int window_masks,
                                  topos_dtype kv_dtype, topos_numerics numerics, tp_llama_graph *g) {
  memset(g, 0, sizeof *g);
  g->T = T;
  g->logits_rows = logits_rows;
  g->has_cache = has_cache;
  g->row_mask = has_cache && row_mask;
  g->window_masks = window_masks;
  g->span = span;
  size_t L = (size_t)m->config.n_layers;
  topos_sym *syms = calloc((8 + TP_SINK_KINDS) * L, sizeof *syms);
  g->sink_at = calloc(TP_SINK_KINDS * L, sizeof *g->sink_at);
  if (!syms || !g->sink_at) {
    free(syms);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: graph symbols");
  }
  for (size_t i = 0; i < (8 + TP_SINK_KINDS) * L; ++i) syms[i] = TOPOS_SYM_INVALID;
  g->k_cache = syms;
  g->v_cache = syms + L;
  g->k_new = syms + 2 * L;
  g->v_new = syms + 3 * L;
  g->conv_state = syms + 4 * L;
  g->conv_next = syms + 5 * L;
  g->ssm_state = syms + 6 * L;
  g->ssm_next = syms + 7 * L;
  g->sinks = syms + 8 * L;
  tp_rec r = {NULL, &m->config, T, C, span, kv_dtype, m->config.head_dim, m->config.rope_dim};
  topos_status st = topos_tape_new(&r.t);
  if (st == TOPOS_OK) st = tp_record(m, &r, g);
  topos_network *net = NULL;
  if (st == TOPOS_OK) {
    st = topos_tape_seal(&r.t, &net);
  } else {
    topos_tape_free(r.t);
  }
  if (st == TOPOS_OK) {
    /* the chunk's keys and values and the recurrent blocks' states are
     * sinks, copied into the context as each is computed: their arena
     * ranges are reused for the rest of the chunk */
    for (size_t l = 0; l < L; ++l) {
      const topos_sym kinds[TP_SINK_KINDS] = {g->k_new[l], g->v_new[l], g->conv_next[l], g->ssm_next[l]};
      for (int kind = 0; kind < TP_SINK_KINDS; ++kind)
        if (topos_sym_is_valid(kinds[kind])) {
          g->sinks[g->n_sinks] = kinds[kind];
          g->sink_at[g->n_sinks++] = (int64_t)(kind * L + l);
        }
    }
    const size_t head = logits_rows == TP_LOGITS_NONE ? 0 : 1;
    topos_request req = {&g->logits, head, NULL, 0, 0, numerics};
    st = topos_plan_compile_sinks(net, &req, g->sinks, g->n_sinks, &g->plan);
  }
  topos_network_free(net);
  if (st != TOPOS_OK) {
    tp_llama_graph_free(g);
    return tp_fail_context(st, "llama: recording the %lld-token graph", (long long)T);
  }
  return TOPOS_OK;
}

void tp_llama_graph_free(tp_llama_graph *g) {
  if (!g) return;
  topos_plan_free(g->plan);
  free(g->k_cache);
  free(g->sink_at);
  memset(g, 0, sizeof *g);
}
