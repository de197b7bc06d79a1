/* llama-family models from GGUF: the weights as zero-copy views of the
 * mapping, every one checked against the shape the metadata implies
 * (llama_config.c reads the architecture and its keys) before anything runs. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_internal.h"

/* info's extents as "ne0, ne1, ..." for a message */
static const char *tp_llama_ne_string(const topos_gguf_tensor_info *info, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  for (int d = 0; d < info->n_dims && used < cap; ++d)
    used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64, d ? ", " : "", info->ne[d]);
  return buf;
}

/* A weight of GGUF extents {ne0, ne1, ne2} (ne2 = 0: a matrix; ne1 = 0 too:
 * a vector of ne0). */
topos_status tp_llama_weight3(topos_llama *m, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                              int optional, topos_tensor **out) {
  *out = NULL;
  int64_t index;
  topos_status st = topos_gguf_find_tensor(m->gguf, name, &index);
  if (st == TOPOS_ERR_NOT_FOUND && optional) {
    topos_clear_error();
    return TOPOS_OK;
  }
  if (st != TOPOS_OK)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: tensor %s is missing from the file", name);
  topos_gguf_tensor_info info;
  TP_TRY(topos_gguf_tensor_at(m->gguf, index, &info));
  int want_dims = ne2 ? 3 : ne1 ? 2 : 1;
  int ok = info.n_dims == want_dims && info.ne[0] == ne0 && (!ne1 || info.ne[1] == ne1) && (!ne2 || info.ne[2] == ne2);
  /* a vector stored as {n, 1} is still a vector */
  if (!ok && !ne1 && info.n_dims == 2 && info.ne[0] == ne0 && info.ne[1] == 1) ok = 1;
  if (!ok) {
    char got[96], want[64];
    tp_llama_ne_string(&info, got, sizeof got);
    if (ne2)
      snprintf(want, sizeof want, "%" PRId64 ", %" PRId64 ", %" PRId64, ne0, ne1, ne2);
    else if (ne1)
      snprintf(want, sizeof want, "%" PRId64 ", %" PRId64, ne0, ne1);
    else
      snprintf(want, sizeof want, "%" PRId64, ne0);
    return tp_fail(TOPOS_ERR_SHAPE, "llama: tensor %s has ne {%s}, the metadata implies {%s}",
                   name, got, want);
  }
  if (!info.has_dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "llama: tensor %s has type %s, which topos cannot compute with",
                   name, info.type_name);
  if (ne1 && topos_dtype_ggml_id(info.dtype) >= 0) {
    topos_tensor_desc x = {TOPOS_F32, 1, {ne0}}, w = {info.dtype, 2, {ne1, ne0}}, y;
    topos_tensor_desc in[2] = {x, w};
    if (topos_op_infer(TOPOS_OP_QLINEAR, in, NULL, &y) != TOPOS_OK)
      return tp_fail_context(TOPOS_ERR_DTYPE, "llama: tensor %s", name);
  }
  TP_TRY(topos_gguf_tensor_by_index(m->gguf, index, out));
  if (m->used) m->used[index] = 1;
  if (!ne1) {
    int64_t shape[1] = {ne0};
    topos_tensor *flat = NULL;
    st = topos_tensor_reshape(*out, 1, shape, &flat);
    topos_tensor_release(*out);
    *out = flat;
    TP_TRY(st);
    if (info.dtype != TOPOS_F32) { /* norm weights feed f32 elementwise ops */
      topos_tensor *f = NULL;
      st = topos_tensor_convert(*out, TOPOS_F32, &f);
      topos_tensor_release(*out);
      *out = f;
      if (st != TOPOS_OK) return tp_fail_context(st, "llama: tensor %s", name);
    }
  }
  /* of a mixture's experts a token reads only those it is routed to */
  m->config.weight_bytes += ne2 ? info.bytes / (uint64_t)ne2 * (uint64_t)m->config.n_experts_used : info.bytes;
  return TOPOS_OK;
}

topos_status tp_llama_weight(topos_llama *m, const char *name, int64_t ne0, int64_t ne1, int optional,
                             topos_tensor **out) {
  return tp_llama_weight3(m, name, ne0, ne1, 0, optional, out);
}

topos_status tp_llama_weight_squeezed(topos_llama *m, const char *name, int64_t ne0, int64_t ne1,
                                      topos_tensor **out) {
  *out = NULL;
  int64_t index;
  if (topos_gguf_find_tensor(m->gguf, name, &index) != TOPOS_OK) {
    topos_clear_error();
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: tensor %s is missing from the file", name);
  }
  topos_gguf_tensor_info info;
  TP_TRY(topos_gguf_tensor_at(m->gguf, index, &info));
  const int64_t want[2] = {ne0, ne1};
  int64_t have[4];
  int n_have = 0, n_want = 0, ok = 1;
  for (int d = 0; d < info.n_dims; ++d)
    if (info.ne[d] != 1 && n_have < 4) have[n_have++] = info.ne[d];
  for (int d = 0; d < 2; ++d)
    if (want[d] > 1) ok &= n_want < n_have && have[n_want++] == want[d];
  if (!ok || n_want != n_have) {
    char got[96];
    tp_llama_ne_string(&info, got, sizeof got);
    return tp_fail(TOPOS_ERR_SHAPE, "llama: tensor %s has ne {%s}, the metadata implies {%" PRId64 ", %" PRId64
                   "} (extents of 1 aside)", name, got, ne0, ne1 ? ne1 : 1);
  }
  if (!info.has_dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "llama: tensor %s has type %s, which topos cannot compute with", name,
                   info.type_name);
  topos_tensor *t = NULL, *flat = NULL;
  TP_TRY(topos_gguf_tensor_by_index(m->gguf, index, &t));
  if (m->used) m->used[index] = 1;
  m->config.weight_bytes += info.bytes;
  const int64_t count = ne0 * (ne1 ? ne1 : 1);
  topos_status st = topos_tensor_reshape(t, 1, &count, &flat);
  topos_tensor_release(t);
  if (st == TOPOS_OK) st = topos_tensor_convert(flat, TOPOS_F32, out);
  topos_tensor_release(flat);
  return st == TOPOS_OK ? TOPOS_OK : tp_fail_context(st, "llama: tensor %s", name);
}

