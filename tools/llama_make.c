/* `topos llama-make OUT --shape NAME [--type T] [--seed S] [--layers N]` (shapes below):
 * writes a random-weight llama GGUF with real model shapes for benchmarks
 * (`topos bench llm`). --type is a weight type (f16, q8_0, q4_0, q4_K, ...)
 * or one of llama.cpp's mixes for llama models, Q6_K for output.weight in
 * both:
 *   q4_K_M  Q4_K, with Q6_K for attn_v and ffn_down in the first and last
 *           eighth of the blocks and every third one between;
 *   q3_K_M  Q3_K, with Q4_K for attn_output, attn_v (Q5_K in the first two
 *           blocks) and ffn_down (Q5_K in the first sixteenth).
 * A head tied to the embedding (llama3.2-1b) puts the head's type on
 * token_embd.weight, as llama.cpp's quantizer does. llama3.2-1b also has
 * Llama 3.2's rope: base 500000 and rope_freqs.weight (factor 32, low and
 * high frequency factors 1 and 4, original context 8192). qwen2.5-0.5b is a
 * qwen2 file (q, k, v biases in f32, qwen2.* keys, tied head). olmoe-1b-7b is
 * OLMoE-1B-7B's mixture (an olmoe file: 64 experts of 1024, 8 per token, q
 * and k norms over whole rows); the experts' weights take the mix's
 * ffn_down rule as llama.cpp's names match it (ffn_down_exps). qwen3-30b-a3b
 * is Qwen3-30B-A3B's (a qwen3moe file: 128 experts of 768, 8 per token, 32
 * heads of 128 over 2048, 4 KV heads, per-head q and k norms); its 48 blocks
 * make a 17 GB Q4_K_M file, so `--layers N` writes the first N of a shape's
 * blocks (decoding's per-block speed is the same). gpt-oss-20b is a gpt-oss
 * file (32 experts of 2880, 4 per token, 64 heads of 64 over 2880, 8 KV
 * heads, attention sinks, a window of 128 on even blocks, YaRN 32 over 4096,
 * biases everywhere); with --type mxfp4 its experts are MXFP4 and the other
 * weights Q8_0, as llama.cpp's MXFP4_MOE quantization and the published file.
 * deepseek-v2-lite is DeepSeek-V2-Lite's (a deepseek2 file: latent attention
 * of rank 512 with 64 rotated and 128 unrotated dimensions per head, 16
 * heads, values of 128; a dense first block of 10944, then 64 experts of
 * 1408, 6 per token, and 2 shared; DeepSeek's YaRN, 40 over 4096).
 * ling-mini-2.0 is Ling-mini-2.0's (a bailingmoe2 file: q, k, v in one
 * attn_qkv, 16 heads of 128 over 2048, 4 KV heads, per-head q and k norms,
 * half of each head rotated; a dense first block of 5120, then 256 experts
 * of 512, 8 per token chosen by a sigmoid router in the best 4 of 8 groups,
 * and one shared expert).
 * lfm2-1.2b is LFM2-1.2B's (an lfm2 file: 16 blocks, attention in blocks 2,
 * 5, 8, 10, 12 and 14 with 32 heads of 64, 8 KV heads and per-head q and k
 * norms, short convolutions of 3 taps (f32, as llama.cpp's quantizer keeps
 * them) in the other ten; a head tied to the 65536-row embedding).
 * granite-4.0-h-micro is Granite-4.0-H-Micro's (a granitehybrid file: 40
 * blocks, attention in blocks 5, 15, 25 and 35 with 32 heads of 64 and 8 KV
 * heads, no rotation; Mamba-2 mixers of 64 heads of 64 with 128 state
 * entries, one group and 4 taps in the others (f32 taps, biases, A, D and
 * norms, as llama.cpp's quantizer keeps them); dense SwiGLU feed-forwards of
 * 8192; granite's scales; a head tied to the 100352-row embedding).
 * qwen3.5-0.8b is shaped as Qwen3.5-0.8B (a qwen35 file: 24 blocks, every
 * fourth attention with 8 heads of 256 (their q rows followed by as many
 * gate rows), 2 KV heads, per-head q and k norms, 64 of 256 dimensions
 * rotated by interleaved sections 11, 11, 10; gated-DeltaNet mixers of 16
 * key and 16 value heads of 128 and 4 taps in the others (f32 taps, dt
 * biases, A and norms); dense SwiGLU feed-forwards of 3584; a head tied to
 * the 248320-row embedding).
 * gemma-4-e2b is Gemma 4 E2B's (a gemma4 file: 35 blocks, every fifth
 * attending to the whole context with heads of 512 (a quarter of their pairs
 * rotated: rope_freqs' 1e30s), the others within 512 tokens with heads of
 * 256; 8 heads, 1 KV head; the last 20 blocks read the caches of blocks 13
 * and 14; GELU feed-forwards of 6144, 12288 in the shared blocks; per-layer
 * embeddings of 256 (a 262144 x 8960 table); a head tied to the 262144-row
 * embedding).
 * gemma-3n-e2b is Gemma 3n E2B's (a gemma3n file: 30 blocks, every fifth
 * attending to the whole context, the others within 512 tokens; 8 heads of
 * 256, 2 KV heads; the last 10 blocks read the caches of blocks 18 and 19
 * (their own attn_k, attn_v and attn_k_norm written, never read, as in the
 * released files); GELU feed-forwards of 8192, sparse gates in the first 10
 * blocks; AltUp over 4 streams, Laurel of rank 64, per-layer embeddings of
 * 256 (a 262400 x 7680 table); a head tied to the 262400-row embedding;
 * q and k norms of 0.25, since its attention is unscaled).
 * In both Gemmas, with a mix, both embedding tables take the head's type
 * (llama.cpp's quantizer types per_layer_token_embd as token_embd); the
 * matrices that it never quantizes (altup_*, laurel_*, per_layer_model_proj)
 * are bf16 (f32 for the AltUp coefficients), as its converter writes them
 * from the bf16 checkpoints (gemma-4-e2b until session 43: both Q4_K).
 * The routers' rows are all distinct (the other weights repeat 16 rows), so
 * tokens spread over every expert as in a trained model.
 * Rows that are not whole 256-blocks fall back to Q5_0 / Q5_1 / Q8_0 as
 * llama.cpp does (its Q2_K / Q3_K fallback, IQ4_NL, is Q5_0 here).
 *
 * Speed does not depend on the values, so each weight quantizes 16 random
 * rows with the reference quantizer and repeats them (distinct bytes in
 * memory all the same); quantizing a billion elements would take minutes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

typedef struct lm_shape {
  const char *name;
  int64_t vocab, dim, layers, heads, kv_heads, ff, ctx;
  float rope_base;
  int llama3; /* tied head, rope_freqs.weight */
  int qwen2;  /* tied head, q, k, v biases, qwen2.* keys */
  int64_t experts, experts_used; /* a mixture where experts > 0: */
  const char *moe_arch;          /* olmoe (q, k norms over rows), qwen3moe (per head), ...; lfm2 (no
                                  * experts): the architecture where not llama */
  int64_t ff_exp, head_dim;      /* qwen3moe: the experts' width, the head width */
} lm_shape;

