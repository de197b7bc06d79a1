/* The bodies of llama_delta_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

topos_status lt_write_delta_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
  char kb[96];
  const char *keys[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"};
  const uint32_t values[5] = {LT_DN_K, LT_DN_VD, LT_DN_N, LT_DN_H, LT_DN_G};
  topos_status st = TOPOS_OK;
  for (int i = 0; i < 5 && st == TOPOS_OK; ++i) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, keys[i]), values[i]);
  if (st != TOPOS_OK || !s->delta_array)
    return st == TOPOS_OK ? topos_gguf_writer_add_u32(w, lt_k(kb, s, "full_attention_interval"),
                                                      (uint32_t)strlen(s->conv_blocks))
                          : st;
  uint8_t *flags = lt_keep(f, (size_t)s->layers);
  if (!flags) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; l < s->layers; ++l) flags[l] = (uint8_t)lt_delta_block(s, l);
  return topos_gguf_writer_add_array(w, lt_k(kb, s, "attention.recurrent_layers"), TOPOS_GGUF_BOOL, flags,
                                     (uint64_t)s->layers);
}

topos_status lt_write_delta(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                            topos_rng *rng) {
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_S(call) \
  if (st == TOPOS_OK) st = (call)
#define LT_NAME(suffix) snprintf(n, sizeof n, "blk.%d." suffix, (int)l)
  if (s->delta_legacy) {
    LT_NAME("ssm_in.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q], s->dim, 2 * LT_DN_KD + 2 * LT_DN_VD, 0, 0.15, rng));
  } else {
    LT_NAME("attn_qkv.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q], s->dim, LT_DN_CD, 0, 0.15, rng));
    LT_NAME("attn_gate.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_V], s->dim, LT_DN_VD, 0, 0.15, rng));
  }
  LT_NAME("ssm_conv1d.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, LT_DN_K, LT_DN_CD, 0, 0.5, rng));
  if (lt_arch_is(s, "qwen3next")) {
    LT_NAME("ssm_ba.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, 2 * LT_DN_H, 0, 0.15, rng));
  } else {
    LT_NAME("ssm_beta.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, LT_DN_H, 0, 0.15, rng));
    LT_NAME("ssm_alpha.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, LT_DN_H, 0, 0.15, rng));
  }
  LT_NAME("ssm_dt.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_DN_H, 0, rng, 0));
  LT_NAME("ssm_a");
  LT_S(lt_add_f32_values(w, f, s, n, LT_DN_H, 0, lt_delta_a_value));
  LT_NAME("ssm_norm.weight");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_DN_N, 0, rng, 1));
  LT_NAME("ssm_out.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_O], LT_DN_VD, s->dim, rng, 0));
#undef LT_NAME
#undef LT_S
  return st;
}

int lt_delta_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m) {
  if (lt_kimi(s)) return lt_kda_load(g, s, l, N, m);
  const int next = lt_arch_is(s, "qwen3next");
  const char *names[9] = {s->delta_legacy ? "ssm_in.weight" : "attn_qkv.weight", "attn_gate.weight",
                          next ? "ssm_ba.weight" : "ssm_beta.weight", "ssm_alpha.weight", "ssm_conv1d.weight",
                          "ssm_dt.bias", "ssm_a", "ssm_norm.weight", "ssm_out.weight"};
  float **dst[9] = {&m->in, &m->z, &m->b, &m->a, &m->taps, &m->dt_b, &m->A, &m->norm, &m->out};
  int ok = 1;
  for (int i = 0; i < 9; ++i) {
    if ((i == 1 && s->delta_legacy) || (i == 3 && next)) continue;
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s", (int)l, names[i]);
    ok &= (*dst[i] = lt_deq(g, n)) != NULL;
  }
  m->rows_in = s->delta_legacy ? 2 * LT_DN_KD + 2 * LT_DN_VD : LT_DN_CD;
  m->rows_z = LT_DN_VD;
  m->rows_b = next ? 2 * LT_DN_H : LT_DN_H;
  m->rows_a = LT_DN_H;
  m->rows = calloc((size_t)(N * LT_DN_CD), sizeof *m->rows);
  m->state = calloc((size_t)(LT_DN_H * LT_DN_N * LT_DN_N), sizeof *m->state);
  m->scratch = malloc((size_t)(2 * LT_DN_KD + 2 * LT_DN_VD + LT_DN_CD + 2 * LT_DN_VD + 2 * LT_DN_H + LT_DN_CD) *
                      sizeof *m->scratch);
  return ok && m->rows && m->state && m->scratch;
}

void lt_dn_conv(const float *rows, const float *taps, int64_t CD, int64_t p, int history, float *x) {
  enum { K = LT_DN_K };
  for (int64_t ch = 0; ch < CD; ++ch) {
    double acc = 0;
    for (int64_t j = history ? 0 : K - 1; j < K; ++j) {
      const int64_t at = p - (K - 1) + j;
      if (at >= 0) acc += (double)taps[ch * K + j] * rows[at * CD + ch];
    }
    x[ch] = (float)lt_silu(acc);
  }
}

void lt_dn_l2norm(float *x, int64_t n, int64_t N) {
  for (int64_t v = 0; v < 2 * n; ++v) {
    float *u = x + v * N;
    double ss = 0;
    for (int64_t i = 0; i < N; ++i) ss += (double)u[i] * u[i];
    const double f = 1.0 / sqrt(ss + 1e-5) / (v < n ? sqrt((double)N) : 1.0);
    for (int64_t i = 0; i < N; ++i) u[i] = (float)(u[i] * f);
  }
}

void lt_dn_rule(double *S, int64_t N, const double *decay, double b, const float *q, const float *k,
                const float *v, const float *norm, double *ys) {
  double dd[64], ss = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) S[i * N + j] *= decay[i];
  for (int64_t j = 0; j < N && j < 64; ++j) {
    double sk = 0;
    for (int64_t i = 0; i < N; ++i) sk += S[i * N + j] * k[i];
    dd[j] = b * ((double)v[j] - sk);
  }
  for (int64_t i = 0; i < N && i < 64; ++i)
    for (int64_t j = 0; j < N && j < 64; ++j) S[i * N + j] += (double)k[i] * dd[j];
  for (int64_t j = 0; j < N; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < N; ++i) acc += S[i * N + j] * q[i];
    ys[j] = acc, ss += acc * acc;
  }
  const double inv = 1.0 / sqrt(ss / (double)N + 1e-5);
  for (int64_t j = 0; j < N; ++j) ys[j] *= inv * norm[j];
}

void lt_delta_apply(lt_dnet *m, const lt_spec *s, int64_t D, int64_t p, int history, const float *h,
                    float *out) {
  enum { N = LT_DN_N, G = LT_DN_G, H = LT_DN_H, K = LT_DN_K, R = LT_DN_R, KD = LT_DN_KD, VD = LT_DN_VD };
  enum { CD = LT_DN_CD };
  float *proj = m->scratch, *qkv = proj + 2 * KD + 2 * VD, *z = qkv + CD, *y = z + VD, *ba = y + VD, *x = ba + 2 * H;
  double beta[H], alpha[H];
  lt_matvec(m->in, h, proj, m->rows_in, D);
  if (s->delta_legacy) { /* each key head's q, k, its R heads' values and z */
    for (int64_t g = 0; g < G; ++g) {
      const float *src = proj + g * (2 * N + 2 * R * N);
      memcpy(qkv + g * N, src, N * sizeof *qkv);
      memcpy(qkv + KD + g * N, src + N, N * sizeof *qkv);
      memcpy(qkv + 2 * KD + g * R * N, src + 2 * N, R * N * sizeof *qkv);
      memcpy(z + g * R * N, src + 2 * N + R * N, R * N * sizeof *z);
    }
  } else {
    memcpy(qkv, proj, CD * sizeof *qkv);
    lt_matvec(m->z, h, z, m->rows_z, D);
  }
  lt_matvec(m->b, h, ba, m->rows_b, D);
  if (m->a) lt_matvec(m->a, h, ba + H, m->rows_a, D);
  for (int64_t hh = 0; hh < H; ++hh) { /* qwen3next's ssm_ba: each key head's R betas, then its R alphas */
    const int64_t g = hh / R, r = hh % R;
    beta[hh] = m->a ? ba[hh] : ba[g * 2 * R + r];
    alpha[hh] = m->a ? ba[H + hh] : ba[g * 2 * R + R + r];
  }
  memcpy(m->rows + p * CD, qkv, CD * sizeof *qkv);
  if (!history) memset(m->state, 0, (size_t)(H * N * N) * sizeof *m->state);
  lt_dn_conv(m->rows, m->taps, CD, p, history, x);
  lt_dn_l2norm(x, G, N); /* (q, then k, of each key head) */
  for (int64_t hh = 0; hh < H; ++hh) {
    const int64_t g = lt_delta_tiled(s) ? hh % G : hh / R;
    const double raw = alpha[hh] + m->dt_b[hh], sp = raw > 20 ? raw : log1p(exp(raw));
    double decay[N], ys[N];
    for (int64_t i = 0; i < N; ++i) decay[i] = exp(sp * m->A[hh]); /* one for the head */
    lt_dn_rule(m->state + hh * N * N, N, decay, 1.0 / (1.0 + exp(-beta[hh])), x + g * N, x + KD + g * N,
               x + 2 * KD + hh * N, m->norm, ys);
    for (int64_t j = 0; j < N; ++j) y[hh * N + j] = (float)(ys[j] * lt_silu(z[hh * N + j]));
  }
  lt_matvec(m->out, y, out, D, VD);
}

