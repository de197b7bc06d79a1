/* OpenELM files against a plain forward written here (double sums), as
 * llama.cpp's openelm graph defines the model: every block its own head
 * count, kv head count and feed-forward width (attention.head_count,
 * attention.head_count_kv and feed_forward_length as per-block lists), q, k
 * and v rows in one attn_qkv ((heads + 2 kv heads) x head width: q, then k,
 * then v), q and k RMS-normed per head (attn_q_norm / attn_k_norm of one
 * head's width), the NEOX rotation of rope.dimension_count dimensions,
 * scores times 1 / sqrt(head width), RMS norms, SwiGLU feed-forwards, the
 * output head the embedding's (no output.weight), no embedding scale.
 *
 * The blocks' query groups (heads / kv heads: 4, 2, 3, 2, 4, 2) differ from
 * block to block and, but for the last, from the model's (largest heads /
 * largest kv heads = 8 / 4 = 2, or its kv heads 4), so the graph regroups
 * their masks: chunks with and without a cache behind them, token-by-token
 * decoding, a chunk's last row alone and 16-bit caches all cross those
 * masks, with the blocks in this order and reversed (the last block then
 * regrouped too). Decoding equals the
 * full context bit for bit; quantized weights stay near the plain forward;
 * bad files are refused with messages that name what is wrong. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the blocks' shapes */

enum { OE_LAYERS = 6, OE_HD = 16, OE_VOCAB = 300, OE_CTX = 32 };
/* the plain forward's buffers: the widest block and the K-quant files' embedding */
enum { OE_MAX_DIM = 256, OE_MAX_HEADS = 8, OE_MAX_KV = 4, OE_MAX_FF = 160 };
#define OE_EPS 1e-6f /* the converter's attention.layer_norm_rms_epsilon */
#define OE_BASE 1e4  /* rope.freq_base */

/* per block: heads, kv heads (the groups 4, 2, 3, 2, 4, 2; kv heads 1..4),
 * feed-forward widths */
static const int64_t oe_heads[OE_LAYERS] = {4, 4, 6, 6, 8, 8};
static const int64_t oe_kv[OE_LAYERS] = {1, 2, 2, 3, 2, 4};
static const int64_t oe_ff[OE_LAYERS] = {96, 96, 128, 128, 160, 160};

typedef struct oe_spec {
  lt_spec base;          /* types (LT_Q: attn_qkv), seed, skip_tensor, bad_tensor (lt_add's) */
  int64_t dim;           /* embedding_length (64; 256 where K-quants take the rows of dim) */
  int64_t rope_dim;      /* rope.dimension_count (the converter writes the head width) */
  int64_t kv_list_len;   /* if > 0, head_count_kv written with this many entries */
  int64_t kv_block, kv_value; /* if kv_value > 0, block kv_block's kv heads written as this */
  int64_t qkv_block, qkv_extra; /* if qkv_extra > 0, block qkv_block's attn_qkv this many rows longer */
  int reversed;          /* the blocks' shapes in reverse order: the last block's masks regrouped too */
  /* the plain forward without a feature: "groups" (every block's query head h
   * reads kv head (h / the model's group count 2) % its kv heads), "kv order"
   * (k and v rows swapped), "rope dims" (the whole head rotated): the check
   * sees it */
  const char *plain_without;
} oe_spec;

static oe_spec oe_default(void) {
  oe_spec s;
  memset(&s, 0, sizeof s);
  s.base = lt_f32_spec();
  s.base.arch = "openelm";
  s.base.seed = 51;
  s.base.vocab = OE_VOCAB;
  s.dim = 64, s.rope_dim = OE_HD;
  return s;
}

static int oe_without(const oe_spec *s, const char *what) {
  return s->plain_without && strcmp(s->plain_without, what) == 0;
}

/* block l's heads, kv heads and feed-forward width, as the file lists them
 * (the lists read through a volatile pointer: gcc 12's loop analysis of
 * lt_matvec misfires on widths it sees as constants) */
static void oe_shape(const oe_spec *s, int64_t l, int64_t *heads, int64_t *kv, int64_t *ff) {
  const volatile int64_t *hv = oe_heads, *kvv = oe_kv, *ffv = oe_ff;
  const int64_t i = s->reversed ? OE_LAYERS - 1 - l : l;
  *heads = hv[i], *kv = kvv[i], *ff = ffv[i];
  if (s->kv_value > 0 && l == s->kv_block) *kv = s->kv_value;
}

