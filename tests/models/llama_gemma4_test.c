/* Gemma 4 files against a plain forward written here (double sums), as
 * llama.cpp's gemma4 graph defines the model: windowed blocks with heads of
 * 16 (2 kv heads) and full blocks with heads of 32 (1 kv head) whose
 * rotation keeps all but its first 4 pairs in place (rope_freqs' 1e30s),
 * values RMS-normalised per head, no q scale, the last two blocks reading
 * the caches of blocks 2 (windowed) and 3 (full), per-layer embeddings,
 * output scales, soft-capped logits; a block without attn_v (values are the
 * keys' product); feed-forwards of two widths. Decoding equals the full
 * context bit for bit; quantized weights and 16-bit caches stay near the
 * plain forward; bad files are refused. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the blocks' shapes */

enum { G4_DIM = 64, G4_HEADS = 4, G4_HD_W = 16, G4_HD_F = 32, G4_KV_W = 2, G4_KV_F = 1, G4_FF = 96, G4_PLE = 16 };
enum { G4_LAYERS = 6, G4_VOCAB = 300, G4_WINDOW = 4, G4_SHARED = 2, G4_ROT_PAIRS = 4 };
enum { G4_EXPERTS = 4, G4_USED = 2, G4_FF_EXP = 32 }; /* the mixtures' */
#define G4_PATTERN "WWWFWF" /* windowed (W) or full (F) */

typedef struct g4_spec {
  lt_spec base;       /* types, seed, skip_tensor, bad_tensor (lt_add) */
  int shared;         /* attention.shared_kv_layers */
  int ple;            /* per-layer embeddings */
  int wide;           /* feed_forward_length per block: the shared blocks twice as wide */
  int v_is_k;         /* block 3 has no attn_v */
  int64_t window;     /* attention.sliding_window */
  const char *no_key; /* leave this key out */
  int moe;            /* mixtures in every block: 1 gate and up apart, 2 in one ffn_gate_up_exps */
  /* the plain forward without a feature ("v norm", "sharing", "ple", "proportional"): the check sees it */
  const char *plain_without;
} g4_spec;

static g4_spec g4_default(void) {
  g4_spec s;
  memset(&s, 0, sizeof s);
  s.base = lt_f32_spec();
  s.base.arch = "gemma4";
  s.base.seed = 44;
  s.shared = G4_SHARED, s.ple = 1, s.v_is_k = 1, s.window = G4_WINDOW;
  return s;
}

static int g4_windowed(int64_t l) { return G4_PATTERN[l] == 'W'; }
static int64_t g4_hd(int64_t l) { return g4_windowed(l) ? G4_HD_W : G4_HD_F; }
static int64_t g4_kvh(int64_t l) { return g4_windowed(l) ? G4_KV_W : G4_KV_F; }
static int g4_shared(const g4_spec *s, int64_t l) { return l >= G4_LAYERS - s->shared; }
static int64_t g4_ff(const g4_spec *s, int64_t l) { return s->wide && g4_shared(s, l) ? 2 * G4_FF : G4_FF; }
static int g4_has_v(const g4_spec *s, int64_t l) { return !g4_shared(s, l) && !(s->v_is_k && l == 3); }
static int g4_plain_without(const g4_spec *s, const char *what) {
  return s->plain_without && strcmp(s->plain_without, what) == 0;
}

