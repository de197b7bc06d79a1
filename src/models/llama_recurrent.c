/* The llama graph's recurrent token mixers: blocks that carry a state from
 * one chunk to the next instead of a key/value cache. Each takes its state
 * as an input (conv_state.l, ssm_state.l) and gives the state after the
 * chunk as a sink (conv_next, ssm_next); the context keeps two copies and
 * alternates them (llama_context.c). Every token's arithmetic is the same
 * floats in the same order whatever chunk it is in, so decoding keeps the
 * bits of the whole prompt's forward. */
#include <math.h>
#include <stdio.h>

#include "models/llama_graph_internal.h"

/* The K - 1 rows of width w before the chunk (input `name`.l, zeros before
 * position 0) then the chunk's rows v [T, w]: the next chunk's K - 1 rows
 * are a sink, *next; returns sum over taps j in order of taps[j] * rows[t +
 * j], per channel: a causal depthwise convolution [T, w]. */
static topos_sym tp_causal_conv(tp_rec *r, const char *name, int64_t l, topos_sym v, int64_t K, int64_t w,
                                topos_tensor *taps_w, topos_sym *state, topos_sym *next) {
  topos_tape *t = r->t;
  const int64_t T = r->T;
  char label[48];
  snprintf(label, sizeof label, "%s.%d", name, (int)l);
  const topos_tensor_desc sd = {TOPOS_F32, 2, {K - 1, w}};
  *state = topos_tape_input_desc(t, &sd, label);
  const topos_sym parts[2] = {*state, v};
  const topos_sym rows = topos_tape_concat(t, 2, parts, 0); /* [K - 1 + T, w] */
  *next = topos_tape_narrow(t, rows, 0, T, K - 1);
  const topos_sym taps = tp_const(r, taps_w);
  topos_sym y = TOPOS_SYM_INVALID;
  for (int64_t j = 0; j < K; ++j) {
    const topos_sym tap = tp_reshape(r, topos_tape_narrow(t, taps, 0, j, 1), 1, w, 0, 0, 0);
    const topos_sym term = topos_tape_mul(t, topos_tape_narrow(t, rows, 0, j, T), topos_tape_broadcast_along(t, tap, 0, T));
    y = j == 0 ? term : topos_tape_add(t, y, term);
  }
  return y;
}

/* LFM2's short convolution of block l over the chunk (config.conv_len K):
 * b, c, v = the thirds of qlinear(h, in_proj); y = the causal convolution
 * of the (b v) rows; out = qlinear(c * y, out_proj). */
topos_sym tp_shortconv(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  topos_tape *t = r->t;
  const int64_t D = r->c->dim;
  const topos_sym bcv = topos_tape_qlinear(t, h, tp_const(r, L->conv_in));
  const topos_sym b = topos_tape_narrow(t, bcv, 1, 0, D), gate = topos_tape_narrow(t, bcv, 1, D, D);
  const topos_sym v = topos_tape_narrow(t, bcv, 1, 2 * D, D);
  const topos_sym y = tp_causal_conv(r, "conv_state", l, topos_tape_mul(t, b, v), r->c->conv_len, D, L->conv_taps,
                                     &g->conv_state[l], &g->conv_next[l]);
  return topos_tape_qlinear(t, topos_tape_mul(t, gate, y), tp_const(r, L->conv_out));
}

/* softplus(x) = max(x, 0) + ln(1 + e^-|x|): no overflow at any x */
static topos_sym tp_softplus(tp_rec *r, topos_sym x) {
  topos_tape *t = r->t;
  const topos_sym nabs = topos_tape_neg(t, topos_tape_maximum(t, x, topos_tape_neg(t, x)));
  const topos_sym e = topos_tape_exp(t, nabs);
  return topos_tape_add(t, topos_tape_relu(t, x), topos_tape_ln(t, topos_tape_add(t, e, topos_tape_fill_like(t, e, 1.0))));
}

