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
static inline int lt_plain_logits(const lt_model *m, const lt_spec *s, float *out) {
  const size_t bytes = (size_t)(LT_N * s->vocab) * sizeof *out;
  lt_plain_memo *p = m->plain;
  if (p && p->logits && memcmp(&p->spec, s, sizeof *s) == 0) {
    memcpy(out, p->logits, bytes);
    return 1;
  }
  if (!lt_reference_forward(m->gguf, s, lt_tokens, LT_N, 32, out)) return 0;
  if (p) {
    free(p->logits);
    p->logits = malloc(bytes);
    if (p->logits) memcpy(p->logits, out, bytes), memcpy(&p->spec, s, sizeof *s);
  }
  return 1;
}

static topos_dtype lt_kv = TOPOS_F32; /* cache type lt_eval_all uses */
static int64_t lt_batch = 128;        /* and chunk length */

/* LT_N tokens' logits through a cache of kv_dtype and ctx_len slots: a
 * chunk of first_chunk (every row's logits), then one token at a time */
static inline topos_status lt_eval_all_kv(const topos_llama *model, topos_numerics num, topos_dtype kv_dtype,
                                          int64_t ctx_len, int64_t first_chunk, float *logits) {
  topos_llama_context_options o = topos_llama_context_options_default();
  o.kv_dtype = kv_dtype;
  o.n_batch = lt_batch;
  o.n_ctx = ctx_len;
  o.numerics = num;
  topos_llama_context *ctx = NULL;
  topos_status st = topos_llama_context_new(model, &o, &ctx);
  int64_t V = topos_llama_config_of(model)->n_vocab;
  if (st == TOPOS_OK) st = topos_llama_eval(ctx, lt_tokens, first_chunk, 1, logits);
  for (int64_t t = first_chunk; st == TOPOS_OK && t < LT_N; ++t)
    st = topos_llama_eval(ctx, lt_tokens + t, 1, 0, logits + t * V);
  if (st == TOPOS_OK && topos_llama_position(ctx) != LT_N) st = TOPOS_ERR_INTERNAL;
  topos_llama_context_free(ctx);
  return st;
}

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
static inline void lt_compare_plain_model(const lt_model *m, const lt_spec *s, topos_numerics num, double bound) {
  CHECK(m->model != NULL);
  int64_t V = s->vocab;
  float *got = malloc((size_t)(LT_N * V) * sizeof *got);
  float *want = malloc((size_t)(LT_N * V) * sizeof *want);
  CHECK(got && want);
  CHECK_OK(lt_eval_all(m->model, num, 32, 5, got)); /* chunk, then decode from the cache */
  CHECK(lt_plain_logits(m, s, want));
  double den2 = 0;
  const double rel = lt_rel_l2(got, want, LT_N * V, &den2);
  if (getenv("LT_VERBOSE")) fprintf(stderr, "rel %g (kv %s)\n", rel, topos_dtype_name(lt_kv));
  if (getenv("LT_VERBOSE_TOKENS"))
    for (int64_t t = 0; t < LT_N; ++t) fprintf(stderr, "  token %lld: rel %g\n", (long long)t, lt_rel_l2(got + t * V, want + t * V, V, NULL));
  CHECK_MSG(rel < bound, "relative L2 error %g of the graph's logits vs the plain forward", rel);
  CHECK(den2 > 0);
  for (int64_t t = 0; t < LT_N; ++t) {
    const float *w = want + t * V, *g = got + t * V;
    int64_t a = 0, b = -1, ga = 0;
    float lo = w[0], hi = w[0];
    for (int64_t i = 1; i < V; ++i) {
      if (w[i] > w[a]) { b = a; a = i; } else if (b < 0 || w[i] > w[b]) b = i;
      if (g[i] > g[ga]) ga = i;
      lo = w[i] < lo ? w[i] : lo;
      hi = w[i] > hi ? w[i] : hi;
    }
    if (w[a] - w[b] > 0.05f * (hi - lo)) CHECK_EQ_INT(ga, a);
  }
  free(got);
  free(want);
}

/* lt_compare_plain_model under Fast with an f32 cache, then an f16 one. */
static inline void lt_compare_plain_caches(const lt_model *m, const lt_spec *s, double bound) {
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_FAST, bound);
  lt_kv = TOPOS_F16;
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_FAST, bound);
  lt_kv = TOPOS_F32;
}