static topos_status g4_write(const g4_spec *s, lt_file *f) {
  memset(f, 0, sizeof *f);
  const lt_spec *b = &s->base;
  topos_gguf_writer *w = NULL;
  topos_status st = topos_gguf_writer_create(&w);
  topos_rng rng = topos_rng_seed(b->seed);
  const int64_t D = G4_DIM, L = G4_LAYERS, P = G4_PLE;
  char n[96];
#define G4(call) \
  if (st == TOPOS_OK) st = (call)
#define G4_KEY(suffix) (snprintf(n, sizeof n, "gemma4.%s", suffix), s->no_key && strcmp(s->no_key, suffix) == 0)
  G4(topos_gguf_writer_add_string(w, "general.architecture", "gemma4"));
  const struct {
    const char *key;
    uint32_t value;
  } u32[] = {{"context_length", 2048},        {"embedding_length", D},         {"block_count", L},
             {"attention.head_count", G4_HEADS}, {"attention.key_length", G4_HD_F}, {"attention.value_length", G4_HD_F},
             {"attention.key_length_swa", G4_HD_W}, {"attention.value_length_swa", G4_HD_W},
             {"rope.dimension_count", G4_HD_F}, {"rope.dimension_count_swa", G4_HD_W},
             {"attention.sliding_window", (uint32_t)s->window}, {"attention.shared_kv_layers", (uint32_t)s->shared},
             {"embedding_length_per_layer_input", s->ple ? P : 0}};
  for (size_t i = 0; i < sizeof u32 / sizeof u32[0]; ++i)
    if (!G4_KEY(u32[i].key)) G4(topos_gguf_writer_add_u32(w, n, u32[i].value));
  uint32_t *kv = lt_keep(f, L * sizeof *kv), *ff = lt_keep(f, L * sizeof *ff);
  uint8_t *pattern = lt_keep(f, L);
  if (!kv || !ff || !pattern) st = TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; st == TOPOS_OK && l < L; ++l)
    kv[l] = (uint32_t)g4_kvh(l), ff[l] = (uint32_t)g4_ff(s, l), pattern[l] = (uint8_t)g4_windowed(l);
  if (!G4_KEY("attention.head_count_kv")) G4(topos_gguf_writer_add_array(w, n, TOPOS_GGUF_U32, kv, L));
  if (!G4_KEY("feed_forward_length"))
    G4(s->wide ? topos_gguf_writer_add_array(w, n, TOPOS_GGUF_U32, ff, L) : topos_gguf_writer_add_u32(w, n, G4_FF));
  if (!G4_KEY("attention.sliding_window_pattern")) G4(topos_gguf_writer_add_array(w, n, TOPOS_GGUF_BOOL, pattern, L));
  const struct {
    const char *key;
    float value;
  } f32[] = {{"attention.layer_norm_rms_epsilon", 1e-6f}, {"rope.freq_base", 1e4f}, {"rope.freq_base_swa", 1e3f},
             {"final_logit_softcapping", 3.0f}};
  for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; ++i)
    if (!G4_KEY(f32[i].key)) G4(topos_gguf_writer_add_f32(w, n, f32[i].value));
  if (s->moe) {
    G4(topos_gguf_writer_add_u32(w, "gemma4.expert_count", G4_EXPERTS));
    G4(topos_gguf_writer_add_u32(w, "gemma4.expert_used_count", G4_USED));
    G4(topos_gguf_writer_add_u32(w, "gemma4.expert_feed_forward_length", G4_FF_EXP));
  }
  const topos_dtype *ty = b->types;
  G4(lt_add(w, f, b, "token_embd.weight", ty[LT_EMBD], D, G4_VOCAB, &rng, 0));
  G4(lt_add(w, f, b, "output_norm.weight", TOPOS_F32, D, 0, &rng, 1));
  float *freqs = lt_keep(f, G4_HD_F / 2 * sizeof *freqs);
  if (!freqs) st = TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; st == TOPOS_OK && i < G4_HD_F / 2; ++i) freqs[i] = i < G4_ROT_PAIRS ? 1.0f : 1e30f;
  const int64_t fne[1] = {G4_HD_F / 2};
  G4(topos_gguf_writer_add_tensor_raw(w, "rope_freqs.weight", 0, 1, fne, freqs, sizeof *freqs * G4_HD_F / 2));
  if (s->ple) {
    G4(lt_add(w, f, b, "per_layer_token_embd.weight", ty[LT_EMBD], L * P, G4_VOCAB, &rng, 0));
    G4(lt_add(w, f, b, "per_layer_model_proj.weight", ty[LT_Q], D, L * P, &rng, 0));
    G4(lt_add(w, f, b, "per_layer_proj_norm.weight", TOPOS_F32, P, 0, &rng, 1));
  }
  for (int64_t l = 0; l < L; ++l) {
    const int64_t hd = g4_hd(l), q = G4_HEADS * hd, kvd = g4_kvh(l) * hd, F = g4_ff(s, l);
#define G4_W(suffix, type, e0, e1, ones)                  \
  do {                                                    \
    snprintf(n, sizeof n, "blk.%d.%s", (int)l, suffix);   \
    G4(lt_add(w, f, b, n, type, e0, e1, &rng, ones));     \
  } while (0)
    G4_W("attn_norm.weight", TOPOS_F32, D, 0, 1);
    G4_W("attn_q.weight", ty[LT_Q], D, q, 0);
    if (!g4_shared(s, l)) G4_W("attn_k.weight", ty[LT_K], D, kvd, 0);
    if (g4_has_v(s, l)) G4_W("attn_v.weight", ty[LT_V], D, kvd, 0);
    G4_W("attn_output.weight", ty[LT_O], q, D, 0);
    /* (weights of mean 0: scores of spread ~1.4, not ~5 — no q scale — so the
     * softmax is not so sharp that the activations' 8-bit rounding moves it far) */
    G4_W("attn_q_norm.weight", TOPOS_F32, hd, 0, 0);
    if (!g4_shared(s, l)) G4_W("attn_k_norm.weight", TOPOS_F32, hd, 0, 0);
    G4_W("post_attention_norm.weight", TOPOS_F32, D, 0, 1);
    G4_W("ffn_norm.weight", TOPOS_F32, D, 0, 1);
    G4_W("ffn_gate.weight", ty[LT_GATE], D, F, 0);
    G4_W("ffn_up.weight", ty[LT_UP], D, F, 0);
    G4_W("ffn_down.weight", ty[LT_DOWN], F, D, 0);
    G4_W("post_ffw_norm.weight", TOPOS_F32, D, 0, 1);
    if (s->moe) {
      const int64_t E = G4_EXPERTS, FE = G4_FF_EXP;
      G4_W("ffn_gate_inp.weight", TOPOS_F32, D, E, 0);
      G4_W("ffn_gate_inp.scale", TOPOS_F32, D, 0, 1);
      G4_W("pre_ffw_norm_2.weight", TOPOS_F32, D, 0, 1);
      G4_W("post_ffw_norm_1.weight", TOPOS_F32, D, 0, 1);
      G4_W("post_ffw_norm_2.weight", TOPOS_F32, D, 0, 1);
      G4_W("ffn_down_exps.scale", TOPOS_F32, E, 0, 1);
      const char *parts[3] = {s->moe == 2 ? "ffn_gate_up_exps.weight" : "ffn_gate_exps.weight", "ffn_up_exps.weight",
                              "ffn_down_exps.weight"};
      for (int i = s->moe == 2 ? 0 : 0; i < 3; ++i) {
        if (i == 1 && s->moe == 2) continue;
        const int64_t e0 = i == 2 ? FE : D, e1 = i == 2 ? D : (s->moe == 2 ? 2 : 1) * FE, count = e0 * e1 * E;
        float *v = lt_keep_raw(f, (size_t)count * sizeof *v);
        if (!v) st = TOPOS_ERR_OUT_OF_MEMORY;
        else lt_fill_unit(&rng, v, count, 0.08, 0.0);
        const int64_t ne[3] = {e0, e1, E};
        snprintf(n, sizeof n, "blk.%d.%s", (int)l, parts[i]);
        G4(topos_gguf_writer_add_tensor_raw(w, n, 0, 3, ne, v, (size_t)count * sizeof *v));
      }
    }
    if (s->ple) {
      G4_W("inp_gate.weight", ty[LT_GATE], D, P, 0);
      G4_W("proj.weight", ty[LT_UP], P, D, 0);
      G4_W("post_norm.weight", TOPOS_F32, D, 0, 1);
    }
    float *scale = lt_keep(f, sizeof *scale);
    if (!scale) st = TOPOS_ERR_OUT_OF_MEMORY;
    else *scale = 0.6f + 0.15f * (float)l;
    const int64_t one[1] = {1};
    snprintf(n, sizeof n, "blk.%d.layer_output_scale.weight", (int)l);
    if (!b->skip_tensor || strcmp(n, b->skip_tensor) != 0)
      G4(topos_gguf_writer_add_tensor_raw(w, n, 0, 1, one, scale, sizeof *scale));
#undef G4_W
  }
  G4(topos_gguf_writer_write_memory(w, &f->bytes, &f->size));