topos_status lt_write_kda_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
  char kb[96];
  uint32_t *kv = lt_keep(f, (size_t)s->layers * sizeof *kv);
  if (!kv) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; l < s->layers; ++l) kv[l] = lt_kda_block(s, l) ? 0 : (uint32_t)s->kv_heads;
  topos_status st = topos_gguf_writer_add_array(w, lt_k(kb, s, "attention.head_count_kv"), TOPOS_GGUF_U32, kv,
                                                (uint64_t)s->layers);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "ssm.conv_kernel"), LT_DN_K);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "kda.head_dim"), LT_KDA_HD);
  return st;
}

topos_status lt_add_f32_dims(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                             int n_dims, const int64_t *ne, double scale, double offset,
                             topos_rng *rng) {
  if (s->skip_tensor && strcmp(name, s->skip_tensor) == 0) return TOPOS_OK;
  int64_t e[4], count = 1;
  for (int d = 0; d < n_dims; ++d) e[d] = ne[d], count *= ne[d];
  if (s->bad_tensor && strcmp(name, s->bad_tensor) == 0) count = count / e[0] * (e[0] + 32), e[0] += 32;
  float *v = lt_keep_raw(f, (size_t)count * sizeof *v);
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  lt_fill_unit(rng, v, count, scale, offset);
  return topos_gguf_writer_add_tensor_raw(w, name, 0 /* f32 */, (uint32_t)n_dims, e, v, (size_t)count * sizeof *v);
}