/* block l's scan state before the chunk, input ssm_state.l [n, heads, p] */
static topos_sym tp_scan_state(tp_rec *r, tp_llama_graph *g, int64_t l, int64_t n, int64_t heads, int64_t p) {
  char label[48];
  snprintf(label, sizeof label, "ssm_state.%d", (int)l);
  const topos_tensor_desc sd = {TOPOS_F32, 3, {n, heads, p}};
  return g->ssm_state[l] = topos_tape_input_desc(r->t, &sd, label);
}

/* A Mamba-1 mixer of block l over the chunk (config.ssm_*, ssm_dt_rank R;
 * D channels, each its own head, N state entries, K taps):
 *   x, z = halves of qlinear(h, ssm_in)
 *   x = SiLU(causal convolution of x + ssm_conv1d.bias)
 *   dt, B, C = parts of qlinear(x, ssm_x) (R, N, N wide), each RMS-normed
 *   where the file says (ssm_dt_b_c_rms) or has the norms' weights
 *   dt = softplus(qlinear(dt, ssm_dt) + bias); the scan of x dt with the
 *   decays exp(dt[h] A[h, n]), one per state entry (the chunk's [T, D, N])
 *   y = (scan + x D) * SiLU(z), out = qlinear(y, ssm_out) */
static topos_sym tp_mamba1(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, D = c->ssm_inner, N = c->ssm_state, R = c->ssm_dt_rank;
  const topos_sym xz = topos_tape_qlinear(t, h, tp_const(r, L->ssm_in));
  const topos_sym z = topos_tape_narrow(t, xz, 1, D, D);
  topos_sym x = tp_causal_conv(r, "conv_state", l, topos_tape_narrow(t, xz, 1, 0, D), c->ssm_conv, D, L->ssm_taps,
                               &g->conv_state[l], &g->conv_next[l]);
  x = topos_tape_silu(t, tp_bias(r, x, L->ssm_conv_b, T));
  const topos_sym xdb = topos_tape_qlinear(t, x, tp_const(r, L->ssm_x));
  topos_sym dt = topos_tape_narrow(t, xdb, 1, 0, R), b = topos_tape_narrow(t, xdb, 1, R, N);
  topos_sym cc = topos_tape_narrow(t, xdb, 1, R + N, N);
  if (c->ssm_dt_b_c_rms || (L->ssm_dt_norm && L->ssm_b_norm && L->ssm_c_norm)) {
    dt = tp_rmsnorm_n(r, dt, T, R, L->ssm_dt_norm);
    b = tp_rmsnorm_n(r, b, T, N, L->ssm_b_norm);
    cc = tp_rmsnorm_n(r, cc, T, N, L->ssm_c_norm);
  }
  dt = tp_softplus(r, tp_bias(r, topos_tape_qlinear(t, dt, tp_const(r, L->ssm_dt)), L->ssm_dt_b, T)); /* [T, D] */
  const topos_sym decay = topos_tape_exp(t, topos_tape_mul(t, topos_tape_broadcast_along(t, dt, 2, N),
                                                           topos_tape_broadcast_along(t, tp_const(r, L->ssm_a), 0, T)));
  const topos_sym parts[2] = {tp_reshape(r, topos_tape_mul(t, x, dt), 3, T, D, 1, 0), decay};
  const topos_sym bcs[2] = {b, cc};
  const topos_sym scan = topos_tape_ssm_scan(t, tp_scan_state(r, g, l, N, D, 1), topos_tape_concat(t, 2, parts, 2),
                                             tp_reshape(r, topos_tape_concat(t, 2, bcs, 1), 4, T, 2, 1, N));
  g->ssm_next[l] = topos_tape_narrow(t, scan, 0, T, N);
  const topos_sym skip = topos_tape_broadcast_along(t, tp_const(r, L->ssm_d), 0, T);
  topos_sym y = topos_tape_add(t, tp_reshape(r, topos_tape_narrow(t, scan, 0, 0, T), 2, T, D, 0, 0),
                               topos_tape_mul(t, x, skip));
  y = topos_tape_mul(t, y, topos_tape_silu(t, z));
  return topos_tape_qlinear(t, y, tp_const(r, L->ssm_out));
}