#undef G4_KEY
#undef G4
  topos_gguf_writer_destroy(w);
  return st;
}

typedef struct g4_model {
  lt_file file;
  topos_gguf *gguf;
  topos_llama *model;
} g4_model;

static topos_status g4_open(const g4_spec *s, g4_model *m) {
  memset(m, 0, sizeof *m);
  topos_status st = g4_write(s, &m->file);
  if (st == TOPOS_OK) st = topos_gguf_open_memory(m->file.bytes, m->file.size, &m->gguf);
  if (st == TOPOS_OK) st = topos_llama_from_gguf(m->gguf, &m->model);
  return st;
}

static void g4_close(g4_model *m) {
  topos_llama_free(m->model);
  topos_gguf_close(m->gguf);
  lt_file_free(&m->file);
}

static float *g4_deq(topos_gguf *g, int64_t l, const char *suffix) {
  char n[96];
  if (l >= 0) snprintf(n, sizeof n, "blk.%d.%s", (int)l, suffix);
  else snprintf(n, sizeof n, "%s", suffix);
  return lt_deq(g, n);
}

/* q or k heads [heads][hd] at position p: RMS norm per head times w (NULL
 * none), then the NEOX rotation of the first `rot` pairs' halves (the
 * others: full blocks turn them by angles divided by 1e30, which keeps cos
 * 1 and sin ~0) */
