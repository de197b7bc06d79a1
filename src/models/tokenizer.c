/* Tokenizer construction from plain arrays: validation of every vocabulary
 * entry (the arrays usually come from an untrusted file), the lookup tables,
 * and the accessors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/tokenizer_internal.h"

topos_tokenizer_desc topos_tokenizer_desc_default(void) {
  topos_tokenizer_desc d;
  memset(&d, 0, sizeof d);
  d.bos_id = d.eos_id = d.eot_id = d.unk_id = d.pad_id = TOPOS_TOKEN_NONE;
  d.add_bos = d.add_eos = d.add_space_prefix = -1;
  return d;
}

void topos_tokenizer_free(topos_tokenizer *t) {
  if (!t) return;
  free(t->text);
  free(t->offsets);
  free(t->scores);
  free(t->types);
  free(t->byte_value);
  tp_strmap_free(&t->token_map);
  free(t->merge_text);
  free(t->merge_offsets);
  tp_strmap_free(&t->merge_map);
  free(t->specials);
  free(t);
}

static int tp_hex_digit(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

/* "<0xXX>" -> byte, else -1. */
static int tp_parse_byte_token(const char *s, size_t n) {
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
  int hi = tp_hex_digit(s[3]), lo = tp_hex_digit(s[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

/* The names llama.cpp reads in tokenizer.ggml.pre, by the list of
 * expressions they select (its llama-vocab.cpp); a name is here only where
 * that list is the same expression for expression. clean_spaces, which only
 * its detokenizer reads, plays no part here. *bos is the default of add_bos
 * (a file's add_bos_token wins). */
static topos_status tp_pre_from_name(const char *name, tp_pre_kind *out, int *ignore_merges, int *bos) {
  static const char *const gpt2[] = {"default",    "gpt2",        "gpt-2",        "phi-2",       "jina-es",
                                     "jina-de",    "gigachat",    "jina-v1-en",   "jina-v2-es",  "jina-v2-de",
                                     "jina-v2-code", "roberta-bpe", "exaone4",     "a.x-4.0",     "mellum",
                                     "modern-bert", "olmo",       "mpt"};
  static const char *const llama3[] = {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1",
                                       "pixtral",   "midm-2.0", "lfm2",   "jina-v5-nano"};
  static const char *const llama3_merged[] = {"dbrx", "smaug-bpe"}; /* its pattern, every merge applied */
  /* GLM-4's list is Llama 3's expression; llama.cpp gives these files no
   * BOS (special_bos_id null) and skips the merges for whole tokens under
   * glm4 / glm5 only */
  static const char *const glm4[] = {"glm4", "glm5"};
  static const char *const chatglm[] = {"chatglm-bpe"};
  /* Hunyuan-A13B's, Solar Open's and Grok-2's lists are Qwen2's; Ling's (bailingmoe, bailingmoe2,
   * llada-moe) too: its \s*[\r\n] ends where \s*[\r\n]+ does (after a run's last newline), and
   * its possessive quantifiers give nothing back that Qwen2's greedy ones would use */
  static const char *const qwen2[] = {"qwen2",      "deepseek-r1-qwen", "megrez",      "kormo",     "f2llmv2",
                                      "stablelm2",  "hunyuan",          "solar-open",  "grok-2",    "bailingmoe",
                                      "bailingmoe2", "llada-moe"};
  static const char *const qwen35[] = {"qwen35"};
  static const char *const digits[] = {"smollm",    "starcoder", "refact",  "command-r",
                                       "codeshell", "exaone",    "minerva", "minerva-7b", "mellum2"};
  static const char *const tekken[] = {"tekken"};
  static const char *const gpt4o[] = {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"};
  static const char *const deepseek_llm[] = {"deepseek-llm"};
  static const char *const deepseek_coder[] = {"deepseek-coder"};
  /* Hunyuan's dense models, JoyAI and HY v4 name DeepSeek-V3's list under their own names */
  static const char *const deepseek_v3[] = {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"};
  /* Kimi K2, K2-Instruct, K2-Thinking (and Kimi-Linear's and K3's files, whose
   * tiktoken vocabulary is K2's) */
  static const char *const kimi_k2[] = {"kimi-k2"};
#define TP_NAMES(a) a, sizeof a / sizeof *a
  static const struct {
    const char *const *names;
    size_t n;
    tp_pre_kind kind;
    int ignore_merges, bos;
  } kinds[] = {{TP_NAMES(gpt2), TP_PRE_GPT2, 0, 0},
               {TP_NAMES(llama3), TP_PRE_LLAMA3, 1, 1},
               {TP_NAMES(llama3_merged), TP_PRE_LLAMA3, 0, 1},
               {TP_NAMES(glm4), TP_PRE_LLAMA3, 1, 0},
               {TP_NAMES(chatglm), TP_PRE_LLAMA3, 0, 0},
               {TP_NAMES(qwen2), TP_PRE_QWEN2, 0, 0},
               {TP_NAMES(qwen35), TP_PRE_QWEN35, 0, 0},
               {TP_NAMES(digits), TP_PRE_DIGITS_GPT2, 0, 0},
               {TP_NAMES(tekken), TP_PRE_TEKKEN, 1, 1},
               {TP_NAMES(gpt4o), TP_PRE_GPT4O, 0, 0},
               {TP_NAMES(deepseek_llm), TP_PRE_DEEPSEEK_LLM, 0, 0},
               {TP_NAMES(deepseek_coder), TP_PRE_DEEPSEEK_CODER, 0, 0},
               {TP_NAMES(deepseek_v3), TP_PRE_DEEPSEEK_V3, 0, 0},
               {TP_NAMES(kimi_k2), TP_PRE_KIMI_K2, 0, 0}};
#undef TP_NAMES
  *ignore_merges = 0;
  *bos = 0;
  if (!name) name = "default";
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (size_t i = 0; i < kinds[k].n; i++)
      if (!strcmp(name, kinds[k].names[i])) {
        *out = kinds[k].kind;
        *ignore_merges = kinds[k].ignore_merges;
        *bos = kinds[k].bos;
        return TOPOS_OK;
      }
  return tp_fail(TOPOS_UNSUPPORTED,
                 "tokenizer: pre-tokenizer \"%.64s\" is not supported (known: the gpt2, llama-bpe, "
                 "qwen2, smollm, tekken, gpt-4o, deepseek-llm, deepseek-coder, deepseek-v3, glm4 and kimi-k2 "
                 "patterns under the names include/topos/tokenizer.h lists, dbrx, smaug-bpe)",
                 name);
}

static topos_status tp_check_special(const char *what, int32_t id, int64_t n) {
  if (id == TOPOS_TOKEN_NONE || (id >= 0 && id < n)) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_RANGE, "tokenizer: %s id %d is outside the vocabulary of %lld tokens",
                 what, (int)id, (long long)n);
}

static size_t tp_len_of(const char *const *strings, const size_t *lengths, int64_t i) {
  if (lengths) return lengths[i];
  return strings[i] ? strlen(strings[i]) : 0;
}

/* Copies token texts into one buffer and validates each. */
static topos_status tp_load_tokens(topos_tokenizer *t, const topos_tokenizer_desc *d) {
  int64_t n = d->n_tokens;
  if (n <= 0 || n > TOPOS_TOKENIZER_MAX_TOKENS) /* checked by tp_build; keeps sizes provable */
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer: %lld tokens", (long long)n);
  size_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len = tp_len_of(d->tokens, d->token_lengths, i);
    if (len > 0 && !d->tokens[i])
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer: token %lld is NULL", (long long)i);
    if (len > TOPOS_TOKENIZER_MAX_TOKEN_BYTES)
      return tp_fail(TOPOS_ERR_RANGE, "tokenizer: token %lld is %zu bytes long (at most %d)",
                     (long long)i, len, TOPOS_TOKENIZER_MAX_TOKEN_BYTES);
    total += len; /* n * 65536 < 2^40: no overflow */
  }
  t->text = malloc(total ? total : 1);
  t->offsets = malloc(((size_t)n + 1) * sizeof *t->offsets);
  t->scores = calloc((size_t)n, sizeof *t->scores);
  t->types = malloc((size_t)n);
  t->byte_value = calloc((size_t)n, 1);
  if (!t->text || !t->offsets || !t->scores || !t->types || !t->byte_value)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %lld tokens (%zu bytes)", (long long)n,
                   total);
  size_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len = tp_len_of(d->tokens, d->token_lengths, i);
    int32_t type = d->types ? d->types[i] : TOPOS_TOKEN_NORMAL;
    /* without a type array, SPM (and gemma4) byte pieces are still byte
     * tokens (so that what byte fallback emits decodes back to the byte) */
    if (!d->types && t->kind != TOPOS_TOKENIZER_BPE &&
        tp_parse_byte_token(len ? d->tokens[i] : "", len) >= 0)
      type = TOPOS_TOKEN_BYTE;
    if (type < TOPOS_TOKEN_UNDEFINED || type > TOPOS_TOKEN_BYTE)
      return tp_fail(TOPOS_ERR_BAD_TYPE, "tokenizer: token %lld has type %d (expected 0..6)",
                     (long long)i, (int)type);
    const char *s = len ? d->tokens[i] : "";
    if (type == TOPOS_TOKEN_BYTE) {
      int b = tp_parse_byte_token(s, len);
      if (b < 0)
        return tp_fail(TOPOS_ERR_FORMAT,
                       "tokenizer: token %lld has type byte but its text \"%.*s\" is not <0xXX>",
                       (long long)i, (int)(len < 32 ? len : 32), s);
      t->byte_value[i] = (uint8_t)b;
    } else if (type != TOPOS_TOKEN_UNUSED && !tp_utf8_valid(s, len)) {
      return tp_fail(TOPOS_ERR_BAD_STRING, "tokenizer: token %lld (%zu bytes) is not valid UTF-8",
                     (long long)i, len);
    }
    if (d->scores) {
      if (isnan(d->scores[i]))
        return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: token %lld has a NaN score", (long long)i);
      t->scores[i] = d->scores[i];
    }
    t->types[i] = (uint8_t)type;
    t->offsets[i] = at;
    if (len) memcpy(t->text + at, s, len);
    at += len;
  }
  t->offsets[n] = at;
  TP_TRY(tp_strmap_init(&t->token_map, (size_t)n, "tokenizer: token texts"));
  for (int32_t i = 0; i < (int32_t)n; i++) {
    size_t len;
    const char *s = tp_tok_text(t, i, &len);
    (void)tp_strmap_put(&t->token_map, s, len, i, true);
  }
  return TOPOS_OK;
}

static topos_status tp_load_merges(topos_tokenizer *t, const topos_tokenizer_desc *d) {
  int64_t n = d->n_merges;
  if (n < 0 || n > TOPOS_TOKENIZER_MAX_TOKENS)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer: %lld merges (at most %d)", (long long)n,
                   TOPOS_TOKENIZER_MAX_TOKENS);
  if (n > 0 && !d->merges)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer: %lld merges but no merge array",
                   (long long)n);
  size_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len = tp_len_of(d->merges, d->merge_lengths, i);
    if (len > 0 && !d->merges[i])
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer: merge %lld is NULL", (long long)i);
    if (len > 2 * TOPOS_TOKENIZER_MAX_TOKEN_BYTES + 1)
      return tp_fail(TOPOS_ERR_RANGE, "tokenizer: merge %lld is %zu bytes long", (long long)i,
                     len);
    total += len;
  }
  t->n_merges = (int32_t)n;
  t->merge_text = malloc(total ? total : 1);
  t->merge_offsets = malloc(((size_t)n + 1) * sizeof *t->merge_offsets);
  if (!t->merge_text || !t->merge_offsets)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %lld merges", (long long)n);
  TP_TRY(tp_strmap_init(&t->merge_map, (size_t)n, "tokenizer: merges"));
  size_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len = tp_len_of(d->merges, d->merge_lengths, i);
    const char *s = len ? d->merges[i] : "";
    /* "left right": the separator is the first space after the first byte
     * (a left part may itself start with a space), both parts non-empty. */
    const char *sep = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    if (!sep || sep == s + len - 1)
      return tp_fail(TOPOS_ERR_FORMAT,
                     "tokenizer: merge %lld \"%.*s\" is not two parts separated by a space",
                     (long long)i, (int)(len < 64 ? len : 64), s);
    if (!tp_utf8_valid(s, len))
      return tp_fail(TOPOS_ERR_BAD_STRING, "tokenizer: merge %lld is not valid UTF-8",
                     (long long)i);
    memcpy(t->merge_text + at, s, len);
    t->merge_offsets[i] = at;
    (void)tp_strmap_put(&t->merge_map, t->merge_text + at, len, (int32_t)i, false);
    at += len;
  }
  t->merge_offsets[n] = at;
  return TOPOS_OK;
}

