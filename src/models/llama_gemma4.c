/* Gemma 4, as llama.cpp's gemma4 graph reads these files: gemma3's blocks
 * (post-norms, q and k norms, GELU feed-forwards, windowed blocks with a
 * rope base of their own) with
 *   - heads of another width in the windowed blocks (attention.key_length_swa,
 *     rope.dimension_count_swa) and head_count_kv per block;
 *   - the full blocks' "proportional" rotation from rope_freqs.weight (pairs
 *     past the rotated fraction divided by 1e30: they stay in place);
 *   - values RMS-normalised per head without a weight, q times 1 (no
 *     1 / sqrt(width): the q norm stands for it), and blocks without attn_v
 *     whose values are the keys' product;
 *   - the last attention.shared_kv_layers blocks without keys or values of
 *     their own: each attends to the last earlier block of its kind;
 *   - per-layer embeddings (embedding_length_per_layer_input) and a scale of
 *     each block's output (layer_output_scale).
 *   - mixtures (the 26B-A4B) where a block has ffn_gate_inp: its dense
 *     feed-forward beside the experts, each through norms of its own
 *     (post_ffw_norm_1; pre_ffw_norm_2, post_ffw_norm_2), the router reading
 *     the residual RMS-normed times 1 / sqrt(dim) and ffn_gate_inp.scale,
 *     GELU experts (gate and up apart or in one ffn_gate_up_exps) whose
 *     outputs are scaled by ffn_down_exps.scale, renormalised softmax weights. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_internal.h"

/* A key of one number for every block or an array of one per block into
 * list[n_layers] (calloc'd; NULL where the key is a number: *value then);
 * *value is the largest entry. */
static topos_status tp_block_numbers(topos_llama *m, const char *key, int64_t lo, int64_t hi,
                                            int64_t **list, int64_t *value) {
  int64_t index;
  topos_gguf_kv kv;
  TP_TRY(tp_llama_block_key(m, key, "", &index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY) {
    TP_TRY(tp_llama_u64(m->gguf, key, 1, 0, value));
    if (*value < lo || *value > hi)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is outside %" PRId64 "..%" PRId64, key, *value, lo,
                     hi);
    return TOPOS_OK;
  }
  const int64_t n = m->config.n_layers;
  *list = calloc((size_t)n, sizeof **list);
  if (!*list) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", key);
  *value = 0;
  for (int64_t l = 0; l < n; ++l) {
    int64_t v;
    topos_status st = topos_gguf_array_int(m->gguf, index, (uint64_t)l, &v);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", key, l);
    if (v < lo || v > hi)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%" PRId64 "] = %" PRId64 " is outside %" PRId64 "..%" PRId64, key,
                     l, v, lo, hi);
    (*list)[l] = v;
    if (v > *value) *value = v;
  }
  return TOPOS_OK;
}

/* The block a shared block of this kind reads, by llama.cpp's rule: the
 * last block before the shared ones (the first n_layers - shared) of its
 * kind, taken to be n_layers - shared - 2 for windowed blocks and - 1 for
 * full ones (tp_llama_gemma4_config checks the kinds agree) */
static int64_t tp_gemma4_kv_src(const topos_llama_config *c, int windowed) {
  return c->n_layers - c->n_kv_shared_layers - (windowed ? 2 : 1);
}

/* (Gemma 4, Gemma 3n and OpenELM files: a block's shape may be its own) */
topos_status tp_llama_block_lists(topos_llama *m) {
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_block_numbers(m, TP_K("feed_forward_length"), 1, (int64_t)1 << 30, &m->ff_list, &c->ff));
  TP_TRY(tp_block_numbers(m, TP_K("attention.head_count"), 1, (int64_t)1 << 16, &m->heads_list, &c->n_heads));
  TP_TRY(tp_block_numbers(m, TP_K("attention.head_count_kv"), 1, c->n_heads, &m->kv_heads_list, &c->n_kv_heads));
  for (int64_t l = 0; l < c->n_layers; ++l) {
    const int64_t heads = m->heads_list ? m->heads_list[l] : c->n_heads;
    const int64_t kv = m->kv_heads_list ? m->kv_heads_list[l] : c->n_kv_heads;
    if (heads % kv != 0)
      return tp_fail(TOPOS_ERR_SHAPE, "llama: block %" PRId64 "'s %" PRId64 " kv heads (attention.head_count_kv) do "
                     "not divide its %" PRId64 " heads (attention.head_count)", l, kv, heads);
  }
  return TOPOS_OK;
}