/* deepseek2 (deepseek-v2-lite): latent attention (kv_lora_rank, q_lora_rank
 * (0: attn_q), rotated, unrotated and value widths per head), shared
 * experts, dense leading blocks (of ff) */
static const struct {
  int64_t kv_lora, q_lora, rope, nope, v_dim, shared, dense_lead;
} lm_mla_dims = {512, 0, 64, 128, 128, 2, 1};

static int lm_oai(const char *arch) { return strcmp(arch, "gpt-oss") == 0; }
static int lm_mla(const char *arch) { return strcmp(arch, "deepseek2") == 0; }
static int lm_ling(const char *arch) { return strcmp(arch, "bailingmoe2") == 0; }

/* bailingmoe2 (ling-mini-2.0): expert groups and those used, shared
 * experts, dense leading blocks (of ff) */
static const struct {
  int64_t groups, groups_used, shared, dense_lead;
} lm_ling_dims = {8, 4, 1, 1};

static const lm_shape lm_shapes[] = {
    {"tinyllama", 32000, 2048, 22, 32, 4, 5632, 2048, 10000.0f, 0, 0, 0, 0, NULL, 0, 0},
    {"llama3.2-1b", 128256, 2048, 16, 32, 8, 8192, 131072, 500000.0f, 1, 0, 0, 0, NULL, 0, 0},
    {"qwen2.5-0.5b", 151936, 896, 24, 14, 2, 4864, 32768, 1000000.0f, 0, 1, 0, 0, NULL, 0, 0},
    {"stories15m", 32000, 288, 6, 6, 6, 768, 256, 10000.0f, 0, 0, 0, 0, NULL, 0, 0},
    {"tiny", 512, 256, 2, 4, 2, 512, 256, 10000.0f, 0, 0, 0, 0, NULL, 0, 0},
    {"olmoe-1b-7b", 50304, 2048, 16, 16, 16, 1024, 4096, 10000.0f, 0, 0, 64, 8, "olmoe", 0, 0},
    {"olmoe-tiny", 512, 256, 2, 4, 4, 256, 256, 10000.0f, 0, 0, 8, 2, "olmoe", 0, 0},
    {"qwen3-30b-a3b", 151936, 2048, 48, 32, 4, 6144, 40960, 1000000.0f, 0, 0, 128, 8, "qwen3moe", 768, 128},
    {"gpt-oss-20b", 201088, 2880, 24, 64, 8, 2880, 131072, 150000.0f, 0, 0, 32, 4, "gpt-oss", 2880, 64},
    {"deepseek-v2-lite", 102400, 2048, 27, 16, 1, 10944, 163840, 10000.0f, 0, 0, 64, 6, "deepseek2", 1408, 0},
    {"ling-mini-2.0", 157184, 2048, 20, 16, 4, 5120, 32768, 600000.0f, 0, 0, 256, 8, "bailingmoe2", 512, 128},
    {"lfm2-1.2b", 65536, 2048, 16, 32, 8, 8192, 128000, 1000000.0f, 0, 0, 0, 0, "lfm2", 0, 0},
    {"granite-4.0-h-micro", 100352, 2048, 40, 32, 8, 8192, 131072, 10000.0f, 0, 0, 0, 0, "granitehybrid", 0, 0},
    {"qwen3.5-0.8b", 248320, 1024, 24, 8, 2, 3584, 262144, 10000000.0f, 0, 0, 0, 0, "qwen35", 0, 256},
    {"gemma-4-e2b", 262144, 1536, 35, 8, 1, 6144, 131072, 1000000.0f, 0, 0, 0, 0, "gemma4", 0, 512},
    {"gemma-3n-e2b", 262400, 2048, 30, 8, 2, 8192, 32768, 1000000.0f, 0, 0, 0, 0, "gemma3n", 0, 256},
};

/* gemma4 (gemma-4-e2b) and gemma3n (gemma-3n-e2b): the window, the
 * per-layer embeddings' width; gemma4's windowed blocks' head width and
 * blocks reading earlier caches; block l attends to the whole context where
 * (l + 1) % 5 == 0 */
static int lm_gemma4(const char *arch) { return strcmp(arch, "gemma4") == 0; }
static int lm_gemma3n(const char *arch) { return strcmp(arch, "gemma3n") == 0; }
static int lm_gemma(const char *arch) { return lm_gemma4(arch) || lm_gemma3n(arch); }
static int lm_gemma_full(int64_t l) { return (l + 1) % 5 == 0; }
static const struct {
  int64_t window, ple, hd_swa, shared;
} lm_gemma_dims = {512, 256, 256, 20};

/* gemma3n: AltUp's streams, Laurel's rank; llama.cpp gives the first 20
 * blocks caches of their own and sparse gates (multiplier 1.6448533535..,
 * -inf: none) to the first 10, which the files' keys repeat. The q and k
 * norms' weights: with an attention scale of 1, weights of 1 over heads of
 * 256 make the softmax one-hot, which turns rounding into other tokens */
static const struct {
  int64_t streams, laurel, own_kv, sparse;
} lm_gemma3n_dims = {4, 64, 20, 10};
static const float lm_gemma3n_qk_norm = 0.25f;

/* the last blocks, reading earlier caches: gemma4's 20 (where more than 22
 * blocks), gemma3n's past its first 20 */
static int64_t lm_gemma_shared(const char *arch, int64_t layers) {
  if (lm_gemma3n(arch)) return layers > lm_gemma3n_dims.own_kv ? layers - lm_gemma3n_dims.own_kv : 0;
  return layers > lm_gemma_dims.shared + 2 ? lm_gemma_dims.shared : 0;
}

/* qwen35 (qwen3.5-0.8b): attention every fourth block, gated-DeltaNet mixers
 * elsewhere: conv_kernel, key heads, value heads, head width; the rotated
 * dimensions and their sections */
static int lm_qwen35(const char *arch) { return strcmp(arch, "qwen35") == 0; }
static const struct {
  int64_t conv, key_heads, value_heads, width, interval, rope_dim;
  int32_t sections[4];
} lm_delta_dims = {4, 16, 16, 128, 4, 64, {11, 11, 10, 0}};

/* granitehybrid (granite-4.0-h-micro): attention in blocks 5, 15, 25, 35,
 * Mamba-2 mixers elsewhere: conv_kernel, inner_size, state_size, heads, groups */
