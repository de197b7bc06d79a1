/* Gemma 3n files against a plain forward written here (double sums), as
 * llama.cpp's gemma3n graph defines the model: four AltUp streams (the
 * first the scaled embedding, the others its projections matched to its
 * magnitude), each block predicting the streams from a router over the
 * active one, attending and feeding forward on the active prediction beside
 * a low-rank Laurel branch, the first blocks' gates sparsified (a cutoff at
 * mean + m std), correcting every stream by the innovation and adding the
 * per-layer input to the streams past the first; the last two blocks
 * reading the caches of blocks 2 (windowed) and 3 (full); the streams
 * merged back through magnitude-matched projections; soft-capped logits.
 * Decoding equals the full context bit for bit; quantized weights stay near
 * the plain forward; bad files are refused. */
#include "models/llama_harness.h"

enum { G3_HEADS = 4, G3_KV = 2, G3_PLE = 16, G3_RANK = 8 };
enum { G3_LAYERS = 6, G3_VOCAB = 300, G3_WINDOW = 4, G3_SHARED = 2 };
#define G3_PATTERN "WWWFWF"           /* windowed (W) or full (F) */
#define G3_STD_MUL 1.6448533535003662 /* the normal's 95% quantile: llama.cpp's and the real files' multiplier */
#define G3_EPS 1e-6f

/* a block's tensors: the writer's and the plain forward's one list */
enum {
  B_ATTN_NORM, B_Q, B_K, B_V, B_O, B_QN, B_KN, B_POST_ATTN, B_FFN_NORM, B_GATE, B_UP, B_DOWN, B_POST_FFW,
  B_INP_GATE, B_PROJ, B_POST_NORM, B_CCOEF, B_CSCALE, B_PCOEF, B_ROUTER, B_RNORM, B_LAUREL_L, B_LAUREL_R,
  B_LAUREL_NORM, B_COUNT
};
static const char *const g3_names[B_COUNT] = {
    "attn_norm",          "attn_q",              "attn_k",             "attn_v",
    "attn_output",        "attn_q_norm",         "attn_k_norm",        "post_attention_norm",
    "ffn_norm",           "ffn_gate",            "ffn_up",             "ffn_down",
    "post_ffw_norm",      "inp_gate",            "proj",               "post_norm",
    "altup_correct_coef", "altup_correct_scale", "altup_predict_coef", "altup_router",
    "altup_router_norm",  "laurel_l",            "laurel_r",           "laurel_post_norm"};

typedef struct g3_spec {
  lt_spec base;        /* types, seed, skip_tensor, bad_tensor */
  int64_t dim, hd, ff; /* embedding_length, key_length (= value_length), feed_forward_length */
  int altup, act;      /* altup.num_inputs, altup.active_idx */
  int shared;          /* attention.shared_kv_layers */
  int shared_kv;       /* the shared blocks carry attn_k, attn_v, attn_k_norm (real files do; never read) */
  int wide;            /* feed_forward_length an array, the blocks of three widths */
  int untied;          /* output.weight of its own */
  const char *no_key;  /* leave this key out: its default stands (the plain forward follows) */
  int64_t altup_key, act_key; /* if > 0, altup.num_inputs / active_idx written as this (bad files) */
  int64_t sparsity_len;       /* if > 0, activation_sparsity_scale this long (bad files) */
  /* the plain forward without a feature ("correction", "correct coef", "predict", "laurel",
   * "sparsity", "own multipliers" (block 2's at the others' 1.6449), "magnitude", "sharing", "ple"):
   * the check sees it */
  const char *plain_without;
} g3_spec;

static g3_spec g3_default(void) {
  g3_spec s;
  memset(&s, 0, sizeof s);
  s.base = lt_f32_spec();
  s.base.arch = "gemma3n";
  s.base.seed = 36;
  s.base.vocab = G3_VOCAB;
  s.dim = 64, s.hd = 16, s.ff = 96;
  s.altup = 4, s.act = 0;
  s.shared = G3_SHARED, s.shared_kv = 1;
  return s;
}

static int g3_no_key(const g3_spec *s, const char *key) { return s->no_key && strcmp(s->no_key, key) == 0; }
static int g3_without(const g3_spec *s, const char *what) {
  return s->plain_without && strcmp(s->plain_without, what) == 0;
}
static int g3_windowed(int64_t l) { return G3_PATTERN[l] == 'W'; }
static int g3_shared(const g3_spec *s, int64_t l) { return l >= G3_LAYERS - s->shared; }
static int64_t g3_ff(const g3_spec *s, int64_t l) { return s->wide ? s->ff + 32 * (l % 3) : s->ff; }
/* block l's sparsity multiplier, -inf where its gate is dense: the file's
 * (the first two at the real multiplier, block 2 at another, so a library
 * that reads one value for all is seen), absent llama.cpp's first 10 */