/* A weight's type where its rows take the chosen type's blocks, else Q8_0
 * (every row here is a multiple of 32 wide): the K-quant files' narrow
 * rows (attn_output's heads x 16, ffn_down's widths) */
static topos_dtype oe_fit(topos_dtype t, int64_t ne0) {
  return ne0 % topos_dtype_block_size(t) == 0 ? t : TOPOS_Q8_0;
}

static topos_status oe_write(const oe_spec *s, lt_file *f) {
  memset(f, 0, sizeof *f);
  const lt_spec *b = &s->base;
  topos_gguf_writer *w = NULL;
  topos_status st = topos_gguf_writer_create(&w);
  topos_rng rng = topos_rng_seed(b->seed);
  const int64_t D = s->dim, L = OE_LAYERS;
#define OE(call) \
  if (st == TOPOS_OK) st = (call)
  OE(topos_gguf_writer_add_string(w, "general.architecture", "openelm"));
  /* the converter's keys (convert_hf_to_gguf's OpenELMModel) */
  const struct {
    const char *key;
    uint32_t value;
  } u32[] = {{"openelm.context_length", 2048},
             {"openelm.embedding_length", (uint32_t)D},
             {"openelm.block_count", L},
             {"openelm.attention.key_length", OE_HD},
             {"openelm.attention.value_length", OE_HD},
             {"openelm.rope.dimension_count", (uint32_t)s->rope_dim}};
  for (size_t i = 0; i < sizeof u32 / sizeof u32[0]; ++i) OE(topos_gguf_writer_add_u32(w, u32[i].key, u32[i].value));
  OE(topos_gguf_writer_add_f32(w, "openelm.attention.layer_norm_rms_epsilon", OE_EPS));
  OE(topos_gguf_writer_add_f32(w, "openelm.rope.freq_base", (float)OE_BASE));
  uint32_t *heads = lt_keep(f, L * sizeof *heads), *kv = lt_keep(f, L * sizeof *kv), *ff = lt_keep(f, L * sizeof *ff);
  if (!heads || !kv || !ff) st = TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; st == TOPOS_OK && l < L; ++l) {
    int64_t H, KV, F;
    oe_shape(s, l, &H, &KV, &F);
    heads[l] = (uint32_t)H, kv[l] = (uint32_t)KV, ff[l] = (uint32_t)F;
  }
  OE(topos_gguf_writer_add_array(w, "openelm.feed_forward_length", TOPOS_GGUF_U32, ff, L));
  OE(topos_gguf_writer_add_array(w, "openelm.attention.head_count", TOPOS_GGUF_U32, heads, L));
  OE(topos_gguf_writer_add_array(w, "openelm.attention.head_count_kv", TOPOS_GGUF_U32, kv,
                                 (uint64_t)(s->kv_list_len > 0 ? s->kv_list_len : L)));
  const topos_dtype *ty = b->types;
  char n[64];
  /* matrices of mean 0 (spread 0.08), norms' weights near 1 */
#define OE_W(name_fmt, type, e0, e1, ones)                                           \
  do {                                                                               \
    snprintf(n, sizeof n, name_fmt, (int)l);                                         \
    OE(lt_add(w, f, b, n, (e1) ? oe_fit(type, e0) : TOPOS_F32, e0, e1, &rng, ones)); \
  } while (0)
  OE(lt_add(w, f, b, "token_embd.weight", oe_fit(ty[LT_EMBD], D), D, OE_VOCAB, &rng, 0));
  OE(lt_add(w, f, b, "output_norm.weight", TOPOS_F32, D, 0, &rng, 1));
  for (int64_t l = 0; l < L; ++l) {
    int64_t H, KV, F;
    oe_shape(s, l, &H, &KV, &F);
    const int64_t rows = (H + 2 * KV) * OE_HD + (l == s->qkv_block ? s->qkv_extra : 0);
    OE_W("blk.%d.attn_norm.weight", TOPOS_F32, D, 0, 1);
    OE_W("blk.%d.attn_qkv.weight", ty[LT_Q], D, rows, 0);
    OE_W("blk.%d.attn_q_norm.weight", TOPOS_F32, OE_HD, 0, 1);
    OE_W("blk.%d.attn_k_norm.weight", TOPOS_F32, OE_HD, 0, 1);
    OE_W("blk.%d.attn_output.weight", ty[LT_O], H * OE_HD, D, 0);
    OE_W("blk.%d.ffn_norm.weight", TOPOS_F32, D, 0, 1);
    OE_W("blk.%d.ffn_gate.weight", ty[LT_GATE], D, F, 0);
    OE_W("blk.%d.ffn_up.weight", ty[LT_UP], D, F, 0);
    OE_W("blk.%d.ffn_down.weight", ty[LT_DOWN], F, D, 0);
  }
