/* Byte-level BPE ("gpt2") tokenizer: hand-derived encodings of a toy
 * merges table, the pre-tokenizer names, special tokens and round trips of
 * arbitrary bytes (the pre-tokenizers' own splits: tokenizer_pretok_test.c). */
#include "models/tokenizer_internal.h"
#include "tok_util.h"

/* ---- the toy BPE vocabulary: ids 0..255 are the bytes' code points */
enum { T_HE = 256, T_LL, T_HELL, T_HELLO, T_GW, T_OR, T_LD, T_GWOR, T_GWORLD, T_20,
       T_EOT, T_IMS, T_TOOL, T_XYZ };

static void bpe_vocab(tt_vocab *v) {
  memset(v, 0, sizeof *v);
  for (int b = 0; b < 256; b++) {
    unsigned char utf8[4];
    size_t len = tp_utf8_encode(tp_byte_to_unicode((uint8_t)b), utf8);
    tt_vocab_add(v, (const char *)utf8, len, 0, TOPOS_TOKEN_NORMAL);
  }
  static const char *const merged[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "ld",
                                       "\xC4\xA0wor", "\xC4\xA0world", "20"};
  for (size_t i = 0; i < sizeof merged / sizeof merged[0]; i++) tt_add(v, merged[i], 0);
  tt_vocab_add(v, "<|endoftext|>", 13, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<|im_start|>", 12, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<tool>", 6, 0, TOPOS_TOKEN_USER_DEFINED);
  tt_add(v, "xyz", 0); /* a token no merge reaches */
  static const char *const merges[] = {"h e",        "l l",     "he ll", "hell o",
                                       "\xC4\xA0 w", "o r",     "l d",   "\xC4\xA0w or",
                                       "\xC4\xA0wor ld", "2 0"};
  v->n_merges = (int)(sizeof merges / sizeof merges[0]);
  for (int i = 0; i < v->n_merges; i++) v->merges[i] = merges[i];
}

static topos_tokenizer *bpe_make(tt_vocab *v, const char *pre, int via_gguf) {
  bpe_vocab(v);
  topos_tokenizer_desc d = tt_desc(v, "gpt2");
  d.scores = NULL;
  d.pre = pre;
  d.bos_id = T_EOT, d.eos_id = T_EOT;
  topos_tokenizer *t = NULL;
  topos_status st = via_gguf ? tt_tokenizer_via_gguf(&d, &t) : topos_tokenizer_new(&d, &t);
  if (st != TOPOS_OK) {
    tt_fail_at(__FILE__, __LINE__, "building the toy BPE vocabulary: %s", topos_last_error());
    tt_vocab_free(v);
    return NULL;
  }
  return t;
}

TEST(tokenizer_bpe_known_encodings) {
  for (int via = 0; via < 2; via++) {
    tt_vocab v;
    topos_tokenizer *t = bpe_make(&v, NULL, via);
    CHECK(t);
    CHECK_EQ_INT(topos_tokenizer_kind_of(t), TOPOS_TOKENIZER_BPE);
    CHECK_EQ_INT(topos_tokenizer_add_space_prefix(t), 0);
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), 0);
    int32_t ids[64];
    long n = tt_encode(t, "hello world", 0, ids, 64);
    CHECK_IDS(ids, n, T_HELLO, T_GWORLD);
    n = tt_encode(t, "lld", 0, ids, 64); /* rank 1 (l l) before rank 6 (l d) */
    CHECK_IDS(ids, n, T_LL, 'd');
    n = tt_encode(t, " hello", 0, ids, 64);
    CHECK_IDS(ids, n, ' ', T_HELLO);
    n = tt_encode(t, "\xC3\xA9", 0, ids, 64); /* é: its two bytes' tokens */
    CHECK_IDS(ids, n, 0xC3, 0xA9);
    n = tt_encode(t, "hello", TOPOS_TOKENIZE_ADD_BOS | TOPOS_TOKENIZE_ADD_EOS, ids, 64);
    CHECK_IDS(ids, n, T_EOT, T_HELLO, T_EOT);
    n = tt_encode(t, "1120", 0, ids, 64); /* GPT-2 keeps the digits in one piece */
    CHECK_IDS(ids, n, '1', '1', T_20);
    n = tt_encode(t, "xyz", 0, ids, 64); /* merges only: no path to "xyz" */
    CHECK_IDS(ids, n, 'x', 'y', 'z');
    n = tt_encode(t, "hello\nworld", 0, ids, 64);
    CHECK_IDS(ids, n, T_HELLO, '\n', 'w', T_OR, T_LD);
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }
}