static double g3_sparsity(const g3_spec *s, int64_t l) {
  if (g3_no_key(s, "activation_sparsity_scale")) return l < 10 ? (double)(float)G3_STD_MUL : -INFINITY;
  if (l == 2) return g3_without(s, "own multipliers") ? (double)(float)G3_STD_MUL : 1.0;
  return l < 2 ? (double)(float)G3_STD_MUL : -INFINITY;
}
static double g3_base_swa(const g3_spec *s) { return g3_no_key(s, "rope.freq_base_swa") ? 1e4 : 1e3; }
static double g3_cap(const g3_spec *s) { return g3_no_key(s, "final_logit_softcapping") ? 30.0 : 3.0; }

/* A weight's type where its rows take the chosen one's blocks, else Q8_0
 * (rows of 32) or f16: the K-quant files' narrow rows (per-layer widths,
 * Laurel's rank) */
static topos_dtype g3_fit(topos_dtype t, int64_t ne0) {
  if (ne0 % topos_dtype_block_size(t) == 0) return t;
  return ne0 % 32 == 0 ? TOPOS_Q8_0 : TOPOS_F16;
}

/* a tensor of up to 3 dims (ne2 0: fewer), uniform values of `scale` around
 * `offset`, left out or 32 wider as the spec says */
static topos_status g3_add(topos_gguf_writer *w, lt_file *f, const g3_spec *s, const char *name, topos_dtype type,
                           int64_t ne0, int64_t ne1, int64_t ne2, topos_rng *rng, double scale, double offset) {
  const lt_spec *b = &s->base;
  if (b->skip_tensor && strcmp(name, b->skip_tensor) == 0) return TOPOS_OK;
  if (b->bad_tensor && strcmp(name, b->bad_tensor) == 0) ne0 += 32;
  type = g3_fit(type, ne0);
  const int64_t count = ne0 * (ne1 ? ne1 : 1) * (ne2 ? ne2 : 1);
  float *v = lt_keep_raw(f, (size_t)count * sizeof *v);
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  lt_fill_unit(rng, v, count, scale, offset);
  return lt_add_quantized(w, f, name, type, ne0, ne1, ne2, v);
}