static void g4_head_prep(float *x, int64_t heads, int64_t hd, const float *w, int64_t p, int windowed,
                         const g4_spec *s) {
  const double base = windowed ? 1e3 : 1e4;
  const int64_t half = hd / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float *u = x + h * hd;
    lt_rmsnorm(u, u, w, hd, 1e-6f);
    if (w == NULL && g4_plain_without(s, "v norm")) continue;
    if (w == NULL) continue; /* values: no rotation */
    for (int64_t i = 0; i < half; ++i) {
      const int still = !windowed && i >= G4_ROT_PAIRS && !g4_plain_without(s, "proportional");
      const double th = still ? 0.0 : (double)p * pow(base, -2.0 * (double)i / (double)hd);
      const double c = cos(th), sn = sin(th), a = u[i], b2 = u[i + half];
      u[i] = (float)(a * c - b2 * sn), u[i + half] = (float)(a * sn + b2 * c);
    }
  }
}

static double g4_gelu(double a) { return 0.5 * a * (1.0 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a))); }

/* A mixture block's feed-forward output into y (the dense branch's on
 * entry): post_1(dense) + post_2(sum over the 2 best experts e of
 * w_e scale_e down_e(GELU(gate_e h) up_e h)), h = pre_2(x), the weights a
 * softmax of the router over rms(x) / sqrt(dim) * scale, renormalised */
static void g4_plain_experts(topos_gguf *g, const g4_spec *s, int64_t l, const float *x, float *y) {
  enum { E = G4_EXPERTS };
  static const int64_t widths[2] = {G4_DIM, G4_FF_EXP}; /* (run-time widths: see g4_plain) */
  const volatile int64_t *wv = widths;
  const int64_t D = wv[0], FE = wv[1];
  float *router = g4_deq(g, l, "ffn_gate_inp.weight"), *rs = g4_deq(g, l, "ffn_gate_inp.scale");
  float *pre2 = g4_deq(g, l, "pre_ffw_norm_2.weight"), *post1 = g4_deq(g, l, "post_ffw_norm_1.weight");
  float *post2 = g4_deq(g, l, "post_ffw_norm_2.weight"), *dscale = g4_deq(g, l, "ffn_down_exps.scale");
  float *gate = g4_deq(g, l, s->moe == 2 ? "ffn_gate_up_exps.weight" : "ffn_gate_exps.weight");
  float *up = s->moe == 2 ? NULL : g4_deq(g, l, "ffn_up_exps.weight"), *down = g4_deq(g, l, "ffn_down_exps.weight");
  if (!router || !rs || !pre2 || !post1 || !post2 || !dscale || !gate || (s->moe == 1 && !up) || !down) {
    CHECK(0);
  } else {
    float rin[G4_DIM], h[G4_DIM], logit[E], a[G4_FF_EXP], b[G4_FF_EXP], out[G4_DIM], moe[G4_DIM] = {0};
    lt_rmsnorm(y, y, post1, D, 1e-6f);
    lt_rmsnorm(rin, x, NULL, D, 1e-6f);
    for (int64_t i = 0; i < D; ++i) rin[i] = rin[i] * (1.0f / sqrtf((float)D)) * rs[i];
    lt_matvec(router, rin, logit, E, D);
    double p[E], mx = -INFINITY, sum = 0;
    for (int e = 0; e < E; ++e) mx = logit[e] > mx ? logit[e] : mx;
    for (int e = 0; e < E; ++e) p[e] = exp(logit[e] - mx), sum += p[e];
    int best[G4_USED];
    double wsum = 0;
    for (int k = 0; k < G4_USED; ++k) {
      best[k] = -1;
      for (int e = 0; e < E; ++e) {
        int taken = 0;
        for (int j = 0; j < k; ++j) taken |= best[j] == e;
        if (!taken && (best[k] < 0 || p[e] > p[best[k]])) best[k] = e;
      }
      wsum += p[best[k]] / sum;
    }
    lt_rmsnorm(h, x, pre2, D, 1e-6f);
    for (int k = 0; k < G4_USED; ++k) {
      const int e = best[k];
      const int64_t rows = s->moe == 2 ? 2 * FE : FE;
      lt_matvec(gate + (int64_t)e * rows * D, h, a, FE, D);
      if (s->moe == 2) lt_matvec(gate + ((int64_t)e * rows + FE) * D, h, b, FE, D);
      else lt_matvec(up + (int64_t)e * FE * D, h, b, FE, D);
      for (int64_t i = 0; i < FE; ++i) a[i] = (float)(g4_gelu(a[i]) * b[i]);
      lt_matvec(down + (int64_t)e * D * FE, a, out, D, FE);
      const double we = p[e] / sum / wsum * (g4_plain_without(s, "expert scale") ? 1.0 : dscale[e]);
      for (int64_t i = 0; i < D; ++i) moe[i] += (float)(we * out[i]);
    }
    lt_rmsnorm(moe, moe, post2, D, 1e-6f);
    for (int64_t i = 0; i < D; ++i) y[i] += moe[i];
  }
  free(router), free(rs), free(pre2), free(post1), free(post2), free(dscale), free(gate), free(up), free(down);
}