#undef OE_W
  OE(topos_gguf_writer_write_memory(w, &f->bytes, &f->size));
#undef OE
  topos_gguf_writer_destroy(w);
  return st;
}

typedef struct oe_model {
  lt_file file;
  topos_gguf *gguf;
  topos_llama *model;
} oe_model;

static topos_status oe_open(const oe_spec *s, oe_model *m) {
  memset(m, 0, sizeof *m);
  topos_status st = oe_write(s, &m->file);
  if (st == TOPOS_OK) st = topos_gguf_open_memory(m->file.bytes, m->file.size, &m->gguf);
  if (st == TOPOS_OK) st = topos_llama_from_gguf(m->gguf, &m->model);
  return st;
}

static void oe_close(oe_model *m) {
  topos_llama_free(m->model);
  topos_gguf_close(m->gguf);
  lt_file_free(&m->file);
}

/* heads [heads][hd] at position p: RMS norm per head times w, then the
 * NEOX rotation of the first rd dimensions (pairs i, i + rd / 2; angle p
 * base^(-2i / rd)) */
static void oe_head_prep(float *x, int64_t heads, int64_t hd, int64_t rd, const float *w, int64_t p) {
  for (int64_t h = 0; h < heads; ++h) {
    float *u = x + h * hd;
    lt_rmsnorm(u, u, w, hd, OE_EPS);
    for (int64_t i = 0; i < rd / 2; ++i) {
      const double th = (double)p * pow(OE_BASE, -2.0 * (double)i / (double)rd);
      const double c = cos(th), sn = sin(th), a = u[i], b = u[i + rd / 2];
      u[i] = (float)(a * c - b * sn), u[i + rd / 2] = (float)(a * sn + b * c);
    }
  }
}

