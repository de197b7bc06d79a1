/* `topos perplexity MODEL.gguf -f TEXT [--ctx N] [--chunks N] [--threads T]
 * [--kv f32|f16|bf16] [--exact]`: the model's perplexity over a text file,
 * by the windows llama.cpp's llama-perplexity uses, so the two figures can be
 * set side by side: the whole text is tokenized once (a BOS first where the
 * vocabulary adds one), cut into windows of N tokens (the last partial one
 * dropped), each run from an empty cache with its first token replaced by
 * BOS where the vocabulary adds one; the tokens of a window's second half
 * are scored (position p's logits predict token p + 1, p from N / 2 to
 * N - 2), so every scored token has at least N / 2 tokens of context.
 * Prints the running perplexity after each window, then the estimate with
 * its standard error (from the per-token negative log-likelihoods' spread). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* The whole file, NUL-terminated, or NULL (errno says why). */
static char *tp_read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - 1 - n, f);
    if (n < cap - 1) break;
    char *grown = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown, cap *= 2;
  }
  int failed = ferror(f);
  fclose(f);
  if (!buf || failed) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* -log softmax(row)[target], in double: the row's peak, then its log-sum. */
static double tp_nll(const float *row, int64_t n, int32_t target) {
  float peak = row[0];
  for (int64_t i = 1; i < n; ++i) peak = row[i] > peak ? row[i] : peak;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += exp((double)row[i] - (double)peak);
  return log(sum) + (double)peak - (double)row[target];
}

enum { TP_PPL_ROWS = 64 }; /* logits rows per eval of a window's scored half */

