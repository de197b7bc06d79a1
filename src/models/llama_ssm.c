/* The recurrent mixers of llama-family files: Mamba-1 and Mamba-2 blocks,
 * gated DeltaNet (qwen3next, qwen35: tp_llama_delta_config,
 * tp_llama_layer_delta) and Kimi Delta Attention (kimi-linear:
 * tp_llama_kda_config, tp_llama_layer_kda); their keys, which blocks they
 * are and their tensors, as llama.cpp reads the same files (the graph:
 * llama_recurrent.c; the Mamba-1 tensors: tp_llama_layer_mamba1; every
 * kind's block through tp_llama_layer_mamba2, which dispatches).
 *
 * Mamba-2's keys: ssm.conv_kernel (taps), ssm.inner_size (channels),
 * ssm.state_size, ssm.time_step_rank (heads: Mamba-2 gives every head one
 * time step), ssm.group_count (groups sharing B and C). Its tensors of
 * block l (GGUF extents; CD = inner + 2 groups state, the convolved xBC
 * width):
 *   ssm_in.weight {dim, 2 inner + 2 groups state + heads}: z, xBC, dt rows
 *   ssm_conv1d.weight {taps, CD} and .bias {CD} (optional where the
 *     architecture allows: granitehybrid)
 *   ssm_dt.bias {heads}; ssm_a {1, heads} (the converter's -exp(A_log));
 *   ssm_d {1, heads}; ssm_norm.weight {inner / groups, groups} (optional
 *   in falcon-h1 files: Falcon-H1-0.5B has none); ssm_out.weight {inner, dim} */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_internal.h"

/* ssm.conv_kernel: the mixers' convolution taps, 2 to 64 */
static topos_status tp_llama_ssm_taps(topos_llama *m) {
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_u64(m->gguf, TP_K("ssm.conv_kernel"), 1, 0, &c->ssm_conv));
  if (c->ssm_conv < 2 || c->ssm_conv > 64)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " (2 to 64 taps are supported)", kb, c->ssm_conv);
  return TOPOS_OK;
}

/* a block's state (state_size x inner floats) at most 2^26 floats */
static topos_status tp_llama_ssm_state_fits(const topos_llama_config *c) {
  if (c->ssm_state * c->ssm_inner > ((int64_t)1 << 26))
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s's recurrent state of %" PRId64 " x %" PRId64 " floats a block is "
                   "too large", c->arch, c->ssm_state, c->ssm_inner);
  return TOPOS_OK;
}

/* The ssm.* keys of Mamba-1 (version 1: time_step_rank is dt's rank, every
 * channel its own head, dt_b_c_rms where the file says) or Mamba-2 mixers
 * (2: time_step_rank heads, group_count groups), and which blocks are
 * mixers (form: TP_SSM_HYBRID head_count_kv's zeros; TP_SSM_PARALLEL every
 * block, beside its attention; TP_SSM_ONLY every block, no attention). */
