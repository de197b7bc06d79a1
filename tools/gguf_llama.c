/* `topos gguf make-test-llama OUT [...]`: writes a tiny random-weight model
 * with the standard llama keys and tensor names (reference/ggml.md §1.4-1.5),
 * so inspect, loaders and the LLM work have a real-shaped file to open. The
 * weights are N(0, 0.02) from a seeded splitmix64 (norm weights are 1), the
 * vocabulary is <unk> <s> </s>, byte tokens <0x00>.. and filler tokens.
 * --key-length N states the head width (attention.key_length / value_length);
 * --rope-freqs 1 adds Llama 3 rope keys (rope_freqs.weight, linear factor 2). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tools/cli.h"

typedef struct tp_llama_dims {
  int64_t dim, layers, heads, kv_heads, ff, vocab, ctx;
  int64_t key_length; /* 0: dim / heads, no key written */
  int64_t rope_freqs; /* 1: rope_freqs.weight, linear scaling factor 2 (Llama 3 keys) */
  uint64_t seed;
  topos_dtype type; /* of rank-2 weights */
} tp_llama_dims;

typedef struct tp_llama_build {
  topos_gguf_writer *w;
  uint64_t rng;
  void **buffers;
  int n_buffers, cap_buffers;
  topos_dtype type;
} tp_llama_build;

static uint64_t tp_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double tp_normal(uint64_t *s) {
  double u1 = ((double)(tp_splitmix(s) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
  double u2 = (double)(tp_splitmix(s) >> 11) * 0x1.0p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void *tp_keep(tp_llama_build *b, size_t bytes) {
  if (b->n_buffers == b->cap_buffers) {
    int cap = b->cap_buffers ? 2 * b->cap_buffers : 64;
    void **p = realloc(b->buffers, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    b->buffers = p;
    b->cap_buffers = cap;
  }
  void *p = malloc(bytes ? bytes : 1);
  if (p) b->buffers[b->n_buffers++] = p;
  return p;
}

/* One tensor with GGUF extents ne (ne[0] fastest). Rank-1 tensors are f32
 * ones (norm weights); rank-2 are random in b->type. */
static topos_status tp_add_weight(tp_llama_build *b, const char *name, int n_dims, int64_t ne0,
                                  int64_t ne1) {
  int64_t ne[2] = {ne0, ne1};
  int64_t count = n_dims == 1 ? ne0 : ne0 * ne1;
  float *values = tp_keep(b, (size_t)count * sizeof(float));
  if (!values) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "make-test-llama: %s", name);
  for (int64_t i = 0; i < count; ++i)
    values[i] = n_dims == 1 ? 1.0f : (float)(0.02 * tp_normal(&b->rng));
  if (n_dims == 1 || b->type == TOPOS_F32)
    return topos_gguf_writer_add_tensor_raw(b->w, name, 0, n_dims, ne, values,
                                            (size_t)count * sizeof(float));
  if (ne0 % topos_dtype_block_size(b->type) != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "make-test-llama: %s rows of %" PRId64
                   " are not whole %s blocks of %" PRId64 "; pick other dimensions",
                   name, ne0, topos_dtype_name(b->type), topos_dtype_block_size(b->type));
  size_t bytes;
  TP_TRY(topos_dtype_bytes(b->type, count, &bytes));
  uint8_t *q = tp_keep(b, bytes);
  if (!q) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "make-test-llama: %s", name);
  size_t row_bytes = bytes / (size_t)ne1;
  for (int64_t r = 0; r < ne1; ++r)
    TP_TRY(topos_quantize_row(b->type, values + r * ne0, q + (size_t)r * row_bytes, ne0));
  return topos_gguf_writer_add_tensor_raw(b->w, name, (uint32_t)topos_dtype_ggml_id(b->type),
                                          n_dims, ne, q, bytes);
}

static topos_status tp_add_vocab(tp_llama_build *b, int64_t vocab) {
  char **tokens = tp_keep(b, (size_t)vocab * sizeof *tokens);
  float *scores = tp_keep(b, (size_t)vocab * sizeof *scores);
  int32_t *types = tp_keep(b, (size_t)vocab * sizeof *types);
  char *text = tp_keep(b, (size_t)vocab * 16);
  if (!tokens || !scores || !types || !text)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "make-test-llama: vocabulary");
  for (int64_t i = 0; i < vocab; ++i) {
    tokens[i] = text + 16 * i;
    if (i < 3) {
      snprintf(tokens[i], 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
      types[i] = i == 0 ? 2 : 3; /* unknown, control */
      scores[i] = 0.0f;
    } else if (i < 3 + 256) {
      snprintf(tokens[i], 16, "<0x%02X>", (unsigned)(i - 3));
      types[i] = 6; /* byte */
      scores[i] = 0.0f;
    } else {
      snprintf(tokens[i], 16, "tok%d", (int)(i & 0xFFFFFF));
      types[i] = 1; /* normal */
      scores[i] = -(float)i;
    }
  }
  TP_TRY(topos_gguf_writer_add_string(b->w, "tokenizer.ggml.model", "llama"));
  TP_TRY(topos_gguf_writer_add_string_array(b->w, "tokenizer.ggml.tokens",
                                            (const char *const *)tokens, NULL, (uint64_t)vocab));
  TP_TRY(topos_gguf_writer_add_array(b->w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, scores,
                                     (uint64_t)vocab));
  TP_TRY(topos_gguf_writer_add_array(b->w, "tokenizer.ggml.token_type", TOPOS_GGUF_I32, types,
                                     (uint64_t)vocab));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "tokenizer.ggml.unknown_token_id", 0));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "tokenizer.ggml.bos_token_id", 1));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "tokenizer.ggml.eos_token_id", 2));
  TP_TRY(topos_gguf_writer_add_bool(b->w, "tokenizer.ggml.add_bos_token", 1));
  return topos_gguf_writer_add_bool(b->w, "tokenizer.ggml.add_eos_token", 0);
}