/* The token byte fallback emits for each byte: SPM's "<0xXX>" or else the
 * byte itself; gemma4's "<0xXX>" only (llama.cpp drops a byte without one);
 * GPT-2's code point for the byte. */
static void tp_fill_byte_tokens(topos_tokenizer *t) {
  for (int b = 0; b < 256; b++) {
    int32_t id = -1;
    if (t->kind != TOPOS_TOKENIZER_BPE) {
      static const char hex[] = "0123456789ABCDEF";
      char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      id = tp_strmap_get(&t->token_map, name, 6);
      if (id < 0 && t->kind == TOPOS_TOKENIZER_SPM) {
        char one = (char)b;
        id = tp_strmap_get(&t->token_map, &one, 1);
      }
    } else {
      unsigned char utf8[4];
      size_t len = tp_utf8_encode(tp_byte_to_unicode((uint8_t)b), utf8);
      id = tp_strmap_get(&t->token_map, (const char *)utf8, len);
    }
    t->byte_token[b] = id;
  }
}

static int tp_compare_specials_stable(const topos_tokenizer *t, int32_t a, int32_t b) {
  size_t la = t->offsets[a + 1] - t->offsets[a], lb = t->offsets[b + 1] - t->offsets[b];
  if (la != lb) return la > lb ? -1 : 1;
  return a < b ? -1 : a > b;
}

