/* Gemma 3n (E2B, E4B), as llama.cpp's gemma3n graph reads these files:
 * Gemma 3's blocks (post-norms, q and k norms, GELU feed-forwards, windowed
 * blocks with a rope base of their own) with
 *   - values RMS-normalised per head without a weight, q times 1;
 *   - the last attention.shared_kv_layers blocks reading the caches of the
 *     last earlier block of their kind, and per-layer embeddings, as Gemma 4
 *     (llama_gemma4.c); llama.cpp fixes the blocks with caches at the first
 *     20, which is what the released files' key says;
 *   - AltUp: altup.num_inputs streams per token (stream 0 the embedding, the
 *     others its projections altup_proj, each scaled to the embedding's
 *     magnitude); each block runs on a prediction of stream altup.active_idx
 *     (every stream plus a mix of all, the mix's coefficients from a tanh
 *     router over the active stream) and corrects every prediction by its
 *     output's innovation, scaled per stream by a second router; the
 *     per-layer embedding branch, fed the corrected active stream, is added
 *     to the streams past the first; after the last block the streams past
 *     the first go back through altup_unembd_proj (magnitude-matched to the
 *     active one) and the mean of all is the output;
 *   - Laurel: beside the attention, norm(laurel_r laurel_l h) + h, averaged
 *     with the attention's residual (times 1 / sqrt(2));
 *   - activation sparsity on the first blocks' gates (activation_sparsity_scale:
 *     a gate keeps what exceeds its mean by that many standard deviations;
 *     llama.cpp fixes the first 10 blocks at 1.6448533535003662, which is
 *     what the released files say).
 * The graph's parts are in llama_graph_gemma3n.c. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_internal.h"

enum { TP_GEMMA3N_OWN_KV = 20, TP_GEMMA3N_SPARSE_BLOCKS = 10, TP_GEMMA3N_MAX_STREAMS = 16 };
static const float tp_gemma3n_sparsity_default = 1.6448533535003662f; /* the normal distribution's 95th percentile */

/* activation_sparsity_scale into m->sparsity[n_layers]: a finite entry is
 * that block's multiplier, -inf none (the converter's icdf(0)); absent,
 * llama.cpp's fixed first blocks */
static topos_status tp_gemma3n_sparsity(topos_llama *m) {
  topos_llama_config *c = &m->config;
  char kb[96];
  m->sparsity = malloc((size_t)c->n_layers * sizeof *m->sparsity);
  if (!m->sparsity) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", TP_K("activation_sparsity_scale"));
  int64_t index;
  if (topos_gguf_find_key(m->gguf, TP_K("activation_sparsity_scale"), &index) != TOPOS_OK) {
    topos_clear_error();
    for (int64_t l = 0; l < c->n_layers; ++l)
      m->sparsity[l] = l < TP_GEMMA3N_SPARSE_BLOCKS ? tp_gemma3n_sparsity_default : -INFINITY;
    return TOPOS_OK;
  }
  topos_gguf_kv kv;
  TP_TRY(tp_llama_block_key(m, kb, "", &index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s must list one multiplier per block", kb);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    double v;
    topos_status st = topos_gguf_array_float(m->gguf, index, (uint64_t)l, &v);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", kb, l);
    if (!(isfinite(v) && fabs(v) < 1e6) && !(isinf(v) && v < 0))
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%" PRId64 "] = %g is neither a finite multiplier nor -inf (none)",
                     kb, l, v);
    m->sparsity[l] = (float)v;
  }
  return TOPOS_OK;
}

