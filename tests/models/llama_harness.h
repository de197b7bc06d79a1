/* The llama tests' harness: a model opened from an lt_spec, every logit of
 * a token sequence through a context (a first chunk, then token by token),
 * and the checks shared by llama_test.c and llama_variants_test.c. */
#ifndef TESTS_MODELS_LLAMA_HARNESS_H
#define TESTS_MODELS_LLAMA_HARNESS_H

#include "models/llama_util.h"

/* A model's plain forward over lt_tokens, kept with the model: its Exact,
 * Fast and cache-type comparisons share one (the plain forward's scalar
 * sums were half of a model test's instructions under valgrind). */
typedef struct lt_plain_memo {
  lt_spec spec; /* the spec it was computed from, bytes as given */
  float *logits;
} lt_plain_memo;

typedef struct lt_model {
  lt_file file;
  topos_gguf *gguf;
  topos_llama *model;
  lt_plain_memo *plain; /* NULL: none kept */
} lt_model;

static inline topos_status lt_open(const lt_spec *s, lt_model *m) {
  memset(m, 0, sizeof *m);
  m->plain = calloc(1, sizeof *m->plain);
  topos_status st = lt_write(s, &m->file);
  if (st == TOPOS_OK) st = topos_gguf_open_memory(m->file.bytes, m->file.size, &m->gguf);
  if (st == TOPOS_OK) st = topos_llama_from_gguf(m->gguf, &m->model);
  return st;
}

static inline void lt_close(lt_model *m) {
  if (m->plain) free(m->plain->logits);
  free(m->plain);
  topos_llama_free(m->model);
  topos_gguf_close(m->gguf);
  lt_file_free(&m->file);
}

static const int32_t lt_tokens[] = {1, 270, 5, 299, 42, 260, 7, 100, 3, 281, 64, 290};
#define LT_N ((int64_t)(sizeof lt_tokens / sizeof lt_tokens[0]))

/* lt_reference_forward of m's file (written from s) over lt_tokens in a
 * context of 32, from m's memo when it holds that spec's. */
int lt_plain_logits(const lt_model *m, const lt_spec *s, float *out);

extern topos_dtype lt_kv;     /* cache type lt_eval_all uses */
extern int64_t lt_batch;      /* and chunk length */

/* LT_N tokens' logits through a cache of kv_dtype and ctx_len slots: a
 * chunk of first_chunk (every row's logits), then one token at a time */
topos_status lt_eval_all_kv(const topos_llama *model, topos_numerics num, topos_dtype kv_dtype,
                            int64_t ctx_len, int64_t first_chunk, float *logits);

/* the same through the cache type lt_kv */
static inline topos_status lt_eval_all(const topos_llama *model, topos_numerics num, int64_t ctx_len,
                                       int64_t first_chunk, float *logits) {
  return lt_eval_all_kv(model, num, lt_kv, ctx_len, first_chunk, logits);
}

/* Bounds (relative L2 error of all logits): with f32 weights the only
 * difference is summation order, measured 6.8e-7, bound 1e-5. With block-
 * quantized weights the graph quantizes activations to each weight's partner
 * format (Q8_0/Q8_1/Q8_K) as ggml does and the plain forward does not:
 * measured 2.0e-2..2.2e-2 on these random-weight models, bound 3e-2. The
 * argmax must agree wherever the top two plain logits are 5% of the range
 * apart. */
void lt_compare_plain_model(const lt_model *m, const lt_spec *s, topos_numerics num, double bound);

/* lt_compare_plain_model under Fast with an f32 cache, then an f16 one. */
static inline void lt_compare_plain_caches(const lt_model *m, const lt_spec *s, double bound) {
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_FAST, bound);
  lt_kv = TOPOS_F16;
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_FAST, bound);
  lt_kv = TOPOS_F32;
}

/* First in an architecture's quantized-variant test: under valgrind or an
 * emulator it is skipped, for the reasons lt_compare_plain_caches_of gives. */
#define LT_NATIVE_ONLY()                                                                                   \
  do {                                                                                                     \
    if (tt_instrumented())                                                                                 \
      SKIP("a block-quantized variant: it runs natively (the quantized kernels run under this tool in the " \
           "qmatmul and llama_test.c tests)");                                                           \
  } while (0)