static topos_status g3_write(const g3_spec *s, lt_file *f) {
  memset(f, 0, sizeof *f);
  const lt_spec *b = &s->base;
  topos_gguf_writer *w = NULL;
  topos_status st = topos_gguf_writer_create(&w);
  topos_rng rng = topos_rng_seed(b->seed);
  const int64_t D = s->dim, L = G3_LAYERS, P = G3_PLE, N = s->altup, HD = s->hd;
  char n[96];
#define G3(call) \
  if (st == TOPOS_OK) st = (call)
#define G3_KEY(suffix) (snprintf(n, sizeof n, "gemma3n.%s", suffix), g3_no_key(s, suffix))
  G3(topos_gguf_writer_add_string(w, "general.architecture", "gemma3n"));
  const struct {
    const char *key;
    uint32_t value;
  } u32[] = {{"context_length", 2048},
             {"embedding_length", (uint32_t)D},
             {"block_count", L},
             {"attention.head_count", G3_HEADS},
             {"attention.head_count_kv", G3_KV},
             {"attention.key_length", (uint32_t)HD},
             {"attention.value_length", (uint32_t)HD},
             {"attention.sliding_window", G3_WINDOW},
             {"attention.shared_kv_layers", (uint32_t)s->shared},
             {"embedding_length_per_layer_input", P},
             {"altup.active_idx", (uint32_t)(s->act_key > 0 ? s->act_key : s->act)},
             {"altup.num_inputs", (uint32_t)(s->altup_key > 0 ? s->altup_key : s->altup)}};
  for (size_t i = 0; i < sizeof u32 / sizeof u32[0]; ++i)
    if (!G3_KEY(u32[i].key)) G3(topos_gguf_writer_add_u32(w, n, u32[i].value));
  const int64_t SL = s->sparsity_len > 0 ? s->sparsity_len : L;
  uint32_t *ff = lt_keep(f, L * sizeof *ff);
  uint8_t *pattern = lt_keep(f, L);
  float *sparsity = lt_keep(f, (size_t)SL * sizeof *sparsity);
  if (!ff || !pattern || !sparsity) st = TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; st == TOPOS_OK && l < L; ++l) ff[l] = (uint32_t)g3_ff(s, l), pattern[l] = (uint8_t)g3_windowed(l);
  for (int64_t l = 0; st == TOPOS_OK && l < SL; ++l) sparsity[l] = (float)g3_sparsity(s, l);
  if (!G3_KEY("feed_forward_length"))
    G3(s->wide ? topos_gguf_writer_add_array(w, n, TOPOS_GGUF_U32, ff, L)
               : topos_gguf_writer_add_u32(w, n, (uint32_t)s->ff));
  if (!G3_KEY("attention.sliding_window_pattern")) G3(topos_gguf_writer_add_array(w, n, TOPOS_GGUF_BOOL, pattern, L));
  if (!G3_KEY("activation_sparsity_scale")) G3(topos_gguf_writer_add_array(w, n, TOPOS_GGUF_F32, sparsity, SL));
  const struct {
    const char *key;
    float value;
  } f32[] = {{"attention.layer_norm_rms_epsilon", G3_EPS},
             {"rope.freq_base", 1e5f},
             {"rope.freq_base_swa", 1e3f},
             {"final_logit_softcapping", 3.0f}};
  for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; ++i)
    if (!G3_KEY(f32[i].key)) G3(topos_gguf_writer_add_f32(w, n, f32[i].value));
  const topos_dtype *ty = b->types;
  /* matrices of spread 0.08 (lt_add's), norms near 1 */
  G3(g3_add(w, f, s, "token_embd.weight", ty[LT_EMBD], D, G3_VOCAB, 0, &rng, 0.08, 0));
  if (s->untied) G3(g3_add(w, f, s, "output.weight", ty[LT_OUT], D, G3_VOCAB, 0, &rng, 0.08, 0));
  G3(g3_add(w, f, s, "output_norm.weight", TOPOS_F32, D, 0, 0, &rng, 0.1, 1));
  G3(g3_add(w, f, s, "altup_proj.weight", ty[LT_O], D, D, N - 1, &rng, 0.08, 0));
  G3(g3_add(w, f, s, "altup_unembd_proj.weight", ty[LT_O], D, D, N - 1, &rng, 0.08, 0));
  G3(g3_add(w, f, s, "per_layer_token_embd.weight", ty[LT_EMBD], P * L, G3_VOCAB, 0, &rng, 0.08, 0));
  G3(g3_add(w, f, s, "per_layer_model_proj.weight", ty[LT_Q], D, P * L, 0, &rng, 0.08, 0));
  G3(g3_add(w, f, s, "per_layer_proj_norm.weight", TOPOS_F32, P, 0, 0, &rng, 0.1, 1));
  for (int64_t l = 0; l < L; ++l) {
    const int64_t F = g3_ff(s, l), q = G3_HEADS * HD, kvd = G3_KV * HD;
    /* {ne0, ne1, ne2, type, scale, offset} per tensor of g3_names */
    const struct {
      int64_t ne0, ne1, ne2;
      topos_dtype type;
      double scale, offset;
    } t[B_COUNT] = {
        [B_ATTN_NORM] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_Q] = {D, q, 0, ty[LT_Q], 0.08, 0},
        [B_K] = {D, kvd, 0, ty[LT_K], 0.08, 0},
        [B_V] = {D, kvd, 0, ty[LT_V], 0.08, 0},
        [B_O] = {q, D, 0, ty[LT_O], 0.08, 0},
        /* q and k norms of mean 0 (gemma4's test's): scores of spread ~1, the
         * attention (scale 1) not one-hot */
        [B_QN] = {HD, 0, 0, TOPOS_F32, 0.5, 0},
        [B_KN] = {HD, 0, 0, TOPOS_F32, 0.5, 0},
        [B_POST_ATTN] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_FFN_NORM] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_GATE] = {D, F, 0, ty[LT_GATE], 0.08, 0},
        [B_UP] = {D, F, 0, ty[LT_UP], 0.08, 0},
        [B_DOWN] = {F, D, 0, ty[LT_DOWN], 0.08, 0},
        [B_POST_FFW] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_INP_GATE] = {D, P, 0, ty[LT_GATE], 0.08, 0},
        [B_PROJ] = {P, D, 0, ty[LT_UP], 0.08, 0},
        [B_POST_NORM] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        /* the router wide enough that its tanh, over norm(x) / dim, is not ~0
         * (~0.35; otherwise the coefficients would barely count), the AltUp
         * coefficients then of spread ~0.1 beside the streams' own 1 */
        [B_CCOEF] = {N, N, 0, TOPOS_F32, 0.3, 0},
        [B_CSCALE] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_PCOEF] = {N, N * N, 0, TOPOS_F32, 0.15, 0},
        [B_ROUTER] = {D, N, 0, TOPOS_F32, 3.0, 0},
        [B_RNORM] = {D, 0, 0, TOPOS_F32, 0.1, 1},
        [B_LAUREL_L] = {D, G3_RANK, 0, ty[LT_Q], 0.08, 0},
        [B_LAUREL_R] = {G3_RANK, D, 0, ty[LT_O], 0.08, 0}, /* (normed after) */
        [B_LAUREL_NORM] = {D, 0, 0, TOPOS_F32, 0.1, 1},
    };
    for (int i = 0; i < B_COUNT; ++i) {
      if ((i == B_K || i == B_V || i == B_KN) && g3_shared(s, l) && !s->shared_kv) continue;
      snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, g3_names[i]);
      G3(g3_add(w, f, s, n, t[i].type, t[i].ne0, t[i].ne1, t[i].ne2, &rng, t[i].scale, t[i].offset));
    }
  }
  G3(topos_gguf_writer_write_memory(w, &f->bytes, &f->size));