/* Longest first, then by id: an insertion sort would be quadratic on big
 * vocabularies of added tokens, so a merge sort (no global state, thread-safe). */
static void tp_sort_specials(const topos_tokenizer *t, int32_t *ids, int32_t *tmp, size_t n) {
  if (n < 2) return;
  size_t half = n / 2;
  tp_sort_specials(t, ids, tmp, half);
  tp_sort_specials(t, ids + half, tmp, n - half);
  size_t i = 0, j = half, k = 0;
  while (i < half && j < n)
    tmp[k++] = tp_compare_specials_stable(t, ids[j], ids[i]) < 0 ? ids[j++] : ids[i++];
  while (i < half) tmp[k++] = ids[i++];
  while (j < n) tmp[k++] = ids[j++];
  memcpy(ids, tmp, n * sizeof *ids);
}

static topos_status tp_collect_specials(topos_tokenizer *t) {
  size_t n = 0;
  for (int32_t i = 0; i < t->n_tokens; i++) {
    uint8_t ty = t->types[i];
    if ((ty == TOPOS_TOKEN_CONTROL || ty == TOPOS_TOKEN_USER_DEFINED || ty == TOPOS_TOKEN_UNKNOWN) &&
        t->offsets[i + 1] > t->offsets[i])
      n++;
  }
  t->n_specials = n;
  if (!n) return TOPOS_OK;
  t->specials = malloc(n * sizeof *t->specials);
  int32_t *tmp = malloc(n * sizeof *tmp);
  if (!t->specials || !tmp) {
    free(tmp);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu special tokens", n);
  }
  n = 0;
  for (int32_t i = 0; i < t->n_tokens; i++) {
    uint8_t ty = t->types[i];
    if ((ty == TOPOS_TOKEN_CONTROL || ty == TOPOS_TOKEN_USER_DEFINED || ty == TOPOS_TOKEN_UNKNOWN) &&
        t->offsets[i + 1] > t->offsets[i])
      t->specials[n++] = i;
  }
  tp_sort_specials(t, t->specials, tmp, n);
  free(tmp);
  return TOPOS_OK;
}