static void tp_llama_join_release(void *context, void *data, size_t bytes) {
  (void)data, (void)bytes;
  topos_tensor_release(context);
}

topos_status tp_llama_as_matrix(topos_tensor **w, int64_t rows, int64_t cols) {
  const int64_t shape[2] = {rows, cols};
  topos_tensor *m = NULL;
  topos_status st = topos_tensor_reshape(*w, 2, shape, &m);
  topos_tensor_release(*w);
  *w = m;
  return st;
}

/* A [rows, in] matrix of dtype over `bytes` of owner's mapping at data,
 * keeping owner (and through it the mapping) alive. */
static topos_status tp_llama_view(topos_tensor *owner, topos_dtype dtype, int64_t rows, int64_t in,
                                  const uint8_t *data, size_t bytes, topos_tensor **out) {
  const int64_t shape[2] = {rows, in};
  topos_tensor_retain(owner);
  topos_status st = topos_tensor_wrap(dtype, 2, shape, (void *)data, bytes, TOPOS_STORAGE_MAPPED,
                                      tp_llama_join_release, owner, out);
  if (st != TOPOS_OK) topos_tensor_release(owner);
  return st;
}

/* parts[0..n) joined into one [sum of rows, in] weight when they are
 * matrices of one type and width lying back to back in the mapping; *out
 * stays NULL (no error) when they do not. The joined view keeps parts[0]
 * (and through it the mapping) alive. */
static topos_status tp_llama_join(topos_tensor *const *parts, int n, topos_tensor **out) {
  *out = NULL;
  const topos_dtype dtype = topos_tensor_dtype(parts[0]);
  const int64_t in = topos_tensor_shape(parts[0])[1];
  int64_t rows = 0;
  size_t total = 0;
  const uint8_t *next = topos_tensor_data(parts[0]);
  for (int i = 0; i < n; ++i) {
    const topos_tensor *p = parts[i];
    size_t bytes;
    if (topos_tensor_rank(p) != 2 || topos_tensor_dtype(p) != dtype || topos_tensor_shape(p)[1] != in ||
        !topos_tensor_is_contiguous(p) || topos_tensor_storage_kind(p) != TOPOS_STORAGE_MAPPED ||
        topos_tensor_data(p) != next ||
        topos_dtype_bytes(dtype, topos_tensor_volume(p), &bytes) != TOPOS_OK) {
      topos_clear_error();
      return TOPOS_OK;
    }
    rows += topos_tensor_shape(p)[0];
    total += bytes;
    next += bytes;
  }
  return tp_llama_view(parts[0], dtype, rows, in, topos_tensor_data(parts[0]), total, out);
}

/* Rows [r0, r0 + n) of the mapped matrix w as a matrix of their own (a view
 * that keeps w alive): phi3's fused weights seen as the parts the graph
 * names, which tp_llama_join then finds back to back again. */
static topos_status tp_llama_rows(topos_tensor *w, int64_t r0, int64_t n, topos_tensor **out) {
  const topos_dtype dtype = topos_tensor_dtype(w);
  const int64_t in = topos_tensor_shape(w)[1];
  size_t row_bytes = 0, bytes = 0;
  TP_TRY(topos_dtype_bytes(dtype, in, &row_bytes));
  TP_TRY(topos_dtype_bytes(dtype, n * in, &bytes));
  return tp_llama_view(w, dtype, n, in, (const uint8_t *)topos_tensor_data(w) + (size_t)r0 * row_bytes, bytes, out);
}

static topos_status tp_llama_join_layer(tp_llama_layer *L) {
  topos_tensor *qkv[3] = {L->wq, L->wk, L->wv};
  if (L->wk && L->wv) TP_TRY(tp_llama_join(qkv, 3, &L->w_attn_in)); /* (latent attention: no k, v) */
  L->attn_in_parts = L->w_attn_in ? 3 : 0;
  if (!L->w_attn_in && L->wk) {
    TP_TRY(tp_llama_join(qkv, 2, &L->w_attn_in));
    L->attn_in_parts = L->w_attn_in ? 2 : 0;
  }
  topos_tensor *gu[2] = {L->w_gate, L->w_up}, *ug[2] = {L->w_up, L->w_gate};
  if (!L->w_gate) return TOPOS_OK; /* a mixture without a shared expert */
  TP_TRY(tp_llama_join(gu, 2, &L->w_ffn_in));
  if (!L->w_ffn_in) {
    TP_TRY(tp_llama_join(ug, 2, &L->w_ffn_in));
    L->ffn_up_first = L->w_ffn_in != NULL;
  }
  return TOPOS_OK;
}

/* rope_freqs.weight (Llama 3.1 and later): one frequency divisor per pair
 * of the rotation, each a positive finite number. */
static topos_status tp_llama_rope_factor_table(topos_llama *m, const char *name, topos_tensor **out) {
  topos_llama_config *c = &m->config;
  const uint64_t before = c->weight_bytes;
  TP_TRY(tp_llama_weight(m, name, c->rope_dim / 2, 0, 1, out));
  c->weight_bytes = before; /* read once per position, not a product's weight */
  if (!*out) return TOPOS_OK;
  const float *f = topos_tensor_data(*out);
  for (int64_t i = 0; i < c->rope_dim / 2; ++i)
    if (!(f[i] > 0.0f) || f[i] > 1e30f)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%" PRId64 "] = %g must be a positive finite number", name, i,
                     (double)f[i]);
  return TOPOS_OK;
}