static int lm_granite_h(const char *arch) { return strcmp(arch, "granitehybrid") == 0; }
static int lm_granite_h_attention(int64_t l) { return l % 10 == 5; }
static const struct {
  int64_t conv, inner, state, heads, groups;
} lm_ssm_dims = {4, 4096, 128, 64, 1};

/* lfm2: the attention blocks of LFM2-1.2B (the others convolve) */
static int lm_lfm2(const char *arch) { return strcmp(arch, "lfm2") == 0; }
static int lm_lfm2_attention(int64_t l) { return l == 2 || l == 5 || l == 8 || l == 10 || l == 12 || l == 14; }


typedef struct lm_build {
  topos_gguf_writer *w;
  topos_rng rng;
  void **keep;
  size_t n_keep;
  topos_status st;
} lm_build;

static void *lm_keep(lm_build *b, size_t bytes) {
  void **k = realloc(b->keep, (b->n_keep + 1) * sizeof *k);
  if (!k) return NULL;
  b->keep = k;
  void *p = malloc(bytes ? bytes : 1);
  if (p) b->keep[b->n_keep++] = p;
  return p;
}

/* Llama 3.2's rope factors for pair i of hd / 2 (the smooth band between
 * wavelengths 8192 / 4 and 8192). */
static void lm_rope_factors(lm_build *b, int64_t hd, double base) {
  if (b->st != TOPOS_OK) return;
  float *f = lm_keep(b, (size_t)(hd / 2) * sizeof *f);
  if (!f) {
    b->st = TOPOS_ERR_OUT_OF_MEMORY;
    return;
  }
  const double ctx0 = 8192.0, factor = 32.0;
  for (int64_t i = 0; i < hd / 2; ++i) {
    const double wavelen = 6.283185307179586 * pow(base, 2.0 * (double)i / (double)hd);
    const double smooth = (ctx0 / wavelen - 1.0) / (4.0 - 1.0);
    f[i] = wavelen < ctx0 / 4.0 ? 1.0f : wavelen > ctx0 ? (float)factor
                                                        : (float)(1.0 / ((1.0 - smooth) / factor + smooth));
  }
  const int64_t ne[1] = {hd / 2};
  b->st = topos_gguf_writer_add_tensor_raw(b->w, "rope_freqs.weight", 0, 1, ne, f, (size_t)(hd / 2) * sizeof *f);
}

/* K-quants need rows of whole 256-blocks; fall back like llama.cpp. */
static topos_dtype lm_fit(topos_dtype t, int64_t ne0) {
  if (ne0 % topos_dtype_block_size(t) == 0) return t;
  if (t == TOPOS_Q4_K || t == TOPOS_Q2_K || t == TOPOS_Q3_K) return TOPOS_Q5_0;
  if (t == TOPOS_Q5_K) return TOPOS_Q5_1;
  return TOPOS_Q8_0;
}

/* ne {ne0, ne1, ne2}: ne2 experts of [ne1, ne0] where not 0; norm: an f32
 * tensor of that value where not 0 (1: a norm's weights, -1: Mamba's A) */
static void lm_tensor3x(lm_build *b, const char *name, topos_dtype type, int64_t ne0, int64_t ne1, int64_t ne2,
                        float norm, int distinct) {
  if (b->st != TOPOS_OK) return;
  if (norm) type = TOPOS_F32;
  type = lm_fit(type, ne0);
  int64_t rows = (ne1 ? ne1 : 1) * (ne2 ? ne2 : 1), pool = rows < 16 || distinct ? rows : 16;
  size_t row_bytes;
  if ((b->st = topos_dtype_bytes(type, ne0, &row_bytes)) != TOPOS_OK) return;
  uint8_t *data = lm_keep(b, row_bytes * (size_t)rows);
  float *values = malloc((size_t)ne0 * sizeof *values);
  if (!data || !values) {
    free(values);
    b->st = TOPOS_ERR_OUT_OF_MEMORY;
    return;
  }
  for (int64_t r = 0; r < pool && b->st == TOPOS_OK; ++r) {
    for (int64_t i = 0; i < ne0; ++i)
      values[i] = norm ? norm : (float)(0.02 * topos_rng_normal(&b->rng));
    b->st = topos_quantize_row(type, values, data + (size_t)r * row_bytes, ne0);
  }
  free(values);
  for (int64_t r = pool; r < rows; ++r)
    memcpy(data + (size_t)r * row_bytes, data + (size_t)(r % pool) * row_bytes, row_bytes);
  int64_t ne[3] = {ne0, ne1, ne2};
  if (b->st == TOPOS_OK)
    b->st = topos_gguf_writer_add_tensor_raw(b->w, name, (uint32_t)topos_dtype_ggml_id(type),
                                             ne2 ? 3 : ne1 ? 2 : 1, ne, data, row_bytes * (size_t)rows);
}

static void lm_tensor3(lm_build *b, const char *name, topos_dtype type, int64_t ne0, int64_t ne1, int64_t ne2,
                       float norm) {
  lm_tensor3x(b, name, type, ne0, ne1, ne2, norm, 0);
}

static void lm_tensor(lm_build *b, const char *name, topos_dtype type, int64_t ne0, int64_t ne1, float norm) {
  lm_tensor3(b, name, type, ne0, ne1, 0, norm);
}

/* block l's router and experts: gate and up of type gu, down of type dn */
static void lm_experts(lm_build *b, int64_t l, topos_dtype gu, topos_dtype dn, int64_t dim, int64_t fe,
                       int64_t experts) {
  char n[64];
  snprintf(n, sizeof n, "blk.%d.ffn_gate_inp.weight", (int)l);
  lm_tensor3x(b, n, TOPOS_F32, dim, experts, 0, 0, 1);
  snprintf(n, sizeof n, "blk.%d.ffn_gate_exps.weight", (int)l);
  lm_tensor3(b, n, gu, dim, fe, experts, 0);
  snprintf(n, sizeof n, "blk.%d.ffn_up_exps.weight", (int)l);
  lm_tensor3(b, n, gu, dim, fe, experts, 0);
  snprintf(n, sizeof n, "blk.%d.ffn_down_exps.weight", (int)l);
  lm_tensor3(b, n, dn, fe, dim, experts, 0);
}

/* A DeepSeek-style block's feed-forward: dense (of ff) where `dense`, else
 * the experts, exp_probs_b where `probs_b`, and shared experts `shared`
 * wide in all; down (and the experts' down) of type dn */