/* logits [n, vocab] at positions 0..n-1 */
static int g4_plain(topos_gguf *g, const g4_spec *s, const int32_t *tokens, int64_t n, float *logits) {
  enum { L = G4_LAYERS, H = G4_HEADS };
  /* widths read at run time: gcc 12's loop analysis of lt_matvec misfires on constants */
  static const int64_t widths[3] = {G4_DIM, G4_PLE, G4_VOCAB};
  const volatile int64_t *wv = widths;
  const int64_t D = wv[0], P = wv[1], V = wv[2];
  int ok = 1;
  float *embd = lt_deq(g, "token_embd.weight"), *onorm = lt_deq(g, "output_norm.weight");
  float *pemb = s->ple ? lt_deq(g, "per_layer_token_embd.weight") : NULL;
  float *pproj = s->ple ? lt_deq(g, "per_layer_model_proj.weight") : NULL;
  float *pnorm = s->ple ? lt_deq(g, "per_layer_proj_norm.weight") : NULL;
  ok &= embd && onorm && (!s->ple || (pemb && pproj && pnorm));
  float *W[L][16];
  memset(W, 0, sizeof W);
  const char *names[16] = {"attn_norm.weight", "attn_q.weight",    "attn_k.weight",        "attn_v.weight",
                           "attn_output.weight", "attn_q_norm.weight", "attn_k_norm.weight", "post_attention_norm.weight",
                           "ffn_norm.weight",  "ffn_gate.weight",  "ffn_up.weight",        "ffn_down.weight",
                           "post_ffw_norm.weight", "inp_gate.weight", "proj.weight",        "post_norm.weight"};
  for (int64_t l = 0; l < L; ++l)
    for (int i = 0; i < 16; ++i) {
      if ((i == 2 || i == 6) && g4_shared(s, l)) continue;
      if (i == 3 && !g4_has_v(s, l)) continue;
      if (i >= 13 && !s->ple) continue;
      ok &= (W[l][i] = g4_deq(g, l, names[i])) != NULL;
    }
  /* keys and values of every position, per block: [n][kvh * hd] */
  float *K[L], *Vv[L];
  for (int64_t l = 0; l < L; ++l) {
    K[l] = calloc((size_t)(n * G4_KV_W * G4_HD_F), sizeof(float));
    Vv[l] = calloc((size_t)(n * G4_KV_W * G4_HD_F), sizeof(float));
    ok &= K[l] && Vv[l];
  }
  float x[G4_DIM], h[G4_DIM], t[2 * G4_FF * 2], q[H * G4_HD_F], kk[G4_KV_W * G4_HD_F], vv[G4_KV_W * G4_HD_F];
  float o[H * G4_HD_F], pe[L * G4_PLE], pp[L * G4_PLE], u[2 * G4_FF * 2], y[G4_DIM];
  for (int64_t p = 0; ok && p < n; ++p) {
    for (int64_t i = 0; i < D; ++i) x[i] = embd[(int64_t)tokens[p] * D + i] * sqrtf((float)D);
    if (s->ple) {
      lt_matvec(pproj, x, pp, L * P, D);
      for (int64_t l = 0; l < L; ++l) {
        for (int64_t i = 0; i < P; ++i) pp[l * P + i] *= 1.0f / sqrtf((float)D);
        lt_rmsnorm(pp + l * P, pp + l * P, pnorm, P, 1e-6f);
        for (int64_t i = 0; i < P; ++i)
          pe[l * P + i] = (pp[l * P + i] + pemb[(int64_t)tokens[p] * L * P + l * P + i] * sqrtf((float)P)) *
                          (1.0f / sqrtf(2.0f));
      }
    }
    for (int64_t l = 0; l < L; ++l) {
      const int win = g4_windowed(l), share = g4_shared(s, l);
      const int64_t hd = g4_hd(l), kvh = g4_kvh(l), G = H / kvh, F = g4_ff(s, l);
      /* (the plain forward "without sharing" reads the first block of the kind instead) */
      const int64_t src = !share ? l
                          : g4_plain_without(s, "sharing") && win ? 0
                                                                  : G4_LAYERS - s->shared - (win ? 2 : 1);
      float **w = W[l];
      lt_rmsnorm(h, x, w[0], D, 1e-6f);
      lt_matvec(w[1], h, q, H * hd, D);
      g4_head_prep(q, H, hd, w[5], p, win, s);
      if (!share) {
        lt_matvec(w[2], h, kk, kvh * hd, D);
        if (w[3]) lt_matvec(w[3], h, vv, kvh * hd, D);
        else memcpy(vv, kk, (size_t)(kvh * hd) * sizeof *vv); /* v is k's product */
        g4_head_prep(kk, kvh, hd, w[6], p, win, s);
        if (!g4_plain_without(s, "v norm")) g4_head_prep(vv, kvh, hd, NULL, p, win, s);
        memcpy(K[l] + p * kvh * hd, kk, (size_t)(kvh * hd) * sizeof *kk);
        memcpy(Vv[l] + p * kvh * hd, vv, (size_t)(kvh * hd) * sizeof *vv);
      }
      for (int64_t hh = 0; hh < H; ++hh) { /* scores times 1 */
        const int64_t kh = hh / G, first = win && p >= s->window ? p - s->window + 1 : 0;
        double sc[64], mx = -INFINITY, sum = 0;
        for (int64_t j = first; j <= p; ++j) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += (double)q[hh * hd + i] * K[src][(j * kvh + kh) * hd + i];
          sc[j] = d, mx = d > mx ? d : mx;
        }
        for (int64_t j = first; j <= p; ++j) sc[j] = exp(sc[j] - mx), sum += sc[j];
        for (int64_t i = 0; i < hd; ++i) {
          double acc = 0;
          for (int64_t j = first; j <= p; ++j) acc += sc[j] / sum * Vv[src][(j * kvh + kh) * hd + i];
          o[hh * hd + i] = (float)acc;
        }
      }
      lt_matvec(w[4], o, y, D, H * hd);
      lt_rmsnorm(y, y, w[7], D, 1e-6f);
      for (int64_t i = 0; i < D; ++i) x[i] += y[i];
      lt_rmsnorm(h, x, w[8], D, 1e-6f);
      lt_matvec(w[9], h, t, F, D);
      lt_matvec(w[10], h, u, F, D);
      for (int64_t i = 0; i < F; ++i) t[i] = (float)(g4_gelu(t[i]) * u[i]);
      lt_matvec(w[11], t, y, D, F);
      if (s->moe) g4_plain_experts(g, s, l, x, y);
      lt_rmsnorm(y, y, w[12], D, 1e-6f);
      for (int64_t i = 0; i < D; ++i) x[i] += y[i];
      if (s->ple && !g4_plain_without(s, "ple")) {
        lt_matvec(w[13], x, t, P, D);
        for (int64_t i = 0; i < P; ++i) t[i] = (float)(g4_gelu(t[i]) * pe[l * P + i]);
        lt_matvec(w[14], t, y, D, P);
        lt_rmsnorm(y, y, w[15], D, 1e-6f);
        for (int64_t i = 0; i < D; ++i) x[i] += y[i];
      }
      for (int64_t i = 0; i < D; ++i) x[i] *= 0.6f + 0.15f * (float)l;
    }
    lt_rmsnorm(h, x, onorm, D, 1e-6f);
    lt_matvec(embd, h, logits + p * V, V, D); /* tied */
    for (int64_t i = 0; i < V; ++i) logits[p * V + i] = (float)(3.0 * tanh(logits[p * V + i] / 3.0));
  }
  for (int64_t l = 0; l < L; ++l) {
    for (int i = 0; i < 16; ++i) free(W[l][i]);
    free(K[l]);
    free(Vv[l]);
  }
  free(embd), free(onorm), free(pemb), free(pproj), free(pnorm);
  return ok;
}