/* Frequency divisors per rotated pair: rope_freqs.weight (Llama 3.1+), or
 * LongRoPE's two tables (Phi-3.5, the 128k Phi-3 files), of which a context
 * longer than rope.scaling.original_context_length takes the long one
 * (llama.cpp's choice, by the context's size, not the position). */
static topos_status tp_llama_rope_factors(topos_llama *m) {
  topos_llama_config *c = &m->config;
  TP_TRY(tp_llama_rope_factor_table(m, "rope_freqs.weight", &m->rope_factors));
  c->rope_freqs = m->rope_factors != NULL;
  TP_TRY(tp_llama_rope_factor_table(m, "rope_factors_long.weight", &m->rope_long));
  TP_TRY(tp_llama_rope_factor_table(m, "rope_factors_short.weight", &m->rope_short));
  if (!m->rope_long != !m->rope_short)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: rope_factors_%s.weight is missing (LongRoPE needs both tables)",
                   m->rope_long ? "short" : "long");
  if (m->rope_long && m->rope_factors)
    return tp_fail(TOPOS_UNSUPPORTED, "llama: rope_freqs.weight and LongRoPE's tables in one file");
  c->rope_longrope = m->rope_long != NULL;
  return TOPOS_OK;
}

/* A file's attn_qkv.weight (q, k, v rows) seen as its three parts, and
 * with_bias: attn_qkv.bias, where the file has one, as theirs (*fused_bias 1). */
static topos_status tp_llama_layer_qkv(topos_llama *m, int64_t l, tp_llama_layer *L, int64_t q_dim, int64_t kv_dim,
                                       int with_bias, int *fused_bias) {
  const topos_llama_config *c = &m->config;
  char name[64];
  topos_tensor *qkv = NULL, *bias = NULL;
  snprintf(name, sizeof name, "blk.%" PRId64 ".attn_qkv.weight", l);
  topos_status st = tp_llama_weight(m, name, c->dim, q_dim + 2 * kv_dim, 0, &qkv);
  if (st == TOPOS_OK) st = tp_llama_rows(qkv, 0, q_dim, &L->wq);
  if (st == TOPOS_OK) st = tp_llama_rows(qkv, q_dim, kv_dim, &L->wk);
  if (st == TOPOS_OK) st = tp_llama_rows(qkv, q_dim + kv_dim, kv_dim, &L->wv);
  snprintf(name, sizeof name, "blk.%" PRId64 ".attn_qkv.bias", l);
  if (st == TOPOS_OK && with_bias) st = tp_llama_weight(m, name, q_dim + 2 * kv_dim, 0, 1, &bias);
  *fused_bias = bias != NULL;
  if (st == TOPOS_OK && bias) st = topos_tensor_narrow(bias, 0, 0, q_dim, &L->bq);
  if (st == TOPOS_OK && bias) st = topos_tensor_narrow(bias, 0, q_dim, kv_dim, &L->bk);
  if (st == TOPOS_OK && bias) st = topos_tensor_narrow(bias, 0, q_dim + kv_dim, kv_dim, &L->bv);
  topos_tensor_release(qkv);
  topos_tensor_release(bias);
  return st;
}

/* phi3's ffn_up.weight: gate rows, then up rows (llama.cpp's SWIGLU split:
 * silu of the first half times the second), seen as the two parts. */
static topos_status tp_llama_layer_gate_up(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  char name[64];
  topos_tensor *gate_up = NULL;
  snprintf(name, sizeof name, "blk.%" PRId64 ".ffn_up.weight", l);
  topos_status st = tp_llama_weight(m, name, c->dim, 2 * c->ff, 0, &gate_up);
  if (st == TOPOS_OK) st = tp_llama_rows(gate_up, 0, c->ff, &L->w_gate);
  if (st == TOPOS_OK) st = tp_llama_rows(gate_up, c->ff, c->ff, &L->w_up);
  topos_tensor_release(gate_up);
  return st;
}

/* gpt-oss's router bias and each expert's gate, up and down biases (GGUF
 * extents {out, experts}: tables [experts, out] whose rows the chosen
 * experts' ids pick), f32 for the graph's gather. A token reads its
 * experts' rows only, so only those count as its bytes. */
static topos_status tp_llama_layer_expert_biases(topos_llama *m, int64_t l, tp_llama_layer *L) {
  topos_llama_config *c = &m->config;
  const int64_t E = c->n_experts, D = c->dim, F = c->ff_expert;
  char name[64];
  snprintf(name, sizeof name, "blk.%" PRId64 ".ffn_gate_inp.bias", l);
  TP_TRY(tp_llama_weight(m, name, E, 0, 0, &L->gate_inp_b));
  const struct {
    const char *suffix;
    int64_t n;
    topos_tensor **out;
  } parts[3] = {{"ffn_gate_exps", F, &L->gate_exps_b}, {"ffn_up_exps", F, &L->up_exps_b},
                {"ffn_down_exps", D, &L->down_exps_b}};
  for (int i = 0; i < 3; ++i) {
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s.bias", l, parts[i].suffix);
    const uint64_t before = c->weight_bytes;
    TP_TRY(tp_llama_weight(m, name, parts[i].n, E, 0, parts[i].out));
    c->weight_bytes = before + (c->weight_bytes - before) / (uint64_t)E * (uint64_t)c->n_experts_used;
    if (topos_tensor_dtype(*parts[i].out) != TOPOS_F32) {
      topos_tensor *f = NULL;
      topos_status st = topos_tensor_convert(*parts[i].out, TOPOS_F32, &f);
      topos_tensor_release(*parts[i].out);
      *parts[i].out = f;
      if (st != TOPOS_OK) return tp_fail_context(st, "llama: tensor %s", name);
    }
  }
  return TOPOS_OK;
}

