/* `topos perplexity` on a tiny random-weight model: the figure it prints is
 * recomputed here from the library — the text tokenized with its BOS, cut in
 * windows of --ctx tokens whose first token becomes BOS, each window run
 * whole from an empty cache (the tool runs a window's halves in pieces: the
 * same logits within Exact's chunking envelope), the second half's next
 * tokens scored by a log-softmax written here; and its refusals. Uses the
 * topos binary next to the test binary; SKIPs when it is not there. */
#include "cli_util.h"
#include "models/llama_util.h"

enum { LP_CTX = 16, LP_WINDOWS = 3 };

/* The perplexity of the windows, from the library (NAN where it fails) */
static void lp_expected(const char *model_path, const char *text, double *ppl, int *scored) {
  topos_llama *model = NULL;
  topos_tokenizer *tok = NULL;
  topos_llama_context *ctx = NULL;
  *ppl = NAN;
  *scored = 0;
  CHECK_OK(topos_llama_open(model_path, &model));
  if (!model) return;
  topos_status st = topos_tokenizer_from_gguf(topos_llama_gguf(model), &tok);
  CHECK_EQ_INT(st, TOPOS_OK);
  topos_llama_context_options o = topos_llama_context_options_default();
  o.n_ctx = LP_CTX;
  o.numerics = TOPOS_NUMERICS_EXACT;
  st = topos_llama_context_new(model, &o, &ctx);
  CHECK_EQ_INT(st, TOPOS_OK);
  if (tok && ctx) {
    /* the tiny vocabulary adds BOS: every window starts with it */
    CHECK_EQ_INT(lt_perplexity(model, tok, ctx, text, LP_CTX, LP_WINDOWS, ppl, scored), 0);
  }
  topos_llama_context_free(ctx);
  topos_tokenizer_free(tok);
  topos_llama_free(model);
}

/* the number after `key` in the log, NAN when absent */
static double lp_log_number(const char *log, const char *key) {
  FILE *f = fopen(log, "r");
  if (!f) return NAN;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *at = strstr(buf, key);
  return at ? strtod(at + strlen(key), NULL) : NAN;
}

TEST(llama_perplexity_cli_is_the_windows_mean_nll) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char model[600], text_path[600], short_path[600], args[2048], log[600];
  snprintf(model, sizeof model, "%s/llama-ppl-tiny.gguf", tt_tmpdir());
  snprintf(text_path, sizeof text_path, "%s/llama-ppl.txt", tt_tmpdir());
  snprintf(short_path, sizeof short_path, "%s/llama-ppl-short.txt", tt_tmpdir());
  snprintf(args, sizeof args, "llama-make '%s' --shape tiny --type q8_0 --seed 5", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 0);
  const char *text = "It was the best of times, it was the worst of times, it was the age of wisdom, "
                     "it was the age of foolishness.";
  FILE *f = fopen(text_path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
  if ((f = fopen(short_path, "w")) != NULL) {
    fputs("too short", f);
    fclose(f);
  }

  snprintf(args, sizeof args, "perplexity '%s' -f '%s' --ctx %d --chunks %d --exact --threads 1", model, text_path,
           LP_CTX, LP_WINDOWS);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "3 windows of 16 (7 scored each), 1 threads, exact"));
  CHECK(tt_log_has(log, "21 tokens scored"));
  CHECK(tt_log_has(log, "[1]"));
  CHECK(tt_log_has(log, ",[3]"));
  const double printed = lp_log_number(log, "PPL = ");
  int scored = 0;
  double want = NAN;
  lp_expected(model, text, &want, &scored);
  CHECK_EQ_INT(scored, 21);
  CHECK_MSG(fabs(printed - want) <= 1e-4 * want, "printed PPL %.6f, recomputed %.6f", printed, want);
  CHECK(want > 1.0); /* random weights: far from certain */
  CHECK(lp_log_number(log, "+/- ") > 0.0);
  /* Fast and the 16-bit cache: the same windows, close figures */
  snprintf(args, sizeof args, "perplexity '%s' -f '%s' --ctx %d --chunks %d --kv f16", model, text_path, LP_CTX,
           LP_WINDOWS);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 0);
  const double fast = lp_log_number(log, "PPL = ");
  CHECK_MSG(fabs(fast - want) <= 2e-2 * want, "fast f16-cache PPL %.6f, exact %.6f", fast, want);

  /* refusals: a text shorter than one window, an unreadable one, bad flags */
  snprintf(args, sizeof args, "perplexity '%s' -f '%s' --ctx 64", model, short_path);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "fewer than one window of 64 (--ctx)"));
  snprintf(args, sizeof args, "perplexity '%s' -f '%s.absent'", model, text_path);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "cannot read"));
  snprintf(args, sizeof args, "perplexity '%s' -f '%s' --ctx 3", model, text_path);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "--ctx wants a window of 4 or more tokens"));
  snprintf(args, sizeof args, "perplexity '%s' -f '%s' --chunks 0", model, text_path);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 2);
  snprintf(args, sizeof args, "perplexity '%s'", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-ppl.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "usage: topos perplexity"));
  remove(model);
  remove(text_path);
  remove(short_path);
}