/* A Mamba-2 mixer of block l over the chunk (config.ssm_*; D inner
 * channels in H heads of P, G groups of N state entries, K taps):
 *   z, xBC, dt = parts of qlinear(h, ssm_in) (D, D + 2 G N, H wide)
 *   xBC = SiLU(causal convolution of xBC (+ ssm_conv1d.bias)): x [T, H, P],
 *         B and C [T, 2, G, N]
 *   dt = softplus(dt + ssm_dt.bias); the scan (ssm_scan) of x dt with
 *   decays exp(dt A), B and C from the state before the chunk (input
 *   ssm_state.l; the state after it the sink ssm_next)
 *   y = (scan + x D) * SiLU(z), RMS-normed per group of D / G (ssm_norm, where the block has it),
 *   out = qlinear(y, ssm_out) */
static topos_sym tp_mamba2(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, D = c->ssm_inner, N = c->ssm_state, H = c->ssm_heads, G = c->ssm_groups, P = D / H;
  const int64_t CD = tp_llama_ssm_conv_width(c);
  const topos_sym zxbcdt = topos_tape_qlinear(t, h, tp_const(r, L->ssm_in));
  const topos_sym z = topos_tape_narrow(t, zxbcdt, 1, 0, D);
  topos_sym xbc = tp_causal_conv(r, "conv_state", l, topos_tape_narrow(t, zxbcdt, 1, D, CD), c->ssm_conv, CD,
                                 L->ssm_taps, &g->conv_state[l], &g->conv_next[l]);
  xbc = tp_bias(r, xbc, L->ssm_conv_b, T); /* (where the file has one) */
  xbc = topos_tape_silu(t, xbc);
  const topos_sym x = tp_reshape(r, topos_tape_narrow(t, xbc, 1, 0, D), 3, T, H, P, 0);
  const topos_sym bc = tp_reshape(r, topos_tape_narrow(t, xbc, 1, D, 2 * G * N), 4, T, 2, G, N);
  const topos_sym dt = tp_softplus(r, tp_bias(r, topos_tape_narrow(t, zxbcdt, 1, D + CD, H), L->ssm_dt_b, T));
  const topos_sym decay = topos_tape_exp(t, topos_tape_mul(t, dt, topos_tape_broadcast_along(t, tp_const(r, L->ssm_a), 0, T)));
  const topos_sym parts[2] = {topos_tape_mul(t, x, topos_tape_broadcast_along(t, dt, 2, P)),
                              tp_reshape(r, decay, 3, T, H, 1, 0)};
  const topos_sym scan = topos_tape_ssm_scan(t, tp_scan_state(r, g, l, N, H, P), topos_tape_concat(t, 2, parts, 2), bc);
  g->ssm_next[l] = topos_tape_narrow(t, scan, 0, T, N);
  const topos_sym skip = topos_tape_broadcast_along(t, topos_tape_broadcast_along(t, tp_const(r, L->ssm_d), 0, T), 2, P);
  topos_sym y = topos_tape_add(t, topos_tape_narrow(t, scan, 0, 0, T), topos_tape_mul(t, x, skip));
  y = topos_tape_mul(t, tp_reshape(r, y, 2, T, D, 0, 0), topos_tape_silu(t, z));
  if (L->ssm_norm) { /* (Falcon-H1-0.5B has none) */
    y = tp_reshape(r, tp_rmsnorm_n(r, tp_reshape(r, y, 2, T * G, D / G, 0, 0), T * G, D / G, NULL), 2, T, D, 0, 0);
    y = topos_tape_mul(t, y, topos_tape_broadcast_along(t, tp_const(r, L->ssm_norm), 0, T));
  }
  return topos_tape_qlinear(t, y, tp_const(r, L->ssm_out));
}