/* End of generation as llama.cpp decides it: eos, eot, and every token whose
 * text is an end-of-turn marker of a common chat format, since files often
 * name only one of them (Llama 3 base files: eos <|end_of_text|>, while an
 * instruct turn ends at <|eot_id|>, a tool call at <|eom_id|>; SmolLM2:
 * eos <|im_end|>, and <|endoftext|> ends a document). A file that names no
 * eot gets the first marker of tp_eot_texts it has. */
static const char *const tp_eot_texts[] = {"<|eot_id|>",     "<|im_end|>", "<|end|>", "<end_of_turn>",
                                           "<|endoftext|>", "<EOT>",      "[EOT]",   "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"};
/* [EOT] and [EOS]: Kimi K2's (its turns end at <|im_end|>); <eos>, <turn|>
 * and <|tool_response>: Gemma 4's */
static const char *const tp_eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>",        "<end_of_turn>", "<|endoftext|>",
                                           "<|eom_id|>", "<EOT>",      "<|end_of_text|>", "[|endofturn|]",
                                           "<|return|>", "<|call|>",   "[EOT]",           "[EOS]",
                                           "<eos>",      "<turn|>",    "<|tool_response>"};

static int32_t tp_token_of(const topos_tokenizer *t, const char *text) {
  return tp_strmap_get(&t->token_map, text, strlen(text));
}