/* lt_compare_plain_caches on a model of its own, written from s. */
static inline void lt_compare_plain_caches_of(const lt_spec *s, double bound) {
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
static inline topos_status lt_last_row(const topos_llama *model, int64_t head, int all_rows, float *rows,
                                       float *last) {
  topos_llama_context_options o = topos_llama_context_options_default();
  o.kv_dtype = lt_kv;
  o.n_batch = lt_batch;
  o.n_ctx = 24;
  o.numerics = TOPOS_NUMERICS_EXACT;
  const int64_t V = topos_llama_config_of(model)->n_vocab;
  topos_llama_context *ctx = NULL;
  topos_status st = topos_llama_context_new(model, &o, &ctx);
  if (st == TOPOS_OK && head) st = topos_llama_eval(ctx, lt_tokens, head, 0, NULL);
  if (st == TOPOS_OK) st = topos_llama_eval(ctx, lt_tokens + head, LT_N - head, all_rows, all_rows ? rows : last);
  if (st == TOPOS_OK && all_rows) memcpy(last, rows + (LT_N - head - 1) * V, (size_t)V * sizeof *last);
  topos_llama_context_free(ctx);
  return st;
}

/* Token-by-token decoding (after a first chunk of 1 or 5 tokens) against
 * one full-context forward of model m, bit for bit, at 1, 2 and 3 threads
 * (under valgrind or an emulator at 2 only: the native builds sweep them);
 * and a chunk whose logits are its last row's alone (the last block, or the
 * blocks past the last cache of a block's own, then run for that row only)
 * giving that row's bits, as one chunk or after a chunk of 5. full and
 * step hold LT_N * vocab logits. */
static inline void lt_decode_is_full_context(const lt_model *m, int64_t V, float *full, float *step) {
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(1));
  CHECK_OK(lt_eval_all(m->model, TOPOS_NUMERICS_EXACT, 24, LT_N, full));
  const int slow = tt_instrumented();
  for (int threads = slow ? 2 : 1; threads <= (slow ? 2 : 3); ++threads) {
    CHECK_OK(topos_set_threads(threads));
    for (int64_t first = 1; first <= 5; first += 4) {
      memset(step, 0, (size_t)(LT_N * V) * sizeof *step);
      CHECK_OK(lt_eval_all(m->model, TOPOS_NUMERICS_EXACT, 24, first, step));
      /* the first chunk returns all its rows; compare every row */
      int64_t mismatches = 0;
      for (int64_t i = 0; i < LT_N * V; ++i)
        mismatches += tt_f32_bits(full[i]) != tt_f32_bits(step[i]);
      CHECK_MSG(mismatches == 0, "%lld logits differ (threads %d, first chunk %lld)",
                (long long)mismatches, threads, (long long)first);
    }
    float *want = malloc((size_t)V * sizeof *want), *one = malloc((size_t)V * sizeof *one);
    CHECK(want && one);
    for (int64_t head = 0; want && one && head <= 5; head += 5) {
      CHECK_OK(lt_last_row(m->model, head, 1, step, want));
      CHECK_OK(lt_last_row(m->model, head, 0, step, one));
      int64_t differ = 0;
      for (int64_t i = 0; i < V; ++i) differ += tt_f32_bits(want[i]) != tt_f32_bits(one[i]);
      CHECK_MSG(differ == 0, "%lld last-row logits differ (threads %d, chunks of %lld and %lld)", (long long)differ,
                threads, (long long)head, (long long)(LT_N - head));
    }
    free(want);
    free(one);
  }
  CHECK_OK(topos_set_threads(saved));
}

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
static inline void lt_check_variant(const lt_model *m, const lt_spec *s, const lt_spec *without) {
  CHECK(m->model != NULL);
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_compare_plain_model(m, s, TOPOS_NUMERICS_FAST, 1e-5);
  const int64_t V = s->vocab;
  float *got = malloc((size_t)(LT_N * V) * sizeof *got), *other = malloc((size_t)(LT_N * V) * sizeof *other);
  CHECK(got && other);
  if (got && other) {
    CHECK_OK(lt_eval_all(m->model, TOPOS_NUMERICS_EXACT, 32, 5, got));
    CHECK(lt_reference_forward(m->gguf, without, lt_tokens, LT_N, 32, other));
    const double rel = lt_rel_l2(got, other, LT_N * V, NULL);
    if (getenv("LT_VERBOSE")) fprintf(stderr, "without the variant: rel %g\n", rel);
    CHECK_MSG(rel > 1e-3, "the variant changes the logits by only %g", rel);
  }
  free(got);
  free(other);
  lt_check_decode(m, V);
}

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
static inline void lt_check_window_chunks(const lt_model *m, const lt_spec *s) {
  const int64_t V = s->vocab;
  float *got = malloc((size_t)(LT_N * V) * sizeof *got), *want = malloc((size_t)(LT_N * V) * sizeof *want);
  CHECK(got && want);
  if (!got || !want) {
    free(got);
    free(want);
    return;
  }
  CHECK(lt_plain_logits(m, s, want));
  for (int k = 0; k < 2; ++k) {
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = 32;
    o.kv_dtype = k ? TOPOS_F16 : TOPOS_F32;
    topos_llama_context *ctx = NULL;
    CHECK_OK(topos_llama_context_new(m->model, &o, &ctx));
    CHECK_OK(topos_llama_eval(ctx, lt_tokens, 3, 1, got));
    CHECK_OK(topos_llama_eval(ctx, lt_tokens + 3, LT_N - 3, 1, got + 3 * V));
    const double rel = lt_rel_l2(got, want, LT_N * V, NULL);
    if (getenv("LT_VERBOSE")) fprintf(stderr, "3 + 9 tokens, %s cache: rel %g\n", topos_dtype_name(o.kv_dtype), rel);
    CHECK_MSG(rel < (k ? 2e-3 : 1e-5), "3 + 9 tokens, %s cache: relative error %g", topos_dtype_name(o.kv_dtype),
              rel);
    topos_llama_context_free(ctx);
  }
  const int saved = topos_threads();
  for (int threads = 1; threads <= 3; threads += 2) {
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = 32;
    o.numerics = TOPOS_NUMERICS_EXACT;
    topos_llama_context *ctx = NULL;
    CHECK_OK(topos_set_threads(threads));
    CHECK_OK(topos_llama_context_new(m->model, &o, &ctx));
    float *out = threads == 1 ? want : got;
    CHECK_OK(topos_llama_eval(ctx, lt_tokens, 3, 1, out));
    CHECK_OK(topos_llama_eval(ctx, lt_tokens + 3, LT_N - 3, 1, out + 3 * V));
    topos_llama_context_free(ctx);
  }
  CHECK_OK(topos_set_threads(saved));
  int64_t differ = 0;
  for (int64_t i = 0; i < LT_N * V; ++i) differ += tt_f32_bits(got[i]) != tt_f32_bits(want[i]);
  CHECK_MSG(differ == 0, "%lld logits differ between 1 and 3 threads (3 + 9 tokens, Exact)", (long long)differ);
  free(got);
  free(want);
}

