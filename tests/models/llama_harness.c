/* The bodies of llama_harness.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

int lt_plain_logits(const lt_model *m, const lt_spec *s, float *out) {
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

topos_status lt_eval_all_kv(const topos_llama *model, topos_numerics num, topos_dtype kv_dtype,
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

void lt_compare_plain_model(const lt_model *m, const lt_spec *s, topos_numerics num, double bound) {
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

topos_status lt_last_row(const topos_llama *model, int64_t head, int all_rows, float *rows,
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

void lt_decode_is_full_context(const lt_model *m, int64_t V, float *full, float *step) {
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(1));
  CHECK_OK(lt_eval_all(m->model, TOPOS_NUMERICS_EXACT, 24, LT_N, full));
  /* under valgrind or an emulator: 2 threads, a chunk of 5 then decoding, and the last row after
   * it (the paths the others take run there too; natively every case) */
  const int slow = tt_instrumented();
  for (int threads = slow ? 2 : 1; threads <= (slow ? 2 : 3); ++threads) {
    CHECK_OK(topos_set_threads(threads));
    for (int64_t first = slow ? 5 : 1; first <= 5; first += 4) {
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
    for (int64_t head = slow ? 5 : 0; want && one && head <= 5; head += 5) {
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

void lt_check_variant(const lt_model *m, const lt_spec *s, const lt_spec *without) {
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

void lt_check_window_chunks(const lt_model *m, const lt_spec *s) {
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

void lt_check_recurrent(const lt_model *m, const lt_spec *s, uint64_t bytes) {
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

topos_dtype lt_kv = TOPOS_F32;
int64_t lt_batch = 128;