#undef G3_KEY
#undef G3
  topos_gguf_writer_destroy(w);
  return st;
}

typedef struct g3_model {
  lt_file file;
  topos_gguf *gguf;
  topos_llama *model;
} g3_model;

static topos_status g3_open(const g3_spec *s, g3_model *m) {
  memset(m, 0, sizeof *m);
  topos_status st = g3_write(s, &m->file);
  if (st == TOPOS_OK) st = topos_gguf_open_memory(m->file.bytes, m->file.size, &m->gguf);
  if (st == TOPOS_OK) st = topos_llama_from_gguf(m->gguf, &m->model);
  return st;
}

static void g3_close(g3_model *m) {
  topos_llama_free(m->model);
  topos_gguf_close(m->gguf);
  lt_file_free(&m->file);
}

static double g3_gelu(double a) { return 0.5 * a * (1.0 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a))); }

/* sqrt of the sum of squares */
static double g3_mag(const float *v, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (double)v[i] * v[i];
  return sqrt(ss);
}

/* the router's modalities of stream v: tanh(router . (norm(v) / dim)) */
static void g3_route(const float *v, const float *norm, const float *router, int64_t D, int64_t N, float *tmp,
                     float *mod) {
  lt_rmsnorm(tmp, v, norm, D, G3_EPS);
  for (int64_t i = 0; i < D; ++i) tmp[i] *= 1.0f / (float)D;
  lt_matvec(router, tmp, mod, N, D);
  for (int64_t j = 0; j < N; ++j) mod[j] = (float)tanh(mod[j]);
}

/* q or k heads [heads][hd] at position p: RMS norm per head times w (NULL:
 * none, the values, which do not rotate), then NEOX rotation of the whole
 * head (pairs i, i + hd / 2) */
static void g3_heads(float *x, int64_t heads, int64_t hd, const float *w, int64_t p, double base) {
  const int64_t half = hd / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float *u = x + h * hd;
    lt_rmsnorm(u, u, w, hd, G3_EPS);
    for (int64_t i = 0; w && i < half; ++i) {
      const double th = (double)p * pow(base, -2.0 * (double)i / (double)hd);
      const double c = cos(th), sn = sin(th), a = u[i], b = u[i + half];
      u[i] = (float)(a * c - b * sn), u[i + half] = (float)(a * sn + b * c);
    }
  }
}