TEST(tokenizer_bpe_pre_variants) {
  tt_vocab v;
  int32_t ids[64];
  topos_tokenizer *t = bpe_make(&v, "llama-bpe", 0);
  CHECK(t);
  CHECK_EQ_INT(topos_tokenizer_add_bos(t), 1);
  long n = tt_encode(t, "1120", 0, ids, 64); /* "112" | "0" */
  CHECK_IDS(ids, n, '1', '1', '2', '0');
  n = tt_encode(t, "xyz", 0, ids, 64); /* ignore_merges: a whole word that is a token */
  CHECK_IDS(ids, n, T_XYZ);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);

  t = bpe_make(&v, "dbrx", 0); /* Llama 3's pattern, merges only */
  CHECK(t);
  n = tt_encode(t, "1120", 0, ids, 64);
  CHECK_IDS(ids, n, '1', '1', '2', '0');
  n = tt_encode(t, "xyz", 0, ids, 64);
  CHECK_IDS(ids, n, 'x', 'y', 'z');
  topos_tokenizer_free(t);
  tt_vocab_free(&v);

  t = bpe_make(&v, "smollm", 1);
  CHECK(t);
  n = tt_encode(t, "1120", 0, ids, 64); /* every digit alone */
  CHECK_IDS(ids, n, '1', '1', '2', '0');
  n = tt_encode(t, "hello world", 0, ids, 64);
  CHECK_IDS(ids, n, T_HELLO, T_GWORLD);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);

  t = bpe_make(&v, "tekken", 1); /* Mistral: BOS, digits alone, whole words taken whole */
  CHECK(t);
  CHECK_EQ_INT(topos_tokenizer_add_bos(t), 1);
  n = tt_encode(t, "1120", 0, ids, 64);
  CHECK_IDS(ids, n, '1', '1', '2', '0');
  n = tt_encode(t, "xyz", 0, ids, 64);
  CHECK_IDS(ids, n, T_XYZ);
  n = tt_encode(t, "Xhello", 0, ids, 64); /* one word by case: X then hello, merged as one piece */
  CHECK_IDS(ids, n, 'X', T_HELLO);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);

  /* llama.cpp's other names for the patterns: pixtral is Llama 3's (BOS, whole
   * words), exaone4 GPT-2's (no BOS, merges only), stablelm2 Qwen2's */
  static const struct { const char *name; int bos; int32_t xyz; } aliases[] = {
      {"pixtral", 1, T_XYZ}, {"exaone4", 0, -1}, {"stablelm2", 0, -1}};
  for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; ++a) {
    t = bpe_make(&v, aliases[a].name, 0);
    CHECK(t);
    if (!t) continue;
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), aliases[a].bos);
    n = tt_encode(t, "xyz", 0, ids, 64);
    if (aliases[a].xyz >= 0) CHECK_IDS(ids, n, T_XYZ);
    else CHECK_IDS(ids, n, 'x', 'y', 'z');
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }

  t = bpe_make(&v, "gpt-4o", 0); /* o200k: digits in threes, merges only */
  CHECK(t);
  CHECK_EQ_INT(topos_tokenizer_add_bos(t), 0);
  n = tt_encode(t, "1120", 0, ids, 64);
  CHECK_IDS(ids, n, '1', '1', '2', '0');
  n = tt_encode(t, "xyz", 0, ids, 64);
  CHECK_IDS(ids, n, 'x', 'y', 'z');
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* The DeepSeek, GLM and Kimi names (and Hunyuan-A13B's, Solar Open's, Grok-2's
 * and Ling's for Qwen2's list, MiniMax-M2's for gpt-4o's) through a GGUF
 * file's tokenizer.ggml.pre:
 * each is accepted and picks its list, told apart by "2020" (one digit
 * run for deepseek-llm: 20|20; one by one for deepseek-coder; groups of
 * three for deepseek-v3 and GLM's Llama 3 pattern: 202|0), by whether a
 * whole word that is a token skips the merges (glm4, glm5) and by BOS. */
TEST(tokenizer_bpe_pre_deepseek_and_glm) {
  enum { RUN, ONE, THREE };
  static const struct {
    const char *name;
    int digits, bos, whole;
  } names[] = {{"deepseek-llm", RUN, 0, 0},  {"deepseek-coder", ONE, 0, 0}, {"deepseek-v3", THREE, 0, 0},
               {"hunyuan-dense", THREE, 0, 0}, {"joyai-llm", THREE, 0, 0},  {"hy_v4", THREE, 0, 0},
               {"glm4", THREE, 0, 1},        {"glm5", THREE, 0, 1},        {"chatglm-bpe", THREE, 0, 0},
               {"jina-v5-nano", THREE, 1, 1}, {"minerva-7b", ONE, 0, 0},   {"kimi-k2", THREE, 0, 0},
               {"hunyuan", ONE, 0, 0},       {"solar-open", ONE, 0, 0},    {"grok-2", ONE, 0, 0},
               {"bailingmoe", ONE, 0, 0},    {"bailingmoe2", ONE, 0, 0},   {"llada-moe", ONE, 0, 0},
               {"minimax-m2", THREE, 0, 0}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    tt_vocab v;
    topos_tokenizer *t = bpe_make(&v, names[k].name, 1);
    CHECK_MSG(t != NULL, "pre-tokenizer %s refused", names[k].name);
    if (!t) continue;
    int32_t ids[64];
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), names[k].bos);
    long n = tt_encode(t, "2020", 0, ids, 64);
    if (names[k].digits == RUN) CHECK_IDS(ids, n, T_20, T_20);
    else if (names[k].digits == ONE) CHECK_IDS(ids, n, '2', '0', '2', '0');
    else CHECK_IDS(ids, n, T_20, '2', '0');
    n = tt_encode(t, "hello world", 0, ids, 64); /* the space stays with the word in every list */
    CHECK_IDS(ids, n, T_HELLO, T_GWORLD);
    n = tt_encode(t, "xyz", 0, ids, 64);
    if (names[k].whole) CHECK_IDS(ids, n, T_XYZ);
    else CHECK_IDS(ids, n, 'x', 'y', 'z');
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }
  /* deepseek-llm's letters are its written-out cased ones: "Hello" is
   * cut by its punctuation range (which holds A-Z and a-z) around é, and
   * the ASCII around it merged; deepseek-v3 keeps the word whole */
  tt_vocab v;
  topos_tokenizer *t = bpe_make(&v, "deepseek-llm", 0);
  CHECK(t);
  int32_t ids[64];
  long n = tt_encode(t, "h\xC3\xA9llo", 0, ids, 64);
  CHECK_IDS(ids, n, 'h', 0xC3, 0xA9, T_LL, 'o');
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
  t = bpe_make(&v, "deepseek-v3", 0);
  CHECK(t);
  n = tt_encode(t, "he\xC3\xA9llo", 0, ids, 64);
  CHECK_IDS(ids, n, T_HE, 0xC3, 0xA9, T_LL, 'o');
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