/* logits [n, vocab] at positions 0..n-1 */
static int oe_plain(topos_gguf *g, const oe_spec *s, const int32_t *tokens, int64_t n, float *logits) {
  enum { L = OE_LAYERS, NW = 9 };
  /* widths read at run time: gcc 12's loop analysis of lt_matvec misfires on constants */
  static const int64_t widths[3] = {OE_HD, OE_VOCAB, 2};
  const volatile int64_t *wv = widths;
  const int64_t hd = wv[0], V = wv[1], G0 = wv[2], D = s->dim;
  const int64_t rd = oe_without(s, "rope dims") ? hd : s->rope_dim;
  int ok = D <= OE_MAX_DIM && n <= OE_CTX; /* (the buffers' sizes) */
  float *embd = lt_deq(g, "token_embd.weight"), *onorm = lt_deq(g, "output_norm.weight");
  ok &= embd && onorm;
  static const char *const names[NW] = {"attn_norm", "attn_qkv", "attn_q_norm", "attn_k_norm", "attn_output",
                                        "ffn_norm",  "ffn_gate", "ffn_up",      "ffn_down"};
  float *W[L][NW] = {{0}};
  char name[64];
  for (int64_t l = 0; l < L; ++l)
    for (int i = 0; i < NW; ++i) {
      snprintf(name, sizeof name, "blk.%d.%s.weight", (int)l, names[i]);
      ok &= (W[l][i] = lt_deq(g, name)) != NULL;
    }
  /* keys and values of every position, per block: [n][kv heads * hd] */
  float *K[L], *Vv[L];
  for (int64_t l = 0; l < L; ++l) {
    K[l] = calloc((size_t)(n * OE_MAX_KV * OE_HD), sizeof(float));
    Vv[l] = calloc((size_t)(n * OE_MAX_KV * OE_HD), sizeof(float));
    ok &= K[l] && Vv[l];
  }
  float x[OE_MAX_DIM], h[OE_MAX_DIM], y[OE_MAX_DIM], qkv[(OE_MAX_HEADS + 2 * OE_MAX_KV) * OE_HD];
  float o[OE_MAX_HEADS * OE_HD], gate[OE_MAX_FF], up[OE_MAX_FF];
  for (int64_t p = 0; ok && p < n; ++p) {
    memcpy(x, embd + (int64_t)tokens[p] * D, (size_t)D * sizeof *x); /* no embedding scale */
    for (int64_t l = 0; l < L; ++l) {
      int64_t H, KV, F;
      oe_shape(s, l, &H, &KV, &F);
      const int64_t G = H / KV;
      float **w = W[l];
      lt_rmsnorm(h, x, w[0], D, OE_EPS);
      lt_matvec(w[1], h, qkv, (H + 2 * KV) * hd, D);
      /* q rows, then k, then v (or, "kv order", v before k) */
      float *q = qkv, *k = qkv + H * hd, *v = qkv + (H + KV) * hd;
      if (oe_without(s, "kv order")) {
        float *t = k;
        k = v, v = t;
      }
      oe_head_prep(q, H, hd, rd, w[2], p);
      oe_head_prep(k, KV, hd, rd, w[3], p);
      memcpy(K[l] + p * KV * hd, k, (size_t)(KV * hd) * sizeof *k);
      memcpy(Vv[l] + p * KV * hd, v, (size_t)(KV * hd) * sizeof *v);
      for (int64_t qh = 0; qh < H; ++qh) {
        /* query head qh reads kv head qh / G (ggml's broadcast of the kv heads) */
        const int64_t kh = oe_without(s, "groups") ? qh / G0 % KV : qh / G;
        double sc[OE_CTX], mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= p; ++j) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += (double)q[qh * hd + i] * K[l][(j * KV + kh) * hd + i];
          sc[j] = d / sqrt((double)hd), mx = sc[j] > mx ? sc[j] : mx;
        }
        for (int64_t j = 0; j <= p; ++j) sc[j] = exp(sc[j] - mx), sum += sc[j];
        for (int64_t i = 0; i < hd; ++i) {
          double acc = 0;
          for (int64_t j = 0; j <= p; ++j) acc += sc[j] / sum * Vv[l][(j * KV + kh) * hd + i];
          o[qh * hd + i] = (float)acc;
        }
      }
      lt_matvec(w[4], o, y, D, H * hd);
      for (int64_t i = 0; i < D; ++i) x[i] += y[i];
      lt_rmsnorm(h, x, w[5], D, OE_EPS);
      lt_matvec(w[6], h, gate, F, D);
      lt_matvec(w[7], h, up, F, D);
      for (int64_t i = 0; i < F; ++i) gate[i] = (float)((double)gate[i] / (1.0 + exp(-(double)gate[i])) * up[i]);
      lt_matvec(w[8], gate, y, D, F);
      for (int64_t i = 0; i < D; ++i) x[i] += y[i];
    }
    lt_rmsnorm(h, x, onorm, D, OE_EPS);
    lt_matvec(embd, h, logits + p * V, V, D); /* tied */
  }
  for (int64_t l = 0; l < L; ++l) {
    for (int i = 0; i < NW; ++i) free(W[l][i]);
    free(K[l]);
    free(Vv[l]);
  }
  free(embd), free(onorm);
  return ok;
}

/* every logit of lt_tokens through a context: a chunk of `first`, then
 * chunks of `step` tokens (every row's logits) */
static topos_status oe_eval(const topos_llama *m, topos_numerics num, topos_dtype kv, int64_t first, int64_t step,
                            float *out) {
  topos_llama_context_options o = topos_llama_context_options_default();
  o.kv_dtype = kv, o.n_ctx = OE_CTX, o.numerics = num;
  topos_llama_context *ctx = NULL;
  topos_status st = topos_llama_context_new(m, &o, &ctx);
  if (st == TOPOS_OK) st = topos_llama_eval(ctx, lt_tokens, first, 1, out);
  for (int64_t t = first; st == TOPOS_OK && t < LT_N; t += step) {
    const int64_t k = t + step <= LT_N ? step : LT_N - t;
    st = topos_llama_eval(ctx, lt_tokens + t, k, 1, out + t * OE_VOCAB);
  }
  topos_llama_context_free(ctx);
  return st;
}

/* the model (a chunk of `first`, then chunks of `step`) against the plain
 * forward (bound), and the plain forward `without` a feature far from it */