static void lm_ds_ffn(lm_build *b, const lm_shape *s, int64_t l, topos_dtype base, topos_dtype dn, int dense,
                      int64_t shared, int probs_b) {
  char n[64];
  const char *names[3] = {dense ? "ffn_gate" : "ffn_gate_shexp", dense ? "ffn_up" : "ffn_up_shexp",
                          dense ? "ffn_down" : "ffn_down_shexp"};
  const int64_t width = dense ? s->ff : shared;
  if (!dense) {
    lm_experts(b, l, base, dn, s->dim, s->ff_exp, s->experts);
    snprintf(n, sizeof n, "blk.%d.exp_probs_b.bias", (int)l);
    if (probs_b) lm_tensor(b, n, TOPOS_F32, s->experts, 0, 0);
  }
  for (int i = 0; i < 3; ++i) {
    snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, names[i]);
    lm_tensor(b, n, i == 2 ? dn : base, i == 2 ? width : s->dim, i == 2 ? s->dim : width, 0);
  }
}

static const char *lm_key(char *kb, const char *arch, const char *suffix) {
  snprintf(kb, 96, "%s.%s", arch, suffix);
  return kb;
}

static void lm_vocab(lm_build *b, int64_t vocab) {
  if (b->st != TOPOS_OK) return;
  const char **tokens = lm_keep(b, (size_t)vocab * sizeof *tokens);
  float *scores = lm_keep(b, (size_t)vocab * sizeof *scores);
  int32_t *types = lm_keep(b, (size_t)vocab * sizeof *types);
  char *text = lm_keep(b, (size_t)vocab * 16);
  if (!tokens || !scores || !types || !text) {
    b->st = TOPOS_ERR_OUT_OF_MEMORY;
    return;
  }
  for (int64_t i = 0; i < vocab; ++i) {
    char *t = text + 16 * i;
    if (i < 3) snprintf(t, 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    else if (i < 259) snprintf(t, 16, "<0x%02X>", (unsigned)(i - 3));
    else snprintf(t, 16, "w%d", (int)i);
    tokens[i] = t;
    types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    scores[i] = -(float)i;
  }
  topos_gguf_writer *w = b->w;
  if ((b->st = topos_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama")) != TOPOS_OK) return;
  if ((b->st = topos_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, NULL,
                                                  (uint64_t)vocab)) != TOPOS_OK) return;
  if ((b->st = topos_gguf_writer_add_array(w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, scores,
                                           (uint64_t)vocab)) != TOPOS_OK) return;
  b->st = topos_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TOPOS_GGUF_I32, types,
                                      (uint64_t)vocab);
}

/* gemma4: the full blocks' proportional rotation (a quarter of the pairs
 * turn, the rest divided by 1e30); both: the per-layer embeddings' tables,
 * the table of type embd, its projection of type proj; gemma3n: AltUp's
 * projections to and from the streams past the first (of type proj) */
static void lm_gemma_tables(lm_build *b, const lm_shape *s, const char *arch, int64_t hd, topos_dtype embd,
                            topos_dtype proj) {
  if (b->st != TOPOS_OK) return;
  if (lm_gemma4(arch)) {
    float *f = lm_keep(b, (size_t)(hd / 2) * sizeof *f);
    if (!f) {
      b->st = TOPOS_ERR_OUT_OF_MEMORY;
      return;
    }
    for (int64_t i = 0; i < hd / 2; ++i) f[i] = i < hd / 8 ? 1.0f : 1e30f;
    const int64_t ne[1] = {hd / 2};
    b->st = topos_gguf_writer_add_tensor_raw(b->w, "rope_freqs.weight", 0, 1, ne, f, (size_t)(hd / 2) * sizeof *f);
  }
  const int64_t lp = s->layers * lm_gemma_dims.ple;
  lm_tensor(b, "per_layer_token_embd.weight", embd, lp, s->vocab, 0);
  lm_tensor(b, "per_layer_model_proj.weight", proj, s->dim, lp, 0);
  lm_tensor(b, "per_layer_proj_norm.weight", TOPOS_F32, lm_gemma_dims.ple, 0, 1);
  if (lm_gemma3n(arch)) {
    lm_tensor3(b, "altup_proj.weight", proj, s->dim, s->dim, lm_gemma3n_dims.streams - 1, 0);
    lm_tensor3(b, "altup_unembd_proj.weight", proj, s->dim, s->dim, lm_gemma3n_dims.streams - 1, 0);
  }
}

/* gemma3n: block l's AltUp (the router and its norm, the prediction's and
 * correction's coefficients, f32 as llama.cpp's converter writes them, the
 * correction's scale) and Laurel (two matrices of rank laurel, a norm); the
 * matrices of type flt */
static void lm_gemma3n_block(lm_build *b, const lm_shape *s, int64_t l, topos_dtype flt) {
  const int64_t D = s->dim, N = lm_gemma3n_dims.streams, R = lm_gemma3n_dims.laurel;
  const struct {
    const char *suffix;
    topos_dtype type;
    int64_t ne0, ne1;
    float norm;
  } t[8] = {{"altup_router", flt, D, N, 0},          {"altup_router_norm", TOPOS_F32, D, 0, 1},
            {"altup_predict_coef", TOPOS_F32, N, N * N, 0}, {"altup_correct_coef", TOPOS_F32, N, N, 0},
            {"altup_correct_scale", TOPOS_F32, D, 0, 1},   {"laurel_l", flt, D, R, 0},
            {"laurel_r", flt, R, D, 0},                   {"laurel_post_norm", TOPOS_F32, D, 0, 1}};
  for (int i = 0; i < 8; ++i) {
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, t[i].suffix);
    lm_tensor(b, n, t[i].type, t[i].ne0, t[i].ne1, t[i].norm);
  }
}

static int lm_more_bits(int64_t l, int64_t n) {
  return l < n / 8 || l >= 7 * n / 8 || (l - n / 8) % 3 == 2;
}

typedef enum { LM_PURE, LM_Q4_K_M, LM_Q3_K_M } lm_mix;
typedef enum { LM_ATTN_V, LM_ATTN_OUTPUT, LM_FFN_DOWN, LM_OTHER } lm_role;

/* The type of a block's weight in role `role` of block l of n. */
static topos_dtype lm_block_type(lm_mix mix, topos_dtype base, lm_role role, int64_t l, int64_t n) {
  if (mix == LM_Q4_K_M) return (role == LM_ATTN_V || role == LM_FFN_DOWN) && lm_more_bits(l, n) ? TOPOS_Q6_K : base;
  if (mix == LM_Q3_K_M) {
    if (role == LM_ATTN_V) return l < 2 ? TOPOS_Q5_K : TOPOS_Q4_K;
    if (role == LM_FFN_DOWN) return l < n / 16 ? TOPOS_Q5_K : TOPOS_Q4_K;
    if (role == LM_ATTN_OUTPUT) return TOPOS_Q4_K;
  }
  return base;
}