/* logits [n, vocab] at positions 0..n-1 */
static int g3_plain(topos_gguf *g, const g3_spec *s, const int32_t *tokens, int64_t n, float *logits) {
  enum { L = G3_LAYERS, H = G3_HEADS, KVH = G3_KV };
  /* widths read at run time: gcc 12's loop analysis of lt_matvec misfires on constants */
  const volatile int64_t widths[7] = {s->dim, s->hd, G3_PLE, G3_VOCAB, s->altup, G3_RANK, s->act};
  const int64_t D = widths[0], HD = widths[1], P = widths[2], V = widths[3], N = widths[4], R = widths[5];
  const int64_t A = widths[6], QD = H * HD, KVD = KVH * HD;
  int64_t FMAX = 0;
  for (int64_t l = 0; l < L; ++l) FMAX = g3_ff(s, l) > FMAX ? g3_ff(s, l) : FMAX;
  const double cap = g3_cap(s);
  int ok = 1;
  float *embd = lt_deq(g, "token_embd.weight"), *onorm = lt_deq(g, "output_norm.weight");
  float *out_w = s->untied ? lt_deq(g, "output.weight") : NULL;
  float *aproj = lt_deq(g, "altup_proj.weight"), *unembd = lt_deq(g, "altup_unembd_proj.weight");
  float *pemb = lt_deq(g, "per_layer_token_embd.weight"), *pproj = lt_deq(g, "per_layer_model_proj.weight");
  float *pnorm = lt_deq(g, "per_layer_proj_norm.weight");
  ok &= embd && onorm && (!s->untied || out_w) && aproj && unembd && pemb && pproj && pnorm;
  float *W[L][B_COUNT];
  memset(W, 0, sizeof W);
  char name[96];
  for (int64_t l = 0; l < L; ++l)
    for (int i = 0; i < B_COUNT; ++i) {
      if ((i == B_K || i == B_V || i == B_KN) && g3_shared(s, l)) continue; /* never read */
      snprintf(name, sizeof name, "blk.%d.%s.weight", (int)l, g3_names[i]);
      ok &= (W[l][i] = lt_deq(g, name)) != NULL;
    }
  /* scratch: the streams, their predictions and corrections [N][D]; one
   * token's vectors; every position's keys and values per block */
  const int64_t big = D > FMAX ? D : FMAX;
  float *S = malloc((size_t)(3 * N * D) * sizeof *S), *pred = S ? S + N * D : NULL, *corr = S ? S + 2 * N * D : NULL;
  float *vec = malloc((size_t)(8 * D + 3 * big + 2 * QD + 2 * KVD + 2 * L * P + N * N + 2 * N) * sizeof *vec);
  double *sc = malloc((size_t)n * sizeof *sc), *xs = malloc((size_t)D * sizeof *xs);
  float *K[L], *Vc[L];
  for (int64_t l = 0; l < L; ++l) {
    K[l] = calloc((size_t)(n * KVD), sizeof(float)), Vc[l] = calloc((size_t)(n * KVD), sizeof(float));
    ok &= K[l] && Vc[l];
  }
  ok &= S && vec && sc && xs;
  for (int64_t p = 0; ok && p < n; ++p) {
    float *x0 = vec, *h = x0 + D, *lau = h + D, *y = lau + D, *al = y + D, *out = al + D, *tmp = out + D,
          *xo = tmp + D, *g1 = xo + D, *u1 = g1 + big, *t2 = u1 + big, *q = t2 + big, *o = q + QD, *kk = o + QD,
          *vv = kk + KVD, *e = vv + KVD, *pp = e + L * P, *c = pp + L * P, *mod = c + N * N, *c2 = mod + N;
    const int64_t tok = tokens[p];
    for (int64_t i = 0; i < D; ++i) x0[i] = embd[tok * D + i] * sqrtf((float)D);
    /* per-layer inputs: (table row * sqrt(P) + norm(model_proj . x0 / sqrt(D))) / sqrt(2) per block */
    lt_matvec(pproj, x0, pp, L * P, D);
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t i = 0; i < P; ++i) pp[l * P + i] *= 1.0f / sqrtf((float)D);
      lt_rmsnorm(pp + l * P, pp + l * P, pnorm, P, G3_EPS);
      for (int64_t i = 0; i < P; ++i)
        e[l * P + i] = (pp[l * P + i] + pemb[tok * L * P + l * P + i] * sqrtf((float)P)) * (1.0f / sqrtf(2.0f));
    }
    /* the streams: x0, then its projections at x0's magnitude */
    memcpy(S, x0, (size_t)D * sizeof *S);
    const double m0 = g3_mag(x0, D);
    for (int64_t k = 1; k < N; ++k) {
      float *sk = S + k * D;
      lt_matvec(aproj + (k - 1) * D * D, x0, sk, D, D);
      const double mk = g3_mag(sk, D);
      for (int64_t i = 0; !g3_without(s, "magnitude") && i < D; ++i) sk[i] = (float)(sk[i] * m0 / mk);
    }
    for (int64_t l = 0; l < L; ++l) {
      float **w = W[l];
      const int win = g3_windowed(l), share = g3_shared(s, l);
      const double base = win ? g3_base_swa(s) : 1e5;
      const int64_t F = g3_ff(s, l);
      /* predict: pred[j] = s[j] + sum_i c[j N + i] s[i], c from the active stream's router */
      g3_route(S + A * D, w[B_RNORM], w[B_ROUTER], D, N, tmp, mod);
      lt_matvec(w[B_PCOEF], mod, c, N * N, N);
      for (int64_t j = 0; j < N; ++j)
        for (int64_t d = 0; d < D; ++d) {
          double acc = S[j * D + d];
          for (int64_t i = 0; !g3_without(s, "predict") && i < N; ++i) acc += (double)c[j * N + i] * S[i * D + d];
          pred[j * D + d] = (float)acc;
        }
      const float *a = pred + A * D;
      lt_rmsnorm(h, a, w[B_ATTN_NORM], D, G3_EPS);
      /* Laurel: h + norm(laurel_r . (laurel_l . h)) */
      if (g3_without(s, "laurel")) {
        memcpy(lau, h, (size_t)D * sizeof *lau);
      } else {
        lt_matvec(w[B_LAUREL_L], h, t2, R, D);
        lt_matvec(w[B_LAUREL_R], t2, lau, D, R);
        lt_rmsnorm(lau, lau, w[B_LAUREL_NORM], D, G3_EPS);
        for (int64_t i = 0; i < D; ++i) lau[i] += h[i];
      }
      /* attention of scale 1; a shared block reads the last own block of its kind's cache
       * (the plain forward "without sharing": the first block of the kind's) */
      const int64_t first_shared = G3_LAYERS - s->shared;
      const int64_t src = !share ? l : g3_without(s, "sharing") ? (win ? 0 : 3) : first_shared - (win ? 2 : 1);
      lt_matvec(w[B_Q], h, q, QD, D);
      g3_heads(q, H, HD, w[B_QN], p, base);
      if (!share) {
        lt_matvec(w[B_K], h, kk, KVD, D);
        lt_matvec(w[B_V], h, vv, KVD, D);
        g3_heads(kk, KVH, HD, w[B_KN], p, base);
        g3_heads(vv, KVH, HD, NULL, p, base);
        memcpy(K[l] + p * KVD, kk, (size_t)KVD * sizeof *kk);
        memcpy(Vc[l] + p * KVD, vv, (size_t)KVD * sizeof *vv);
      }
      for (int64_t hh = 0; hh < H; ++hh) {
        const int64_t kh = hh / (H / KVH), first = win && p >= G3_WINDOW ? p - G3_WINDOW + 1 : 0;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = first; j <= p; ++j) {
          double d = 0;
          for (int64_t i = 0; i < HD; ++i) d += (double)q[hh * HD + i] * K[src][(j * KVH + kh) * HD + i];
          sc[j] = d, mx = d > mx ? d : mx;
        }
        for (int64_t j = first; j <= p; ++j) sc[j] = exp(sc[j] - mx), sum += sc[j];
        for (int64_t i = 0; i < HD; ++i) {
          double acc = 0;
          for (int64_t j = first; j <= p; ++j) acc += sc[j] / sum * Vc[src][(j * KVH + kh) * HD + i];
          o[hh * HD + i] = (float)acc;
        }
      }
      lt_matvec(w[B_O], o, y, D, QD);
      lt_rmsnorm(y, y, w[B_POST_ATTN], D, G3_EPS);
      for (int64_t i = 0; i < D; ++i) y[i] += a[i], al[i] = (y[i] + lau[i]) * (1.0f / sqrtf(2.0f));
      /* the feed-forward, its gate cut at mean + m std (std over F - 1) where sparse */
      lt_rmsnorm(h, al, w[B_FFN_NORM], D, G3_EPS);
      lt_matvec(w[B_GATE], h, g1, F, D);
      lt_matvec(w[B_UP], h, u1, F, D);
      const double m = g3_sparsity(s, l);
      if (isfinite(m) && !g3_without(s, "sparsity")) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < F; ++i) mean += g1[i];
        mean /= (double)F;
        for (int64_t i = 0; i < F; ++i) var += ((double)g1[i] - mean) * ((double)g1[i] - mean);
        const double cut = mean + m * sqrt(var / (double)(F - 1));
        for (int64_t i = 0; i < F; ++i) g1[i] = g1[i] > cut ? (float)(g1[i] - cut) : 0.0f;
      }
      for (int64_t i = 0; i < F; ++i) g1[i] = (float)(g3_gelu(g1[i]) * u1[i]);
      lt_matvec(w[B_DOWN], g1, out, D, F);
      lt_rmsnorm(out, out, w[B_POST_FFW], D, G3_EPS);
      for (int64_t i = 0; i < D; ++i) out[i] += al[i];
      /* correct: corr[j] = pred[j] + (correct_coef . router(out) + 1)[j] (out - a) (the plain
       * forward "without correction": the active stream alone takes the innovation) */
      g3_route(out, w[B_RNORM], w[B_ROUTER], D, N, tmp, mod);
      lt_matvec(w[B_CCOEF], mod, c2, N, N);
      for (int64_t j = 0; j < N; ++j) {
        const double cj = g3_without(s, "correct coef") ? 1.0 : (double)c2[j] + 1.0;
        const int take = !g3_without(s, "correction") || j == A;
        for (int64_t d = 0; d < D; ++d)
          corr[j * D + d] = take ? (float)(pred[j * D + d] + cj * ((double)out[d] - a[d])) : pred[j * D + d];
      }
      /* the per-layer input: norm(proj . (GELU(inp_gate . (corr[act] * scale)) * e[l])) into streams 1.. */
      if (!g3_without(s, "ple")) {
        for (int64_t i = 0; i < D; ++i) tmp[i] = corr[A * D + i] * w[B_CSCALE][i];
        lt_matvec(w[B_INP_GATE], tmp, t2, P, D);
        for (int64_t i = 0; i < P; ++i) t2[i] = (float)(g3_gelu(t2[i]) * e[l * P + i]);
        lt_matvec(w[B_PROJ], t2, xo, D, P);
        lt_rmsnorm(xo, xo, w[B_POST_NORM], D, G3_EPS);
        for (int64_t j = 1; j < N; ++j)
          for (int64_t d = 0; d < D; ++d) corr[j * D + d] += xo[d];
      }
      memcpy(S, corr, (size_t)(N * D) * sizeof *S);
    }
    /* merge: stream 0 plus the others' projections at the active stream's magnitude, over N */
    const double ta = g3_mag(S + A * D, D);
    for (int64_t d = 0; d < D; ++d) xs[d] = S[d];
    for (int64_t k = 1; k < N; ++k) {
      lt_matvec(unembd + (k - 1) * D * D, S + k * D, xo, D, D);
      const double f = g3_without(s, "magnitude") ? 1.0 : ta / g3_mag(xo, D);
      for (int64_t d = 0; d < D; ++d) xs[d] += xo[d] * f;
    }
    for (int64_t d = 0; d < D; ++d) xo[d] = (float)(xs[d] / (double)N);
    lt_rmsnorm(h, xo, onorm, D, G3_EPS);
    lt_matvec(out_w ? out_w : embd, h, logits + p * V, V, D);
    for (int64_t i = 0; i < V; ++i) logits[p * V + i] = (float)(cap * tanh(logits[p * V + i] / cap));
  }
  for (int64_t l = 0; l < L; ++l) {
    for (int i = 0; i < B_COUNT; ++i) free(W[l][i]);
    free(K[l]);
    free(Vc[l]);
  }
  free(S), free(vec), free(sc), free(xs);
  free(embd), free(onorm), free(out_w), free(aproj), free(unembd), free(pemb), free(pproj), free(pnorm);
  return ok;
}