topos_status tp_llama_ssm_config(topos_llama *m, int version, int form) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_ssm_taps(m));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.inner_size"), 1, 0, &c->ssm_inner));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.state_size"), 1, 0, &c->ssm_state));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.time_step_rank"), 1, 0, version == 1 ? &c->ssm_dt_rank : &c->ssm_heads));
  if (version == 1) {
    c->ssm_heads = c->ssm_inner, c->ssm_groups = 1;
    topos_status st = topos_gguf_get_bool(g, TP_K("ssm.dt_b_c_rms"), &c->ssm_dt_b_c_rms);
    if (st == TOPOS_ERR_NOT_FOUND) topos_clear_error(), c->ssm_dt_b_c_rms = 0;
    else if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", kb);
  } else {
    TP_TRY(tp_llama_u64(g, TP_K("ssm.group_count"), 1, 0, &c->ssm_groups));
    if (c->ssm_inner % c->ssm_heads != 0 || c->ssm_heads % c->ssm_groups != 0)
      return tp_fail(TOPOS_ERR_SHAPE, "llama: %s's Mamba-2 sizes do not fit: inner_size %" PRId64 " must be a "
                     "multiple of time_step_rank (heads) %" PRId64 ", itself a multiple of group_count %" PRId64,
                     c->arch, c->ssm_inner, c->ssm_heads, c->ssm_groups);
  }
  TP_TRY(tp_llama_ssm_state_fits(c));
  if (form == TP_SSM_HYBRID)
    return tp_llama_kv_zero_blocks(m, " (its zeros mark the Mamba blocks)", &m->ssm_blocks, &c->n_ssm_layers);
  m->ssm_blocks = malloc((size_t)c->n_layers);
  if (!m->ssm_blocks) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %" PRId64 " blocks", c->n_layers);
  memset(m->ssm_blocks, 1, (size_t)c->n_layers);
  c->n_ssm_layers = c->n_layers;
  if (form == TP_SSM_ONLY) { /* no attention: one (unused) head of the whole width */
    m->one_branch = 1;
    c->n_kv_heads = c->n_heads;
    return TOPOS_OK;
  }
  m->ssm_parallel = 1;
  return tp_llama_u64(g, TP_K("attention.head_count_kv"), 0, c->n_heads, &c->n_kv_heads);
}

/* name's {ne0, ne1} tensor as f32 [ne0 * ne1] (ne1 0: a vector) */
static topos_status tp_ssm_vector(topos_llama *m, const char *name, int64_t ne0, int64_t ne1, int optional,
                                  topos_tensor **out) {
  topos_tensor *w = NULL, *f = NULL;
  TP_TRY(tp_llama_weight(m, name, ne0, ne1, optional, &w));
  if (!w || !ne1) {
    *out = w;
    return TOPOS_OK;
  }
  const int64_t n = ne0 * ne1;
  topos_status st = topos_tensor_convert(w, TOPOS_F32, &f);
  if (st == TOPOS_OK) st = topos_tensor_reshape(f, 1, &n, out);
  topos_tensor_release(w);
  topos_tensor_release(f);
  return st == TOPOS_OK ? TOPOS_OK : tp_fail_context(st, "llama: tensor %s", name);
}

/* A Mamba-1 block's tensors (GGUF extents; R the time-step rank): ssm_in
 * {dim, 2 inner} (x, z), ssm_conv1d {taps, inner} and bias, ssm_x {inner,
 * R + 2 state}, ssm_dt {R, inner} and bias, ssm_a {state, inner}, ssm_d
 * {inner}, ssm_out {inner, dim}; ssm_dt_norm {R}, ssm_b_norm and
 * ssm_c_norm {state} where the file has them (Jamba's) */
static topos_status tp_llama_layer_mamba1(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t DI = c->ssm_inner, N = c->ssm_state, R = c->ssm_dt_rank;
  char name[64];
  const struct {
    const char *suffix;
    int64_t ne0, ne1;
    int optional, vector;
    topos_tensor **out;
  } parts[] = {{"ssm_in.weight", c->dim, 2 * DI, 0, 0, &L->ssm_in},  {"ssm_x.weight", DI, R + 2 * N, 0, 0, &L->ssm_x},
               {"ssm_dt.weight", R, DI, 0, 0, &L->ssm_dt},            {"ssm_out.weight", DI, c->dim, 0, 0, &L->ssm_out},
               {"ssm_conv1d.bias", DI, 0, 0, 1, &L->ssm_conv_b},      {"ssm_dt.bias", DI, 0, 0, 1, &L->ssm_dt_b},
               {"ssm_a", N, DI, 0, 1, &L->ssm_a},                     {"ssm_d", DI, 0, 0, 1, &L->ssm_d},
               {"ssm_dt_norm.weight", R, 0, 1, 1, &L->ssm_dt_norm},   {"ssm_b_norm.weight", N, 0, 1, 1, &L->ssm_b_norm},
               {"ssm_c_norm.weight", N, 0, 1, 1, &L->ssm_c_norm}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, parts[i].suffix);
    if (parts[i].vector) TP_TRY(tp_ssm_vector(m, name, parts[i].ne0, parts[i].ne1, parts[i].optional, parts[i].out));
    else TP_TRY(tp_llama_weight(m, name, parts[i].ne0, parts[i].ne1, parts[i].optional, parts[i].out));
  }
  if (L->ssm_a) { /* [inner, state]: channel h's decays exp(dt A[h, n]) */
    const int64_t shape[2] = {DI, N};
    topos_tensor *a = NULL;
    topos_status st = topos_tensor_reshape(L->ssm_a, 2, shape, &a);
    topos_tensor_release(L->ssm_a);
    L->ssm_a = a;
    TP_TRY(st);
  }
  snprintf(name, sizeof name, "blk.%" PRId64 ".ssm_conv1d.weight", l);
  return tp_llama_conv_taps(m, name, c->ssm_conv, DI, &L->ssm_taps);
}