/* each row of x [rows, n] times 1 / sqrt(sum of its squares + eps): the
 * delta rule's L2 norm of q and k (eps inside the root, as llama.cpp's) */
static topos_sym tp_l2norm(tp_rec *r, topos_sym x, int64_t n) {
  topos_tape *t = r->t;
  const topos_sym ss = topos_tape_sum_along(t, topos_tape_mul(t, x, x), 1);
  const topos_sym den = topos_tape_sqrt(t, topos_tape_add(t, ss, topos_tape_fill_like(t, ss, r->c->rms_eps)));
  const topos_sym inv = topos_tape_div(t, topos_tape_fill_like(t, den, 1.0), den);
  return topos_tape_mul(t, x, topos_tape_broadcast_along(t, inv, 1, n));
}

/* The q and k heads of a convolved row x [T, ...] (heads of N from column
 * 0, then as many from column heads N), each L2-normed, q times 1 /
 * sqrt(N): [T, 2, heads N], q then k */
static topos_sym tp_delta_qk(tp_rec *r, topos_sym x, int64_t heads, int64_t N) {
  topos_tape *t = r->t;
  const int64_t T = r->T, W = heads * N;
  topos_sym q = tp_l2norm(r, tp_reshape(r, topos_tape_narrow(t, x, 1, 0, W), 2, T * heads, N, 0, 0), N);
  q = topos_tape_mul(t, q, topos_tape_fill_like(t, q, 1.0 / sqrt((double)N)));
  const topos_sym k = tp_l2norm(r, tp_reshape(r, topos_tape_narrow(t, x, 1, W, W), 2, T * heads, N, 0, 0), N);
  const topos_sym qks[2] = {tp_reshape(r, q, 3, T, 1, W, 0), tp_reshape(r, k, 3, T, 1, W, 0)};
  return topos_tape_concat(t, 2, qks, 1);
}

/* Block l's delta rule (delta_scan) over values v [T, H, N], decays [T, H,
 * 1 or N], beta [T, H] and qk [T, 2, G, N] (config.ssm_heads H of
 * config.ssm_state N) from the state before the chunk (input ssm_state.l;
 * the state after it, the sink ssm_next): each head's output RMS-normed by
 * ssm_norm, [T, H N] */
static topos_sym tp_delta_rule(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym v,
                               topos_sym decay, topos_sym beta, topos_sym qk) {
  topos_tape *t = r->t;
  const int64_t T = r->T, H = r->c->ssm_heads, N = r->c->ssm_state;
  const topos_sym vab[3] = {v, decay, tp_reshape(r, beta, 3, T, H, 1, 0)};
  const topos_sym scan =
      topos_tape_delta_scan(t, tp_scan_state(r, g, l, N, H, N), topos_tape_concat(t, 3, vab, 2), qk);
  g->ssm_next[l] = topos_tape_narrow(t, scan, 0, T, N);
  const topos_sym y = tp_reshape(r, topos_tape_narrow(t, scan, 0, 0, T), 2, T * H, N, 0, 0);
  return tp_reshape(r, tp_rmsnorm_n(r, y, T * H, N, L->ssm_norm), 2, T, H * N, 0, 0);
}

/* A gated-DeltaNet mixer of block l over the chunk (config.ssm_*: G key
 * heads and H value heads, each N wide, KD = G N, VD = H N, K taps):
 *   q, k, v = parts of qlinear(h, attn_qkv) (KD, KD, VD wide), z =
 *   qlinear(h, attn_gate) (older qwen3next files: one ssm_in, each key
 *   head's q, k, values and z together)
 *   q, k, v = SiLU(causal convolution of q k v); q, k L2-normed per head,
 *   q times 1 / sqrt(N)
 *   beta = sigmoid(h . ssm_beta), decay = exp(softplus(h . ssm_alpha +
 *   ssm_dt.bias) ssm_a) per value head (qwen3next's ssm_ba: each key
 *   head's betas, then its alphas)
 *   y = the delta rule (delta_scan) from the state before the chunk, value
 *   head h reading key head h / (H / G) (qwen3next) or h % G (qwen35: the
 *   key heads broadcast to H)
 *   out = qlinear(RMS norm of each head of y (ssm_norm) * SiLU(z), ssm_out) */