/* gemma4, gemma3n: per-block widths (gemma4's shared blocks double) and
 * kinds, the window, sharing, per-layer embeddings, the windowed blocks' rope
 * base, the soft cap; gemma4's windowed heads; gemma3n's streams and sparse
 * gates (as llama.cpp's converter writes them) */
static void lm_gemma_keys(lm_build *b, const lm_shape *s, const char *arch) {
#define LM_KV(call) \
  if (b->st == TOPOS_OK) b->st = (call)
  const int64_t n = s->layers, shared = lm_gemma_shared(arch, n);
  const int g3n = lm_gemma3n(arch);
  char kb[96];
  uint32_t *ff = lm_keep(b, (size_t)n * sizeof *ff);
  uint8_t *windowed = lm_keep(b, (size_t)n);
  float *sparsity = lm_keep(b, (size_t)n * sizeof *sparsity);
  if (!ff || !windowed || !sparsity) {
    b->st = TOPOS_ERR_OUT_OF_MEMORY;
    return;
  }
  for (int64_t l = 0; l < n; ++l) {
    ff[l] = (uint32_t)(!g3n && l >= n - shared ? 2 * s->ff : s->ff), windowed[l] = !lm_gemma_full(l);
    sparsity[l] = l < lm_gemma3n_dims.sparse ? 1.6448533535003662f : -INFINITY;
  }
  LM_KV(topos_gguf_writer_add_array(b->w, lm_key(kb, arch, "feed_forward_length"), TOPOS_GGUF_U32, ff, (uint64_t)n));
  LM_KV(topos_gguf_writer_add_array(b->w, lm_key(kb, arch, "attention.sliding_window_pattern"), TOPOS_GGUF_BOOL,
                                    windowed, (uint64_t)n));
  /* gemma4's first three, both's next three, gemma3n's last two */
  const char *keys[8] = {"attention.key_length_swa", "attention.value_length_swa", "rope.dimension_count_swa",
                         "attention.sliding_window", "attention.shared_kv_layers",
                         "embedding_length_per_layer_input", "altup.active_idx", "altup.num_inputs"};
  const int64_t values[8] = {lm_gemma_dims.hd_swa, lm_gemma_dims.hd_swa, lm_gemma_dims.hd_swa, lm_gemma_dims.window,
                             shared, lm_gemma_dims.ple, 0, lm_gemma3n_dims.streams};
  for (int i = g3n ? 3 : 0; i < (g3n ? 8 : 6); ++i)
    LM_KV(topos_gguf_writer_add_u32(b->w, lm_key(kb, arch, keys[i]), (uint32_t)values[i]));
  LM_KV(topos_gguf_writer_add_f32(b->w, lm_key(kb, arch, "rope.freq_base_swa"), 10000.0f));
  LM_KV(topos_gguf_writer_add_f32(b->w, lm_key(kb, arch, "final_logit_softcapping"), 30.0f));
  if (g3n)
    LM_KV(topos_gguf_writer_add_array(b->w, lm_key(kb, arch, "activation_sparsity_scale"), TOPOS_GGUF_F32, sparsity,
                                      (uint64_t)n));
#undef LM_KV
}

static int tp_llama_make(int argc, char **argv) {
  const char *out = NULL, *shape_name = "tiny", *type_name = "q8_0";
  uint64_t seed = 1;
  int64_t layers = 0;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') {
      if (out) goto usage;
      out = argv[i];
    } else if (i + 1 < argc && strcmp(argv[i], "--shape") == 0) {
      shape_name = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--type") == 0) {
      type_name = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
      const char *v = argv[++i];
      unsigned long long s;
      if (!tp_cli_u64(v, &s)) return tp_cli_bad_value("llama-make", "--seed", v, "an unsigned 64-bit integer");
      seed = s;
    } else if (i + 1 < argc && strcmp(argv[i], "--layers") == 0) {
      const char *v = argv[++i];
      unsigned long long n;
      if (!tp_cli_u64(v, &n) || n < 1 || n > 4096)
        return tp_cli_bad_value("llama-make", "--layers", v, "a block count from 1 to 4096");
      layers = (int64_t)n;
    } else {
      goto usage;
    }
  }
  if (!out) goto usage;
  const lm_shape *s = NULL;
  for (size_t i = 0; i < sizeof lm_shapes / sizeof lm_shapes[0]; ++i)
    if (strcmp(lm_shapes[i].name, shape_name) == 0) s = &lm_shapes[i];
  if (!s) {
    fprintf(stderr, "topos llama-make: unknown shape '%s' (tinyllama, llama3.2-1b, qwen2.5-0.5b, stories15m, tiny, "
            "olmoe-1b-7b, olmoe-tiny, qwen3-30b-a3b, gpt-oss-20b, deepseek-v2-lite, ling-mini-2.0, lfm2-1.2b, "
            "granite-4.0-h-micro, qwen3.5-0.8b, gemma-4-e2b, gemma-3n-e2b)\n", shape_name);
    return 2;
  }
  const lm_mix mix = strcmp(type_name, "q4_K_M") == 0 ? LM_Q4_K_M : strcmp(type_name, "q3_K_M") == 0 ? LM_Q3_K_M : LM_PURE;
  topos_dtype base = mix == LM_Q3_K_M ? TOPOS_Q3_K : TOPOS_Q4_K;
  if (mix == LM_PURE && topos_dtype_parse(type_name, &base) != TOPOS_OK) {
    fprintf(stderr, "topos llama-make: unknown type '%s'\n", type_name);
    return 2;
  }
  lm_shape cut = *s;
  if (layers) cut.layers = layers;
  s = &cut;
  lm_build b = {NULL, topos_rng_seed(seed), NULL, 0, TOPOS_OK};
  b.st = topos_gguf_writer_create(&b.w);
  int64_t hd = s->head_dim ? s->head_dim : s->dim / s->heads;
