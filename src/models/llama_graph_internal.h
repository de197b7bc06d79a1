/* Internal: what the llama graph's recorders share (llama_graph.c: the
 * attention blocks and the whole chunk; llama_recurrent.c: the blocks that
 * carry a state from chunk to chunk instead of a cache). */
#ifndef TP_MODELS_LLAMA_GRAPH_INTERNAL_H
#define TP_MODELS_LLAMA_GRAPH_INTERNAL_H

#include "models/llama_internal.h"
#include "topos/graph.h"

typedef struct tp_rec {
  topos_tape *t;
  const topos_llama_config *c;
  int64_t T, C, S; /* chunk, cache row length (the capacity, padded), cache slots attended (span) */
  topos_dtype kv_dtype;
  int64_t hd, rd; /* the block being recorded: its head width and rotated dimensions */
} tp_rec;

static inline topos_sym tp_const(tp_rec *r, topos_tensor *w) { return topos_tape_constant(r->t, w); }

static inline topos_sym tp_reshape(tp_rec *r, topos_sym a, int rank, int64_t d0, int64_t d1, int64_t d2,
                                   int64_t d3) {
  int64_t s[4] = {d0, d1, d2, d3};
  return topos_tape_reshape(r->t, a, rank, s);
}

/* x [rows, dim] * rsqrt(mean(x^2) + eps) * w (w [dim]; NULL: none) */
topos_sym tp_rmsnorm_n(tp_rec *r, topos_sym x, int64_t rows, int64_t dim, topos_tensor *w);
/* y [rows, n] + b (NULL: y) */
topos_sym tp_bias(tp_rec *r, topos_sym y, topos_tensor *b, int64_t rows);

/* s times v (v 1: s) */
topos_sym tp_scale(tp_rec *r, topos_sym s, float v);
/* Block L's dense feed-forward of h [T, dim]; its mixture's output for h,
 * the router reading rin (llama_graph.c) */
topos_sym tp_ffn(tp_rec *r, const tp_llama_layer *L, topos_sym h);
topos_sym tp_experts(tp_rec *r, const tp_llama_layer *L, topos_sym h, topos_sym rin);

/* Gemma 4 (llama_graph_gemma4.c): the chunk's per-layer embeddings [T,
 * n_layers, ple_dim] (recording the input g->ple_rows); x plus block l's
 * per-layer embedding branch; a mixture block's feed-forward of its residual x */
topos_sym tp_ple_inputs(tp_rec *r, const topos_llama *m, tp_llama_graph *g);
topos_sym tp_ple_block(tp_rec *r, const tp_llama_layer *L, topos_sym x, topos_sym ple, int64_t l);
topos_sym tp_gemma4_ffn(tp_rec *r, const tp_llama_layer *L, topos_sym x);
/* that branch alone: norm(proj(GELU(inp_gate x) * e_l)) */
topos_sym tp_ple_branch(tp_rec *r, const tp_llama_layer *L, topos_sym x, topos_sym ple, int64_t l);
/* ids [T, H] with ids[t, h] = h (qlinear_id then takes matrix h of [H, n, k] for row (t, h)) */
topos_sym tp_head_ids(tp_rec *r, int64_t H);

/* Gemma 3n (llama_graph_gemma3n.c), its residual N streams s [T, N, dim]:
 * the streams made from the embeddings x [T, dim]; merged back into one
 * [T, dim] after the last block; block L's prediction of them and its
 * active stream [T, dim]; the block's end from the prediction pred, its
 * active stream a, a's norm h and the attention's output o: Laurel, the
 * feed-forward, the correction and (the file having them) block l's
 * per-layer embeddings, giving the next streams. */
topos_sym tp_altup_streams(tp_rec *r, const topos_llama *m, topos_sym x);
topos_sym tp_altup_merge(tp_rec *r, const topos_llama *m, topos_sym s);
topos_sym tp_altup_predict(tp_rec *r, const tp_llama_layer *L, topos_sym s);
topos_sym tp_altup_active(tp_rec *r, topos_sym pred);
topos_sym tp_gemma3n_block(tp_rec *r, const tp_llama_layer *L, topos_sym pred, topos_sym a, topos_sym h, topos_sym o,
                           topos_sym ple, int64_t l);
/* the gate g [T, ff] less its mean plus std_mul standard deviations (n - 1), below 0 cut (Gemma 3n's sparsity) */
topos_sym tp_sparse_gate(tp_rec *r, topos_sym g, int64_t ff, float std_mul);

/* Block l's token mixer over its norm h [T, dim] -> [T, dim], recording the
 * state inputs and sinks it needs in g: LFM2's short convolution; a Mamba-1,
 * Mamba-2 or gated-DeltaNet mixer, as the config says (llama_recurrent.c) */
topos_sym tp_shortconv(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h);
topos_sym tp_ssm_mixer(tp_rec *r, tp_llama_graph *g, const tp_llama_layer *L, int64_t l, topos_sym h);

#endif