static void tp_add_eog(topos_tokenizer *t, int32_t id) {
  if (id == TOPOS_TOKEN_NONE) return;
  for (int i = 0; i < t->n_eog; i++)
    if (t->eog[i] == id) return;
  if (t->n_eog < TP_MAX_EOG) t->eog[t->n_eog++] = id;
}

static void tp_find_eog(topos_tokenizer *t) {
  for (size_t i = 0; t->eot == TOPOS_TOKEN_NONE && i < sizeof tp_eot_texts / sizeof tp_eot_texts[0]; i++) {
    int32_t id = tp_token_of(t, tp_eot_texts[i]);
    if (id >= 0) t->eot = id;
  }
  tp_add_eog(t, t->eos);
  tp_add_eog(t, t->eot);
  for (size_t i = 0; i < sizeof tp_eog_texts / sizeof tp_eog_texts[0]; i++) {
    int32_t id = tp_token_of(t, tp_eog_texts[i]);
    if (id >= 0) tp_add_eog(t, id);
  }
  /* gpt-oss's Harmony (o200k_harmony) ends a message with <|end|> and the
   * reply with <|return|> or <|call|>: an analysis message ends in <|end|>
   * before the final one begins, so there <|end|> does not end generation
   * (llama.cpp's rule: a vocabulary with <|return|> and <|call|>, or
   * <|calls|> and <|flush|>, drops it) */
  const int32_t end = tp_token_of(t, "<|end|>");
  const int harmony = tp_token_of(t, "<|return|>") >= 0 && tp_token_of(t, "<|call|>") >= 0;
  const int solar = tp_token_of(t, "<|calls|>") >= 0 && tp_token_of(t, "<|flush|>") >= 0;
  for (int i = 0; end >= 0 && (harmony || solar) && i < t->n_eog; i++)
    if (t->eog[i] == end) t->eog[i--] = t->eog[--t->n_eog];
}

static topos_status tp_build(topos_tokenizer *t, const topos_tokenizer_desc *d) {
  if (!d->model)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "tokenizer: no model name (\"llama\", \"gpt2\" or \"gemma4\")");
  int pre_bos = 0; /* the pre-tokenizer's default add_bos */
  int gpt2 = !strcmp(d->model, "gpt2");
  int granite = d->pre && !strcmp(d->pre, "granite-embed-multi-311m");
  if (!strcmp(d->model, "llama")) {
    t->kind = TOPOS_TOKENIZER_SPM;
  } else if (!strcmp(d->model, "gemma4") || (gpt2 && granite)) {
    /* llama.cpp's gemma4 pre-type (escaped spaces, raw UTF-8, BOS forced):
     * a gemma4 vocabulary's whatever tokenizer.ggml.pre says, and a gpt2
     * one's under granite-embed-multi-311m */
    t->kind = TOPOS_TOKENIZER_GEMMA4;
  } else if (gpt2) {
    t->kind = TOPOS_TOKENIZER_BPE;
    TP_TRY(tp_pre_from_name(d->pre, &t->pre, &t->ignore_merges, &pre_bos));
  } else {
    return tp_fail(TOPOS_UNSUPPORTED,
                   "tokenizer: model \"%.64s\" is not supported (only \"llama\", \"gpt2\" and "
                   "\"gemma4\")",
                   d->model);
  }
  if (d->n_tokens <= 0)
    return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: empty vocabulary (%lld tokens)",
                   (long long)d->n_tokens);
  if (d->n_tokens > TOPOS_TOKENIZER_MAX_TOKENS)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer: %lld tokens (at most %d)", (long long)d->n_tokens,
                   TOPOS_TOKENIZER_MAX_TOKENS);
  if (!d->tokens) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer: no token array");
  if (t->kind == TOPOS_TOKENIZER_SPM && !d->scores)
    return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: a \"llama\" vocabulary needs scores");
  if (t->kind != TOPOS_TOKENIZER_SPM && d->n_merges > 0 && !d->merges)
    return tp_fail(TOPOS_ERR_FORMAT, "tokenizer: a \"%s\" vocabulary needs merges", d->model);
  t->n_tokens = (int32_t)d->n_tokens;
  TP_TRY(tp_check_special("bos", d->bos_id, d->n_tokens));
  TP_TRY(tp_check_special("eos", d->eos_id, d->n_tokens));
  TP_TRY(tp_check_special("eot", d->eot_id, d->n_tokens));
  TP_TRY(tp_check_special("unknown", d->unk_id, d->n_tokens));
  TP_TRY(tp_check_special("padding", d->pad_id, d->n_tokens));
  TP_TRY(tp_load_tokens(t, d));
  if (t->kind != TOPOS_TOKENIZER_SPM) TP_TRY(tp_load_merges(t, d));
  tp_fill_byte_tokens(t);
  TP_TRY(tp_collect_specials(t));
  t->bos = d->bos_id, t->eos = d->eos_id, t->eot = d->eot_id;
  t->unk = d->unk_id, t->pad = d->pad_id;
  tp_find_eog(t);
  int spm = t->kind == TOPOS_TOKENIZER_SPM;
  t->add_bos = d->add_bos >= 0 ? !!d->add_bos : (spm || pre_bos);
  /* llama.cpp overrides a Gemma 4 file's add_bos_token false to true */
  if (t->kind == TOPOS_TOKENIZER_GEMMA4) t->add_bos = 1;
  t->add_eos = d->add_eos >= 0 ? !!d->add_eos : 0;
  t->add_space_prefix = d->add_space_prefix >= 0 ? !!d->add_space_prefix : spm;
  return TOPOS_OK;
}