/* The gated-DeltaNet keys: ssm.conv_kernel (taps), ssm.state_size (the
 * key and value heads' width), ssm.group_count (key heads),
 * ssm.time_step_rank (value heads, each with its decay and beta),
 * ssm.inner_size (the values' width, value heads x state_size); the mixers
 * are the blocks attention.recurrent_layers marks (one flag per block) or,
 * without it, all but every full_attention_interval-th (absent: 4), as
 * llama.cpp reads qwen3next and qwen35 files. */
topos_status tp_llama_delta_config(topos_llama *m, int tiled) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_ssm_taps(m));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.inner_size"), 1, 0, &c->ssm_inner));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.state_size"), 1, 0, &c->ssm_state));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.time_step_rank"), 1, 0, &c->ssm_heads));
  TP_TRY(tp_llama_u64(g, TP_K("ssm.group_count"), 1, 0, &c->ssm_groups));
  if (c->ssm_inner != c->ssm_heads * c->ssm_state || c->ssm_heads % c->ssm_groups != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s's gated-DeltaNet sizes do not fit: inner_size %" PRId64 " must be "
                   "time_step_rank (value heads) %" PRId64 " x state_size (head width) %" PRId64 ", and the value "
                   "heads a multiple of group_count (key heads) %" PRId64, c->arch, c->ssm_inner, c->ssm_heads,
                   c->ssm_state, c->ssm_groups);
  TP_TRY(tp_llama_ssm_state_fits(c));
  c->ssm_delta = 1;
  c->ssm_delta_tiled = tiled;
  m->ssm_blocks = calloc((size_t)c->n_layers, 1);
  if (!m->ssm_blocks) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %" PRId64 " blocks", c->n_layers);
  int64_t index;
  if (topos_gguf_find_key(g, TP_K("attention.recurrent_layers"), &index) == TOPOS_OK) {
    topos_gguf_kv kv;
    TP_TRY(tp_llama_block_key(m, kb, "", &index, &kv));
    if (kv.type != TOPOS_GGUF_ARRAY)
      return tp_fail(TOPOS_ERR_DTYPE, "llama: %s must list a flag per block", kb);
    for (int64_t l = 0; l < c->n_layers; ++l) {
      int64_t v;
      topos_status st = topos_gguf_array_int(g, index, (uint64_t)l, &v);
      if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", kb, l);
      m->ssm_blocks[l] = v != 0;
    }
  } else {
    topos_clear_error();
    int64_t every = 0;
    TP_TRY(tp_llama_u64(g, TP_K("full_attention_interval"), 0, 4, &every));
    if (every < 1) return tp_fail(TOPOS_ERR_RANGE, "llama: %s = 0 (every block would be a mixer)", kb);
    for (int64_t l = 0; l < c->n_layers; ++l) m->ssm_blocks[l] = (l + 1) % every != 0;
  }
  c->n_ssm_layers = 0;
  for (int64_t l = 0; l < c->n_layers; ++l) c->n_ssm_layers += m->ssm_blocks[l];
  return TOPOS_OK;
}

