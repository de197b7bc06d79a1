/* Gated-DeltaNet test files and their plain forward (included by
 * llama_util.h): qwen3next / qwen35 blocks marked 'D' in lt_spec.conv_blocks
 * are delta-rule mixers (attention.recurrent_layers where the spec says
 * delta_array, else full_attention_interval = the pattern's length). The
 * plain forward keeps every position's convolved rows, sums the taps in
 * double and runs each value head's delta rule on a double state. */
#ifndef TESTS_MODELS_LLAMA_DELTA_UTIL_H
#define TESTS_MODELS_LLAMA_DELTA_UTIL_H

/* ssm.conv_kernel, state_size (each head's width), group_count (key heads), time_step_rank (value heads) */
enum { LT_DN_K = 4, LT_DN_N = 32, LT_DN_G = 2, LT_DN_H = 4 };
#define LT_DN_R (LT_DN_H / LT_DN_G)
#define LT_DN_KD (LT_DN_G * LT_DN_N)
#define LT_DN_VD (LT_DN_H * LT_DN_N)
#define LT_DN_CD (2 * LT_DN_KD + LT_DN_VD)

/* qwen35, qwen35moe: value head h reads key head h % groups (the plain
 * forward without "tiled": h / (heads / groups), qwen3next's) */
static inline int lt_delta_tiled(const lt_spec *s) {
  const int tiled = !lt_arch_is(s, "qwen3next");
  return lt_without(s, "tiled") ? !tiled : tiled;
}

static inline topos_status lt_write_delta_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
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

/* A = -exp(A_log) per value head: decays exp(softplus(.) A) of ~0.5-0.8 */
static inline double lt_delta_a_value(int64_t h) { return -(0.3 + 0.2 * (double)h); }

/* block l's mixer: attn_qkv {dim, CD} in q's type and attn_gate {dim, VD}
 * in v's (delta_legacy: one ssm_in {dim, 2 KD + 2 VD}, each key head's q,
 * k, values and z), the convolution {taps, CD} f32, ssm_ba {dim, 2 heads}
 * (qwen3next) or ssm_beta and ssm_alpha {dim, heads} in k's type, dt's
 * bias, A, the norm {state}, ssm_out {VD, dim} in o's type */