topos_status tp_llama_gemma4_config(topos_llama *m) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int64_t value_swa = 0;
  if (!m->swa_layers)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: %s needs attention.sliding_window_pattern as a list of blocks",
                   c->arch);
  TP_TRY(tp_llama_u64(g, TP_K("attention.key_length_swa"), 1, 0, &c->head_dim_swa));
  TP_TRY(tp_llama_u64(g, TP_K("attention.value_length_swa"), 1, 0, &value_swa));
  if (value_swa != c->head_dim_swa || c->head_dim_swa % 2 != 0 || c->head_dim_swa > ((int64_t)1 << 16))
    return tp_fail(TOPOS_ERR_SHAPE, "llama: the windowed blocks' key and value widths (%" PRId64 ", %" PRId64
                   ") must be one even width", c->head_dim_swa, value_swa);
  TP_TRY(tp_llama_u64(g, TP_K("rope.dimension_count_swa"), 0, c->rope_dim, &c->rope_dim_swa));
  if (c->rope_dim_swa > c->head_dim_swa || c->rope_dim_swa % 2 != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s = %" PRId64 " must be even and at most the windowed heads' %" PRId64,
                   kb, c->rope_dim_swa, c->head_dim_swa);
  TP_TRY(tp_llama_gemma_shared(m, 0, -1));
  c->v_norm = 1;
  c->attn_scale = 1.0f;
  c->experts_gelu = 1;
  return TOPOS_OK;
}

topos_status tp_llama_gemma_shared(topos_llama *m, int64_t shared_fallback, int64_t ple_fallback) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_count(g, TP_K("attention.shared_kv_layers"), 0, shared_fallback, &c->n_kv_shared_layers));
  TP_TRY(tp_llama_count(g, TP_K("embedding_length_per_layer_input"), ple_fallback < 0, ple_fallback, &c->ple_dim));
  if (c->n_kv_shared_layers >= c->n_layers)
    return tp_fail(TOPOS_ERR_RANGE, "llama: attention.shared_kv_layers %" PRId64 " of %" PRId64 " blocks",
                   c->n_kv_shared_layers, c->n_layers);
  if (c->ple_dim > ((int64_t)1 << 16) || c->ple_dim * c->n_layers > ((int64_t)1 << 30))
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is too wide", kb, c->ple_dim);
  const int64_t own = c->n_layers - c->n_kv_shared_layers;
  if (c->n_kv_shared_layers > 0) {
    if (own < 2)
      return tp_fail(TOPOS_ERR_RANGE, "llama: attention.shared_kv_layers = %" PRId64 " leaves fewer than 2 of %" PRId64
                     " blocks with keys and values of their own", c->n_kv_shared_layers, c->n_layers);
    const uint8_t *w = m->swa_layers; /* (NULL: no window, every block full) */
    for (int64_t l = own; l < c->n_layers; ++l) {
      const int64_t src = tp_gemma4_kv_src(c, w && w[l]);
      if ((w && w[src]) != (w && w[l]))
        return tp_fail(TOPOS_UNSUPPORTED, "llama: shared block %" PRId64 " (%s) would attend to block %" PRId64
                       " (%s): the last blocks with caches of their own must be a windowed one, then a full one",
                       l, w && w[l] ? "windowed" : "full", src, w && w[src] ? "windowed" : "full");
    }
  }
  return TOPOS_OK;
}

void tp_llama_gemma4_shape(const topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  L->kv_shared = c->n_kv_shared_layers > 0 && l >= c->n_layers - c->n_kv_shared_layers;
  L->kv_src = L->kv_shared ? tp_gemma4_kv_src(c, L->windowed) : l;
}

/* The blocks' keys' tensors in a shared block: llama.cpp's loader takes
 * them where the file has them and its graph never reads them, so they are
 * marked read (and not counted as bytes read per token). */
static topos_status tp_gemma4_unread(topos_llama *m, int64_t l) {
  static const char *const suffixes[] = {"attn_k.weight", "attn_v.weight", "attn_k_norm.weight"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; ++i) {
    char name[64];
    int64_t index;
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, suffixes[i]);
    if (topos_gguf_find_tensor(m->gguf, name, &index) == TOPOS_OK) m->used[index] = 1;
    topos_clear_error();
  }
  return TOPOS_OK;
}

/* block l's mixture where the file has its router (GGUF extents: the
 * router {dim, experts}, its scale {dim}, ffn_gate_up_exps {dim, 2 ff,
 * experts} or ffn_gate_exps / ffn_up_exps {dim, ff, experts}, ffn_down_exps
 * {ff, dim, experts} and its scale {experts}, the three norms {dim}) */