static topos_sym tp_gated_delta(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, N = c->ssm_state, H = c->ssm_heads, G = c->ssm_groups, R = H / G;
  const int64_t KD = G * N, VD = c->ssm_inner;
  /* the products of h (in, z, beta, alpha; NULL ones absent): one dispatch
   * when decoding (a concatenation of products: the qlinear_concat step) */
  topos_tensor *const w[4] = {L->ssm_in, L->ssm_z, L->ssm_beta, L->ssm_alpha};
  topos_sym prod[4] = {TOPOS_SYM_INVALID, TOPOS_SYM_INVALID, TOPOS_SYM_INVALID, TOPOS_SYM_INVALID}, parts[4];
  size_t n_parts = 0;
  for (int i = 0; i < 4; ++i)
    if (w[i]) parts[n_parts++] = prod[i] = topos_tape_qlinear(t, h, tp_const(r, w[i]));
  if (T == 1) {
    const topos_sym all = topos_tape_concat(t, n_parts, parts, 1);
    int64_t at = 0;
    for (int i = 0; i < 4; ++i)
      if (w[i]) {
        const int64_t rows = topos_tensor_shape(w[i])[0];
        prod[i] = topos_tape_narrow(t, all, 1, at, rows);
        at += rows;
      }
  }
  topos_sym qkv, z, b, a;
  if (L->ssm_z) {
    qkv = prod[0];
    z = prod[1];
  } else {
    const topos_sym m = tp_reshape(r, prod[0], 3, T, G, 2 * N + 2 * R * N, 0);
    const topos_sym qkvs[3] = {tp_reshape(r, topos_tape_narrow(t, m, 2, 0, N), 2, T, KD, 0, 0),
                               tp_reshape(r, topos_tape_narrow(t, m, 2, N, N), 2, T, KD, 0, 0),
                               tp_reshape(r, topos_tape_narrow(t, m, 2, 2 * N, R * N), 2, T, VD, 0, 0)};
    qkv = topos_tape_concat(t, 3, qkvs, 1);
    z = tp_reshape(r, topos_tape_narrow(t, m, 2, 2 * N + R * N, R * N), 2, T, VD, 0, 0);
  }
  if (L->ssm_alpha) {
    b = prod[2];
    a = prod[3];
  } else {
    const topos_sym ba = tp_reshape(r, prod[2], 3, T, G, 2 * R, 0);
    b = tp_reshape(r, topos_tape_narrow(t, ba, 2, 0, R), 2, T, H, 0, 0);
    a = tp_reshape(r, topos_tape_narrow(t, ba, 2, R, R), 2, T, H, 0, 0);
  }
  const topos_sym beta = topos_tape_sigmoid(t, b);
  const topos_sym decay = topos_tape_exp(t, topos_tape_mul(t, tp_softplus(r, tp_bias(r, a, L->ssm_dt_b, T)),
                                                           topos_tape_broadcast_along(t, tp_const(r, L->ssm_a), 0, T)));
  const topos_sym x = topos_tape_silu(t, tp_causal_conv(r, "conv_state", l, qkv, c->ssm_conv, 2 * KD + VD,
                                                        L->ssm_taps, &g->conv_state[l], &g->conv_next[l]));
  topos_sym qk = tp_delta_qk(r, x, G, N); /* [T, 2, KD] */
  if (c->ssm_delta_tiled && R > 1) /* the G key heads repeated R times: head h reads h % G */
    qk = topos_tape_broadcast_along(t, tp_reshape(r, qk, 2, 2 * T, KD, 0, 0), 1, R);
  qk = tp_reshape(r, qk, 4, T, 2, c->ssm_delta_tiled ? H : G, N);
  const topos_sym v = tp_reshape(r, topos_tape_narrow(t, x, 1, 2 * KD, VD), 3, T, H, N, 0);
  topos_sym y = tp_delta_rule(r, g, L, l, v, tp_reshape(r, decay, 3, T, H, 1, 0), beta, qk);
  y = topos_tape_mul(t, y, topos_tape_silu(t, z));
  return topos_tape_qlinear(t, y, tp_const(r, L->ssm_out));
}

