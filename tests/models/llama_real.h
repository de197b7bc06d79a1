/* The llama tests' helpers for real models (included by llama_util.h):
 * perplexity by llama.cpp's windows, written apart from `topos perplexity`,
 * and where the SmolLM2-135M-Instruct file is at hand. */
#ifndef TESTS_MODELS_LLAMA_REAL_H
#define TESTS_MODELS_LLAMA_REAL_H

/* -log softmax(row)[target], its log-sum-exp in long double */
static inline double lt_nll(const float *row, int64_t n, int32_t target) {
  long double peak = row[0], sum = 0.0L;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > peak) peak = row[i];
  for (int64_t i = 0; i < n; ++i) sum += expl((long double)row[i] - peak);
  return (double)(logl(sum) + peak - (long double)row[target]);
}

/* Perplexity by llama.cpp's llama-perplexity windows, written here apart
 * from `topos perplexity` (tools/perplexity.c): `text` tokenized with the
 * vocabulary's BOS, windows of `window` tokens (the first `windows` whole
 * ones), each evaluated whole from an empty cache with its first token BOS
 * where encoding added one, the next-token log-softmax of positions
 * window / 2 .. window - 2 averaged. 0 on success (*ppl, *scored), -1 when
 * a call failed or the text is short. */
int lt_perplexity(const topos_llama *model, const topos_tokenizer *tok, topos_llama_context *ctx,
                  const char *text, int64_t window, int windows, double *ppl, int *scored);

/* The SmolLM2-135M-Instruct Q4_1 file where one is at hand: $TOPOS_SMOLLM2_GGUF,
 * the cache scripts/setup-smollm2.sh fills, or a few known places; NULL if none. */
const char *lt_smollm2_path(void);

#endif