#define LM_KV(call) \
  if (b.st == TOPOS_OK) b.st = (call)
  const char *arch = s->qwen2 ? "qwen2" : s->moe_arch ? s->moe_arch : "llama";
  char kb[96];
  LM_KV(topos_gguf_writer_add_string(b.w, "general.architecture", arch));
  LM_KV(topos_gguf_writer_add_string(b.w, "general.name", s->name));
  LM_KV(topos_gguf_writer_add_u32(b.w, "general.quantization_version", 2));
  LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "context_length"), (uint32_t)s->ctx));
  LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "embedding_length"), (uint32_t)s->dim));
  LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "block_count"), (uint32_t)s->layers));
  if (!lm_gemma(arch)) LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "feed_forward_length"), (uint32_t)s->ff));
  LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "rope.dimension_count"),
                                  (uint32_t)(lm_mla(arch)      ? lm_mla_dims.rope
                                              : lm_ling(arch)   ? hd / 2
                                              : lm_qwen35(arch) ? lm_delta_dims.rope_dim
                                                                : hd)));
  LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.head_count"), (uint32_t)s->heads));
  if (lm_lfm2(arch)) { /* one entry per block, 0 for a convolution; its taps */
    uint32_t *kv = lm_keep(&b, (size_t)s->layers * sizeof *kv);
    if (!kv) b.st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int64_t l = 0; kv && l < s->layers; ++l) kv[l] = lm_lfm2_attention(l) ? (uint32_t)s->kv_heads : 0;
    LM_KV(topos_gguf_writer_add_array(b.w, lm_key(kb, arch, "attention.head_count_kv"), TOPOS_GGUF_U32, kv,
                                      (uint64_t)s->layers));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "shortconv.l_cache"), 3));
  } else if (lm_granite_h(arch)) { /* likewise (0: a Mamba-2 mixer), the mixers' sizes, granite's scales */
    uint32_t *kv = lm_keep(&b, (size_t)s->layers * sizeof *kv);
    if (!kv) b.st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int64_t l = 0; kv && l < s->layers; ++l) kv[l] = lm_granite_h_attention(l) ? (uint32_t)s->kv_heads : 0;
    LM_KV(topos_gguf_writer_add_array(b.w, lm_key(kb, arch, "attention.head_count_kv"), TOPOS_GGUF_U32, kv,
                                      (uint64_t)s->layers));
    const char *keys[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                           "ssm.group_count"};
    const int64_t values[5] = {lm_ssm_dims.conv, lm_ssm_dims.inner, lm_ssm_dims.state, lm_ssm_dims.heads,
                               lm_ssm_dims.groups};
    for (int i = 0; i < 5; ++i) LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, keys[i]), (uint32_t)values[i]));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "logit_scale"), 8.0f));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "embedding_scale"), 12.0f));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "residual_scale"), 0.22f));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "attention.scale"), 0.015625f));
    LM_KV(topos_gguf_writer_add_bool(b.w, lm_key(kb, arch, "rope.scaling.finetuned"), 0));
  } else {
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.head_count_kv"), (uint32_t)s->kv_heads));
  }
  if (lm_qwen35(arch)) { /* the mixers' sizes, which blocks attend, the rotation's sections */
    const int64_t W = lm_delta_dims.width, VH = lm_delta_dims.value_heads;
    const char *keys[6] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                           "ssm.group_count", "full_attention_interval"};
    const int64_t values[6] = {lm_delta_dims.conv, VH * W, W, VH, lm_delta_dims.key_heads, lm_delta_dims.interval};
    for (int i = 0; i < 6; ++i) LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, keys[i]), (uint32_t)values[i]));
    LM_KV(topos_gguf_writer_add_array(b.w, lm_key(kb, arch, "rope.dimension_sections"), TOPOS_GGUF_I32,
                                      lm_delta_dims.sections, 4));
  }
  LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "attention.layer_norm_rms_epsilon"),
                                  lm_gemma3n(arch) ? 1e-6f : 1e-5f));
  LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "rope.freq_base"), s->rope_base));
  if (s->experts) {
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_count"), (uint32_t)s->experts));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_used_count"), (uint32_t)s->experts_used));
  }
  if (s->ff_exp) LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_feed_forward_length"), (uint32_t)s->ff_exp));
  if (lm_ling(arch)) {
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_group_count"), (uint32_t)lm_ling_dims.groups));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_group_used_count"),
                                    (uint32_t)lm_ling_dims.groups_used));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_shared_count"), (uint32_t)lm_ling_dims.shared));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "leading_dense_block_count"),
                                    (uint32_t)lm_ling_dims.dense_lead));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_gating_func"), 2));
    LM_KV(topos_gguf_writer_add_bool(b.w, lm_key(kb, arch, "expert_weights_norm"), 1));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "expert_weights_scale"), 2.5f));
  }
  if (lm_oai(arch)) {
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.sliding_window"), 128));
    LM_KV(topos_gguf_writer_add_string(b.w, lm_key(kb, arch, "rope.scaling.type"), "yarn"));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "rope.scaling.factor"), 32.0f));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "rope.scaling.original_context_length"), 4096));
  }
  if (lm_mla(arch)) {
    const uint32_t kl = (uint32_t)lm_mla_dims.kv_lora, r = (uint32_t)lm_mla_dims.rope;
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.kv_lora_rank"), kl));
    if (lm_mla_dims.q_lora)
      LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.q_lora_rank"), (uint32_t)lm_mla_dims.q_lora));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.key_length"), kl + r));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.value_length"), kl));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.key_length_mla"), (uint32_t)lm_mla_dims.nope + r));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.value_length_mla"), (uint32_t)lm_mla_dims.v_dim));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "expert_shared_count"), (uint32_t)lm_mla_dims.shared));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "leading_dense_block_count"), (uint32_t)lm_mla_dims.dense_lead));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "expert_weights_scale"), 1.0f));
    LM_KV(topos_gguf_writer_add_string(b.w, lm_key(kb, arch, "rope.scaling.type"), "yarn"));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "rope.scaling.factor"), 40.0f));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "rope.scaling.original_context_length"), 4096));
    LM_KV(topos_gguf_writer_add_f32(b.w, lm_key(kb, arch, "rope.scaling.yarn_log_multiplier"), 0.0707f));
  } else if (s->head_dim) {
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.key_length"), (uint32_t)hd));
    LM_KV(topos_gguf_writer_add_u32(b.w, lm_key(kb, arch, "attention.value_length"), (uint32_t)hd));
  }