static void oe_compare(const oe_spec *s, topos_numerics num, topos_dtype kv, int64_t first, int64_t step,
                       double bound, const oe_spec *without) {
  oe_model m;
  CHECK_OK(oe_open(s, &m));
  if (!m.model) {
    oe_close(&m);
    return;
  }
  const int64_t NV = LT_N * OE_VOCAB;
  float *got = malloc((size_t)NV * sizeof *got), *want = malloc((size_t)NV * sizeof *want);
  CHECK(got && want);
  if (got && want) {
    CHECK_OK(oe_eval(m.model, num, kv, first, step, got));
    CHECK(oe_plain(m.gguf, s, lt_tokens, LT_N, want));
    const double rel = lt_rel_l2(got, want, NV, NULL);
    if (getenv("LT_VERBOSE"))
      fprintf(stderr, "openelm rel %g (dim %lld, %s, kv %s, chunks %lld + %lld)\n", rel, (long long)s->dim,
              num == TOPOS_NUMERICS_EXACT ? "exact" : "fast", topos_dtype_name(kv), (long long)first, (long long)step);
    CHECK_MSG(rel < bound, "openelm: relative error %g against the plain forward (bound %g, kv %s, chunks %lld + %lld)",
              rel, bound, topos_dtype_name(kv), (long long)first, (long long)step);
    if (without) {
      CHECK(oe_plain(m.gguf, without, lt_tokens, LT_N, want));
      const double off = lt_rel_l2(got, want, NV, NULL);
      if (getenv("LT_VERBOSE")) fprintf(stderr, "openelm without %s: %g\n", without->plain_without, off);
      CHECK_MSG(off > 100 * bound, "openelm: the plain forward without %s is only %g away", without->plain_without,
                off);
    }
  }
  free(got);
  free(want);
  oe_close(&m);
}

TEST(llama_openelm_files) {
  oe_spec s = oe_default();
  oe_model m;
  CHECK_OK(oe_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    /* the model's heads and kv heads the largest of the lists, its width the widest block's */
    CHECK(c->n_heads == 8 && c->n_kv_heads == 4 && c->ff == 160 && c->head_dim == OE_HD && c->rope_dim == OE_HD);
    CHECK(c->rope_neox == 1 && c->qk_norm == 1 && c->tied_output == 1 && c->ffn_gelu == 0);
    CHECK(c->attn_scale == 0.25f && c->embd_scale == 1.0f && c->rms_eps == OE_EPS && c->n_vocab == OE_VOCAB);
    for (int64_t l = 0; l < OE_LAYERS; ++l) {
      const tp_llama_layer *L = &m.model->layers[l];
      CHECK_MSG(L->heads == oe_heads[l] && L->kv_heads == oe_kv[l] && L->ff == oe_ff[l] && L->hd == OE_HD &&
                    L->rd == OE_HD,
                "block %lld: heads %lld, kv heads %lld, ff %lld, hd %lld, rd %lld", (long long)l, (long long)L->heads,
                (long long)L->kv_heads, (long long)L->ff, (long long)L->hd, (long long)L->rd);
      CHECK(L->wq && L->wk && L->wv && L->q_norm && L->k_norm && L->w_gate && L->w_up && L->w_down);
    }
    /* caches: each block's own kv heads (1 + 2 + 2 + 3 + 2 + 4 = 14) of 16, keys and values, f32, 32 positions */
    topos_llama_context *ctx = NULL;
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = OE_CTX;
    CHECK_OK(topos_llama_context_new(m.model, &o, &ctx));
    CHECK_EQ_INT((long long)topos_llama_cache_bytes(ctx), 14LL * OE_HD * OE_CTX * 2 * 4);
    topos_llama_context_free(ctx);
  }
  oe_close(&m);
  /* a chunk of 5 (the chunk's masks regrouped, no cache), then token by
   * token (the cache's), Exact and Fast; each against a plain forward that
   * gets the heads' groups or the k and v rows wrong */
  oe_spec without = s;
  without.plain_without = "groups";
  oe_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 5, 1, 1e-5, &without);
  without.plain_without = "kv order";
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5, 1, 1e-5, &without);
  /* the blocks' shapes reversed: the last block (4 heads, 1 kv head) regrouped too */
  s.reversed = 1;
  without = s;
  without.plain_without = "groups";
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5, 1, 1e-5, &without);
  s.reversed = 0;
  /* a partial rotation (llama.cpp reads rope.dimension_count; the converter writes the head width) */
  s.rope_dim = 8, s.base.seed = 52;
  without = s;
  without.plain_without = "rope dims";
  oe_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 5, 1, 1e-5, &without);
}