topos_status tp_llama_gemma3n_config(topos_llama *m, int64_t period) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  if (c->n_swa > 0 && !m->swa_layers) { /* the period's blocks, listed: the shared blocks' check reads the list */
    m->swa_layers = malloc((size_t)c->n_layers);
    if (!m->swa_layers) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s's windowed blocks", c->arch);
    for (int64_t l = 0; l < c->n_layers; ++l) m->swa_layers[l] = tp_llama_period_windowed(period, l);
  }
  TP_TRY(tp_llama_gemma_shared(m, c->n_layers > TP_GEMMA3N_OWN_KV ? c->n_layers - TP_GEMMA3N_OWN_KV : 0, 256));
  TP_TRY(tp_llama_u64(g, TP_K("altup.num_inputs"), 0, 4, &c->altup_streams));
  if (c->altup_streams < 2 || c->altup_streams > TP_GEMMA3N_MAX_STREAMS)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " streams is outside 2..%d", kb, c->altup_streams,
                   TP_GEMMA3N_MAX_STREAMS);
  TP_TRY(tp_llama_count(g, TP_K("altup.active_idx"), 0, 0, &c->altup_active));
  if (c->altup_active >= c->altup_streams)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is not one of altup.num_inputs' %" PRId64 " streams", kb,
                   c->altup_active, c->altup_streams);
  /* Laurel's rank: block 0's (every block's is checked against it) */
  int64_t index;
  topos_gguf_tensor_info info;
  if (topos_gguf_find_tensor(g, "blk.0.laurel_l.weight", &index) != TOPOS_OK) {
    topos_clear_error();
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required tensor blk.0.laurel_l.weight is missing (%s files have "
                   "a Laurel branch in every block)", c->arch);
  }
  TP_TRY(topos_gguf_tensor_at(g, index, &info));
  c->laurel_rank = info.n_dims == 2 ? info.ne[1] : 0;
  if (c->laurel_rank < 1 || c->laurel_rank > c->dim)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: blk.0.laurel_l.weight is not a {%" PRId64 ", rank} matrix of a rank "
                   "1..%" PRId64, c->dim, c->dim);
  TP_TRY(tp_gemma3n_sparsity(m));
  c->v_norm = 1;
  c->attn_scale = 1.0f;
  return TOPOS_OK;
}

topos_status tp_llama_layer_gemma3n(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t D = c->dim, N = c->altup_streams, R = c->laurel_rank;
  char name[64];
#define TP_G3N(field, suffix, e0, e1)                                          \
  do {                                                                         \
    snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l);                 \
    TP_TRY(tp_llama_weight(m, name, e0, e1, 0, &L->field));                    \
  } while (0)
  TP_G3N(altup_router, "altup_router.weight", D, N);
  TP_G3N(altup_router_norm, "altup_router_norm.weight", D, 0);
  TP_G3N(altup_predict, "altup_predict_coef.weight", N, N * N);
  TP_G3N(altup_correct, "altup_correct_coef.weight", N, N);
  TP_G3N(altup_correct_scale, "altup_correct_scale.weight", D, 0);
  TP_G3N(laurel_l, "laurel_l.weight", D, R);
  TP_G3N(laurel_r, "laurel_r.weight", R, D);
  TP_G3N(laurel_norm, "laurel_post_norm.weight", D, 0);
#undef TP_G3N
  L->gate_sparse = isfinite(m->sparsity[l]);
  L->sparsity_mul = L->gate_sparse ? m->sparsity[l] : 0.0f;
  if (L->gate_sparse && (!L->w_gate || L->ff < 2))
    return tp_fail(TOPOS_ERR_SHAPE, "llama: block %" PRId64 "'s sparse gate needs a gate of at least 2 wide", l);
  return TOPOS_OK;
}

/* one of the streams' projections [N - 1, dim, dim]: every token reads all of it */
static topos_status tp_gemma3n_projections(topos_llama *m, const char *name, topos_tensor **out) {
  topos_llama_config *c = &m->config;
  const uint64_t before = c->weight_bytes;
  TP_TRY(tp_llama_weight3(m, name, c->dim, c->dim, c->altup_streams - 1, 0, out));
  int64_t index;
  topos_gguf_tensor_info info;
  TP_TRY(topos_gguf_find_tensor(m->gguf, name, &index));
  TP_TRY(topos_gguf_tensor_at(m->gguf, index, &info));
  c->weight_bytes = before + info.bytes; /* (weight3 counts a mixture's share) */
  return TOPOS_OK;
}

topos_status tp_llama_gemma3n_weights(topos_llama *m) {
  TP_TRY(tp_gemma3n_projections(m, "altup_proj.weight", &m->altup_proj));
  return tp_gemma3n_projections(m, "altup_unembd_proj.weight", &m->altup_unembd);
}