/* qlinear(qlinear(h, a), b): a low-rank product pair (Kimi's f and g) */
static topos_sym tp_low_rank(tp_rec *r, topos_sym h, topos_tensor *a, topos_tensor *b) {
  return topos_tape_qlinear(r->t, topos_tape_qlinear(r->t, h, tp_const(r, a)), tp_const(r, b));
}

/* A Kimi Delta Attention mixer of block l over the chunk (H heads of hd =
 * config.ssm_state, D = H hd, K taps):
 *   q, k, v = qlinear(h, attn_q / attn_k / attn_v), SiLU of each one's causal
 *   convolution (one over q | k | v, their taps side by side); q, k L2-normed
 *   per head, q times 1 / sqrt(hd)
 *   decay = exp(softplus(qlinear(qlinear(h, f_a), f_b) + dt_bias) A[head]):
 *   one per key entry; beta = sigmoid(h . ssm_beta) per head
 *   y = the delta rule (delta_scan, a decay per entry) from the state before
 *   the chunk; out = qlinear(RMS norm of each head of y (ssm_norm) *
 *   sigmoid(qlinear(qlinear(h, g_a), g_b)), attn_output) */
static topos_sym tp_kda(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, H = c->ssm_heads, N = c->ssm_state, D = H * N;
  const topos_sym proj[3] = {topos_tape_qlinear(t, h, tp_const(r, L->ssm_in)),
                             topos_tape_qlinear(t, h, tp_const(r, L->ssm_k)),
                             topos_tape_qlinear(t, h, tp_const(r, L->ssm_v))}; /* one dispatch decoding */
  const topos_sym x = topos_tape_silu(t, tp_causal_conv(r, "conv_state", l, topos_tape_concat(t, 3, proj, 1),
                                                        c->ssm_conv, 3 * D, L->ssm_taps, &g->conv_state[l],
                                                        &g->conv_next[l]));
  const topos_sym qk = tp_reshape(r, tp_delta_qk(r, x, H, N), 4, T, 2, H, N);
  const topos_sym gate = tp_softplus(r, tp_bias(r, tp_low_rank(r, h, L->ssm_f_a, L->ssm_f_b), L->ssm_dt_b, T));
  const topos_sym A = topos_tape_broadcast_along(t, topos_tape_broadcast_along(t, tp_const(r, L->ssm_a), 0, T), 2, N);
  const topos_sym decay = topos_tape_exp(t, topos_tape_mul(t, tp_reshape(r, gate, 3, T, H, N, 0), A));
  const topos_sym beta = topos_tape_sigmoid(t, topos_tape_qlinear(t, h, tp_const(r, L->ssm_beta)));
  const topos_sym v = tp_reshape(r, topos_tape_narrow(t, x, 1, 2 * D, D), 3, T, H, N, 0);
  topos_sym y = tp_delta_rule(r, g, L, l, v, decay, beta, qk);
  y = topos_tape_mul(t, y, topos_tape_sigmoid(t, tp_low_rank(r, h, L->ssm_g_a, L->ssm_g_b)));
  return topos_tape_qlinear(t, y, tp_const(r, L->ssm_out));
}

topos_sym tp_ssm_mixer(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h) {
  if (r->c->ssm_kda) return tp_kda(r, g, L, l, h);
  if (r->c->ssm_delta) return tp_gated_delta(r, g, L, l, h);
  return r->c->ssm_dt_rank ? tp_mamba1(r, g, L, l, h) : tp_mamba2(r, g, L, l, h);
}