/* A gated-DeltaNet block's tensors (GGUF extents; KD = groups x state, the
 * keys' width, VD = inner, the values'): attn_qkv {dim, 2 KD + VD} and
 * attn_gate {dim, VD}, or (qwen3next's older files) ssm_in {dim, 2 KD + 2
 * VD}; ssm_conv1d {taps, 2 KD + VD}; ssm_ba {dim, 2 heads} (qwen3next) or
 * ssm_beta and ssm_alpha {dim, heads} (qwen35); ssm_dt.bias, ssm_a
 * {heads}; ssm_norm {state}; ssm_out {VD, dim} */
static topos_status tp_llama_layer_delta(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t D = c->dim, KD = c->ssm_groups * c->ssm_state, VD = c->ssm_inner, H = c->ssm_heads;
  char name[64];
#define TP_DELTA_NAME(suffix) snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l)
  TP_DELTA_NAME("attn_qkv.weight");
  int64_t index;
  const int joined = !c->ssm_delta_tiled && topos_gguf_find_tensor(m->gguf, name, &index) != TOPOS_OK;
  topos_clear_error();
  if (joined) { /* qwen3next's first converter: q, k, v, z of each key head together */
    TP_DELTA_NAME("ssm_in.weight");
    TP_TRY(tp_llama_weight(m, name, D, 2 * KD + 2 * VD, 0, &L->ssm_in));
  } else {
    TP_TRY(tp_llama_weight(m, name, D, 2 * KD + VD, 0, &L->ssm_in));
    TP_DELTA_NAME("attn_gate.weight");
    TP_TRY(tp_llama_weight(m, name, D, VD, 0, &L->ssm_z));
  }
  if (c->ssm_delta_tiled) {
    TP_DELTA_NAME("ssm_beta.weight");
    TP_TRY(tp_llama_weight(m, name, D, H, 0, &L->ssm_beta));
    TP_DELTA_NAME("ssm_alpha.weight");
    TP_TRY(tp_llama_weight(m, name, D, H, 0, &L->ssm_alpha));
  } else {
    TP_DELTA_NAME("ssm_ba.weight");
    TP_TRY(tp_llama_weight(m, name, D, 2 * H, 0, &L->ssm_beta));
  }
  TP_DELTA_NAME("ssm_dt.bias");
  TP_TRY(tp_ssm_vector(m, name, H, 0, 0, &L->ssm_dt_b));
  TP_DELTA_NAME("ssm_a");
  TP_TRY(tp_ssm_vector(m, name, H, 0, 0, &L->ssm_a));
  TP_DELTA_NAME("ssm_norm.weight");
  TP_TRY(tp_ssm_vector(m, name, c->ssm_state, 0, 0, &L->ssm_norm));
  TP_DELTA_NAME("ssm_out.weight");
  TP_TRY(tp_llama_weight(m, name, VD, D, 0, &L->ssm_out));
  TP_DELTA_NAME("ssm_conv1d.weight");
#undef TP_DELTA_NAME
  return tp_llama_conv_taps(m, name, c->ssm_conv, 2 * KD + VD, &L->ssm_taps);
}

/* Kimi Delta Attention: head_count_kv's zeros are the mixers (the others
 * latent attention); ssm.conv_kernel taps; kda.head_dim, each head's key
 * and value width (every attention head a mixer head: H key and value
 * heads of hd, the convolution over q, k and v, 3 H hd wide). */
topos_status tp_llama_kda_config(topos_llama *m) {
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_kv_zero_blocks(m, " (its zeros mark the Kimi Delta Attention blocks)", &m->ssm_blocks,
                                 &c->n_ssm_layers));
  TP_TRY(tp_llama_ssm_taps(m));
  TP_TRY(tp_llama_u64(m->gguf, TP_K("kda.head_dim"), 1, 0, &c->ssm_state));
  c->ssm_heads = c->ssm_groups = c->n_heads;
  c->ssm_inner = c->n_heads * c->ssm_state;
  TP_TRY(tp_llama_ssm_state_fits(c));
  c->ssm_delta = c->ssm_kda = 1;
  return TOPOS_OK;
}