/* A mixture's feed-forward: the router, the experts' three weights (GGUF
 * extents {in, out, experts}) and the shared expert where the file has one
 * (in w_gate / w_up / w_down: it is a dense feed-forward of ff_shared),
 * qwen2moe's behind its gate vector. */
static topos_status tp_llama_layer_experts(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t E = c->n_experts, D = c->dim, F = c->ff_expert, S = c->ff_shared;
  const int64_t X = c->moe_latent ? c->moe_latent : D; /* the routed experts' width */
  const int gated = !c->ffn_plain; /* nemotron_h_moe: up and down, ReLU squared (tp_experts, tp_ffn) */
  char name[64];
  const struct {
    const char *suffix;
    int64_t ne0, ne1, ne2;
    int want;
    topos_tensor **out;
  } parts[] = {{"ffn_gate_inp", D, E, 0, 1, &L->gate_inp},      {"ffn_gate_exps", X, F, E, gated, &L->gate_exps},
               {"ffn_up_exps", X, F, E, 1, &L->up_exps},        {"ffn_down_exps", F, X, E, 1, &L->down_exps},
               {"ffn_latent_down", D, X, 0, X != D, &L->latent_down}, {"ffn_latent_up", X, D, 0, X != D, &L->latent_up},
               {"ffn_gate_shexp", D, S, 0, S > 0 && gated, &L->w_gate},  {"ffn_up_shexp", D, S, 0, S > 0, &L->w_up},
               {"ffn_down_shexp", S, D, 0, S > 0, &L->w_down},
               {"ffn_gate_inp_shexp", D, 0, 0, c->shared_gate, &L->gate_inp_shexp}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    if (!parts[i].want) continue;
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s.weight", l, parts[i].suffix);
    TP_TRY(tp_llama_weight3(m, name, parts[i].ne0, parts[i].ne1, parts[i].ne2, 0, parts[i].out));
  }
  snprintf(name, sizeof name, "blk.%" PRId64 ".exp_probs_b.bias", l);
  TP_TRY(tp_llama_weight(m, name, E, 0, 1, &L->exp_probs_b));
  if (c->experts_oai) TP_TRY(tp_llama_layer_expert_biases(m, l, L));
  if (c->experts_residual) { /* arctic: the mixture's own norm, a dense feed-forward dim wide beside it */
    const struct {
      const char *suffix;
      int64_t ne0, ne1;
      topos_tensor **out;
    } dense[] = {{"ffn_norm_exps", D, 0, &L->ffn_norm_exps},
                 {"ffn_gate", D, D, &L->w_gate},
                 {"ffn_up", D, D, &L->w_up},
                 {"ffn_down", D, D, &L->w_down}};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; ++i) {
      snprintf(name, sizeof name, "blk.%" PRId64 ".%s.weight", l, dense[i].suffix);
      TP_TRY(tp_llama_weight(m, name, dense[i].ne0, dense[i].ne1, 0, dense[i].out));
    }
  }
  if (L->gate_inp_shexp) TP_TRY(tp_llama_as_matrix(&L->gate_inp_shexp, 1, D)); /* read as a one-row product */
  return TOPOS_OK;
}

/* deepseek2's latent attention (config.mla_kv_rank; GGUF extents): attn_q
 * {dim, heads (nope + rope)} or attn_q_a {dim, q_rank}, attn_q_a_norm,
 * attn_q_b {q_rank, heads (nope + rope)}; attn_kv_a_mqa {dim, kv_rank +
 * rope}, attn_kv_a_norm {kv_rank}; attn_k_b {nope, kv_rank, heads}, attn_v_b
 * {kv_rank, v_dim, heads}; attn_output {heads v_dim, dim}. Every token reads
 * all of k_b and v_b (one slice per head), so all their bytes count. */
static topos_status tp_llama_layer_mla(topos_llama *m, int64_t l, tp_llama_layer *L) {
  topos_llama_config *c = &m->config;
  const int64_t H = c->n_heads, R = c->mla_kv_rank, P = c->rope_dim, N = c->mla_nope, V = c->mla_v_dim;
  char name[64];
#define TP_M(field, suffix, e0, e1, e2)                                      \
  do {                                                                       \
    snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l);               \
    TP_TRY(tp_llama_weight3(m, name, e0, e1, e2, 0, &L->field));             \
  } while (0)
  if (c->mla_q_rank) {
    TP_M(wq_a, "attn_q_a.weight", c->dim, c->mla_q_rank, 0);
    TP_M(q_a_norm, "attn_q_a_norm.weight", c->mla_q_rank, 0, 0);
    TP_M(wq, "attn_q_b.weight", c->mla_q_rank, H * (N + P), 0);
  } else {
    TP_M(wq, "attn_q.weight", c->dim, H * (N + P), 0);
  }
  TP_M(wkv_a, "attn_kv_a_mqa.weight", c->dim, R + P, 0);
  TP_M(kv_a_norm, "attn_kv_a_norm.weight", R, 0, 0);
  const uint64_t before = c->weight_bytes;
  TP_M(wk_b, "attn_k_b.weight", N, R, H);
  TP_M(wv_b, "attn_v_b.weight", R, V, H);
  /* whole tensors, not the share of experts tp_llama_weight3 counts for a third extent */
  size_t bytes_k, bytes_v;
  TP_TRY(topos_dtype_bytes(topos_tensor_dtype(L->wk_b), topos_tensor_volume(L->wk_b), &bytes_k));
  TP_TRY(topos_dtype_bytes(topos_tensor_dtype(L->wv_b), topos_tensor_volume(L->wv_b), &bytes_v));
  c->weight_bytes = before + bytes_k + bytes_v;
  TP_M(wo, "attn_output.weight", H * V, c->dim, 0);
