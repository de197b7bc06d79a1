/* `topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]
 * [--repeat-penalty R] [--repeat-last-n N] [--seed S] [--threads T] [--ctx C]
 * [--kv f32|f16|bf16] [--exact] [--chat [--system TEXT] [-i]]`: tokenizes the
 * prompt, runs it as one chunk, then decodes token by token, streaming each
 * piece as it is produced; ends with prompt and generation tokens/s. With
 * --chat -i, a conversation: every line of input is the next user turn,
 * evaluated after the previous reply in the same cache (-n per reply). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

static int tp_bad_value(const char *flag, const char *value, const char *want) {
  return tp_cli_bad_value("generate", flag, value, want);
}

/* One conversation (or one prompt) through a context: what the turns
 * evaluated and produced, and a sampled token printed but not yet evaluated
 * (a reply cut by -n: the next turn evaluates it first). */
typedef struct tp_gen {
  topos_llama_context *ctx;
  topos_tokenizer *tok;
  topos_sampler *sampler;
  const topos_llama_config *c;
  float *logits;
  long ctx_len;
  int32_t pending;
  long prompt_tokens, generated, gen_tokens, last_generated;
  double prompt_s, gen_s;
  int full_in_prompt; /* the context filled before a turn's text fit */
} tp_gen;

/* A line of stdin without its newline; 0 at the end of input. */
static int tp_read_line(char **line, size_t *cap) {
  ssize_t n = getline(line, cap, stdin);
  if (n < 0) return 0;
  while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) (*line)[--n] = '\0';
  return 1;
}

/* before, then the user's turn in format (NULL on failure, reported). */
static char *tp_chat_text(topos_chat_format format, const char *system, const char *user, const char *before) {
  size_t need = 0, lead = strlen(before);
  topos_chat_turn(format, system, user, NULL, 0, &need);
  topos_clear_error();
  char *text = malloc(lead + need + 1);
  topos_status st = text ? TOPOS_OK : TOPOS_ERR_OUT_OF_MEMORY;
  if (text) {
    memcpy(text, before, lead);
    st = topos_chat_turn(format, system, user, text + lead, need + 1, &need);
  }
  if (st != TOPOS_OK) {
    tp_cli_fail("generate", st, "--chat");
    free(text);
    return NULL;
  }
  return text;
}

/* Evaluates the pending token and text's tokens, then samples, prints and
 * evaluates up to n_predict tokens, stopping at an end-of-generation token.
 * Sampling a token needs no slot of the context; evaluating it does: the
 * last token that fits is sampled, printed, and not evaluated (*full). 0, or
 * 1 after reporting a failure. */
static int tp_gen_turn(tp_gen *g, const char *text, unsigned flags, long n_predict, int *full) {
  size_t n = 0, len = strlen(text);
  topos_tokenizer_encode(g->tok, text, len, flags, NULL, 0, &n);
  topos_clear_error();
  int32_t *ids = malloc((n + 2) * sizeof *ids);
  if (!ids) return tp_cli_fail("generate", TOPOS_ERR_OUT_OF_MEMORY, "tokens"), 1;
  size_t at = 0;
  if (g->pending != TOPOS_TOKEN_NONE) ids[at++] = g->pending;
  topos_status st = topos_tokenizer_encode(g->tok, text, len, flags, ids + at, n + 1, &n);
  if (st != TOPOS_OK) {
    free(ids);
    return tp_cli_fail("generate", st, "tokenizing the prompt"), 1;
  }
  n += at;
  if (topos_llama_position(g->ctx) + (int64_t)n > g->ctx_len) {
    free(ids);
    *full = g->full_in_prompt = 1;
    return 0;
  }
  g->pending = TOPOS_TOKEN_NONE;
  double t0 = tp_cli_now();
  st = n ? topos_llama_eval(g->ctx, ids, (int64_t)n, 0, g->logits) : TOPOS_OK;
  for (size_t i = 0; i < n; ++i) topos_sampler_accept(g->sampler, ids[i]);
  free(ids);
  if (st != TOPOS_OK) return tp_cli_fail("generate", st, "prompt"), 1;
  double t1 = tp_cli_now();
  g->prompt_tokens += (long)n, g->prompt_s += t1 - t0;
  long generated = 0;
  char piece[256];
  while (generated < n_predict) {
    int32_t next;
    if ((st = topos_sampler_sample(g->sampler, g->logits, (int)g->c->n_vocab, &next)) != TOPOS_OK)
      return tp_cli_fail("generate", st, "sampling"), 1;
    topos_sampler_accept(g->sampler, next);
    ++generated;
    if (topos_tokenizer_is_eog(g->tok, next)) break;
    size_t plen = 0;
    if (topos_tokenizer_decode_token(g->tok, next, piece, sizeof piece, &plen) == TOPOS_OK) {
      fwrite(piece, 1, plen, stdout);
      fflush(stdout);
    }
    if (generated == n_predict) {
      g->pending = next;
      break;
    }
    if (topos_llama_position(g->ctx) >= g->ctx_len) {
      *full = 1;
      break;
    }
    if ((st = topos_llama_eval(g->ctx, &next, 1, 0, g->logits)) != TOPOS_OK)
      return tp_cli_fail("generate", st, "decode"), 1;
  }
  double t2 = tp_cli_now();
  g->generated += generated, g->last_generated = generated;
  if (generated > 1) g->gen_tokens += generated - 1, g->gen_s += t2 - t1;
  return 0;
}