static inline topos_status lt_write_delta(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                          topos_rng *rng) {
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_S(call) \
  if (st == TOPOS_OK) st = (call)
#define LT_N(suffix) snprintf(n, sizeof n, "blk.%d." suffix, (int)l)
  if (s->delta_legacy) {
    LT_N("ssm_in.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q], s->dim, 2 * LT_DN_KD + 2 * LT_DN_VD, 0, 0.15, rng));
  } else {
    LT_N("attn_qkv.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q], s->dim, LT_DN_CD, 0, 0.15, rng));
    LT_N("attn_gate.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_V], s->dim, LT_DN_VD, 0, 0.15, rng));
  }
  LT_N("ssm_conv1d.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, LT_DN_K, LT_DN_CD, 0, 0.5, rng));
  if (lt_arch_is(s, "qwen3next")) {
    LT_N("ssm_ba.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, 2 * LT_DN_H, 0, 0.15, rng));
  } else {
    LT_N("ssm_beta.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, LT_DN_H, 0, 0.15, rng));
    LT_N("ssm_alpha.weight");
    LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, LT_DN_H, 0, 0.15, rng));
  }
  LT_N("ssm_dt.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_DN_H, 0, rng, 0));
  LT_N("ssm_a");
  LT_S(lt_add_f32_values(w, f, s, n, LT_DN_H, 0, lt_delta_a_value));
  LT_N("ssm_norm.weight");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_DN_N, 0, rng, 1));
  LT_N("ssm_out.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_O], LT_DN_VD, s->dim, rng, 0));
#undef LT_N
#undef LT_S
  return st;
}

/* A mixer's weights, dequantized; the convolution's input row of every
 * position so far (rows [N, CD]) and each value head's state S[i][j] in
 * double [heads][state][state]. */
typedef struct lt_dnet {
  float *in, *z, *b, *a, *taps, *dt_b, *A, *norm, *out, *rows, *scratch;
  float *k, *v, *fa, *fb, *ga, *gb; /* kimi-linear: k and v, the decays' and the gate's low-rank pairs */
  double *state;
  int64_t rows_in, rows_z, rows_b, rows_a; /* (not constants: gcc 12's loop analysis of lt_matvec misfires) */
  int64_t heads, rows_d, rows_r;           /* kimi-linear: H, D = H hd, hd */
} lt_dnet;

static inline int lt_kda_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m);

static inline int lt_delta_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m) {
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

static inline void lt_delta_free(lt_dnet *m) {
  float *all[17] = {m->in, m->z, m->b,  m->a, m->taps, m->dt_b, m->A,  m->norm, m->out,
                    m->rows, m->scratch, m->k, m->v, m->fa,   m->fb,   m->ga, m->gb};
  for (int i = 0; i < 17; ++i) free(all[i]);
  free(m->state);
}

/* The mixers' shared steps, in double. x[ch] = SiLU(sum over taps j of
 * taps[ch K + j] rows[p - K + 1 + j][ch]) (rows before 0 are zeros;
 * `history` 0: the current row's tap alone) */
static inline void lt_dn_conv(const float *rows, const float *taps, int64_t CD, int64_t p, int history, float *x) {
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

/* the q heads then the k heads of x (n of each, N wide) L2-normed, q times 1 / sqrt(N) */
static inline void lt_dn_l2norm(float *x, int64_t n, int64_t N) {
  for (int64_t v = 0; v < 2 * n; ++v) {
    float *u = x + v * N;
    double ss = 0;
    for (int64_t i = 0; i < N; ++i) ss += (double)u[i] * u[i];
    const double f = 1.0 / sqrt(ss + 1e-5) / (v < n ? sqrt((double)N) : 1.0);
    for (int64_t i = 0; i < N; ++i) u[i] = (float)(u[i] * f);
  }
}

/* One head's rule on S [N][N]: row i times decay[i]; d = b (v - S^T k); S
 * += k d^T; y = S^T q, RMS-normed (eps 1e-5) times norm: ys[N] */
static inline void lt_dn_rule(double *S, int64_t N, const double *decay, double b, const float *q, const float *k,
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

/* out[D] = the mixer at position p for the block's normed input h
 * (`history` 0: the state and the convolution forget the earlier positions) */
static inline void lt_delta_apply(lt_dnet *m, const lt_spec *s, int64_t D, int64_t p, int history, const float *h,
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


/* ---- kimi-linear: Kimi Delta Attention ('K' blocks, head_count_kv 0; the
 * others deepseek2's latent attention, unrotated) */

enum { LT_KDA_HD = 32 }; /* kda.head_dim; ssm.conv_kernel is LT_DN_K */

static inline topos_status lt_write_kda_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
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

/* an f32 tensor of the given extents (Kimi's converter writes {taps, 1,
 * width, 1} convolutions and a {1, heads, 1, 1} A), lt_fill_unit's values
 * times scale plus offset */
static inline topos_status lt_add_f32_dims(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
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

/* block l's mixer: attn_q, attn_k, attn_v {dim, D} in the q, k, v types;
 * their convolutions {taps, 1, D, 1}; ssm_f_a, ssm_g_a {dim, hd} and
 * ssm_f_b, ssm_g_b {hd, D} f32; ssm_beta {dim, H}; A {1, H, 1, 1} (-(0.3
 * to 0.9)); ssm_dt.bias {D}; ssm_norm {hd}; attn_output {D, dim} in o's type */
static inline topos_status lt_write_kda(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                        topos_rng *rng) {
  const int64_t H = s->heads, hd = LT_KDA_HD, D = H * hd;
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_S(call) \
  if (st == TOPOS_OK) st = (call)
#define LT_N(suffix) snprintf(n, sizeof n, "blk.%d." suffix, (int)l)
  const char *parts[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    snprintf(n, sizeof n, "blk.%d.attn_%s.weight", (int)l, parts[i]);
    LT_S(lt_add3(w, f, s, n, s->types[LT_Q + i], s->dim, D, 0, 0.15, rng));
    snprintf(n, sizeof n, "blk.%d.ssm_conv1d_%s.weight", (int)l, parts[i]);
    const int64_t ne[4] = {LT_DN_K, 1, D, 1};
    LT_S(lt_add_f32_dims(w, f, s, n, 4, ne, 0.5, 0.0, rng));
  }
  LT_N("ssm_f_a.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, s->dim, hd, 0, 0.15, rng));
  LT_N("ssm_f_b.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, hd, D, 0, 0.3, rng));
  LT_N("ssm_g_a.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, s->dim, hd, 0, 0.15, rng));
  LT_N("ssm_g_b.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, hd, D, 0, 0.3, rng));
  LT_N("ssm_beta.weight");
  LT_S(lt_add3(w, f, s, n, s->types[LT_K], s->dim, H, 0, 0.15, rng));
  LT_N("ssm_a");
  const int64_t ne_a[4] = {1, H, 1, 1};
  LT_S(lt_add_f32_dims(w, f, s, n, 4, ne_a, 0.15, -0.6, rng));
  LT_N("ssm_dt.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, D, 0, rng, 0));
  LT_N("ssm_norm.weight");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, hd, 0, rng, 1));
  LT_N("attn_output.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_O], D, s->dim, rng, 0));
#undef LT_N
#undef LT_S
  return st;
}

static inline int lt_kda_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m) {
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

/* out[D] = the KDA mixer at position p for the block's normed input h */
static inline void lt_kda_apply(lt_dnet *m, int64_t dim, int64_t p, int history, const float *h, float *out) {
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

#endif