/* lt_compare_plain_caches on a model of its own, written from s. Under
 * valgrind or an emulator a spec with block-quantized weights is left out:
 * writing it (the K formats' scale searches) and running it through two
 * caches were a third of an architecture test's instructions there, while its
 * graph is the architecture's f32 file's (checked there) and its products
 * the kernels the qmatmul and llama_test.c quantized tests run under the same
 * tools. Natively every spec runs. */
static inline void lt_compare_plain_caches_of(const lt_spec *s, double bound) {
  int quantized = 0;
  for (int i = 0; i < LT_ROLES; ++i) quantized |= topos_dtype_is_quantized(s->types[i]);
  if (quantized && tt_instrumented()) return;
  lt_model m;
  CHECK_OK(lt_open(s, &m));
  if (m.model) lt_compare_plain_caches(&m, s, bound);
  lt_close(&m);
}

/* lt_compare_plain_model on a model of its own, written from s. */
static inline void lt_compare_plain(const lt_spec *s, topos_numerics num, double bound) {
  lt_model m;
  CHECK_OK(lt_open(s, &m));
  lt_compare_plain_model(&m, s, num, bound);
  lt_close(&m);
}

/* The last row's logits of LT_N tokens fed as a chunk of `head` tokens
 * (0: none) and then the rest, that chunk's logits every row's (all_rows:
 * into rows, LT_N * vocab, the last copied to last) or its last row's
 * alone (into last). */
topos_status lt_last_row(const topos_llama *model, int64_t head, int all_rows, float *rows,
                         float *last);

/* Token-by-token decoding (after a first chunk of 1 or 5 tokens) against
 * one full-context forward of model m, bit for bit, at 1, 2 and 3 threads
 * (under valgrind or an emulator at 2 only: the native builds sweep them);
 * and a chunk whose logits are its last row's alone (the last block, or the
 * blocks past the last cache of a block's own, then run for that row only)
 * giving that row's bits, as one chunk or after a chunk of 5. full and
 * step hold LT_N * vocab logits. */
void lt_decode_is_full_context(const lt_model *m, int64_t V, float *full, float *step);

/* lt_decode_is_full_context with buffers of its own. */
static inline void lt_check_decode(const lt_model *m, int64_t V) {
  float *full = malloc((size_t)(LT_N * V) * sizeof *full);
  float *step = malloc((size_t)(LT_N * V) * sizeof *step);
  CHECK(full && step);
  if (full && step) lt_decode_is_full_context(m, V, full, step);
  free(full);
  free(step);
}

/* The same for spec s's file, opened and closed here. */
static inline void lt_check_decode_of(const lt_spec *s) {
  lt_model m;
  CHECK_OK(lt_open(s, &m));
  if (m.model) lt_check_decode(&m, s->vocab);
  lt_close(&m);
}

/* Every logit of model m (written from spec s) against the plain forward
 * (f32 weights, so the bound is summation order's), and decoding equal to
 * the full-context forward bit for bit at 1-3 threads. `without` is the
 * spec with the variant left out: the plain forward of that differs from
 * the model's logits by far more than the bound, so the check sees the
 * variant. */
void lt_check_variant(const lt_model *m, const lt_spec *s, const lt_spec *without);

/* lt_check_variant on a model of its own, written from s. */
static inline void lt_check_spec_variant(const lt_spec *s, const lt_spec *without) {
  lt_model m;
  CHECK_OK(lt_open(s, &m));
  if (m.model) lt_check_variant(&m, s, without);
  lt_close(&m);
}

/* A chunk a sliding window cuts into: 3 tokens, then 9 in one chunk whose
 * rows see different cached keys (the cache's mask a row per query), against
 * the plain forward with both caches (a chunk after cached keys sums them
 * apart from its own, so not the one-chunk bits); and those row-mask plans
 * give the same bits at 1 and 3 threads (Exact). */
void lt_check_window_chunks(const lt_model *m, const lt_spec *s);

/* A model whose blocks carry a state from chunk to chunk (short
 * convolutions, Mamba mixers): the context's bytes are `bytes` (keys and
 * values of the attention blocks plus two copies of every state), a reset
 * forgets the state (3 + 1 tokens give the same logits again), and 3
 * tokens then 9 agree with the plain forward (lt_check_window_chunks). */
void lt_check_recurrent(const lt_model *m, const lt_spec *s, uint64_t bytes);

static inline void lt_expect_refused(lt_spec s, topos_status want, const char *frag) {
  lt_model m;
  CHECK_STATUS(lt_open(&s, &m), want);
  CHECK_ERROR_HAS(frag);
  CHECK(m.model == NULL);
  lt_close(&m);
}

#endif