static topos_status tp_build_llama(tp_llama_build *b, const tp_llama_dims *d, const char *out) {
  int64_t head_dim = d->key_length ? d->key_length : d->dim / d->heads;
  TP_TRY(topos_gguf_writer_add_string(b->w, "general.architecture", "llama"));
  TP_TRY(topos_gguf_writer_add_string(b->w, "general.name", "topos-test-llama"));
  int is_q = topos_dtype_is_quantized(d->type);
  uint32_t ftype = d->type == TOPOS_F32 ? 0 : d->type == TOPOS_F16 ? 1 : d->type == TOPOS_Q8_0 ? 7
                   : d->type == TOPOS_Q4_0 ? 2 : d->type == TOPOS_Q4_K ? 14 : d->type == TOPOS_Q6_K ? 18
                   : 0xFFFFFFFFu;
  if (ftype != 0xFFFFFFFFu) TP_TRY(topos_gguf_writer_add_u32(b->w, "general.file_type", ftype));
  if (is_q) TP_TRY(topos_gguf_writer_add_u32(b->w, "general.quantization_version", 2));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.context_length", (uint32_t)d->ctx));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.embedding_length", (uint32_t)d->dim));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.block_count", (uint32_t)d->layers));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.feed_forward_length", (uint32_t)d->ff));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.rope.dimension_count", (uint32_t)head_dim));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.attention.head_count", (uint32_t)d->heads));
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.attention.head_count_kv", (uint32_t)d->kv_heads));
  TP_TRY(topos_gguf_writer_add_f32(b->w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
  TP_TRY(topos_gguf_writer_add_f32(b->w, "llama.rope.freq_base", 10000.0f));
  if (d->key_length) {
    TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.attention.key_length", (uint32_t)head_dim));
    TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.attention.value_length", (uint32_t)head_dim));
  }
  if (d->rope_freqs) {
    TP_TRY(topos_gguf_writer_add_string(b->w, "llama.rope.scaling.type", "linear"));
    TP_TRY(topos_gguf_writer_add_f32(b->w, "llama.rope.scaling.factor", 2.0f));
  }
  TP_TRY(topos_gguf_writer_add_u32(b->w, "llama.vocab_size", (uint32_t)d->vocab));
  TP_TRY(tp_add_vocab(b, d->vocab));

  TP_TRY(tp_add_weight(b, "token_embd.weight", 2, d->dim, d->vocab));
  if (d->rope_freqs) { /* factors 1, 2, 3, ... (Llama 3.1's are 1 to 8) */
    float *f = tp_keep(b, (size_t)(head_dim / 2) * sizeof *f);
    if (!f) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "make-test-llama: rope_freqs.weight");
    for (int64_t i = 0; i < head_dim / 2; ++i) f[i] = (float)(1 + i);
    int64_t ne[1] = {head_dim / 2};
    TP_TRY(topos_gguf_writer_add_tensor_raw(b->w, "rope_freqs.weight", 0, 1, ne, f,
                                            (size_t)(head_dim / 2) * sizeof *f));
  }
  for (int64_t l = 0; l < d->layers; ++l) {
    char name[64];
#define TP_LAYER(suffix, n, e0, e1)                                   \
  snprintf(name, sizeof name, "blk.%" PRId64 "." suffix, l);          \
  TP_TRY(tp_add_weight(b, name, n, e0, e1))
    TP_LAYER("attn_norm.weight", 1, d->dim, 1);
    TP_LAYER("attn_q.weight", 2, d->dim, d->heads * head_dim);
    TP_LAYER("attn_k.weight", 2, d->dim, d->kv_heads * head_dim);
    TP_LAYER("attn_v.weight", 2, d->dim, d->kv_heads * head_dim);
    TP_LAYER("attn_output.weight", 2, d->heads * head_dim, d->dim);
    TP_LAYER("ffn_norm.weight", 1, d->dim, 1);
    TP_LAYER("ffn_gate.weight", 2, d->dim, d->ff);
    TP_LAYER("ffn_up.weight", 2, d->dim, d->ff);
    TP_LAYER("ffn_down.weight", 2, d->ff, d->dim);
#undef TP_LAYER
  }
  TP_TRY(tp_add_weight(b, "output_norm.weight", 1, d->dim, 1));
  TP_TRY(tp_add_weight(b, "output.weight", 2, d->dim, d->vocab));
  return topos_gguf_writer_write(b->w, out);
}

