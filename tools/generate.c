/* `topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K]
 * [--top-p P] [--seed S] [--threads T] [--ctx C] [--kv f32|f16|bf16] [--exact]`: tokenizes the
 * prompt, runs it as one chunk, then decodes token by token, streaming each
 * piece as it is produced; ends with prompt and generation tokens/s. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

static double tp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tp_generate(int argc, char **argv) {
  const char *path = NULL, *prompt = "";
  long n_predict = 64, threads = 0, ctx_len = 0;
  unsigned long long seed = 42;
  topos_sampler_params sp = topos_sampler_params_default();
  int exact = 0;
  topos_dtype kv = TOPOS_F32;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] != '-') {
      if (path) goto usage;
      path = a;
      continue;
    }
    if (strcmp(a, "--exact") == 0) {
      exact = 1;
      continue;
    }
    if (!v) goto usage;
    ++i;
    if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) prompt = v;
    else if (strcmp(a, "-n") == 0) n_predict = strtol(v, NULL, 10);
    else if (strcmp(a, "--temp") == 0) sp.temperature = strtof(v, NULL);
    else if (strcmp(a, "--top-k") == 0) sp.top_k = (int32_t)strtol(v, NULL, 10);
    else if (strcmp(a, "--top-p") == 0) sp.top_p = strtof(v, NULL);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--threads") == 0 || strcmp(a, "-t") == 0) threads = strtol(v, NULL, 10);
    else if (strcmp(a, "--ctx") == 0 || strcmp(a, "-c") == 0) ctx_len = strtol(v, NULL, 10);
    else if (strcmp(a, "--kv") == 0) {
      if (topos_dtype_parse(v, &kv) != TOPOS_OK) goto usage;
    }
    else goto usage;
  }
  if (!path || n_predict < 0) goto usage;
  if (threads > 0 && topos_set_threads((int)threads) != TOPOS_OK)
    return tp_cli_fail("generate", TOPOS_ERR_INVALID_ARGUMENT, "--threads");

  topos_llama *model = NULL;
  topos_tokenizer *tok = NULL;
  topos_sampler *sampler = NULL;
  topos_llama_context *ctx = NULL;
  int32_t *ids = NULL;
  float *logits = NULL;
  int rc = 1;
  topos_status st = topos_llama_open(path, &model);
  if (st != TOPOS_OK) return tp_cli_fail("generate", st, path);
  const topos_llama_config *c = topos_llama_config_of(model);
  if ((st = topos_tokenizer_from_gguf(topos_llama_gguf(model), &tok)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "tokenizer");
    goto done;
  }
  if ((st = topos_sampler_new(&sp, seed, &sampler)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "sampler");
    goto done;
  }
  size_t n_prompt = 0, len = strlen(prompt);
  topos_tokenizer_encode(tok, prompt, len, TOPOS_TOKENIZE_ADD_SPECIAL, NULL, 0, &n_prompt);
  topos_clear_error();
  if (ctx_len <= 0) {
    ctx_len = (long)n_prompt + n_predict;
    if (ctx_len > c->n_ctx_train) ctx_len = (long)c->n_ctx_train;
  }
  ids = malloc((n_prompt + 1) * sizeof *ids);
  logits = malloc((size_t)c->n_vocab * sizeof *logits);
  if (!ids || !logits) {
    fprintf(stderr, "topos generate: out of memory\n");
    goto done;
  }
  if ((st = topos_tokenizer_encode(tok, prompt, len, TOPOS_TOKENIZE_ADD_SPECIAL, ids, n_prompt + 1,
                                   &n_prompt)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "tokenizing the prompt");
    goto done;
  }
  if (n_prompt == 0) {
    fprintf(stderr, "topos generate: the prompt gives no tokens and the vocabulary has no BOS\n");
    goto done;
  }
  if ((long)n_prompt >= ctx_len) {
    fprintf(stderr, "topos generate: the prompt has %zu tokens, the context only %ld\n", n_prompt,
            ctx_len);
    goto done;
  }
  topos_llama_context_options o = topos_llama_context_options_default();
  o.n_ctx = ctx_len;
  o.numerics = exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST;
  o.kv_dtype = kv;
  if ((st = topos_llama_context_new(model, &o, &ctx)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "context");
    goto done;
  }
  fwrite(prompt, 1, len, stdout);
  fflush(stdout);
  double t0 = tp_now();
  if ((st = topos_llama_eval(ctx, ids, (int64_t)n_prompt, 0, logits)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "prompt");
    goto done;
  }
  for (size_t i = 0; i < n_prompt; ++i) topos_sampler_accept(sampler, ids[i]);
  double t1 = tp_now();
  long generated = 0;
  char piece[256];
  while (generated < n_predict && topos_llama_position(ctx) < ctx_len) {
    int32_t next;
    if ((st = topos_sampler_sample(sampler, logits, (int)c->n_vocab, &next)) != TOPOS_OK) {
      tp_cli_fail("generate", st, "sampling");
      goto done;
    }
    topos_sampler_accept(sampler, next);
    ++generated;
    if (topos_tokenizer_is_eog(tok, next)) break;
    size_t plen = 0;
    if (topos_tokenizer_decode_token(tok, next, piece, sizeof piece, &plen) == TOPOS_OK) {
      fwrite(piece, 1, plen, stdout);
      fflush(stdout);
    }
    if (generated == n_predict || topos_llama_position(ctx) >= ctx_len) break;
    if ((st = topos_llama_eval(ctx, &next, 1, 0, logits)) != TOPOS_OK) {
      tp_cli_fail("generate", st, "decode");
      goto done;
    }
  }
  double t2 = tp_now();
  printf("\n\nprompt: %zu tokens, %.1f tokens/s; generation: %ld tokens, %.1f tokens/s "
         "(%d threads, %s)\n", n_prompt, (double)n_prompt / (t1 - t0), generated,
         generated > 1 ? (double)(generated - 1) / (t2 - t1) : 0.0, topos_threads(),
         exact ? "exact" : "fast");
  rc = 0;
done:
  topos_llama_context_free(ctx);
  topos_sampler_free(sampler);
  topos_tokenizer_free(tok);
  topos_llama_free(model);
  free(ids);
  free(logits);
  return rc;
usage:
  fprintf(stderr, "usage: topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K] "
          "[--top-p P] [--seed S] [--threads T] [--ctx C] [--kv f32|f16|bf16] [--exact]\n");
  return 2;
}

TOPOS_COMMAND("generate", "generate text from a llama GGUF model", tp_generate)