#undef TP_M
  return TOPOS_OK;
}

/* A depthwise convolution's taps (GGUF extents {taps, width}: each
 * channel's taps in time order) as f32 [taps, width], owned: tap j of every
 * channel one row, so the graph's j-th term is a row times the shifted
 * inputs (LFM2's shortconv.conv, Mamba-2's ssm_conv1d). */
topos_status tp_llama_conv_taps(topos_llama *m, const char *name, int64_t K, int64_t width, topos_tensor **out) {
  topos_tensor *w = NULL, *f = NULL;
  TP_TRY(tp_llama_weight(m, name, K, width, 0, &w));
  topos_status st = topos_tensor_convert(w, TOPOS_F32, &f); /* [width, K] */
  const int64_t shape[2] = {K, width};
  if (st == TOPOS_OK) st = topos_tensor_zeros(TOPOS_F32, 2, shape, out);
  if (st == TOPOS_OK) {
    const float *src = topos_tensor_data(f);
    float *dst = topos_tensor_data_mut(*out);
    for (int64_t ch = 0; ch < width; ++ch)
      for (int64_t j = 0; j < K; ++j) dst[j * width + ch] = src[ch * K + j];
  }
  topos_tensor_release(w);
  topos_tensor_release(f);
  return st == TOPOS_OK ? TOPOS_OK : tp_fail_context(st, "llama: tensor %s", name);
}

/* LFM2's short-convolution block l: the taps (L->conv_taps) and the two products */
static topos_status tp_llama_layer_shortconv(topos_llama *m, int64_t l, tp_llama_layer *L) {
  const topos_llama_config *c = &m->config;
  const int64_t D = c->dim;
  char name[64];
  snprintf(name, sizeof name, "blk.%" PRId64 ".shortconv.in_proj.weight", l);
  TP_TRY(tp_llama_weight(m, name, D, 3 * D, 0, &L->conv_in));
  snprintf(name, sizeof name, "blk.%" PRId64 ".shortconv.out_proj.weight", l);
  TP_TRY(tp_llama_weight(m, name, D, D, 0, &L->conv_out));
  snprintf(name, sizeof name, "blk.%" PRId64 ".shortconv.conv.weight", l);
  return tp_llama_conv_taps(m, name, c->conv_len, D, &L->conv_taps);
}

/* 1 where the file has blk.l.<suffix> */
static int tp_llama_has_tensor(topos_llama *m, int64_t l, const char *suffix) {
  char name[64];
  int64_t index;
  snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, suffix);
  const int found = topos_gguf_find_tensor(m->gguf, name, &index) == TOPOS_OK;
  topos_clear_error();
  return found;
}

static topos_status tp_llama_weights(topos_llama *m, int64_t swa_period, int nope_all) {
  topos_llama_config *c = &m->config;
  const unsigned flags = tp_llama_arch_flags(c->arch);
  int64_t index;
  m->used = calloc((size_t)topos_gguf_tensor_count(m->gguf) + 1, 1);
  if (!m->used) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: tensor table");
  const char *embd = "token_embd.weight";
  if (topos_gguf_find_tensor(m->gguf, embd, &index) != TOPOS_OK) {
    topos_clear_error();
    if (!tp_llama_arch_embd_from_output(c->arch) ||
        topos_gguf_find_tensor(m->gguf, embd = "output.weight", &index) != TOPOS_OK)
      return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: tensor token_embd.weight is missing from the file");
  }
  topos_gguf_tensor_info info;
  TP_TRY(topos_gguf_tensor_at(m->gguf, index, &info));
  if (info.n_dims != 2 || info.ne[0] != c->dim)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: tensor %s needs ne {%" PRId64 ", n_vocab}, has %d dims with ne[0] = %" PRId64,
                   embd, c->dim, info.n_dims, info.ne[0]);
  c->n_vocab = info.ne[1];
  uint64_t vocab_key;
  char kb[96];
  if (topos_gguf_get_u64(m->gguf, TP_K("vocab_size"), &vocab_key) == TOPOS_OK &&
      vocab_key != (uint64_t)c->n_vocab)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s %" PRIu64 " differs from %s's %" PRId64 " rows", kb, vocab_key,
                   embd, c->n_vocab);
  topos_clear_error();
  TP_TRY(tp_llama_weight(m, embd, c->dim, c->n_vocab, 0, &m->token_embd));
  /* the embedding is read one row per token, not per token of the whole table */
  m->config.weight_bytes -= info.bytes;
  /* LFM2's converter names the final norm token_embd_norm (llama.cpp reads it so) */
  if (!c->norm_weightless)
    TP_TRY(tp_llama_weight(m, c->conv_len ? "token_embd_norm.weight" : "output_norm.weight", c->dim, 0, 0,
                           &m->output_norm));
  const int nb_opt = tp_llama_arch_norm_bias_optional(c->arch); /* mpt: where the file has them */
  if (c->norm_bias) {
    TP_TRY(tp_llama_weight(m, "output_norm.bias", c->dim, 0, nb_opt, &m->output_norm_b));
    TP_TRY(tp_llama_weight(m, "output.bias", c->n_vocab, 0, 1, &m->output_b)); /* phi2 */
  }
  TP_TRY(tp_llama_weight(m, "output.weight", c->dim, c->n_vocab, 1, &m->output));
  c->tied_output = m->output == NULL;
  if (c->tied_output) {
    m->output = topos_tensor_retain(m->token_embd);
    m->config.weight_bytes += info.bytes;
  }
  TP_TRY(tp_llama_rope_factors(m));
  if (c->embd_norm) {
    TP_TRY(tp_llama_weight(m, "token_embd_norm.weight", c->dim, 0, 0, &m->embd_norm));
    TP_TRY(tp_llama_weight(m, "token_embd_norm.bias", c->dim, 0, 0, &m->embd_norm_b));
  }
  if (c->learned_positions) { /* one row per token, as the embedding */
    const uint64_t before = c->weight_bytes;
    TP_TRY(tp_llama_weight(m, "position_embd.weight", c->dim, c->n_ctx_train, 0, &m->pos_embd));
    c->weight_bytes = before;
  }
  TP_TRY(tp_llama_gemma4_weights(m)); /* (per-layer embeddings, where the file has them) */
  if (c->altup_streams) TP_TRY(tp_llama_gemma3n_weights(m));
  const int gemma4 = strcmp(c->arch, "gemma4") == 0, gemma3n = c->altup_streams > 0;
  /* each block has at least 6 tensors (phi3's: attn_norm, attn_qkv,
   * attn_output, ffn_norm, ffn_up, ffn_down): a block_count the file cannot
   * hold is refused before anything is sized by it */
  const int phi3 = (flags & TP_ARCH_FUSED) != 0, per_block = 6;
  const int gate_up = phi3 || tp_llama_arch_gate_up_fused(c->arch);
  const int64_t tensors = topos_gguf_tensor_count(m->gguf);
  if (c->n_layers > tensors / per_block)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: block_count %" PRId64 " needs %" PRId64
                   " block tensors; the file has %" PRId64 " tensors in all",
                   c->n_layers, per_block * c->n_layers, tensors);
  m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
  if (!m->layers) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %" PRId64 " layers", c->n_layers);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    tp_llama_layer *L = &m->layers[l];
    char name[64];
    L->windowed = c->n_swa > 0 && (m->swa_layers ? m->swa_layers[l] != 0
                                                  : tp_llama_period_windowed(swa_period, l));
    c->n_swa_layers += L->windowed;
    /* the block's attention shape: the file's, or (Gemma 4) its kind's and its own kv heads */
    L->heads = m->heads_list ? m->heads_list[l] : c->n_heads;
    L->kv_heads = m->kv_heads_list ? m->kv_heads_list[l] : c->n_kv_heads;
    L->hd = L->windowed ? c->head_dim_swa : c->head_dim;
    L->rd = L->windowed ? c->rope_dim_swa : c->rope_dim;
    L->ff = m->ff_list ? m->ff_list[l] : c->ff;
    L->kv_src = l;
    if (gemma4 || gemma3n) tp_llama_gemma4_shape(m, l, L);
    const int64_t q_dim = L->heads * L->hd, kv_dim = L->kv_heads * L->hd;
    const int64_t q_rows = c->attn_gate ? 2 * q_dim : q_dim; /* attn_q's rows: each head's gate after its q */