/* the model against the plain forward (bound), and the plain forward of
 * each spec in `without` (a list ending in NULL's plain_without) far from
 * it: > 100 times the bound */
static void g3_compare(const g3_spec *s, topos_numerics num, topos_dtype kv, double bound, const char *const *without) {
  g3_model m;
  CHECK_OK(g3_open(s, &m));
  if (!m.model) {
    g3_close(&m);
    return;
  }
  const int64_t NV = LT_N * G3_VOCAB;
  float *got = malloc((size_t)NV * sizeof *got), *want = malloc((size_t)NV * sizeof *want);
  CHECK(got && want);
  if (got && want) {
    CHECK_OK(lt_eval_all_kv(m.model, num, kv, 32, 5, got));
    CHECK(g3_plain(m.gguf, s, lt_tokens, LT_N, want));
    const double rel = lt_rel_l2(got, want, NV, NULL);
    if (getenv("LT_VERBOSE"))
      fprintf(stderr, "gemma3n rel %g (%s, kv %s)\n", rel, num == TOPOS_NUMERICS_EXACT ? "Exact" : "Fast",
              topos_dtype_name(kv));
    CHECK_MSG(rel < bound, "gemma3n: relative error %g against the plain forward (bound %g)", rel, bound);
    for (int i = 0; without && without[i]; ++i) {
      g3_spec ws = *s;
      ws.plain_without = without[i];
      CHECK(g3_plain(m.gguf, &ws, lt_tokens, LT_N, want));
      const double off = lt_rel_l2(got, want, NV, NULL);
      if (getenv("LT_VERBOSE")) fprintf(stderr, "gemma3n without %s: %g\n", without[i], off);
      CHECK_MSG(off > 100 * bound, "gemma3n: the plain forward without %s is only %g away", without[i], off);
    }
  }
  free(got);
  free(want);
  g3_close(&m);
}