/* A model whose blocks carry a state from chunk to chunk (short
 * convolutions, Mamba mixers): the context's bytes are `bytes` (keys and
 * values of the attention blocks plus two copies of every state), a reset
 * forgets the state (3 + 1 tokens give the same logits again), and 3
 * tokens then 9 agree with the plain forward (lt_check_window_chunks). */
static inline void lt_check_recurrent(const lt_model *m, const lt_spec *s, uint64_t bytes) {
  topos_llama_context_options o = topos_llama_context_options_default();
  o.n_ctx = 32;
  topos_llama_context *ctx = NULL;
  CHECK_OK(topos_llama_context_new(m->model, &o, &ctx));
  CHECK_EQ_INT((long long)topos_llama_cache_bytes(ctx), (long long)bytes);
  const int64_t V = s->vocab;
  float *a = malloc((size_t)(4 * V) * sizeof *a), *b = malloc((size_t)(4 * V) * sizeof *b);
  CHECK(a && b);
  if (ctx && a && b) {
    CHECK_OK(topos_llama_eval(ctx, lt_tokens, 3, 1, a));
    CHECK_OK(topos_llama_eval(ctx, lt_tokens + 3, 1, 0, a + 3 * V));
    topos_llama_reset(ctx);
    CHECK_OK(topos_llama_eval(ctx, lt_tokens, 3, 1, b));
    CHECK_OK(topos_llama_eval(ctx, lt_tokens + 3, 1, 0, b + 3 * V));
    int64_t differ = 0;
    for (int64_t i = 0; i < 4 * V; ++i) differ += tt_f32_bits(a[i]) != tt_f32_bits(b[i]);
    CHECK_MSG(differ == 0, "%lld logits differ after a reset", (long long)differ);
  }
  free(a);
  free(b);
  topos_llama_context_free(ctx);
  lt_check_window_chunks(m, s);
}

static inline void lt_expect_refused(lt_spec s, topos_status want, const char *frag) {
  lt_model m;
  CHECK_STATUS(lt_open(&s, &m), want);
  CHECK_ERROR_HAS(frag);
  CHECK(m.model == NULL);
  lt_close(&m);
}

#endif