#define TP_WO(field, suffix, e0, e1, optional)                                 \
  do {                                                                         \
    snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l);                 \
    TP_TRY(tp_llama_weight(m, name, e0, e1, optional, &L->field));             \
  } while (0)
#define TP_W(field, suffix, e0, e1) TP_WO(field, suffix, e0, e1, 0)
    if (c->pre_norms && !c->norm_weightless) TP_W(attn_norm, "attn_norm.weight", c->dim, 0);
    if (c->norm_bias) TP_WO(attn_norm_b, "attn_norm.bias", c->dim, 0, nb_opt);
    if (flags & TP_ARCH_NORM_2) { /* Falcon-40B's; the 7B has none */
      snprintf(name, sizeof name, "blk.%" PRId64 ".attn_norm_2.weight", l);
      TP_TRY(tp_llama_weight(m, name, c->dim, 0, 1, &L->attn_norm_2));
      if (L->attn_norm_2) TP_W(attn_norm_2_b, "attn_norm_2.bias", c->dim, 0);
    }
    /* q, k, v rows in one attn_qkv (phi3 always; any file may, as llama.cpp
     * reads them; phi3's loader never read its bias) */
    snprintf(name, sizeof name, "blk.%" PRId64 ".attn_qkv.weight", l);
    int fused_bias = 0;
    const int ssm = m->ssm_blocks && m->ssm_blocks[l], ffn_only = m->ffn_blocks && m->ffn_blocks[l];
    const int shortconv = m->conv_blocks && m->conv_blocks[l];
    /* no attention (falcon-h1's mixers are beside it; a feed-forward block's weights are below) */
    const int no_attn = (ssm && !m->ssm_parallel) || ffn_only || shortconv;
    L->ffn_only = ffn_only;
    if (ssm) TP_TRY(tp_llama_layer_mamba2(m, l, L));
    if (no_attn) {
      if (shortconv) TP_TRY(tp_llama_layer_shortconv(m, l, L));
    } else if (c->mla_kv_rank) {
      TP_TRY(tp_llama_layer_mla(m, l, L));
    } else if (phi3 || topos_gguf_find_tensor(m->gguf, name, &index) == TOPOS_OK) {
      TP_TRY(tp_llama_layer_qkv(m, l, L, q_rows, kv_dim, !phi3, &fused_bias));
    } else {
      topos_clear_error();
      TP_W(wq, "attn_q.weight", c->dim, q_rows);
      if (!L->kv_shared) TP_W(wk, "attn_k.weight", c->dim, kv_dim);
      if (!L->kv_shared) TP_WO(wv, "attn_v.weight", c->dim, kv_dim, gemma4); /* Gemma 4: absent, v is k */
    }
    if (!c->mla_kv_rank && !no_attn) TP_W(wo, "attn_output.weight", q_dim, c->dim);
    if (flags & TP_ARCH_FFN_POST_NAME) /* gpt-oss, seed_oss name their feed-forward's norm so */
      TP_W(ffn_norm, "post_attention_norm.weight", c->dim, 0);
    else if (m->ssm_parallel) /* falcon-h1's converter names it without a suffix, as llama.cpp reads it */
      TP_W(ffn_norm, "ffn_norm", c->dim, 0);
    else if (c->pre_norms && !c->norm_weightless && (!c->parallel_residual || (flags & TP_ARCH_PARALLEL_KEY)) &&
             !m->one_branch) {
      snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, tp_llama_arch_ffn_norm_name(c->arch));
      TP_TRY(tp_llama_weight(m, name, c->dim, 0, 0, &L->ffn_norm));
    }
    if (c->attn_sinks) TP_W(attn_sinks, "attn_sinks.weight", c->n_heads, 0);
    if (c->norm_bias && L->ffn_norm) TP_WO(ffn_norm_b, "ffn_norm.bias", c->dim, 0, nb_opt);
    if (m->one_branch && !ffn_only) { /* nemotron_h's mixers: no feed-forward */
    } else if (c->n_experts && !gemma4 && (m->moe_where_present ? tp_llama_has_tensor(m, l, "ffn_gate_inp.weight")
                                                      : l >= c->n_dense_lead && (l + 1) % c->moe_step == 0)) {
      TP_TRY(tp_llama_layer_experts(m, l, L));
    } else {
      if (gate_up) {
        TP_TRY(tp_llama_layer_gate_up(m, l, L));
      } else {
        if (!c->ffn_plain) TP_W(w_gate, "ffn_gate.weight", c->dim, L->ff);
        TP_W(w_up, "ffn_up.weight", c->dim, L->ff);
      }
      TP_W(w_down, "ffn_down.weight", L->ff, c->dim);
    }
    if (c->qk_norm && !no_attn) { /* per head, (2) over the whole q / k row, (3) a weight per head; glm4moe's,
                       * command-r's and stablelm's where the file has them */
      const int optional = tp_llama_arch_qk_norm_optional(c->arch), per_head = c->qk_norm == 3;
      snprintf(name, sizeof name, "blk.%" PRId64 ".attn_q_norm.weight", l);
      TP_TRY(tp_llama_weight(m, name, c->qk_norm == 2 ? q_dim : L->hd, per_head ? L->heads : 0, optional,
                             &L->q_norm));
      snprintf(name, sizeof name, "blk.%" PRId64 ".attn_k_norm.weight", l);
      if (!L->kv_shared)
        TP_TRY(tp_llama_weight(m, name, c->qk_norm == 2 ? kv_dim : L->hd, per_head ? L->kv_heads : 0, optional,
                               &L->k_norm));
      if (c->qk_norm == 2 && c->norm_bias && L->q_norm) { /* mpt's LayerNorms: biases where the file has them */
        TP_WO(q_norm_b, "attn_q_norm.bias", q_dim, 0, 1);
        TP_WO(k_norm_b, "attn_k_norm.bias", kv_dim, 0, 1);
      }
    }
    if (c->post_norms) {
      TP_W(post_attn_norm, "post_attention_norm.weight", c->dim, 0);
      TP_W(post_ffn_norm, "post_ffw_norm.weight", c->dim, 0);
    }