TEST(llama_gemma3n_files) {
  g3_spec s = g3_default();
  g3_model m;
  CHECK_OK(g3_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_layers == G3_LAYERS && c->dim == 64 && c->n_vocab == G3_VOCAB && c->n_kv_heads == G3_KV);
    /* caches: four blocks of their own, 2 x 16 wide (f32 keys and values of 32 positions) */
    topos_llama_context *ctx = NULL;
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = 32;
    CHECK_OK(topos_llama_context_new(m.model, &o, &ctx));
    CHECK_EQ_INT((long long)topos_llama_cache_bytes(ctx), 2LL * 4 * 32 * (G3_KV * 16) * 4);
    topos_llama_context_free(ctx);
  }
  g3_close(&m);
  static const char *const exact_without[] = {"correction", "correct coef", "laurel", "sparsity",
                                                  "own multipliers", NULL};
  static const char *const fast_without[] = {"predict", "magnitude", "sharing", "ple", NULL};
  g3_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, exact_without);
  g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 1e-5, fast_without);
}

/* the other forms: shared blocks without attn_k / attn_v / attn_k_norm, an
 * output of its own, feed-forwards of three widths; the keys' defaults
 * (llama.cpp's: sparsity on the first 10 blocks at 1.6449, soft cap 30,
 * the windowed blocks' base 10000, no shared blocks under 21); three
 * streams, the second active */
TEST(llama_gemma3n_variants) {
  g3_spec s = g3_default();
  s.shared_kv = 0, s.untied = 1, s.wide = 1;
  g3_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, NULL);
  static const char *const absent[] = {"activation_sparsity_scale", "final_logit_softcapping", "rope.freq_base_swa",
                                       "attention.shared_kv_layers", "altup.active_idx", "altup.num_inputs"};
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; ++i) {
    s = g3_default();
    s.no_key = absent[i];
    if (i == 3) s.shared = 0; /* 6 blocks: every one its own cache */
    g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 1e-5, NULL);
  }
  s = g3_default();
  s.altup = 3, s.act = 1;
  g3_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 1e-5, NULL);
}

