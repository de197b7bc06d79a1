/* topos_tokenizer_from_gguf: reads tokenizer.ggml.* keys into a desc and
 * builds the tokenizer with the same validation as topos_tokenizer_new. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/tokenizer_internal.h"

#define TP_KEY(name) "tokenizer.ggml." name

static int tp_has_key(const topos_gguf *g, const char *key) {
  int64_t index;
  if (topos_gguf_find_key(g, key, &index) != TOPOS_OK) {
    topos_clear_error();
    return 0;
  }
  return 1;
}

/* An array key of `count` elements of the expected kind; absent is allowed
 * when !required (then *index = -1). */
static topos_status tp_array_key(const topos_gguf *g, const char *key, int required, int want_string,
                                 topos_gguf_array *arr) {
  arr->kv_index = -1;
  arr->count = 0;
  if (!tp_has_key(g, key)) {
    if (!required) return TOPOS_OK;
    return tp_fail(TOPOS_ERR_NOT_FOUND, "tokenizer: GGUF key %s is missing", key);
  }
  topos_status st = topos_gguf_get_array(g, key, arr);
  if (st != TOPOS_OK) return tp_fail_context(st, "tokenizer: key %s", key);
  int is_string = arr->element_type == TOPOS_GGUF_STRING;
  if (want_string != is_string)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "tokenizer: key %s holds %s elements", key,
                   topos_gguf_type_name(arr->element_type));
  if (arr->count > TOPOS_TOKENIZER_MAX_TOKENS)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer: key %s has %llu elements (at most %d)", key,
                   (unsigned long long)arr->count, TOPOS_TOKENIZER_MAX_TOKENS);
  return TOPOS_OK;
}

/* Optional token id: absent -> fallback; -1 and 0xFFFFFFFF mean "none". */
static topos_status tp_id_key(const topos_gguf *g, const char *key, int32_t fallback,
                              int32_t *out) {
  *out = fallback;
  if (!tp_has_key(g, key)) return TOPOS_OK;
  int64_t v;
  topos_status st = topos_gguf_get_i64(g, key, &v);
  if (st != TOPOS_OK) return tp_fail_context(st, "tokenizer: key %s", key);
  if (v == -1 || v == (int64_t)UINT32_MAX) {
    *out = TOPOS_TOKEN_NONE;
    return TOPOS_OK;
  }
  if (v < 0 || v > INT32_MAX)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer: key %s = %lld is not a token id", key,
                   (long long)v);
  *out = (int32_t)v;
  return TOPOS_OK;
}

static topos_status tp_bool_key(const topos_gguf *g, const char *key, int *out) {
  *out = -1;
  if (!tp_has_key(g, key)) return TOPOS_OK;
  topos_status st = topos_gguf_get_bool(g, key, out);
  if (st != TOPOS_OK) return tp_fail_context(st, "tokenizer: key %s", key);
  return TOPOS_OK;
}

typedef struct tp_gguf_arrays {
  const char **tokens;
  size_t *token_lengths;
  float *scores;
  int32_t *types;
  const char **merges;
  size_t *merge_lengths;
} tp_gguf_arrays;

static topos_status tp_read_strings(const topos_gguf *g, const topos_gguf_array *arr,
                                    const char ***strings, size_t **lengths) {
  size_t n = (size_t)arr->count;
  *strings = malloc((n ? n : 1) * sizeof **strings);
  *lengths = malloc((n ? n : 1) * sizeof **lengths);
  if (!*strings || !*lengths)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu strings", n);
  for (size_t i = 0; i < n; i++)
    TP_TRY(topos_gguf_array_string(g, arr->kv_index, i, &(*strings)[i], &(*lengths)[i]));
  return TOPOS_OK;
}

/* An optional string key without NUL bytes (they would cut the C string);
 * *out is NULL when absent. */
static topos_status tp_string_key(const topos_gguf *g, const char *key, const char **out) {
  *out = NULL;
  if (!tp_has_key(g, key)) return TOPOS_OK;
  size_t len;
  topos_status st = topos_gguf_get_string(g, key, out, &len);
  if (st != TOPOS_OK) return tp_fail_context(st, "tokenizer: key %s", key);
  if (strlen(*out) != len)
    return tp_fail(TOPOS_ERR_BAD_STRING, "tokenizer: %s contains a NUL byte", key);
  return TOPOS_OK;
}

/* tokenizer.ggml.scores: one f32/f64 per token (required for SPM). */
static topos_status tp_read_scores(const topos_gguf *g, size_t n, int required, float **out) {
  topos_gguf_array scores;
  TP_TRY(tp_array_key(g, TP_KEY("scores"), required, 0, &scores));
  if (scores.kv_index < 0) return TOPOS_OK;
  if (scores.element_type != TOPOS_GGUF_F32 && scores.element_type != TOPOS_GGUF_F64)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "tokenizer: tokenizer.ggml.scores holds %s elements",
                   topos_gguf_type_name(scores.element_type));
  if (scores.count != n)
    return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: %llu scores for %zu tokens",
                   (unsigned long long)scores.count, n);
  *out = malloc(n * sizeof **out);
  if (!*out) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu scores", n);
  for (size_t i = 0; i < n; i++) {
    double v;
    TP_TRY(topos_gguf_array_float(g, scores.kv_index, i, &v));
    (*out)[i] = (float)v;
  }
  return TOPOS_OK;
}