static int tp_parse_int(const char *s, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v <= 0 || v > (1ll << 24)) return 0;
  *out = v;
  return 1;
}

int tp_gguf_make_test_llama(int argc, char **argv) {
  tp_llama_dims d = {64, 2, 4, 2, 256, 320, 256, 0, 0, 42, TOPOS_F32};
  const char *out = NULL;
  for (int i = 1; i < argc; ++i) {
    int64_t *target = NULL;
    if (argv[i][0] != '-') {
      if (out) goto usage;
      out = argv[i];
      continue;
    }
    if (i + 1 >= argc) goto usage;
    const char *opt = argv[i], *val = argv[++i];
    if (strcmp(opt, "--dim") == 0) target = &d.dim;
    else if (strcmp(opt, "--layers") == 0) target = &d.layers;
    else if (strcmp(opt, "--heads") == 0) target = &d.heads;
    else if (strcmp(opt, "--kv-heads") == 0) target = &d.kv_heads;
    else if (strcmp(opt, "--ff") == 0) target = &d.ff;
    else if (strcmp(opt, "--vocab") == 0) target = &d.vocab;
    else if (strcmp(opt, "--ctx") == 0) target = &d.ctx;
    else if (strcmp(opt, "--key-length") == 0) target = &d.key_length;
    else if (strcmp(opt, "--rope-freqs") == 0) target = &d.rope_freqs;
    else if (strcmp(opt, "--seed") == 0) {
      d.seed = strtoull(val, NULL, 10);
      continue;
    } else if (strcmp(opt, "--type") == 0) {
      topos_status st = topos_dtype_parse(val, &d.type);
      if (st != TOPOS_OK) return tp_cli_fail("gguf make-test-llama", st, "--type");
      if (!(topos_dtype_is_quantized(d.type) || d.type == TOPOS_F16 || d.type == TOPOS_F32 ||
            d.type == TOPOS_BF16) || d.type == TOPOS_Q8_1 || d.type == TOPOS_Q8_K) {
        fprintf(stderr, "topos gguf make-test-llama: --type %s is not a weight format\n", val);
        return 1;
      }
      continue;
    } else {
      goto usage;
    }
    if (!tp_parse_int(val, target)) {
      fprintf(stderr, "topos gguf make-test-llama: %s needs a positive integer, got '%s'\n", opt, val);
      return 2;
    }
  }
  if (!out) goto usage;
  if ((!d.key_length && d.dim % d.heads != 0) || d.key_length % 2 != 0 || d.heads % d.kv_heads != 0 || d.vocab < 3) {
    fprintf(stderr, "topos gguf make-test-llama: need dim %% heads == 0 (or an even --key-length), heads %% kv-heads == 0 "
            "and vocab >= 3 (got dim %" PRId64 ", heads %" PRId64 ", kv-heads %" PRId64
            ", vocab %" PRId64 ")\n", d.dim, d.heads, d.kv_heads, d.vocab);
    return 2;
  }
  tp_llama_build b = {0};
  b.rng = d.seed;
  b.type = d.type;
  topos_status st = topos_gguf_writer_create(&b.w);
  if (st == TOPOS_OK) st = tp_build_llama(&b, &d, out);
  topos_gguf_writer_destroy(b.w);
  for (int i = 0; i < b.n_buffers; ++i) free(b.buffers[i]);
  free(b.buffers);
  if (st != TOPOS_OK) return tp_cli_fail("gguf make-test-llama", st, "failed");
  printf("wrote %s: llama, dim %" PRId64 ", %" PRId64 " layers, %" PRId64 " heads (%" PRId64
         " kv), ff %" PRId64 ", vocab %" PRId64 ", weights %s\n", out, d.dim, d.layers, d.heads,
         d.kv_heads, d.ff, d.vocab, topos_dtype_name(d.type));
  return 0;
usage:
  fprintf(stderr, "usage: topos gguf make-test-llama OUT [--dim N] [--layers N] [--heads N] "
          "[--kv-heads N] [--ff N] [--vocab N] [--ctx N] [--seed N] [--type T] [--key-length N] "
          "[--rope-freqs 1]\n");
  return 2;
}