/* chunks behind a cache (3 tokens, then 9 in one chunk; 2, then chunks of
 * 4): each chunk's rows read the cache's masks and the chunk's, both
 * regrouped, through f32 and 16-bit caches (16-bit: the cached keys and
 * values rounded, a chunk's own not) */
TEST(llama_openelm_chunks) {
  oe_spec s = oe_default();
  oe_spec without = s;
  without.plain_without = "groups";
  oe_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 3, LT_N - 3, 1e-5, &without);
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 2, 4, 1e-5, NULL);
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F16, 3, LT_N - 3, 2e-3, NULL);
  oe_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_BF16, 2, 4, 1e-2, NULL);
  s.reversed = 1;
  oe_compare(&s, TOPOS_NUMERICS_EXACT, TOPOS_F32, 3, LT_N - 3, 1e-5, NULL);
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F16, 2, 4, 2e-3, NULL);
}

/* decoding token by token (after a first chunk of 1 or 5) equals one
 * full-context chunk bit for bit at 1-3 threads, and a chunk whose logits
 * are its last row's alone (the last block run for that row: its masks the
 * last row's, of the regrouped ones where the blocks are reversed) gives
 * that row's bits (the harness's checks; the last row's through an f16
 * cache too); and through a
 * 16-bit cache (not the full context's bits: a chunk's own keys are not
 * rounded) decoding gives the same bits at 1-3 threads */
static void oe_decode_checks(const oe_spec *s) {
  oe_model m;
  CHECK_OK(oe_open(s, &m));
  const int64_t NV = LT_N * OE_VOCAB;
  float *full = malloc((size_t)NV * sizeof *full), *rows = malloc((size_t)NV * sizeof *rows);
  float *one = malloc(OE_VOCAB * sizeof *one), *last = malloc(OE_VOCAB * sizeof *last);
  CHECK(full && rows && one && last);
  if (m.model && full && rows && one && last) {
    lt_model lm = {.model = m.model}; /* (the harness reads the model alone) */
    lt_decode_is_full_context(&lm, OE_VOCAB, full, rows);
    const int saved = topos_threads(), slow = tt_instrumented();
    lt_kv = TOPOS_F16;
    for (int threads = slow ? 2 : 1; threads <= (slow ? 2 : 3); ++threads) {
      CHECK_OK(topos_set_threads(threads));
      CHECK_OK(lt_last_row(m.model, 3, 1, rows, one));
      CHECK_OK(lt_last_row(m.model, 3, 0, rows, last));
      int64_t differ = 0;
      for (int64_t i = 0; i < OE_VOCAB; ++i) differ += tt_f32_bits(one[i]) != tt_f32_bits(last[i]);
      CHECK_MSG(differ == 0, "%lld last-row logits differ (threads %d, kv f16, reversed %d)", (long long)differ,
                threads, s->reversed);
    }
    lt_kv = TOPOS_F32;
    /* a 16-bit cache: decoding after a chunk of 1 and of 5, every thread count's bits those of 1 thread */
    for (int64_t first = 1; first <= 5; first += 4) {
      CHECK_OK(topos_set_threads(1));
      CHECK_OK(oe_eval(m.model, TOPOS_NUMERICS_EXACT, TOPOS_F16, first, 1, full));
      for (int threads = 2; threads <= (slow ? 2 : 3); ++threads) {
        CHECK_OK(topos_set_threads(threads));
        CHECK_OK(oe_eval(m.model, TOPOS_NUMERICS_EXACT, TOPOS_F16, first, 1, rows));
        int64_t differ = 0;
        for (int64_t i = 0; i < NV; ++i) differ += tt_f32_bits(full[i]) != tt_f32_bits(rows[i]);
        CHECK_MSG(differ == 0,
                  "%lld logits differ through an f16 cache (threads %d against 1, first chunk %lld, reversed %d)",
                  (long long)differ, threads, (long long)first, s->reversed);
      }
    }
    CHECK_OK(topos_set_threads(saved));
  }
  free(full);
  free(rows);
  free(one);
  free(last);
  oe_close(&m);
}

TEST(llama_openelm_decode_is_full_context) {
  oe_spec s = oe_default();
  oe_decode_checks(&s);
  s.reversed = 1;
  oe_decode_checks(&s);
}

