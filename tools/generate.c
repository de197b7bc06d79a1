/* `topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]
 * [--repeat-penalty R] [--repeat-last-n N] [--seed S] [--threads T] [--ctx C]
 * [--kv f32|f16|bf16] [--exact] [--chat [--system TEXT]]`: tokenizes the
 * prompt, runs it as one chunk, then decodes token by token, streaming each
 * piece as it is produced; ends with prompt and generation tokens/s. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static int tp_bad_value(const char *flag, const char *value, const char *want) {
  return tp_cli_bad_value("generate", flag, value, want);
}

static int tp_generate(int argc, char **argv) {
  const char *path = NULL, *prompt = "", *system = NULL;
  long n_predict = 64, threads = 0, ctx_len = 0, top_k = 0, last_n = 0;
  unsigned long long seed = 42;
  topos_sampler_params sp = topos_sampler_params_default();
  int exact = 0, chat = 0;
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
    if (strcmp(a, "--chat") == 0) {
      chat = 1;
      continue;
    }
    if (!v) goto usage;
    ++i;
    if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) {
      prompt = v;
    } else if (strcmp(a, "--system") == 0) {
      system = v;
    } else if (strcmp(a, "-n") == 0) {
      if (!tp_cli_long(v, 0, 1L << 30, &n_predict)) return tp_bad_value(a, v, "a token count >= 0");
    } else if (strcmp(a, "--temp") == 0) {
      if (!tp_cli_float(v, -1e30f, 1e30f, &sp.temperature))
        return tp_bad_value(a, v, "a temperature (<= 0: greedy)");
    } else if (strcmp(a, "--top-k") == 0) {
      if (!tp_cli_long(v, INT32_MIN, INT32_MAX, &top_k)) return tp_bad_value(a, v, "an integer (<= 0: off)");
      sp.top_k = (int32_t)top_k;
    } else if (strcmp(a, "--top-p") == 0) {
      if (!tp_cli_float(v, 0.0f, 1.0f, &sp.top_p)) return tp_bad_value(a, v, "a number in [0, 1] (1: off)");
    } else if (strcmp(a, "--min-p") == 0) {
      if (!tp_cli_float(v, 0.0f, 1.0f, &sp.min_p)) return tp_bad_value(a, v, "a number in [0, 1] (0: off)");
    } else if (strcmp(a, "--repeat-penalty") == 0) {
      if (!tp_cli_float(v, 1e-30f, 1e30f, &sp.repeat_penalty))
        return tp_bad_value(a, v, "a number > 0 (1: off)");
    } else if (strcmp(a, "--repeat-last-n") == 0) {
      if (!tp_cli_long(v, 0, 65536, &last_n)) return tp_bad_value(a, v, "a window of 0..65536 tokens");
      sp.penalty_last_n = (int32_t)last_n;
    } else if (strcmp(a, "--seed") == 0) {
      if (!tp_cli_u64(v, &seed)) return tp_bad_value(a, v, "an unsigned 64-bit integer");
    } else if (strcmp(a, "--ctx") == 0 || strcmp(a, "-c") == 0) {
      if (!tp_cli_long(v, 0, 1L << 30, &ctx_len))
        return tp_bad_value(a, v, "a context length in tokens (0: prompt + -n)");
    } else {
      const int r = tp_cli_run_flag("generate", a, v, &threads, &kv);
      if (r == 2) return 2;
      if (r == 0) goto usage;
    }
  }
  if (!path) goto usage;
  if (system && !chat) {
    fprintf(stderr, "topos generate: --system needs --chat\n");
    return 2;
  }
  if (threads > 0 && topos_set_threads((int)threads) != TOPOS_OK)
    return tp_cli_fail("generate", TOPOS_ERR_INVALID_ARGUMENT, "--threads");

  topos_llama *model = NULL;
  topos_tokenizer *tok = NULL;
  topos_sampler *sampler = NULL;
  topos_llama_context *ctx = NULL;
  int32_t *ids = NULL;
  char *turn = NULL; /* --chat: the prompt in the model's chat format */
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
  const char *text = prompt;
  unsigned flags = TOPOS_TOKENIZE_ADD_SPECIAL;
  if (chat) { /* the user's turn in the file's chat format, its markers as tokens */
    const char *tmpl = NULL;
    if (topos_gguf_get_string(topos_llama_gguf(model), "tokenizer.chat_template", &tmpl, NULL) != TOPOS_OK) {
      fprintf(stderr, "topos generate: --chat: the file has no tokenizer.chat_template\n");
      goto done;
    }
    const topos_chat_format format = topos_chat_detect(tmpl);
    if (format == TOPOS_CHAT_UNKNOWN) {
      fprintf(stderr, "topos generate: --chat: the file's chat template is none of ChatML, Llama 3, Gemma, "
              "Zephyr, Llama 2 (it starts \"%.60s\")\n", tmpl);
      goto done;
    }
    size_t need = 0;
    topos_chat_turn(format, system, prompt, NULL, 0, &need);
    turn = malloc(need + 1);
    if (!turn || (st = topos_chat_turn(format, system, prompt, turn, need + 1, &need)) != TOPOS_OK) {
      tp_cli_fail("generate", turn ? st : TOPOS_ERR_OUT_OF_MEMORY, "--chat");
      goto done;
    }
    text = turn;
    flags |= TOPOS_TOKENIZE_PARSE_SPECIAL;
  }
  size_t n_prompt = 0, len = strlen(text);
  topos_tokenizer_encode(tok, text, len, flags, NULL, 0, &n_prompt);
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
  if ((st = topos_tokenizer_encode(tok, text, len, flags, ids, n_prompt + 1, &n_prompt)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "tokenizing the prompt");
    goto done;
  }
  if (n_prompt == 0) {
    fprintf(stderr, "topos generate: the prompt gives no tokens and the vocabulary has no BOS\n");
    goto done;
  }
  if ((long)n_prompt > ctx_len) {
    fprintf(stderr, "topos generate: the prompt has %zu tokens, more than the context's %ld (--ctx)\n",
            n_prompt, ctx_len);
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
  if (!chat) { /* the text continues the prompt; a chat reply stands alone */
    fwrite(prompt, 1, len, stdout);
    fflush(stdout);
  }
  double t0 = tp_cli_now();
  if ((st = topos_llama_eval(ctx, ids, (int64_t)n_prompt, 0, logits)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "prompt");
    goto done;
  }
  for (size_t i = 0; i < n_prompt; ++i) topos_sampler_accept(sampler, ids[i]);
  double t1 = tp_cli_now();
  long generated = 0;
  int full = 0; /* stopped because the context is full */
  char piece[256];
  /* Sampling a token needs no slot of the context; evaluating it does: the
   * last token that fits is sampled, printed, and not evaluated. */
  while (generated < n_predict) {
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
    if (generated == n_predict) break;
    if (topos_llama_position(ctx) >= ctx_len) {
      full = 1;
      break;
    }
    if ((st = topos_llama_eval(ctx, &next, 1, 0, logits)) != TOPOS_OK) {
      tp_cli_fail("generate", st, "decode");
      goto done;
    }
  }
  double t2 = tp_cli_now();
  printf("\n\nprompt: %zu token%s, %.1f tokens/s; generation: %ld token%s, %.1f tokens/s "
         "(%d threads, %s)\n", n_prompt, n_prompt == 1 ? "" : "s", (double)n_prompt / (t1 - t0), generated,
         generated == 1 ? "" : "s", generated > 1 ? (double)(generated - 1) / (t2 - t1) : 0.0, topos_threads(),
         exact ? "exact" : "fast");
  fflush(stdout);
  if (full)
    fprintf(stderr, "topos generate: stopped after %ld of %ld tokens: the context of %ld token%s is full "
            "(--ctx)\n", generated, n_predict, ctx_len, ctx_len == 1 ? "" : "s");
  rc = 0;
done:
  topos_llama_context_free(ctx);
  topos_sampler_free(sampler);
  topos_tokenizer_free(tok);
  topos_llama_free(model);
  free(ids);
  free(logits);
  free(turn);
  return rc;
usage:
  fprintf(stderr, "usage: topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
          "         [--min-p P] [--repeat-penalty R] [--repeat-last-n N] [--seed S] [--threads T]\n"
          "         [--ctx C] [--kv f32|f16|bf16] [--exact] [--chat [--system TEXT]]\n"
          "sampling defaults: --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05, no repeat penalty\n"
          "(window 64); --temp 0 is greedy. --ctx 0 (default): the prompt plus -n, at most the\n"
          "model's training context. --chat: the prompt as a user turn in the file's chat format\n"
          "(ChatML, Llama 3, Gemma, Zephyr, Llama 2; tokenizer.chat_template), the reply alone.\n");
  return 2;
}

TOPOS_COMMAND("generate", "generate text from a llama GGUF model", tp_generate)