#undef TP_W
#undef TP_WO
    if (gemma4 || gemma3n) TP_TRY(tp_llama_layer_gemma4(m, l, L));
    if (gemma3n) TP_TRY(tp_llama_layer_gemma3n(m, l, L));
    L->nope = nope_all || (m->nope_blocks && m->nope_blocks[l]) || ((flags & TP_ARCH_NOPE4) && (l + 1) % 4 == 0) ||
              ((flags & TP_ARCH_NOPE_FULL) && c->n_swa > 0 && !L->windowed);
    c->n_nope_layers += L->nope;
    /* biases: qwen2's q, k, v; the others optional, as llama.cpp's llama
     * loader reads them (attention output, feed-forward gate, up, down);
     * the other architectures' files have none */
    const int need = (flags & TP_ARCH_QKV_BIAS) != 0;
    const struct {
      const char *suffix;
      int64_t n;
      int optional;
      topos_tensor **out;
    } biases[7] = {{"attn_q.bias", q_dim, !need, &L->bq},
                   {"attn_k.bias", kv_dim, !need, &L->bk},
                   {"attn_v.bias", kv_dim, !need, &L->bv},
                   {"attn_output.bias", c->dim, 1, &L->bo},
                   {"ffn_gate.bias", L->ff, 1, &L->b_gate},
                   {"ffn_up.bias", L->ff, 1, &L->b_up},
                   {"ffn_down.bias", c->dim, 1, &L->b_down}};
    for (int b = fused_bias ? 3 : 0; b < (flags & TP_ARCH_BIASES ? (L->gate_inp ? 4 : 7) : 0); ++b) {
      if (no_attn && b < 4) continue; /* (no attention) */
      snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, biases[b].suffix);
      TP_TRY(tp_llama_weight(m, name, biases[b].n, 0, biases[b].optional, biases[b].out));
    }
    if (m->xielu) memcpy(L->xielu, m->xielu + l * 4, sizeof L->xielu);
    TP_TRY(tp_llama_join_layer(L));
  }
  /* llama.cpp refuses such files too (its tensor count check); the
   * multi-token-prediction blocks' tensors (blk.L.* for L past the trunk)
   * are the file's and no graph's */
  for (int64_t i = 0; i < tensors; ++i)
    if (!m->used[i]) {
      topos_gguf_tensor_info unused;
      TP_TRY(topos_gguf_tensor_at(m->gguf, i, &unused));
      long long blk = -1;
      if (c->n_nextn_layers > 0 && sscanf(unused.name, "blk.%lld.", &blk) == 1 && blk >= c->n_layers &&
          blk < c->n_layers + c->n_nextn_layers)
        continue;
      return tp_fail(TOPOS_UNSUPPORTED, "llama: tensor %.96s is not part of the llama graph topos runs "
                     "(a variant it does not support); refusing to run without it", unused.name);
    }
  return TOPOS_OK;
}