#undef LM_KV
  if (lm_gemma(arch)) lm_gemma_keys(&b, s, arch);
  lm_vocab(&b, s->vocab);
  /* MXFP4 files keep it for the experts, Q8_0 elsewhere (llama.cpp's MXFP4_MOE) */
  const topos_dtype experts_type = base;
  if (base == TOPOS_MXFP4) base = TOPOS_Q8_0;
  const topos_dtype head = mix != LM_PURE ? TOPOS_Q6_K : base;
  const int tied = s->llama3 || s->qwen2 || lm_lfm2(arch) || lm_granite_h(arch) || lm_qwen35(arch) || lm_gemma(arch);
  /* the Gemmas' matrices llama.cpp's quantizer keeps as converted (altup_*, laurel_*,
   * per_layer_model_proj): bf16 unless the type is a float one; their per-layer table is
   * typed as the tied head, as it types token_embd */
  const topos_dtype flt = topos_dtype_is_float(base) ? base : TOPOS_BF16;
  lm_tensor(&b, "token_embd.weight", tied ? head : base, s->dim, s->vocab, 0);
  if (s->llama3) lm_rope_factors(&b, hd, s->rope_base);
  if (lm_gemma(arch)) lm_gemma_tables(&b, s, arch, hd, head, flt);
  for (int64_t l = 0; l < s->layers; ++l) {
    char n[64];
#define LM_TYPE(role) lm_block_type(mix, base, role, l, s->layers)
#define LM_T(suffix, type, e0, e1, norm)                   \
  snprintf(n, sizeof n, "blk.%d." suffix, (int)l);        \
  lm_tensor(&b, n, type, e0, e1, norm)
/* the dense SwiGLU feed-forward of ff: gate, up, down */
#define LM_SWIGLU()                                              \
  do {                                                           \
    LM_T("ffn_gate.weight", base, s->dim, s->ff, 0);             \
    LM_T("ffn_up.weight", base, s->dim, s->ff, 0);               \
    LM_T("ffn_down.weight", LM_TYPE(LM_FFN_DOWN), s->ff, s->dim, 0); \
  } while (0)
    LM_T("attn_norm.weight", base, s->dim, 0, 1);
    if (lm_lfm2(arch)) { /* attention or a short convolution, then the feed-forward */
      if (lm_lfm2_attention(l)) {
        LM_T("attn_q.weight", base, s->dim, s->heads * hd, 0);
        LM_T("attn_k.weight", base, s->dim, s->kv_heads * hd, 0);
        LM_T("attn_v.weight", LM_TYPE(LM_ATTN_V), s->dim, s->kv_heads * hd, 0);
        LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), s->heads * hd, s->dim, 0);
        LM_T("attn_q_norm.weight", base, hd, 0, 1);
        LM_T("attn_k_norm.weight", base, hd, 0, 1);
      } else {
        LM_T("shortconv.conv.weight", TOPOS_F32, 3, s->dim, 0);
        LM_T("shortconv.in_proj.weight", base, s->dim, 3 * s->dim, 0);
        LM_T("shortconv.out_proj.weight", base, s->dim, s->dim, 0);
      }
      LM_T("ffn_norm.weight", base, s->dim, 0, 1);
      LM_SWIGLU();
      continue;
    }
    if (lm_granite_h(arch) && !lm_granite_h_attention(l)) { /* a Mamba-2 mixer, then the feed-forward */
      const int64_t DI = lm_ssm_dims.inner, CD = DI + 2 * lm_ssm_dims.groups * lm_ssm_dims.state;
      const int64_t SH = lm_ssm_dims.heads;
      LM_T("ssm_in.weight", base, s->dim, DI + CD + SH, 0);
      LM_T("ssm_conv1d.weight", TOPOS_F32, lm_ssm_dims.conv, CD, 0);
      LM_T("ssm_conv1d.bias", TOPOS_F32, CD, 0, 0);
      LM_T("ssm_dt.bias", TOPOS_F32, SH, 0, 0);
      LM_T("ssm_a", TOPOS_F32, 1, SH, -1);
      LM_T("ssm_d", TOPOS_F32, 1, SH, 1);
      LM_T("ssm_norm.weight", TOPOS_F32, DI / lm_ssm_dims.groups, lm_ssm_dims.groups, 1);
      LM_T("ssm_out.weight", LM_TYPE(LM_ATTN_OUTPUT), DI, s->dim, 0);
      LM_T("ffn_norm.weight", base, s->dim, 0, 1);
      LM_SWIGLU();
      continue;
    }
    if (lm_qwen35(arch)) { /* a gated-DeltaNet mixer or gated attention, then the feed-forward */
      if ((l + 1) % lm_delta_dims.interval != 0) {
        const int64_t W = lm_delta_dims.width, VD = lm_delta_dims.value_heads * W, VH = lm_delta_dims.value_heads;
        const int64_t CD = 2 * lm_delta_dims.key_heads * W + VD;
        LM_T("attn_qkv.weight", base, s->dim, CD, 0);
        LM_T("attn_gate.weight", base, s->dim, VD, 0);
        LM_T("ssm_conv1d.weight", TOPOS_F32, lm_delta_dims.conv, CD, 0);
        LM_T("ssm_dt.bias", TOPOS_F32, VH, 0, 0);
        LM_T("ssm_a", TOPOS_F32, VH, 0, -1);
        LM_T("ssm_beta.weight", base, s->dim, VH, 0);
        LM_T("ssm_alpha.weight", base, s->dim, VH, 0);
        LM_T("ssm_norm.weight", TOPOS_F32, W, 0, 1);
        LM_T("ssm_out.weight", LM_TYPE(LM_ATTN_OUTPUT), VD, s->dim, 0);
      } else {
        LM_T("attn_q.weight", base, s->dim, 2 * s->heads * hd, 0);
        LM_T("attn_k.weight", base, s->dim, s->kv_heads * hd, 0);
        LM_T("attn_v.weight", LM_TYPE(LM_ATTN_V), s->dim, s->kv_heads * hd, 0);
        LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), s->heads * hd, s->dim, 0);
        LM_T("attn_q_norm.weight", base, hd, 0, 1);
        LM_T("attn_k_norm.weight", base, hd, 0, 1);
      }
      LM_T("post_attention_norm.weight", base, s->dim, 0, 1);
      LM_SWIGLU();
      continue;
    }
    if (lm_gemma(arch)) { /* attention (gemma4: its keys where the block has a cache), GELU feed-forward,
                           * per-layer embedding, the four norms; gemma4's output scale, gemma3n's AltUp
                           * and Laurel */
      const int g4 = lm_gemma4(arch), reads = l >= s->layers - lm_gemma_shared(arch, s->layers);
      const int64_t h = g4 && !lm_gemma_full(l) ? lm_gemma_dims.hd_swa : hd;
      const int64_t ff = g4 && reads ? 2 * s->ff : s->ff;
      const int own = !g4 || !reads;
      const float qk = g4 ? 1.0f : lm_gemma3n_qk_norm;
      LM_T("attn_q.weight", base, s->dim, s->heads * h, 0);
      if (own) {
        LM_T("attn_k.weight", base, s->dim, s->kv_heads * h, 0);
        LM_T("attn_v.weight", LM_TYPE(LM_ATTN_V), s->dim, s->kv_heads * h, 0);
        LM_T("attn_k_norm.weight", base, h, 0, qk);
      }
      LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), s->heads * h, s->dim, 0);
      LM_T("attn_q_norm.weight", base, h, 0, qk);
      const char *norms[4] = {"post_attention_norm", "ffn_norm", "post_ffw_norm", "post_norm"};
      for (int i = 0; i < 4; ++i) {
        snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, norms[i]);
        lm_tensor(&b, n, base, s->dim, 0, 1);
      }
      LM_T("ffn_gate.weight", base, s->dim, ff, 0);
      LM_T("ffn_up.weight", base, s->dim, ff, 0);
      LM_T("ffn_down.weight", LM_TYPE(LM_FFN_DOWN), ff, s->dim, 0);
      LM_T("inp_gate.weight", base, s->dim, lm_gemma_dims.ple, 0);
      LM_T("proj.weight", base, lm_gemma_dims.ple, s->dim, 0);
      if (g4) {
        LM_T("layer_output_scale.weight", TOPOS_F32, 1, 0, 1);
      } else {
        lm_gemma3n_block(&b, s, l, flt);
      }
      continue;
    }
    if (lm_mla(arch)) { /* latent attention; a dense first block, then experts and shared ones */
      const int64_t H = s->heads, R = lm_mla_dims.kv_lora, P = lm_mla_dims.rope, N = lm_mla_dims.nope;
      const int64_t V = lm_mla_dims.v_dim, S = lm_mla_dims.shared, fe = s->ff_exp;
      LM_T("attn_q.weight", base, s->dim, H * (N + P), 0);
      LM_T("attn_kv_a_mqa.weight", base, s->dim, R + P, 0);
      LM_T("attn_kv_a_norm.weight", base, R, 0, 1);
      snprintf(n, sizeof n, "blk.%d.attn_k_b.weight", (int)l);
      lm_tensor3(&b, n, base, N, R, H, 0);
      snprintf(n, sizeof n, "blk.%d.attn_v_b.weight", (int)l);
      lm_tensor3(&b, n, LM_TYPE(LM_ATTN_V), R, V, H, 0);
      LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), H * V, s->dim, 0);
      LM_T("ffn_norm.weight", base, s->dim, 0, 1);
      lm_ds_ffn(&b, s, l, base, LM_TYPE(LM_FFN_DOWN), l < lm_mla_dims.dense_lead, S * fe, 0);
      continue;
    }
    if (lm_ling(arch)) { /* q, k, v in one; a dense first block, then experts and a shared one */
      const int64_t S = lm_ling_dims.shared, fe = s->ff_exp;
      LM_T("attn_qkv.weight", base, s->dim, (s->heads + 2 * s->kv_heads) * hd, 0);
      LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), s->heads * hd, s->dim, 0);
      LM_T("attn_q_norm.weight", base, hd, 0, 1);
      LM_T("attn_k_norm.weight", base, hd, 0, 1);
      LM_T("ffn_norm.weight", base, s->dim, 0, 1);
      lm_ds_ffn(&b, s, l, base, LM_TYPE(LM_FFN_DOWN), l < lm_ling_dims.dense_lead, S * fe, 1);
      continue;
    }
    LM_T("attn_q.weight", base, s->dim, s->heads * hd, 0);
    LM_T("attn_k.weight", base, s->dim, s->kv_heads * hd, 0);
    LM_T("attn_v.weight", LM_TYPE(LM_ATTN_V), s->dim, s->kv_heads * hd, 0);
    LM_T("attn_output.weight", LM_TYPE(LM_ATTN_OUTPUT), s->heads * hd, s->dim, 0);
    if (lm_oai(arch)) { /* the feed-forward's norm by gpt-oss's name; sinks; biases */
      LM_T("post_attention_norm.weight", base, s->dim, 0, 1);
      LM_T("attn_sinks.weight", TOPOS_F32, s->heads, 0, 0);
      LM_T("attn_q.bias", TOPOS_F32, s->heads * hd, 0, 0);
      LM_T("attn_k.bias", TOPOS_F32, s->kv_heads * hd, 0, 0);
      LM_T("attn_v.bias", TOPOS_F32, s->kv_heads * hd, 0, 0);
      LM_T("attn_output.bias", TOPOS_F32, s->dim, 0, 0);
    } else {
      LM_T("ffn_norm.weight", base, s->dim, 0, 1);
    }
    if (s->experts) {
      const int rows = strcmp(arch, "olmoe") == 0; /* olmoe: over whole rows; qwen3moe: per head */
      const int64_t fe = s->ff_exp ? s->ff_exp : s->ff;
      const topos_dtype et = mix == LM_PURE ? experts_type : base;
      if (!lm_oai(arch)) {
        LM_T("attn_q_norm.weight", base, rows ? s->heads * hd : hd, 0, 1);
        LM_T("attn_k_norm.weight", base, rows ? s->kv_heads * hd : hd, 0, 1);
      }
      lm_experts(&b, l, et, mix == LM_PURE ? et : LM_TYPE(LM_FFN_DOWN), s->dim, fe, s->experts);
      if (lm_oai(arch)) {
        LM_T("ffn_gate_inp.bias", TOPOS_F32, s->experts, 0, 0);
        LM_T("ffn_gate_exps.bias", TOPOS_F32, fe, s->experts, 0);
        LM_T("ffn_up_exps.bias", TOPOS_F32, fe, s->experts, 0);
        LM_T("ffn_down_exps.bias", TOPOS_F32, s->dim, s->experts, 0);
      }
      continue;
    }
    LM_SWIGLU();
    if (s->qwen2) {
      LM_T("attn_q.bias", base, s->heads * hd, 0, 1);
      LM_T("attn_k.bias", base, s->kv_heads * hd, 0, 1);
      LM_T("attn_v.bias", base, s->kv_heads * hd, 0, 1);
    }