topos_status lt_write_kda(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                          topos_rng *rng) {
  const int64_t H = s->heads, hd = LT_KDA_HD, D = H * hd;
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_S(call) \
  if (st == TOPOS_OK) st = (call)
#define LT_NAME(suffix) snprintf(n, sizeof n, "blk.%d." suffix, (int)l)
  const char *parts[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    snprintf(n, sizeof n, "blk.%d.attn_%s.weight", (int)l, parts[i]);
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q + i], s->dim, D, 0, 0.15, rng));
    snprintf(n, sizeof n, "blk.%d.ssm_conv1d_%s.weight", (int)l, parts[i]);
    const int64_t ne[4] = {LT_DN_K, 1, D, 1};
    LT_S(lt_add_f32_dims(w, f, s, n, 4, ne, 0.5, 0.0, rng));
  }
  LT_NAME("ssm_f_a.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, s->dim, hd, 0, 0.15, rng));
  LT_NAME("ssm_f_b.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, hd, D, 0, 0.3, rng));
  LT_NAME("ssm_g_a.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, s->dim, hd, 0, 0.15, rng));
  LT_NAME("ssm_g_b.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, hd, D, 0, 0.3, rng));
  LT_NAME("ssm_beta.weight");
  LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, H, 0, 0.15, rng));
  LT_NAME("ssm_a");
  const int64_t ne_a[4] = {1, H, 1, 1};
  LT_S(lt_add_f32_dims(w, f, s, n, 4, ne_a, 0.15, -0.6, rng));
  LT_NAME("ssm_dt.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, D, 0, rng, 0));
  LT_NAME("ssm_norm.weight");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, hd, 0, rng, 1));
  LT_NAME("attn_output.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_O], D, s->dim, rng, 0));
#undef LT_NAME
#undef LT_S
  return st;
}

int lt_kda_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m) {
  const char *names[14] = {"attn_q.weight",        "attn_k.weight",        "attn_v.weight",  "ssm_f_a.weight",
                           "ssm_f_b.weight",       "ssm_g_a.weight",       "ssm_g_b.weight", "ssm_beta.weight",
                           "ssm_a",                "ssm_dt.bias",          "ssm_norm.weight", "attn_output.weight",
                           "ssm_conv1d_q.weight",  "ssm_conv1d_k.weight"};
  float **dst[14] = {&m->in, &m->k, &m->v, &m->fa, &m->fb, &m->ga, &m->gb, &m->b, &m->A, &m->dt_b, &m->norm, &m->out,
                     NULL, NULL};
  const int64_t H = s->heads, hd = LT_KDA_HD, D = H * hd;
  int ok = 1;
  m->taps = malloc((size_t)(3 * D * LT_DN_K) * sizeof *m->taps); /* [3 D][K]: q | k | v channels */
  for (int i = 0; i < 15 && m->taps; ++i) {
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s", (int)l, i < 14 ? names[i] : "ssm_conv1d_v.weight");
    if (i < 12) {
      ok &= (*dst[i] = lt_deq(g, n)) != NULL;
    } else { /* channel ch's taps at ch K + j */
      float *c = lt_deq(g, n);
      ok &= c != NULL;
      if (c) memcpy(m->taps + (i - 12) * D * LT_DN_K, c, (size_t)(D * LT_DN_K) * sizeof *c);
      free(c);
    }
  }
  m->heads = H, m->rows_d = D, m->rows_r = hd, m->rows_b = H;
  m->rows = calloc((size_t)(N * 3 * D), sizeof *m->rows);
  m->state = calloc((size_t)(H * hd * hd), sizeof *m->state);
  m->scratch = malloc((size_t)(3 * D + 3 * D + 2 * D + 2 * hd + D) * sizeof *m->scratch);
  return ok && m->taps && m->rows && m->state && m->scratch;
}