TEST(tokenizer_bpe_special_tokens) {
  tt_vocab v;
  topos_tokenizer *t = bpe_make(&v, NULL, 0);
  CHECK(t);
  int32_t ids[64];
  long n = tt_encode(t, "<|im_start|>hello<|endoftext|>", TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64);
  CHECK_IDS(ids, n, T_IMS, T_HELLO, T_EOT);
  /* unparsed: plain text ("<|", "im", "_", "start", "|>", "hello", ...) */
  n = tt_encode(t, "<|im_start|>hello", 0, ids, 64);
  CHECK_IDS(ids, n, '<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't', '|', '>', T_HELLO);
  n = tt_encode(t, "a<tool>b", 0, ids, 64); /* user-defined: always */
  CHECK_IDS(ids, n, 'a', T_TOOL, 'b');
  char buf[64];
  size_t len;
  CHECK_OK(topos_tokenizer_decode(t, ids, (size_t)n, 0, buf, sizeof buf, &len));
  CHECK(len == 8 && memcmp(buf, "a<tool>b", 8) == 0);
  int32_t seq[] = {T_IMS, T_HELLO, T_GWORLD, T_EOT};
  CHECK_OK(topos_tokenizer_decode(t, seq, 4, 0, buf, sizeof buf, &len));
  CHECK(len == 11 && memcmp(buf, "hello world", 11) == 0);
  CHECK_OK(topos_tokenizer_decode(t, seq, 4, TOPOS_DECODE_SPECIAL, buf, sizeof buf, &len));
  CHECK(len == 36 && memcmp(buf, "<|im_start|>hello world<|endoftext|>", 36) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, T_GWORLD, buf, sizeof buf, &len));
  CHECK(len == 6 && memcmp(buf, " world", 6) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, 0xC3, buf, sizeof buf, &len)); /* a raw byte */
  CHECK(len == 1 && (unsigned char)buf[0] == 0xC3);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, T_EOT), 1);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* Random byte strings (valid UTF-8 or not) survive encode -> decode. */