#undef LM_SWIGLU
#undef LM_T
#undef LM_TYPE
  }
  lm_tensor(&b, lm_lfm2(arch) ? "token_embd_norm.weight" : "output_norm.weight", base, s->dim, 0, 1);
  if (!tied) lm_tensor(&b, "output.weight", head, s->dim, s->vocab, 0);
  if (b.st == TOPOS_OK) b.st = topos_gguf_writer_write(b.w, out);
  topos_status st = b.st;
  topos_gguf_writer_destroy(b.w);
  for (size_t i = 0; i < b.n_keep; ++i) free(b.keep[i]);
  free(b.keep);
  if (st != TOPOS_OK) return tp_cli_fail("llama-make", st, out);
  if (layers) printf("wrote %s: %s shapes (%lld blocks), %s weights\n", out, s->name, (long long)layers, type_name);
  else printf("wrote %s: %s shapes, %s weights\n", out, s->name, type_name);
  return 0;
usage:
  fprintf(stderr, "usage: topos llama-make OUT [--shape tinyllama|llama3.2-1b|qwen2.5-0.5b|stories15m|tiny|"
          "olmoe-1b-7b|olmoe-tiny|qwen3-30b-a3b|gpt-oss-20b|deepseek-v2-lite|ling-mini-2.0|lfm2-1.2b|"
          "granite-4.0-h-micro|qwen3.5-0.8b|gemma-4-e2b|gemma-3n-e2b] "
          "[--layers N] "
          "[--type f16|q8_0|q4_K_M|q3_K_M|...] [--seed S]\n");
  return 2;
}

TOPOS_COMMAND("llama-make", "write a random-weight llama GGUF with real model shapes (benchmarks)",
              tp_llama_make)