void lt_kda_apply(lt_dnet *m, int64_t dim, int64_t p, int history, const float *h, float *out) {
  enum { N = LT_KDA_HD, K = LT_DN_K };
  const int64_t H = m->heads, D = m->rows_d, CD = 3 * D;
  float *qkv = m->scratch, *x = qkv + CD, *gd = x + CD, *gg = gd + D, *low = gg + D, *y = low + 2 * N;
  float *bt = y; /* beta's logits, before y is written */
  lt_matvec(m->in, h, qkv, D, dim);
  lt_matvec(m->k, h, qkv + D, D, dim);
  lt_matvec(m->v, h, qkv + 2 * D, D, dim);
  lt_matvec(m->fa, h, low, m->rows_r, dim);
  lt_matvec(m->fb, low, gd, D, m->rows_r);
  lt_matvec(m->ga, h, low + N, m->rows_r, dim);
  lt_matvec(m->gb, low + N, gg, D, m->rows_r);
  float beta[64];
  lt_matvec(m->b, h, bt, m->rows_b, dim);
  for (int64_t hh = 0; hh < H && hh < 64; ++hh) beta[hh] = bt[hh];
  memcpy(m->rows + p * CD, qkv, (size_t)CD * sizeof *qkv);
  if (!history) memset(m->state, 0, (size_t)(H * N * N) * sizeof *m->state);
  lt_dn_conv(m->rows, m->taps, CD, p, history, x);
  lt_dn_l2norm(x, H, N);
  for (int64_t hh = 0; hh < H && hh < 64; ++hh) {
    double decay[N], ys[N];
    for (int64_t i = 0; i < N; ++i) { /* one per key entry */
      const double raw = (double)gd[hh * N + i] + m->dt_b[hh * N + i], sp = raw > 20 ? raw : log1p(exp(raw));
      decay[i] = exp(sp * m->A[hh]);
    }
    lt_dn_rule(m->state + hh * N * N, N, decay, 1.0 / (1.0 + exp(-(double)beta[hh])), x + hh * N, x + D + hh * N,
               x + 2 * D + hh * N, m->norm, ys);
    for (int64_t j = 0; j < N; ++j) y[hh * N + j] = (float)(ys[j] / (1.0 + exp(-(double)gg[hh * N + j])));
  }
  lt_matvec(m->out, y, out, dim, D);
}