TEST(tokenizer_bpe_round_trips) {
  static const char *const pres[] = {"default", "llama-bpe", "smollm"};
  static const char alphabet[] = "hello world 2024 \n\t\r'sLL\xC3\xA9\xF0\x9F\x98\x80\xFF!?";
  for (size_t p = 0; p < 3; p++) {
    tt_vocab v;
    topos_tokenizer *t = bpe_make(&v, pres[p], 0);
    CHECK(t);
    topos_rng rng = topos_rng_seed(42 + p);
    char text[64], back[128];
    int32_t ids[128];
    for (int iter = 0; iter < 300; iter++) {
      size_t n = (size_t)(topos_rng_next(&rng) % 48);
      for (size_t i = 0; i < n; i++) {
        uint64_t r = topos_rng_next(&rng);
        text[i] = (r & 3) ? alphabet[(r >> 8) % (sizeof alphabet - 1)] : (char)(r >> 16);
      }
      size_t count, len;
      CHECK_OK(topos_tokenizer_encode(t, text, n, TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 128, &count));
      CHECK_OK(topos_tokenizer_decode(t, ids, count, 0, back, sizeof back, &len));
      CHECK_MSG(len == n && memcmp(back, text, n) == 0, "pre %s: round trip %d differs", pres[p],
                iter);
    }
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }
}

/* End of generation as llama.cpp decides it: eos, eot, and every token whose
 * text is an end-of-turn marker, whether or not the file names it (Llama 3
 * base files: eos <|end_of_text|>, no eot key, turns end at <|eot_id|> and
 * tool calls at <|eom_id|>). Where no eot is named, the first marker of the
 * list the vocabulary has becomes it. */
