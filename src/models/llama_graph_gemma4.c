/* Gemma 4's parts of the llama graph (llama_gemma4.c reads them): the
 * per-layer embeddings and the mixtures' two feed-forwards. */
#include <math.h>

#include "models/llama_graph_internal.h"

/* Gemma 4's per-layer embeddings of the chunk, [T, n_layers, ple_dim]: the
 * input rows (per_layer_token_embd's rows times sqrt(ple_dim), the context
 * fills them) plus the RMS-normalised projection of the scaled embeddings
 * x0 times 1 / sqrt(dim), all times 1 / sqrt(2), as llama.cpp's
 * project_per_layer_inputs */
topos_sym tp_ple_inputs(tp_rec *r, const topos_llama *m, tp_llama_graph *g) {
  topos_tape *t = r->t;
  const topos_llama_config *c = r->c;
  const int64_t T = r->T, NL = c->n_layers, P = c->ple_dim;
  topos_tensor_desc d = {TOPOS_F32, 2, {T, NL * P}};
  g->ple_rows = topos_tape_input_desc(t, &d, "ple_rows");
  topos_sym proj = topos_tape_qlinear(t, g->x0, tp_const(r, m->ple_model_proj));
  proj = tp_scale(r, proj, 1.0f / sqrtf((float)c->dim));
  proj = tp_rmsnorm_n(r, tp_reshape(r, proj, 2, T * NL, P, 0, 0), T * NL, P, m->ple_proj_norm);
  topos_sym sum = topos_tape_add(t, proj, tp_reshape(r, g->ple_rows, 2, T * NL, P, 0, 0));
  return tp_reshape(r, tp_scale(r, sum, 1.0f / sqrtf(2.0f)), 3, T, NL, P, 0);
}

/* norm(proj(GELU(inp_gate x) * e_l)): block l's per-layer embedding branch */
topos_sym tp_ple_branch(tp_rec *r, const tp_llama_layer *L, topos_sym x, topos_sym ple, int64_t l) {
  topos_tape *t = r->t;
  const int64_t T = r->T, P = r->c->ple_dim;
  topos_sym e = tp_reshape(r, topos_tape_narrow(t, ple, 1, l, 1), 2, T, P, 0, 0);
  topos_sym gate = topos_tape_gelu(t, topos_tape_qlinear(t, x, tp_const(r, L->ple_gate)));
  topos_sym y = topos_tape_qlinear(t, topos_tape_mul(t, gate, e), tp_const(r, L->ple_proj));
  return tp_rmsnorm_n(r, y, T, r->c->dim, L->ple_norm);
}

/* x plus that branch: Gemma 4's blocks add it to their output */
topos_sym tp_ple_block(tp_rec *r, const tp_llama_layer *L, topos_sym x, topos_sym ple, int64_t l) {
  return topos_tape_add(r->t, x, tp_ple_branch(r, L, x, ple, l));
}

/* A Gemma 4 mixture block's feed-forward of its residual x: the dense
 * feed-forward through ffn_norm and post_ffw_norm_1, plus the experts
 * through pre_ffw_norm_2 and post_ffw_norm_2 (the router reading x
 * RMS-normed, times 1 / sqrt(dim) and ffn_gate_inp.scale), the sum through
 * post_ffw_norm, as llama.cpp's gemma4 graph */
topos_sym tp_gemma4_ffn(tp_rec *r, const tp_llama_layer *L, topos_sym x) {
  topos_tape *t = r->t;
  const int64_t T = r->T, D = r->c->dim;
  const topos_sym dense = tp_rmsnorm_n(r, tp_ffn(r, L, tp_rmsnorm_n(r, x, T, D, L->ffn_norm)), T, D, L->post_ffn_norm_1);
  topos_sym rin = tp_scale(r, tp_rmsnorm_n(r, x, T, D, NULL), 1.0f / sqrtf((float)D));
  rin = topos_tape_mul(t, rin, topos_tape_broadcast_along(t, tp_const(r, L->gate_inp_s), 0, T));
  const topos_sym moe =
      tp_rmsnorm_n(r, tp_experts(r, L, tp_rmsnorm_n(r, x, T, D, L->pre_ffn_norm_2), rin), T, D, L->post_ffn_norm_2);
  return tp_rmsnorm_n(r, topos_tape_add(t, dense, moe), T, D, L->post_ffn_norm);
}