static int tp_perplexity(int argc, char **argv) {
  const char *path = NULL, *text_path = NULL;
  long n_ctx = 512, max_chunks = -1, threads = 0;
  int exact = 0;
  topos_dtype kv = TOPOS_F32;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
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
    if (strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) {
      text_path = v;
    } else if (strcmp(a, "--ctx") == 0 || strcmp(a, "-c") == 0) {
      if (!tp_cli_long(v, 4, 1L << 20, &n_ctx)) return tp_cli_bad_value("perplexity", a, v, "a window of 4 or more tokens");
    } else if (strcmp(a, "--chunks") == 0) {
      if (!tp_cli_long(v, 1, 1L << 30, &max_chunks)) return tp_cli_bad_value("perplexity", a, v, "a window count >= 1");
    } else {
      const int r = tp_cli_run_flag("perplexity", a, v, &threads, &kv);
      if (r == 2) return 2;
      if (r == 0) goto usage;
    }
  }
  if (!path || !text_path) goto usage;
  if (threads > 0 && topos_set_threads((int)threads) != TOPOS_OK)
    return tp_cli_fail("perplexity", TOPOS_ERR_INVALID_ARGUMENT, "--threads");

  int rc = 1;
  size_t len = 0, n_tokens = 0;
  char *text = tp_read_text(text_path, &len);
  if (!text) {
    fprintf(stderr, "topos perplexity: cannot read %s\n", text_path);
    return 1;
  }
  topos_llama *model = NULL;
  topos_tokenizer *tok = NULL;
  topos_llama_context *ctx = NULL;
  int32_t *ids = NULL, *window = NULL;
  float *logits = NULL;
  topos_status st = topos_llama_open(path, &model);
  if (st != TOPOS_OK) {
    tp_cli_fail("perplexity", st, path);
    goto done;
  }
  const topos_llama_config *c = topos_llama_config_of(model);
  if ((st = topos_tokenizer_from_gguf(topos_llama_gguf(model), &tok)) != TOPOS_OK) {
    tp_cli_fail("perplexity", st, "tokenizer");
    goto done;
  }
  topos_tokenizer_encode(tok, text, len, TOPOS_TOKENIZE_ADD_SPECIAL, NULL, 0, &n_tokens);
  topos_clear_error();
  ids = malloc((n_tokens + 1) * sizeof *ids);
  window = malloc((size_t)n_ctx * sizeof *window);
  logits = malloc((size_t)TP_PPL_ROWS * (size_t)c->n_vocab * sizeof *logits);
  if (!ids || !window || !logits) {
    fprintf(stderr, "topos perplexity: out of memory\n");
    goto done;
  }
  if ((st = topos_tokenizer_encode(tok, text, len, TOPOS_TOKENIZE_ADD_SPECIAL, ids, n_tokens + 1, &n_tokens)) !=
      TOPOS_OK) {
    tp_cli_fail("perplexity", st, "tokenizing the text");
    goto done;
  }
  long chunks = (long)(n_tokens / (size_t)n_ctx);
  if (chunks == 0) {
    fprintf(stderr, "topos perplexity: %s gives %zu tokens, fewer than one window of %ld (--ctx)\n", text_path,
            n_tokens, n_ctx);
    goto done;
  }
  if (max_chunks > 0 && chunks > max_chunks) chunks = max_chunks;
  topos_llama_context_options o = topos_llama_context_options_default();
  o.n_ctx = n_ctx;
  o.numerics = exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST;
  o.kv_dtype = kv;
  if ((st = topos_llama_context_new(model, &o, &ctx)) != TOPOS_OK) {
    tp_cli_fail("perplexity", st, "context");
    goto done;
  }
  /* the first token of each window becomes BOS where encoding adds one */
  const int32_t bos = topos_tokenizer_bos(tok);
  const int add_bos = n_tokens > 0 && bos != TOPOS_TOKEN_NONE && ids[0] == bos;
  const long first = n_ctx / 2;
  printf("perplexity: %zu tokens, %ld windows of %ld (%ld scored each), %d threads, %s\n", n_tokens, chunks, n_ctx,
         n_ctx - 1 - first, topos_threads(), exact ? "exact" : "fast");
  fflush(stdout);
  double nll = 0.0, nll2 = 0.0, t0 = tp_cli_now();
  long count = 0;
  for (long w = 0; w < chunks; ++w) {
    memcpy(window, ids + (size_t)w * (size_t)n_ctx, (size_t)n_ctx * sizeof *window);
    if (add_bos) window[0] = bos;
    topos_llama_reset(ctx);
    /* the unscored first half without an output head, then the rest in
     * pieces of TP_PPL_ROWS logits rows */
    if ((st = topos_llama_eval(ctx, window, first, 0, NULL)) != TOPOS_OK) {
      tp_cli_fail("perplexity", st, "evaluating a window");
      goto done;
    }
    for (long p0 = first; p0 < n_ctx - 1; p0 += TP_PPL_ROWS) {
      const long rows = n_ctx - 1 - p0 < TP_PPL_ROWS ? n_ctx - 1 - p0 : TP_PPL_ROWS;
      if ((st = topos_llama_eval(ctx, window + p0, rows, 1, logits)) != TOPOS_OK) {
        tp_cli_fail("perplexity", st, "evaluating a window");
        goto done;
      }
      for (long r = 0; r < rows; ++r) {
        const double v = tp_nll(logits + (size_t)r * (size_t)c->n_vocab, c->n_vocab, window[p0 + r + 1]);
        nll += v;
        nll2 += v * v;
        ++count;
      }
    }
    printf("[%ld]%.4f%s", w + 1, exp(nll / (double)count), w + 1 < chunks ? "," : "\n");
    fflush(stdout);
  }
  const double t = tp_cli_now() - t0, mean = nll / (double)count;
  const double var = nll2 / (double)count - mean * mean;
  const double ppl = exp(mean);
  if (count > 1 && var > 0.0)
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(var / (double)(count - 1)) * ppl);
  else
    printf("Final estimate: PPL = %.4f\n", ppl);
  printf("%ld tokens scored; %.2f s, %.1f tokens/s evaluated\n", count, t,
         (double)(chunks * (n_ctx - 1)) / (t > 0.0 ? t : 1e-9));
  rc = 0;
done:
  topos_llama_context_free(ctx);
  topos_tokenizer_free(tok);
  topos_llama_free(model);
  free(ids);
  free(window);
  free(logits);
  free(text);
  return rc;
usage:
  fprintf(stderr, "usage: topos perplexity MODEL.gguf -f TEXT [--ctx N] [--chunks N] [--threads T]\n"
          "         [--kv f32|f16|bf16] [--exact]\n"
          "windows of --ctx tokens (default 512; the last partial one dropped), each from an empty\n"
          "cache, BOS first where the vocabulary adds one; the second half of each is scored (as\n"
          "llama.cpp's llama-perplexity). --chunks: at most that many windows.\n");
  return 2;
}

TOPOS_COMMAND("perplexity", "perplexity of a llama GGUF model over a text file", tp_perplexity)