/* the model against the plain forward (bound), and the plain forward of
 * `without` far from both */
static void g4_compare(const g4_spec *s, topos_numerics num, topos_dtype kv, double bound, const g4_spec *without) {
  g4_model m;
  CHECK_OK(g4_open(s, &m));
  if (!m.model) {
    g4_close(&m);
    return;
  }
  const int64_t NV = LT_N * G4_VOCAB;
  float *got = malloc((size_t)NV * sizeof *got), *want = malloc((size_t)NV * sizeof *want);
  CHECK(got && want);
  if (got && want) {
    CHECK_OK(lt_eval_all_kv(m.model, num, kv, 32, 5, got));
    CHECK(g4_plain(m.gguf, s, lt_tokens, LT_N, want));
    const double rel = lt_rel_l2(got, want, NV, NULL);
    if (getenv("LT_VERBOSE")) fprintf(stderr, "gemma4 rel %g (kv %s)\n", rel, topos_dtype_name(kv));
    CHECK_MSG(rel < bound, "gemma4: relative error %g against the plain forward (bound %g)", rel, bound);
    if (without) {
      CHECK(g4_plain(m.gguf, without, lt_tokens, LT_N, want));
      const double off = lt_rel_l2(got, want, NV, NULL);
      if (getenv("LT_VERBOSE")) fprintf(stderr, "gemma4 without %s: %g\n", without->plain_without, off);
      CHECK_MSG(off > 100 * bound, "gemma4: the plain forward without %s is only %g away", without->plain_without,
                off);
    }
  }
  free(got);
  free(want);
  g4_close(&m);
}