TEST(tokenizer_end_of_generation_markers) {
  tt_vocab v = {0};
  for (int b = 'a'; b <= 'z'; b++) {
    char one = (char)b;
    tt_vocab_add(&v, &one, 1, 0, TOPOS_TOKEN_NORMAL);
  }
  const int end_text = tt_vocab_add(&v, "<|end_of_text|>", 15, 0, TOPOS_TOKEN_CONTROL);
  const int im_end = tt_vocab_add(&v, "<|im_end|>", 10, 0, TOPOS_TOKEN_CONTROL);
  const int eom = tt_vocab_add(&v, "<|eom_id|>", 10, 0, TOPOS_TOKEN_CONTROL);
  const int eot = tt_vocab_add(&v, "<|eot_id|>", 10, 0, TOPOS_TOKEN_CONTROL);
  const int header = tt_vocab_add(&v, "<|start_header_id|>", 19, 0, TOPOS_TOKEN_CONTROL);
  const int plain = tt_add(&v, "end", 0);
  topos_tokenizer_desc d = tt_desc(&v, "gpt2");
  d.pre = "llama-bpe";
  d.eos_id = end_text;
  topos_tokenizer *t = NULL;
  CHECK_OK(topos_tokenizer_new(&d, &t));
  CHECK_EQ_INT(topos_tokenizer_eot(t), eot); /* <|eot_id|> first in the list, before <|im_end|> */
  CHECK_EQ_INT(topos_tokenizer_eos(t), end_text);
  const int ends[] = {end_text, im_end, eom, eot};
  for (int i = 0; i < 4; i++) CHECK_MSG(topos_tokenizer_is_eog(t, ends[i]), "token %d ends generation", ends[i]);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, header), 0);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, plain), 0);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, 'e' - 'a'), 0);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, TOPOS_TOKEN_NONE), 0);
  topos_tokenizer_free(t);
  /* an eot the file names stays; the markers still end generation */
  d.eot_id = im_end;
  CHECK_OK(topos_tokenizer_new(&d, &t));
  CHECK_EQ_INT(topos_tokenizer_eot(t), im_end);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, eot), 1);
  topos_tokenizer_free(t);
  /* a vocabulary without markers: eos alone */
  tt_vocab w = {0};
  for (int b = 'a'; b <= 'z'; b++) {
    char one = (char)b;
    tt_vocab_add(&w, &one, 1, 0, TOPOS_TOKEN_NORMAL);
  }
  const int eos = tt_vocab_add(&w, "</s>", 4, 0, TOPOS_TOKEN_CONTROL);
  topos_tokenizer_desc e = tt_desc(&w, "gpt2");
  e.eos_id = eos;
  CHECK_OK(topos_tokenizer_new(&e, &t));
  CHECK_EQ_INT(topos_tokenizer_eot(t), TOPOS_TOKEN_NONE);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, eos), 1);
  for (int b = 0; b < 26; b++) CHECK_EQ_INT(topos_tokenizer_is_eog(t, b), 0);
  topos_tokenizer_free(t);
  /* gpt-oss's Harmony: <|return|> and <|call|> end generation, <|end|> (the
   * end of the analysis message before the final one) does not */
  const int end = tt_vocab_add(&w, "<|end|>", 7, 0, TOPOS_TOKEN_CONTROL);
  const int ret = tt_vocab_add(&w, "<|return|>", 10, 0, TOPOS_TOKEN_CONTROL);
  e = tt_desc(&w, "gpt2");
  e.eos_id = eos;
  CHECK_OK(topos_tokenizer_new(&e, &t));
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, end), 1); /* no <|call|> yet: not Harmony's vocabulary */
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, ret), 1);
  topos_tokenizer_free(t);
  const int call = tt_vocab_add(&w, "<|call|>", 8, 0, TOPOS_TOKEN_CONTROL);
  e = tt_desc(&w, "gpt2");
  e.eos_id = ret;
  CHECK_OK(topos_tokenizer_new(&e, &t));
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, end), 0);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, ret), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, call), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, eos), 0);
  topos_tokenizer_free(t);
  /* Kimi K2's markers: [EOS], [EOT] end generation; <|im_end|> is the eot */
  tt_vocab k = {0};
  tt_add(&k, "a", 0);
  const int k_eos = tt_vocab_add(&k, "[EOS]", 5, 0, TOPOS_TOKEN_CONTROL);
  const int k_im_end = tt_vocab_add(&k, "<|im_end|>", 10, 0, TOPOS_TOKEN_CONTROL);
  const int k_eot = tt_vocab_add(&k, "[EOT]", 5, 0, TOPOS_TOKEN_CONTROL);
  const int k_bos = tt_vocab_add(&k, "[BOS]", 5, 0, TOPOS_TOKEN_CONTROL);
  e = tt_desc(&k, "gpt2");
  e.pre = "kimi-k2";
  e.eos_id = k_im_end;
  CHECK_OK(topos_tokenizer_new(&e, &t));
  CHECK_EQ_INT(topos_tokenizer_eot(t), k_im_end);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, k_eos), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, k_eot), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, k_bos), 0);
  topos_tokenizer_free(t);
  tt_vocab_free(&k);
  tt_vocab_free(&w);
  tt_vocab_free(&v);
}