/* quantized weights (the activations quantized as ggml does, to Q8_0 or
 * Q8_K, which the plain forward of the dequantized weights does not):
 * 32-blocks at dim 64 through f32 and f16 caches (measured 2.0e-2 and
 * 1.9e-2; 1.5e-2..2.6e-2 over 8 other seeds; bound 3e-2, the harness's),
 * and K-quants (Q4_K, Q5_K, Q6_K) on the rows of dim 256 (3.0e-2;
 * 2.5e-2..4.2e-2 over 8 other seeds: Q8_K rows of 256 through six blocks;
 * bound 5e-2, Gemma 4's) */
TEST(llama_openelm_quantized) {
  LT_NATIVE_ONLY();
  oe_spec s = oe_default();
  const topos_dtype small[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q5_0, TOPOS_Q4_1,
                                       TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q8_0, TOPOS_Q8_0};
  memcpy(s.base.types, small, sizeof small);
  s.base.seed = 53;
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5, 1, 3e-2, NULL);
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F16, 5, 1, 3e-2, NULL);
  s = oe_default();
  const topos_dtype kq[LT_ROLES] = {TOPOS_Q6_K, TOPOS_Q4_K, TOPOS_Q8_0, TOPOS_Q8_0, TOPOS_Q8_0,
                                    TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q8_0, TOPOS_Q8_0};
  memcpy(s.base.types, kq, sizeof kq);
  s.dim = 256, s.base.seed = 54;
  oe_compare(&s, TOPOS_NUMERICS_FAST, TOPOS_F32, 5, 1, 5e-2, NULL);
}

static void oe_refused(oe_spec s, topos_status want, const char *frag) {
  oe_model m;
  topos_status st = oe_open(&s, &m);
  if (getenv("LT_VERBOSE")) fprintf(stderr, "refused: %s: %s\n", topos_status_name(st), topos_last_error());
  CHECK_MSG(st == want, "got %s, want %s (%s)", topos_status_name(st), topos_status_name(want), topos_last_error());
  CHECK_MSG(strstr(topos_last_error(), frag) != NULL, "message: %s (want \"%s\")", topos_last_error(), frag);
  CHECK(m.model == NULL);
  oe_close(&m);
}

TEST(llama_openelm_bad_files) {
  oe_spec s = oe_default();
  s.kv_list_len = 5;
  oe_refused(s, TOPOS_ERR_SHAPE, "openelm.attention.head_count_kv lists 5 blocks, block_count is 6");
  s = oe_default();
  s.kv_block = 2, s.kv_value = 4; /* block 2 has 6 heads */
  oe_refused(s, TOPOS_ERR_SHAPE, "block 2's 4 kv heads (attention.head_count_kv) do not divide its 6 heads");
  s = oe_default();
  s.kv_block = 4, s.kv_value = 9; /* more than any block's heads */
  oe_refused(s, TOPOS_ERR_RANGE, "openelm.attention.head_count_kv[4] = 9 is outside 1..8");
  s = oe_default();
  s.qkv_block = 3, s.qkv_extra = OE_HD; /* (6 + 2 x 3) x 16 = 192 rows, and one head more */
  oe_refused(s, TOPOS_ERR_SHAPE, "tensor blk.3.attn_qkv.weight has ne {64, 208}, the metadata implies {64, 192}");
  s = oe_default();
  s.base.skip_tensor = "blk.4.attn_q_norm.weight";
  oe_refused(s, TOPOS_ERR_NOT_FOUND, "tensor blk.4.attn_q_norm.weight is missing from the file");
  s = oe_default();
  s.base.bad_tensor = "blk.1.attn_k_norm.weight"; /* 32 wider than a head */
  oe_refused(s, TOPOS_ERR_SHAPE, "tensor blk.1.attn_k_norm.weight has ne {48}, the metadata implies {16}");
  s = oe_default();
  s.base.bad_tensor = "blk.0.attn_output.weight"; /* block 0's 4 heads: 64 columns, not 96 */
  oe_refused(s, TOPOS_ERR_SHAPE, "tensor blk.0.attn_output.weight has ne {96, 64}, the metadata implies {64, 64}");
  s = oe_default();
  s.base.skip_tensor = "blk.5.ffn_gate.weight";
  oe_refused(s, TOPOS_ERR_NOT_FOUND, "tensor blk.5.ffn_gate.weight is missing from the file");
}