/* tokenizer.ggml.token_type: one integer type 0..TOPOS_TOKEN_BYTE per token. */
static topos_status tp_read_types(const topos_gguf *g, size_t n, int32_t **out) {
  topos_gguf_array types;
  TP_TRY(tp_array_key(g, TP_KEY("token_type"), 0, 0, &types));
  if (types.kv_index < 0) return TOPOS_OK;
  if (types.element_type == TOPOS_GGUF_F32 || types.element_type == TOPOS_GGUF_F64 ||
      types.element_type == TOPOS_GGUF_BOOL)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "tokenizer: tokenizer.ggml.token_type holds %s elements",
                   topos_gguf_type_name(types.element_type));
  if (types.count != n)
    return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: %llu token types for %zu tokens",
                   (unsigned long long)types.count, n);
  *out = malloc(n * sizeof **out);
  if (!*out) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu types", n);
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    TP_TRY(topos_gguf_array_int(g, types.kv_index, i, &v));
    if (v < 0 || v > TOPOS_TOKEN_BYTE)
      return tp_fail(TOPOS_ERR_BAD_TYPE, "tokenizer: token %zu has type %lld (expected 0..6)",
                     i, (long long)v);
    (*out)[i] = (int32_t)v;
  }
  return TOPOS_OK;
}

static topos_status tp_from_gguf(const topos_gguf *g, tp_gguf_arrays *a, topos_tokenizer **out) {
  topos_tokenizer_desc d = topos_tokenizer_desc_default();
  const char *model;
  TP_TRY(tp_string_key(g, TP_KEY("model"), &model));
  if (!model)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "tokenizer: GGUF key tokenizer.ggml.model is missing");
  d.model = model;
  int spm = !strcmp(model, "llama"), gemma4 = !strcmp(model, "gemma4");
  if (!spm && !gemma4 && strcmp(model, "gpt2"))
    return tp_fail(TOPOS_UNSUPPORTED,
                   "tokenizer: model \"%.64s\" is not supported (only \"llama\", \"gpt2\" and "
                   "\"gemma4\")",
                   model);
  /* gemma4 has one pre-tokenizer whatever the key says (as llama.cpp) */
  if (!gemma4) TP_TRY(tp_string_key(g, TP_KEY("pre"), &d.pre));
  if (!spm && !tp_has_key(g, TP_KEY("merges")))
    return tp_fail(TOPOS_ERR_NOT_FOUND,
                   "tokenizer: a \"%s\" vocabulary needs merges: GGUF key tokenizer.ggml.merges "
                   "is missing",
                   model);

  topos_gguf_array tokens, merges;
  TP_TRY(tp_array_key(g, TP_KEY("tokens"), 1, 1, &tokens));
  size_t n = (size_t)tokens.count;
  if (n == 0) return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: tokenizer.ggml.tokens is empty");
  TP_TRY(tp_read_strings(g, &tokens, &a->tokens, &a->token_lengths));
  d.n_tokens = (int64_t)n;
  d.tokens = a->tokens;
  d.token_lengths = a->token_lengths;
  TP_TRY(tp_read_scores(g, n, spm, &a->scores));
  d.scores = a->scores;
  TP_TRY(tp_read_types(g, n, &a->types));
  d.types = a->types;

  TP_TRY(tp_array_key(g, TP_KEY("merges"), !spm, 1, &merges));
  if (merges.kv_index >= 0) {
    TP_TRY(tp_read_strings(g, &merges, &a->merges, &a->merge_lengths));
    d.n_merges = (int64_t)merges.count;
    d.merges = a->merges;
    d.merge_lengths = a->merge_lengths;
  }

  /* llama.cpp's defaults for SPM vocabularies without the keys */
  int32_t n32 = (int32_t)n;
  TP_TRY(tp_id_key(g, TP_KEY("bos_token_id"), spm && n32 > 1 ? 1 : TOPOS_TOKEN_NONE, &d.bos_id));
  TP_TRY(tp_id_key(g, TP_KEY("eos_token_id"), spm && n32 > 2 ? 2 : TOPOS_TOKEN_NONE, &d.eos_id));
  TP_TRY(tp_id_key(g, TP_KEY("eot_token_id"), TOPOS_TOKEN_NONE, &d.eot_id));
  TP_TRY(tp_id_key(g, TP_KEY("unknown_token_id"), spm ? 0 : TOPOS_TOKEN_NONE, &d.unk_id));
  TP_TRY(tp_id_key(g, TP_KEY("padding_token_id"), TOPOS_TOKEN_NONE, &d.pad_id));
  TP_TRY(tp_bool_key(g, TP_KEY("add_bos_token"), &d.add_bos));
  TP_TRY(tp_bool_key(g, TP_KEY("add_eos_token"), &d.add_eos));
  TP_TRY(tp_bool_key(g, TP_KEY("add_space_prefix"), &d.add_space_prefix));
  return topos_tokenizer_new(&d, out);
}

topos_status topos_tokenizer_from_gguf(const topos_gguf *reader, topos_tokenizer **out) {
  if (!reader || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer_from_gguf: reader and out must be set");
  *out = NULL;
  tp_gguf_arrays a;
  memset(&a, 0, sizeof a);
  topos_status st = tp_from_gguf(reader, &a, out);
  free(a.tokens);
  free(a.token_lengths);
  free(a.scores);
  free(a.types);
  free(a.merges);
  free(a.merge_lengths);
  return st;
}