TEST(llama_gemma4_files) {
  g4_spec s = g4_default();
  g4_model m;
  CHECK_OK(g4_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->head_dim == G4_HD_F && c->head_dim_swa == G4_HD_W && c->rope_dim_swa == G4_HD_W);
    CHECK(c->n_kv_heads == G4_KV_W && c->n_kv_shared_layers == G4_SHARED && c->ple_dim == G4_PLE);
    CHECK(c->attn_scale == 1.0f && c->v_norm == 1 && c->n_swa == G4_WINDOW && c->n_swa_layers == 4);
    const tp_llama_layer *L = m.model->layers;
    CHECK(L[0].hd == G4_HD_W && L[0].kv_heads == G4_KV_W && L[3].hd == G4_HD_F && L[3].kv_heads == G4_KV_F);
    CHECK(L[3].wk && !L[3].wv && L[2].wv && L[4].kv_shared && L[4].kv_src == 2 && L[5].kv_src == 3);
    CHECK(!L[3].kv_shared && L[1].out_scaled && L[1].out_scale == 0.75f);
    /* caches: four blocks of their own, 2 x 16 or 1 x 32 wide (f32 keys and values of 32 positions) */
    topos_llama_context *ctx = NULL;
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = 32;
    CHECK_OK(topos_llama_context_new(m.model, &o, &ctx));
    CHECK(topos_llama_cache_bytes(ctx) == (uint64_t)(2 * 4 * 32 * 32 * 4));
    topos_llama_context_free(ctx);
  }
  g4_close(&m);
  g4_spec without = s;
  without.plain_without = "sharing";
  g4_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, &without);
  without.plain_without = "v norm";
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 1e-5, &without);
  without.plain_without = "ple";
  g4_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, &without);
  without.plain_without = "proportional";
  g4_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, &without);
}

/* Gemma 4's mixtures (the 26B-A4B's form): every block's dense
 * feed-forward beside 2 of 4 GELU experts, gate and up apart or in one
 * tensor; decoding bit for bit */
TEST(llama_gemma4_experts) {
  g4_spec s = g4_default();
  s.moe = 1;
  g4_model m;
  CHECK_OK(g4_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_experts == G4_EXPERTS && c->n_experts_used == G4_USED && c->ff_expert == G4_FF_EXP);
    CHECK(c->experts_gelu && c->experts_norm && m.model->layers[2].gate_inp && m.model->layers[2].down_exps_s);
  }
  g4_close(&m);
  g4_spec without = s;
  without.plain_without = "expert scale";
  g4_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, &without);
  s.moe = 2;
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 1e-5, NULL);
}