/* The tables that live only while the model loads (llama_internal.h: "while loading") */
static void tp_llama_free_loading(topos_llama *m) {
#define TP_FREE_NULL(p) (free(p), (p) = NULL)
  TP_FREE_NULL(m->used);
  TP_FREE_NULL(m->swa_layers);
  TP_FREE_NULL(m->conv_blocks);
  TP_FREE_NULL(m->ssm_blocks);
  TP_FREE_NULL(m->ffn_blocks);
  TP_FREE_NULL(m->nope_blocks);
  TP_FREE_NULL(m->xielu);
  TP_FREE_NULL(m->sparsity);
  TP_FREE_NULL(m->kv_heads_list);
  TP_FREE_NULL(m->heads_list);
  TP_FREE_NULL(m->ff_list);
#undef TP_FREE_NULL
}

topos_status topos_llama_from_gguf(topos_gguf *gguf, topos_llama **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama: NULL out");
  *out = NULL;
  if (!gguf) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama: NULL reader");
  topos_llama *m = calloc(1, sizeof *m);
  if (!m) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: model");
  m->gguf = gguf;
  int64_t swa_period = 0;
  int nope_all = 0;
  topos_status st = tp_llama_config_read(m, &swa_period, &nope_all);
  if (st == TOPOS_OK) st = tp_llama_weights(m, swa_period, nope_all);
  tp_llama_free_loading(m);
  if (st != TOPOS_OK) {
    topos_llama_free(m);
    return st;
  }
  *out = m;
  return TOPOS_OK;
}

topos_status topos_llama_open(const char *path, topos_llama **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama: NULL out");
  *out = NULL;
  topos_gguf *g = NULL;
  TP_TRY(topos_gguf_open(path, &g));
  topos_status st = topos_llama_from_gguf(g, out);
  if (st != TOPOS_OK) {
    topos_gguf_close(g);
    return st;
  }
  (*out)->owns_gguf = 1;
  return TOPOS_OK;
}

void topos_llama_free(topos_llama *m) {
  if (!m) return;
  if (m->layers) {
    for (int64_t l = 0; l < m->config.n_layers; ++l) {
      tp_llama_layer *L = &m->layers[l];
      topos_tensor *all[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->ffn_norm, L->w_gate, L->w_up,
                             L->w_down, L->w_attn_in, L->w_ffn_in, L->bq, L->bk, L->bv, L->bo,
                             L->b_gate, L->b_up, L->b_down, L->q_norm, L->k_norm, L->post_attn_norm,
                             L->post_ffn_norm, L->gate_inp, L->gate_exps, L->up_exps, L->down_exps,
                             L->gate_inp_shexp, L->attn_norm_b, L->ffn_norm_b, L->exp_probs_b,
                             L->gate_inp_b, L->gate_exps_b, L->up_exps_b, L->down_exps_b, L->attn_sinks,
                             L->attn_norm_2, L->attn_norm_2_b, L->wq_a, L->q_a_norm, L->wkv_a,
                             L->kv_a_norm, L->wk_b, L->wv_b, L->conv_taps, L->conv_in, L->conv_out,
                             L->q_norm_b, L->k_norm_b, L->ssm_in, L->ssm_taps, L->ssm_conv_b, L->ssm_dt_b,
                             L->ssm_a, L->ssm_d, L->ssm_norm, L->ssm_out, L->ssm_x, L->ssm_dt, L->ssm_dt_norm,
                             L->ssm_b_norm, L->ssm_c_norm, L->ssm_z, L->ssm_beta, L->ssm_alpha, L->ssm_k,
                             L->ssm_v, L->ssm_f_a, L->ssm_f_b, L->ssm_g_a, L->ssm_g_b, L->latent_down,
                             L->latent_up, L->ple_gate, L->ple_proj, L->ple_norm, L->gate_inp_s,
                             L->down_exps_s, L->gate_up_exps, L->post_ffn_norm_1, L->pre_ffn_norm_2,
                             L->post_ffn_norm_2, L->altup_router, L->altup_router_norm, L->altup_predict,
                             L->altup_correct, L->altup_correct_scale, L->laurel_l, L->laurel_r, L->laurel_norm,
                             L->ffn_norm_exps};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
    }
    free(m->layers);
  }
  topos_tensor_release(m->token_embd);
  topos_tensor_release(m->output_norm);
  topos_tensor_release(m->embd_norm);
  topos_tensor_release(m->embd_norm_b);
  topos_tensor_release(m->output);
  topos_tensor_release(m->output_norm_b);
  topos_tensor_release(m->output_b);
  topos_tensor_release(m->rope_factors);
  topos_tensor_release(m->pos_embd);
  topos_tensor_release(m->rope_long);
  topos_tensor_release(m->rope_short);
  topos_tensor_release(m->ple_embd);
  topos_tensor_release(m->ple_model_proj);
  topos_tensor_release(m->ple_proj_norm);
  topos_tensor_release(m->altup_proj);
  topos_tensor_release(m->altup_unembd);
  free(m->rope_still);
  tp_llama_free_loading(m);
  if (m->owns_gguf) topos_gguf_close(m->gguf);
  free(m);
}

const topos_llama_config *topos_llama_config_of(const topos_llama *m) {
  return m ? &m->config : NULL;
}

topos_gguf *topos_llama_gguf(const topos_llama *m) { return m ? m->gguf : NULL; }