/* decoding token by token (after a first chunk of 1 or 5) equals one
 * full-context chunk bit for bit at 1-3 threads, the window cutting into
 * the chunks; and a chunk whose logits are its last row's alone gives that
 * row's bits, after another chunk too (the streams' merge and the shared
 * blocks run for that row only): the harness's check */
TEST(llama_gemma3n_decode_is_full_context) {
  g3_spec s = g3_default();
  g3_model m;
  CHECK_OK(g3_open(&s, &m));
  const lt_model lm = {.model = m.model}; /* (the harness reads the model alone) */
  if (m.model) lt_check_decode(&lm, G3_VOCAB);
  g3_close(&m);
}

/* quantized weights (the activations quantized as ggml does, the plain
 * forward's not), through f32 and f16 caches: 32-blocks at dim 64
 * (measured 2.6e-2 / 2.8e-2), K-quants at dim 256, their narrow rows in
 * Q8_0 or f16 (2.9e-2), bound 5e-2 as gemma4's; f32 weights through a bf16
 * cache (3.7e-3, bound 1e-2) */
TEST(llama_gemma3n_quantized) {
  LT_NATIVE_ONLY();
  g3_spec s = g3_default();
  const topos_dtype small[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q5_0, TOPOS_Q4_1,
                                       TOPOS_Q8_0, TOPOS_F16,  TOPOS_Q8_0, TOPOS_Q8_0};
  memcpy(s.base.types, small, sizeof small);
  s.base.seed = 37;
  g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5e-2, NULL);
  g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F16, 5e-2, NULL);
  s = g3_default();
  const topos_dtype kq[LT_ROLES] = {TOPOS_Q6_K, TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q8_0, TOPOS_Q6_K,
                                    TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q8_0};
  memcpy(s.base.types, kq, sizeof kq);
  s.dim = 256, s.hd = 64, s.ff = 256, s.untied = 1;
  s.base.seed = 38;
  g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5e-2, NULL);
  s = g3_default();
  g3_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_BF16, 1e-2, NULL);
}

static void g3_refused(g3_spec s, topos_status want, const char *frag) {
  g3_model m;
  topos_status st = g3_open(&s, &m);
  if (getenv("LT_VERBOSE")) fprintf(stderr, "refused: %s: %s\n", topos_status_name(st), topos_last_error());
  CHECK_MSG(st == want, "got %s, want %s (%s)", topos_status_name(st), topos_status_name(want), topos_last_error());
  CHECK_MSG(strstr(topos_last_error(), frag) != NULL, "message: %s (want \"%s\")", topos_last_error(), frag);
  CHECK(m.model == NULL);
  g3_close(&m);
}

TEST(llama_gemma3n_bad_files) {
  g3_spec s = g3_default();
  s.base.skip_tensor = "altup_proj.weight";
  g3_refused(s, TOPOS_ERR_NOT_FOUND, "altup_proj.weight is missing");
  s = g3_default();
  s.base.skip_tensor = "blk.2.laurel_l.weight";
  g3_refused(s, TOPOS_ERR_NOT_FOUND, "blk.2.laurel_l.weight is missing");
  s = g3_default();
  s.base.skip_tensor = "blk.5.altup_router.weight";
  g3_refused(s, TOPOS_ERR_NOT_FOUND, "blk.5.altup_router.weight is missing");
  s = g3_default();
  s.altup_key = 1;
  g3_refused(s, TOPOS_ERR_RANGE, "gemma3n.altup.num_inputs = 1 streams is outside 2..16");
  s = g3_default();
  s.act_key = 4;
  g3_refused(s, TOPOS_ERR_RANGE, "gemma3n.altup.active_idx = 4 is not one of altup.num_inputs' 4 streams");
  s = g3_default();
  s.base.bad_tensor = "blk.1.altup_predict_coef.weight";
  g3_refused(s, TOPOS_ERR_SHAPE, "blk.1.altup_predict_coef.weight has ne {36, 16}, the metadata implies {4, 16}");
  s = g3_default();
  s.base.bad_tensor = "altup_unembd_proj.weight";
  g3_refused(s, TOPOS_ERR_SHAPE, "altup_unembd_proj.weight has ne {96, 64, 3}, the metadata implies {64, 64, 3}");
  s = g3_default();
  s.base.bad_tensor = "blk.0.laurel_r.weight";
  g3_refused(s, TOPOS_ERR_SHAPE, "blk.0.laurel_r.weight has ne {40, 64}, the metadata implies {8, 64}");
  s = g3_default();
  s.sparsity_len = 4;
  g3_refused(s, TOPOS_ERR_SHAPE, "gemma3n.activation_sparsity_scale lists 4 blocks, block_count is 6");
  s = g3_default();
  s.shared = 3; /* block 3 (full) would read block 2 (windowed) */
  g3_refused(s, TOPOS_UNSUPPORTED, "shared block 3 (full) would attend to block 2 (windowed)");
}