/* A Kimi Delta Attention block's tensors (GGUF extents; D = H hd): attn_q,
 * attn_k, attn_v {dim, D}; ssm_conv1d_q,
 * _k, _v {taps, 1, D, 1} (or {taps, 1, D}); ssm_f_a and ssm_g_a {dim, hd},
 * ssm_f_b and ssm_g_b {hd, D}; ssm_beta {dim, H}; ssm_a {1, H, 1, 1} (or {1,
 * H}); ssm_dt.bias {D}; ssm_norm {hd}; attn_output {D, dim} */
static topos_status tp_llama_layer_kda(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t dim = c->dim, H = c->ssm_heads, hd = c->ssm_state, D = H * hd, K = c->ssm_conv;
  char name[64];
  const struct {
    const char *suffix;
    int64_t ne0, ne1;
    topos_tensor **out;
  } mats[] = {{"attn_q.weight", dim, D, &L->ssm_in},   {"attn_k.weight", dim, D, &L->ssm_k},
              {"attn_v.weight", dim, D, &L->ssm_v},    {"ssm_f_a.weight", dim, hd, &L->ssm_f_a},
              {"ssm_f_b.weight", hd, D, &L->ssm_f_b},  {"ssm_g_a.weight", dim, hd, &L->ssm_g_a},
              {"ssm_g_b.weight", hd, D, &L->ssm_g_b},  {"ssm_beta.weight", dim, H, &L->ssm_beta},
              {"attn_output.weight", D, dim, &L->ssm_out}};
  for (size_t i = 0; i < sizeof mats / sizeof mats[0]; ++i) {
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, mats[i].suffix);
    TP_TRY(tp_llama_weight(m, name, mats[i].ne0, mats[i].ne1, 0, mats[i].out));
  }
  snprintf(name, sizeof name, "blk.%" PRId64 ".ssm_dt.bias", l);
  TP_TRY(tp_ssm_vector(m, name, D, 0, 0, &L->ssm_dt_b));
  snprintf(name, sizeof name, "blk.%" PRId64 ".ssm_norm.weight", l);
  TP_TRY(tp_ssm_vector(m, name, hd, 0, 0, &L->ssm_norm));
  snprintf(name, sizeof name, "blk.%" PRId64 ".ssm_a", l);
  TP_TRY(tp_llama_weight_squeezed(m, name, H, 0, &L->ssm_a));
  /* the three convolutions as one over q | k | v: tap j of channel ch at [j, ch] */
  const int64_t shape[2] = {K, 3 * D};
  TP_TRY(topos_tensor_zeros(TOPOS_F32, 2, shape, &L->ssm_taps));
  float *taps = topos_tensor_data_mut(L->ssm_taps);
  const char *convs[3] = {"q", "k", "v"};
  for (int part = 0; part < 3; ++part) {
    topos_tensor *w = NULL;
    snprintf(name, sizeof name, "blk.%" PRId64 ".ssm_conv1d_%s.weight", l, convs[part]);
    TP_TRY(tp_llama_weight_squeezed(m, name, K, D, &w));
    const float *src = topos_tensor_data(w); /* channel ch's taps at ch K + j */
    for (int64_t ch = 0; ch < D; ++ch)
      for (int64_t j = 0; j < K; ++j) taps[j * 3 * D + part * D + ch] = src[ch * K + j];
    topos_tensor_release(w);
  }
  return TOPOS_OK;
}