static int tp_generate(int argc, char **argv) {
  const char *path = NULL, *prompt = "", *system = NULL;
  long n_predict = 64, threads = 0, ctx_len = 0, top_k = 0, last_n = 0;
  unsigned long long seed = 42;
  topos_sampler_params sp = topos_sampler_params_default();
  int exact = 0, chat = 0, interactive = 0;
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
    if (strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0) {
      interactive = 1;
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
  if (interactive && !chat) {
    fprintf(stderr, "topos generate: -i (a conversation, one user turn per line of input) needs --chat\n");
    return 2;
  }
  if (threads > 0 && topos_set_threads((int)threads) != TOPOS_OK)
    return tp_cli_fail("generate", TOPOS_ERR_INVALID_ARGUMENT, "--threads");

  topos_llama *model = NULL;
  topos_tokenizer *tok = NULL;
  topos_sampler *sampler = NULL;
  tp_gen g = {0};
  g.pending = TOPOS_TOKEN_NONE;
  char *turn = NULL, *line = NULL; /* --chat: a turn in the model's chat format; -i: a line read */
  size_t line_cap = 0;
  int rc = 1;
  topos_status st = topos_llama_open(path, &model);
  if (st != TOPOS_OK) return tp_cli_fail("generate", st, path);
  const topos_llama_config *c = topos_llama_config_of(model);
  g.c = c;
  if ((st = topos_tokenizer_from_gguf(topos_llama_gguf(model), &tok)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "tokenizer");
    goto done;
  }
  g.tok = tok;
  if ((st = topos_sampler_new(&sp, seed, &sampler)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "sampler");
    goto done;
  }
  g.sampler = sampler;
  topos_chat_format format = TOPOS_CHAT_UNKNOWN;
  if (chat) {
    const char *tmpl = NULL;
    if (topos_gguf_get_string(topos_llama_gguf(model), "tokenizer.chat_template", &tmpl, NULL) != TOPOS_OK) {
      fprintf(stderr, "topos generate: --chat: the file has no tokenizer.chat_template\n");
      goto done;
    }
    format = topos_chat_detect(tmpl);
    if (format == TOPOS_CHAT_UNKNOWN) {
      fprintf(stderr, "topos generate: --chat: the file's chat template is none of ChatML, Llama 3, Gemma, "
              "Zephyr, Llama 2, Phi-3, Phi-4, Mistral v7, Granite, EXAONE, gpt-oss (it starts \"%.60s\")\n", tmpl);
      goto done;
    }
  }
  /* -i without -p: the first turn is the first line read */
  const int tty = isatty(0);
  if (interactive && !*prompt) {
    if (tty) fputs("> ", stderr);
    if (!tp_read_line(&line, &line_cap)) {
      rc = 0;
      goto done;
    }
    prompt = line;
  }
  if (chat && !(turn = tp_chat_text(format, system, prompt, ""))) goto done;
  const char *text = chat ? turn : prompt;
  unsigned flags = TOPOS_TOKENIZE_ADD_SPECIAL | (chat ? TOPOS_TOKENIZE_PARSE_SPECIAL : 0);
  size_t n_prompt = 0, len = strlen(text);
  topos_tokenizer_encode(tok, text, len, flags, NULL, 0, &n_prompt);
  topos_clear_error();
  if (ctx_len <= 0) { /* one exchange: the prompt and -n; a conversation: room for several */
    ctx_len = interactive ? 4096 : (long)n_prompt + n_predict;
    if (ctx_len > c->n_ctx_train) ctx_len = (long)c->n_ctx_train;
  }
  g.ctx_len = ctx_len;
  g.logits = malloc((size_t)c->n_vocab * sizeof *g.logits);
  if (!g.logits) {
    fprintf(stderr, "topos generate: out of memory\n");
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
  if ((st = topos_llama_context_new(model, &o, &g.ctx)) != TOPOS_OK) {
    tp_cli_fail("generate", st, "context");
    goto done;
  }
  if (!chat) { /* the text continues the prompt; a chat reply stands alone */
    fwrite(prompt, 1, len, stdout);
    fflush(stdout);
  }
  int full = 0, turns = 0;
  for (;;) {
    if (tp_gen_turn(&g, text, flags, n_predict, &full) != 0) goto done;
    if (g.full_in_prompt) break;
    ++turns;
    if (!interactive || full) break;
    /* the next user line closes this reply and opens the next turn */
    fputs("\n", stdout);
    fflush(stdout);
    if (tty) fputs("> ", stderr);
    if (!tp_read_line(&line, &line_cap)) break;
    free(turn);
    if (!(turn = tp_chat_text(format, NULL, line, topos_chat_reply_end(format)))) goto done;
    text = turn;
    flags = TOPOS_TOKENIZE_PARSE_SPECIAL; /* BOS only at the start */
  }
  char turns_note[32] = "";
  if (interactive) snprintf(turns_note, sizeof turns_note, "%d turn%s; ", turns, turns == 1 ? "" : "s");
  printf("\n\n%sprompt: %ld token%s, %.1f tokens/s; generation: %ld token%s, %.1f tokens/s "
         "(%d threads, %s)\n", turns_note, g.prompt_tokens,
         g.prompt_tokens == 1 ? "" : "s", g.prompt_s > 0 ? (double)g.prompt_tokens / g.prompt_s : 0.0, g.generated,
         g.generated == 1 ? "" : "s", g.gen_tokens > 0 ? (double)g.gen_tokens / g.gen_s : 0.0, topos_threads(),
         exact ? "exact" : "fast");
  fflush(stdout);
  if (full && g.full_in_prompt)
    fprintf(stderr, "topos generate: stopped: the next turn does not fit the context of %ld tokens (--ctx)\n",
            ctx_len);
  else if (full)
    fprintf(stderr, "topos generate: stopped after %ld of %ld tokens: the context of %ld token%s is full "
            "(--ctx)\n", g.last_generated, n_predict, ctx_len, ctx_len == 1 ? "" : "s");
  rc = 0;
done:
  topos_llama_context_free(g.ctx);
  topos_sampler_free(sampler);
  topos_tokenizer_free(tok);
  topos_llama_free(model);
  free(g.logits);
  free(turn);
  free(line);
  return rc;
usage:
  fprintf(stderr, "usage: topos generate MODEL.gguf -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
          "         [--min-p P] [--repeat-penalty R] [--repeat-last-n N] [--seed S] [--threads T]\n"
          "         [--ctx C] [--kv f32|f16|bf16] [--exact] [--chat [--system TEXT] [-i]]\n"
          "sampling defaults: --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05, no repeat penalty\n"
          "(window 64); --temp 0 is greedy. --ctx 0 (default): the prompt plus -n, at most the\n"
          "model's training context. --chat: the prompt as a user turn in the file's chat format\n"
          "(ChatML, Llama 3, Gemma, Zephyr, Llama 2, Phi-3, Phi-4, Mistral v7, Granite, EXAONE,\n"
          "gpt-oss; tokenizer.chat_template), the reply alone.\n"
          "-i (with --chat): a conversation, one user turn per line of input (the first is -p\n"
          "when given), each reply after the last in one cache; --ctx 0 gives it 4096 tokens.\n");
  return 2;
}

TOPOS_COMMAND("generate", "generate text from a llama GGUF model", tp_generate)
