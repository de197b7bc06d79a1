/* Test helpers: toy vocabularies as descs and as GGUF files in memory. */
#ifndef TT_TOK_UTIL_H
#define TT_TOK_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "test.h"

#define TT_MAX_VOCAB 600

/* A vocabulary under construction: tokens, scores, types, merges. */
typedef struct tt_vocab {
  char *tokens[TT_MAX_VOCAB];
  size_t lengths[TT_MAX_VOCAB];
  float scores[TT_MAX_VOCAB];
  int32_t types[TT_MAX_VOCAB];
  int n;
  const char *merges[64];
  int n_merges;
} tt_vocab;

static inline int tt_vocab_add(tt_vocab *v, const char *text, size_t len, float score,
                               int32_t type) {
  if (v->n >= TT_MAX_VOCAB) abort(); /* a test bug */
  char *copy = malloc(len + 1);
  if (!copy) abort();
  memcpy(copy, text, len);
  copy[len] = 0;
  v->tokens[v->n] = copy;
  v->lengths[v->n] = len;
  v->scores[v->n] = score;
  v->types[v->n] = type;
  return v->n++;
}
static inline int tt_add(tt_vocab *v, const char *text, float score) {
  return tt_vocab_add(v, text, strlen(text), score, TOPOS_TOKEN_NORMAL);
}
static inline void tt_vocab_free(tt_vocab *v) {
  for (int i = 0; i < v->n; i++) free(v->tokens[i]);
  v->n = 0;
}

static inline topos_tokenizer_desc tt_desc(const tt_vocab *v, const char *model) {
  topos_tokenizer_desc d = topos_tokenizer_desc_default();
  d.model = model;
  d.n_tokens = v->n;
  d.tokens = (const char *const *)v->tokens;
  d.token_lengths = v->lengths;
  d.scores = v->scores;
  d.types = v->types;
  d.n_merges = v->n_merges;
  d.merges = v->merges;
  return d;
}

/* Writes a desc's vocabulary as tokenizer.ggml.* keys into an in-memory GGUF
 * (the caller frees *bytes). Special ids < 0 and flags < 0 are left out. */
static inline topos_status tt_desc_to_gguf(const topos_tokenizer_desc *d, void **bytes,
                                           size_t *size) {
  topos_gguf_writer *w;
  topos_status st = topos_gguf_writer_create(&w);
  if (st != TOPOS_OK) return st;
#define TT_W(call)           \
  do {                       \
    st = (call);             \
    if (st != TOPOS_OK) {    \
      topos_gguf_writer_destroy(w); \
      return st;             \
    }                        \
  } while (0)
  TT_W(topos_gguf_writer_add_string(w, "general.architecture", "llama"));
  TT_W(topos_gguf_writer_add_string(w, "tokenizer.ggml.model", d->model));
  if (d->pre) TT_W(topos_gguf_writer_add_string(w, "tokenizer.ggml.pre", d->pre));
  TT_W(topos_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", d->tokens, d->token_lengths,
                                          (uint64_t)d->n_tokens));
  if (d->scores)
    TT_W(topos_gguf_writer_add_array(w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, d->scores,
                                     (uint64_t)d->n_tokens));
  if (d->types)
    TT_W(topos_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TOPOS_GGUF_I32, d->types,
                                     (uint64_t)d->n_tokens));
  if (d->merges)
    TT_W(topos_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", d->merges,
                                            d->merge_lengths, (uint64_t)d->n_merges));
  if (d->bos_id >= 0) TT_W(topos_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)d->bos_id));
  if (d->eos_id >= 0) TT_W(topos_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)d->eos_id));
  if (d->unk_id >= 0)
    TT_W(topos_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)d->unk_id));
  if (d->add_bos >= 0) TT_W(topos_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", d->add_bos));
  if (d->add_space_prefix >= 0)
    TT_W(topos_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", d->add_space_prefix));
  TT_W(topos_gguf_writer_write_memory(w, bytes, size));
#undef TT_W
  topos_gguf_writer_destroy(w);
  return TOPOS_OK;
}

/* Builds a tokenizer through a GGUF file in memory. */
static inline topos_status tt_tokenizer_via_gguf(const topos_tokenizer_desc *d,
                                                 topos_tokenizer **out) {
  void *bytes = NULL;
  size_t size = 0;
  topos_status st = tt_desc_to_gguf(d, &bytes, &size);
  if (st != TOPOS_OK) return st;
  topos_gguf *g = NULL;
  st = topos_gguf_open_memory(bytes, size, &g);
  if (st == TOPOS_OK) st = topos_tokenizer_from_gguf(g, out);
  topos_gguf_close(g);
  free(bytes);
  return st;
}

/* Encodes text (strlen) into ids[cap]; returns the count or -1 on failure. */
static inline long tt_encode(const topos_tokenizer *t, const char *text, unsigned flags,
                             int32_t *ids, size_t cap) {
  size_t count = 0;
  if (topos_tokenizer_encode(t, text, strlen(text), flags, ids, cap, &count) != TOPOS_OK)
    return -1;
  return (long)count;
}

/* ids equal to the expected list; prints both on mismatch. */
#define CHECK_IDS(got, n_got, ...)                                                     \
  do {                                                                                 \
    const int32_t tt_exp_[] = {__VA_ARGS__};                                           \
    size_t tt_ne_ = sizeof tt_exp_ / sizeof tt_exp_[0];                                \
    int tt_ok_ = (long)(n_got) == (long)tt_ne_;                                        \
    for (size_t tt_i_ = 0; tt_ok_ && tt_i_ < tt_ne_; tt_i_++)                          \
      tt_ok_ = (got)[tt_i_] == tt_exp_[tt_i_];                                         \
    if (!tt_ok_) {                                                                     \
      char tt_buf_[512];                                                               \
      int tt_at_ = 0;                                                                  \
      for (long tt_i_ = 0; tt_i_ < (long)(n_got) && tt_at_ < 400; tt_i_++)             \
        tt_at_ += snprintf(tt_buf_ + tt_at_, sizeof tt_buf_ - (size_t)tt_at_, "%d ",   \
                           (int)(got)[tt_i_]);                                         \
      if (tt_at_ == 0) tt_buf_[0] = 0;                                                 \
      tt_fail_at(__FILE__, __LINE__, "ids of %s: got %ld [%s], expected %zu [%s]", #got, \
                 (long)(n_got), tt_buf_, tt_ne_, #__VA_ARGS__);                        \
      return;                                                                          \
    }                                                                                  \
  } while (0)

#endif