static topos_status tp_gemma4_experts(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t D = c->dim, E = c->n_experts, F = c->ff_expert;
  char name[64];
  snprintf(name, sizeof name, "blk.%" PRId64 ".ffn_gate_inp.weight", l);
  int64_t index;
  const int found = topos_gguf_find_tensor(m->gguf, name, &index) == TOPOS_OK;
  topos_clear_error();
  if (!found || E == 0) return TOPOS_OK; /* (a router without expert_count: refused as unread) */
#define TP_G4(field, suffix, e0, e1, e2, optional)                             \
  do {                                                                         \
    snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l);                 \
    TP_TRY(tp_llama_weight3(m, name, e0, e1, e2, optional, &L->field));        \
  } while (0)
  TP_G4(gate_inp, "ffn_gate_inp.weight", D, E, 0, 0);
  TP_G4(gate_inp_s, "ffn_gate_inp.scale", D, 0, 0, 0);
  TP_G4(gate_up_exps, "ffn_gate_up_exps.weight", D, 2 * F, E, 1);
  if (!L->gate_up_exps) {
    TP_G4(gate_exps, "ffn_gate_exps.weight", D, F, E, 0);
    TP_G4(up_exps, "ffn_up_exps.weight", D, F, E, 0);
  }
  TP_G4(down_exps, "ffn_down_exps.weight", F, D, E, 0);
  TP_G4(down_exps_s, "ffn_down_exps.scale", E, 0, 0, 1);
  TP_G4(pre_ffn_norm_2, "pre_ffw_norm_2.weight", D, 0, 0, 0);
  TP_G4(post_ffn_norm_1, "post_ffw_norm_1.weight", D, 0, 0, 0);
  TP_G4(post_ffn_norm_2, "post_ffw_norm_2.weight", D, 0, 0, 0);
#undef TP_G4
  if (L->down_exps_s) TP_TRY(tp_llama_as_matrix(&L->down_exps_s, E, 1)); /* rows the chosen experts' ids gather */
  return TOPOS_OK;
}

topos_status tp_llama_layer_gemma4(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t D = c->dim, P = c->ple_dim;
  char name[64];
  if (L->kv_shared) TP_TRY(tp_gemma4_unread(m, l));
  TP_TRY(tp_gemma4_experts(m, l, L));
  topos_tensor *scale = NULL;
  snprintf(name, sizeof name, "blk.%" PRId64 ".layer_output_scale.weight", l);
  TP_TRY(tp_llama_weight(m, name, 1, 0, 1, &scale));
  if (scale) {
    L->out_scale = ((const float *)topos_tensor_data(scale))[0];
    L->out_scaled = 1;
    topos_tensor_release(scale);
    if (!(L->out_scale == L->out_scale)) /* (a NaN scale would poison every later block) */
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s is not a number", name);
  }
  if (P == 0) return TOPOS_OK;
  snprintf(name, sizeof name, "blk.%" PRId64 ".inp_gate.weight", l);
  TP_TRY(tp_llama_weight(m, name, D, P, 0, &L->ple_gate));
  snprintf(name, sizeof name, "blk.%" PRId64 ".proj.weight", l);
  TP_TRY(tp_llama_weight(m, name, P, D, 0, &L->ple_proj));
  snprintf(name, sizeof name, "blk.%" PRId64 ".post_norm.weight", l);
  return tp_llama_weight(m, name, D, 0, 0, &L->ple_norm);
}

topos_status tp_llama_gemma4_weights(topos_llama *m) {
  topos_llama_config *c = &m->config;
  const int64_t P = c->ple_dim, LP = c->ple_dim * c->n_layers;
  if (P == 0) return TOPOS_OK;
  const uint64_t before = c->weight_bytes;
  TP_TRY(tp_llama_weight(m, "per_layer_token_embd.weight", LP, c->n_vocab, 0, &m->ple_embd));
  /* read one row per token, as the embedding: a row's bytes, not the table's */
  size_t row = 0;
  TP_TRY(topos_dtype_bytes(topos_tensor_dtype(m->ple_embd), LP, &row));
  c->weight_bytes = before + row;
  TP_TRY(tp_llama_weight(m, "per_layer_model_proj.weight", c->dim, LP, 0, &m->ple_model_proj));
  return tp_llama_weight(m, "per_layer_proj_norm.weight", P, 0, 0, &m->ple_proj_norm);
}