topos_status topos_tokenizer_new(const topos_tokenizer_desc *desc, topos_tokenizer **out) {
  if (!desc || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer_new: desc and out must be set");
  *out = NULL;
  topos_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer_new: out of memory for the tokenizer");
  topos_status st = tp_build(t, desc);
  if (st != TOPOS_OK) {
    topos_tokenizer_free(t);
    return st;
  }
  *out = t;
  return TOPOS_OK;
}

/* ---- accessors */
/* NULL-safe: a NULL tokenizer has no tokens, no ids and no flags. */
topos_tokenizer_kind topos_tokenizer_kind_of(const topos_tokenizer *t) {
  return t ? t->kind : (topos_tokenizer_kind)0;
}
int32_t topos_tokenizer_vocab_size(const topos_tokenizer *t) { return t ? t->n_tokens : 0; }
int32_t topos_tokenizer_bos(const topos_tokenizer *t) { return t ? t->bos : TOPOS_TOKEN_NONE; }
int32_t topos_tokenizer_eos(const topos_tokenizer *t) { return t ? t->eos : TOPOS_TOKEN_NONE; }
int32_t topos_tokenizer_eot(const topos_tokenizer *t) { return t ? t->eot : TOPOS_TOKEN_NONE; }
int32_t topos_tokenizer_unk(const topos_tokenizer *t) { return t ? t->unk : TOPOS_TOKEN_NONE; }
int32_t topos_tokenizer_pad(const topos_tokenizer *t) { return t ? t->pad : TOPOS_TOKEN_NONE; }
int topos_tokenizer_add_bos(const topos_tokenizer *t) { return t ? t->add_bos : 0; }
int topos_tokenizer_add_eos(const topos_tokenizer *t) { return t ? t->add_eos : 0; }
int topos_tokenizer_add_space_prefix(const topos_tokenizer *t) {
  return t ? t->add_space_prefix : 0;
}

int topos_tokenizer_is_eog(const topos_tokenizer *t, int32_t id) {
  if (!t || id == TOPOS_TOKEN_NONE) return 0;
  for (int i = 0; i < t->n_eog; i++)
    if (t->eog[i] == id) return 1;
  return 0;
}

topos_token_type topos_tokenizer_token_type(const topos_tokenizer *t, int32_t id) {
  if (!t || id < 0 || id >= t->n_tokens) return TOPOS_TOKEN_UNDEFINED;
  return (topos_token_type)t->types[id];
}

topos_status topos_tokenizer_token_text(const topos_tokenizer *t, int32_t id, const char **text,
                                        size_t *length) {
  if (!t || !text || !length)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tokenizer_token_text: NULL argument");
  if (id < 0 || id >= t->n_tokens)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer_token_text: id %d outside 0..%d", (int)id,
                   (int)t->n_tokens - 1);
  *text = tp_tok_text(t, id, length);
  return TOPOS_OK;
}

int32_t topos_tokenizer_find(const topos_tokenizer *t, const char *text, size_t len) {
  if (!t || (!text && len)) return TOPOS_TOKEN_NONE;
  return tp_strmap_get(&t->token_map, text ? text : "", len);
}