topos_status tp_llama_layer_mamba2(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  if (c->ssm_kda) return tp_llama_layer_kda(m, l, L);
  if (c->ssm_delta) return tp_llama_layer_delta(m, l, L);
  if (c->ssm_dt_rank) return tp_llama_layer_mamba1(m, l, L);
  const int64_t K = c->ssm_conv, DI = c->ssm_inner, H = c->ssm_heads, G = c->ssm_groups;
  const int64_t CD = tp_llama_ssm_conv_width(c);
  char name[64];
#define TP_SSM_NAME(suffix) snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l)
  TP_SSM_NAME("ssm_in.weight");
  TP_TRY(tp_llama_weight(m, name, c->dim, DI + CD + H, 0, &L->ssm_in));
  TP_SSM_NAME("ssm_out.weight");
  TP_TRY(tp_llama_weight(m, name, DI, c->dim, 0, &L->ssm_out));
  TP_SSM_NAME("ssm_conv1d.bias");
  TP_TRY(tp_ssm_vector(m, name, CD, 0, 1, &L->ssm_conv_b));
  TP_SSM_NAME("ssm_dt.bias");
  TP_TRY(tp_ssm_vector(m, name, H, 0, 0, &L->ssm_dt_b));
  TP_SSM_NAME("ssm_a");
  TP_TRY(tp_ssm_vector(m, name, 1, H, 0, &L->ssm_a));
  TP_SSM_NAME("ssm_d");
  TP_TRY(tp_ssm_vector(m, name, 1, H, 0, &L->ssm_d));
  TP_SSM_NAME("ssm_norm.weight");
  TP_TRY(tp_ssm_vector(m, name, DI / G, G, m->ssm_parallel, &L->ssm_norm));
  TP_SSM_NAME("ssm_conv1d.weight");
#undef TP_SSM_NAME
  return tp_llama_conv_taps(m, name, K, CD, &L->ssm_taps);
}

/* nemotron_h: feed_forward_length per block, as head_count_kv (read by
 * tp_llama_ssm_config, whose zeros marked m->ssm_blocks): both 0, a
 * Mamba-2 mixer; kv heads, attention; a width, a feed-forward (one width
 * for all: config.ff). Each block is that branch alone, x + branch(norm(x)). */
topos_status tp_llama_nemotron_h_blocks(topos_llama *m) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int64_t index;
  topos_gguf_kv kv;
  m->one_branch = 1;
  TP_TRY(tp_llama_block_key(m, TP_K("feed_forward_length"), "", &index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY) { /* one width for every block: no mixer has a zero */
    TP_TRY(tp_llama_u64(g, kb, 1, 0, &c->ff));
    return c->n_ssm_layers ? tp_fail(TOPOS_UNSUPPORTED, "llama: %s is one width for every block, but the blocks "
                                     "whose head_count_kv is 0 are Mamba-2 mixers without one", kb)
                           : TOPOS_OK;
  }
  m->ffn_blocks = calloc((size_t)c->n_layers, 1);
  if (!m->ffn_blocks) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", kb);
  c->ff = 0;
  for (int64_t l = 0; l < c->n_layers; ++l) {
    int64_t v;
    topos_status st = topos_gguf_array_int(g, index, (uint64_t)l, &v);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", kb, l);
    if (v < 0 || v > ((int64_t)1 << 31))
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%" PRId64 "] = %" PRId64 " is outside 0..2^31", kb, l, v);
    if (v == 0) continue;
    if (!m->ssm_blocks || !m->ssm_blocks[l])
      return tp_fail(TOPOS_UNSUPPORTED, "llama: block %" PRId64 " has attention and a feed-forward of %" PRId64
                     " (%s files give each block one)", l, v, c->arch);
    if (c->ff && v != c->ff)
      return tp_fail(TOPOS_UNSUPPORTED, "llama: %s gives the feed-forward blocks %" PRId64 " and %" PRId64
                     " (one width for all is supported)", kb, c->ff, v);
    c->ff = v;
    m->ssm_blocks[l] = 0, m->ffn_blocks[l] = 1;
    --c->n_ssm_layers, ++c->n_ffn_layers;
  }
  return TOPOS_OK;
}