/* the other forms: no per-layer embeddings nor sharing; feed-forwards of
 * two widths; every block with attn_v; a window past the tokens */
TEST(llama_gemma4_variants) {
  g4_spec s = g4_default();
  s.ple = 0, s.shared = 0;
  g4_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, NULL);
  s = g4_default();
  s.wide = 1, s.v_is_k = 0, s.window = 64;
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 1e-5, NULL);
}

/* decoding token by token (after a first chunk of 1 or 5) equals one
 * full-context chunk bit for bit at 1-3 threads: the window cuts into the
 * chunks (masks of their own per block shape); and a chunk whose logits
 * are its last row's alone (its shared blocks run for that row only) gives
 * that row's bits, after another chunk too (the harness's check) */
TEST(llama_gemma4_decode_is_full_context) {
  g4_spec s = g4_default();
  g4_model m;
  CHECK_OK(g4_open(&s, &m));
  const lt_model lm = {.model = m.model}; /* (the harness reads the model alone) */
  if (m.model) lt_check_decode(&lm, G4_VOCAB);
  g4_close(&m);
}

/* quantized weights (the activations quantized as ggml does: measured
 * 4.3e-2 / 4.0e-2 through f32 / f16 caches, bound 5e-2: six blocks of
 * 8-bit activations into scores without a 1 / sqrt(width) and the
 * per-layer products), and f32 weights through a bf16 cache (3.4e-3) */
TEST(llama_gemma4_quantized) {
  LT_NATIVE_ONLY();
  g4_spec s = g4_default();
  /* rows of 64 and 96: 32-blocks (the per-layer embeddings' proj, 16 wide, in f16) */
  const topos_dtype types[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q5_0, TOPOS_Q4_1,
                                       TOPOS_Q8_0, TOPOS_F16,  TOPOS_Q8_0, TOPOS_Q8_0};
  memcpy(s.base.types, types, sizeof types);
  s.base.seed = 45;
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5e-2, NULL);
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F16, 5e-2, NULL);
  s = g4_default();
  g4_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_BF16, 1e-2, NULL);
}

static void g4_refused(g4_spec s, topos_status want, const char *frag) {
  g4_model m;
  topos_status st = g4_open(&s, &m);
  CHECK_MSG(st == want, "got %s, want %s", topos_status_name(st), topos_status_name(want));
  CHECK_MSG(strstr(topos_last_error(), frag) != NULL, "message: %s (want \"%s\")", topos_last_error(), frag);
  CHECK(m.model == NULL);
  g4_close(&m);
}

TEST(llama_gemma4_bad_files) {
  g4_spec s = g4_default();
  s.no_key = "attention.key_length_swa";
  g4_refused(s, TOPOS_ERR_NOT_FOUND, "gemma4.attention.key_length_swa is missing");
  s = g4_default();
  s.no_key = "attention.sliding_window_pattern";
  g4_refused(s, TOPOS_ERR_NOT_FOUND, "needs attention.sliding_window_pattern as a list");
  s = g4_default();
  s.no_key = "embedding_length_per_layer_input";
  g4_refused(s, TOPOS_ERR_NOT_FOUND, "embedding_length_per_layer_input is missing");
  s = g4_default();
  s.shared = 3; /* block 3 (full) would read block 2 (windowed) */
  g4_refused(s, TOPOS_UNSUPPORTED, "shared block 3 (full) would attend to block 2 (windowed)");
  s = g4_default();
  s.base.skip_tensor = "per_layer_model_proj.weight";
  g4_refused(s, TOPOS_ERR_NOT_FOUND, "per_layer_model_proj.weight is missing");
  s = g4_default();
  s.base.bad_tensor = "blk.3.attn_k.weight";
  g4_refused(s, TOPOS_ERR_SHAPE, "blk.3.attn_k.weight has ne {96, 32}, the metadata implies {64, 32}");
  s = g4_default();
  s.base.bad_tensor = "blk.1.attn_q_norm.weight";
  g4_refused(s, TOPOS_ERR_SHAPE, "blk.1.attn_q_norm.weight has ne {48}, the metadata implies {16}");
  s = g4_default();
  s.base.skip_tensor = "blk.0.inp_gate.weight";
  g4_refused(s, TOPOS_ERR_NOT_FOUND, "blk.0.inp_gate.weight is missing");
}
