/* The "gemma4" tokenizer (Gemma 4 files): BPE by merge rank over raw UTF-8
 * with ▁ for spaces, the text cut into runs of newlines and runs of other
 * characters, "<0xXX>" byte fallback, BOS always added. The expected ids
 * were worked out by hand and agree with scripts/gemma4_tokenize_reference.py,
 * an independent implementation of llama.cpp's rules over the same toy
 * vocabulary. */
#include "tok_util.h"

/* ---- the toy vocabulary: specials, byte tokens <0x00>..<0xFE> (no <0xFF>),
 * then the pieces */
enum { T_PAD, T_EOS, T_BOS, T_UNK, T_TURN, T_TOOL, T_BYTES };
enum { T_SP = T_BYTES + 255, T_SP2, T_T, T_H, T_E, T_A, T_C, T_SPT, T_HE, T_SPTHE, T_AT, T_SPC,
       T_SPCAT, T_NL, T_NL2, T_NL4, T_SPDOG, T_COUNT };
#define B(x) (T_BYTES + (x)) /* the byte token of x < 0xFF */
#define SP "\xE2\x96\x81"    /* ▁ */

static void g4_vocab(tt_vocab *v) {
  memset(v, 0, sizeof *v);
  tt_vocab_add(v, "<pad>", 5, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<eos>", 5, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<bos>", 5, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<unk>", 5, 0, TOPOS_TOKEN_UNKNOWN);
  tt_vocab_add(v, "<turn|>", 7, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "<tool>", 6, 0, TOPOS_TOKEN_USER_DEFINED);
  for (int b = 0; b < 255; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    tt_vocab_add(v, name, 6, 0, TOPOS_TOKEN_BYTE);
  }
  static const char *const pieces[] = {SP,   SP SP,    "t", "h",      "e",      "a",
                                       "c",  SP "t",   "he", SP "the", "at",    SP "c",
                                       SP "cat", "\n", "\n\n", "\n\n\n\n", SP "dog"};
  for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) tt_add(v, pieces[i], -(float)i);
  /* rank = index: "t h" (6) is later than "h e" (1); "th" and "ca" are no
   * tokens; no merge reaches "\n\n\n\n" or "▁dog" */
  static const char *const merges[] = {SP " t", "h e", SP "t he", "a t",  SP " c",
                                       SP "c at", "t h", SP " " SP, "c a", "\n \n"};
  v->n_merges = (int)(sizeof merges / sizeof merges[0]);
  for (int i = 0; i < v->n_merges; i++) v->merges[i] = merges[i];
}

/* The file says add_bos_token false and names a pre-tokenizer that does not
 * exist: gemma4 overrides both, as llama.cpp. */
static topos_tokenizer *g4_make(tt_vocab *v, int via_gguf) {
  g4_vocab(v);
  topos_tokenizer_desc d = tt_desc(v, "gemma4");
  d.pre = "no-such-pre";
  d.bos_id = T_BOS, d.eos_id = T_EOS, d.unk_id = T_UNK, d.pad_id = T_PAD;
  d.add_bos = 0;
  topos_tokenizer *t = NULL;
  topos_status st = via_gguf ? tt_tokenizer_via_gguf(&d, &t) : topos_tokenizer_new(&d, &t);
  if (st != TOPOS_OK) {
    tt_fail_at(__FILE__, __LINE__, "building the toy gemma4 vocabulary: %s", topos_last_error());
    tt_vocab_free(v);
    return NULL;
  }
  return t;
}

TEST(tokenizer_gemma4_known_encodings) {
  for (int via = 0; via < 2; via++) {
    tt_vocab v;
    topos_tokenizer *t = g4_make(&v, via);
    CHECK(t);
    if (!t) continue;
    CHECK_EQ_INT(topos_tokenizer_vocab_size(t), T_COUNT);
    CHECK_EQ_INT(topos_tokenizer_kind_of(t), TOPOS_TOKENIZER_GEMMA4);
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), 1);
    CHECK_EQ_INT(topos_tokenizer_add_eos(t), 0);
    CHECK_EQ_INT(topos_tokenizer_add_space_prefix(t), 0);
    int32_t ids[64];
    /* one word across the space: h e (1), a t (3), ▁ c (4), ▁c at (5) */
    long n = tt_encode(t, "the cat", 0, ids, 64);
    CHECK_IDS(ids, n, T_T, T_HE, T_SPCAT);
    n = tt_encode(t, " the", 0, ids, 64); /* no space prefix: ▁t (0), then ▁t he (2) */
    CHECK_IDS(ids, n, T_SPTHE);
    n = tt_encode(t, "the", 0, ids, 64); /* h e (rank 1) before the leftmost t h (rank 6) */
    CHECK_IDS(ids, n, T_T, T_HE);
    n = tt_encode(t, "th", 0, ids, 64); /* merged to "th", not a token: its bytes */
    CHECK_IDS(ids, n, B('t'), B('h'));
    n = tt_encode(t, "cat", 0, ids, 64); /* a t (3) before c a (8) */
    CHECK_IDS(ids, n, T_C, T_AT);
    n = tt_encode(t, "ca", 0, ids, 64);
    CHECK_IDS(ids, n, B('c'), B('a'));
    n = tt_encode(t, "   ", 0, ids, 64); /* equal ranks: the leftmost pair first */
    CHECK_IDS(ids, n, T_SP2, T_SP);
    n = tt_encode(t, " dog", 0, ids, 64); /* a token no merge reaches is not taken whole */
    CHECK_IDS(ids, n, T_SP, B('d'), B('o'), B('g'));
    /* runs of newlines: whole when a token, else merged like any word */
    n = tt_encode(t, "\n", 0, ids, 64);
    CHECK_IDS(ids, n, T_NL);
    n = tt_encode(t, "\n\n", 0, ids, 64);
    CHECK_IDS(ids, n, T_NL2);
    n = tt_encode(t, "\n\n\n", 0, ids, 64);
    CHECK_IDS(ids, n, T_NL2, T_NL);
    n = tt_encode(t, "\n\n\n\n", 0, ids, 64);
    CHECK_IDS(ids, n, T_NL4);
    n = tt_encode(t, "\n\n\n\n\n", 0, ids, 64);
    CHECK_IDS(ids, n, T_NL2, T_NL2, T_NL);
    n = tt_encode(t, "the\n\ncat\n", 0, ids, 64); /* no merge across a newline run */
    CHECK_IDS(ids, n, T_T, T_HE, T_NL2, T_C, T_AT, T_NL);
    n = tt_encode(t, "a \n t", 0, ids, 64); /* "a▁" | "\n" | "▁t" */
    CHECK_IDS(ids, n, T_A, T_SP, T_NL, T_SPT);
    /* characters outside the vocabulary: their UTF-8 bytes */
    n = tt_encode(t, "\xC3\xA9t", 0, ids, 64); /* é */
    CHECK_IDS(ids, n, B(0xC3), B(0xA9), T_T);
    n = tt_encode(t, "\xE6\x97\xA5\t\xF0\x9F\x98\x80", 0, ids, 64); /* 日, tab, 😀 */
    CHECK_IDS(ids, n, B(0xE6), B(0x97), B(0xA5), B('\t'), B(0xF0), B(0x9F), B(0x98), B(0x80));
    /* a byte without a <0xXX> token is dropped (llama.cpp's rule, no error);
     * an invalid byte is a symbol of its own, so "a t" does not merge over it */
    n = tt_encode(t, "a\xFFt", 0, ids, 64);
    CHECK_IDS(ids, n, T_A, T_T);
    n = tt_encode(t, "", 0, ids, 64);
    CHECK_EQ_INT(n, 0);
    /* BOS although the file says add_bos_token false; no EOS */
    n = tt_encode(t, "the", TOPOS_TOKENIZE_ADD_SPECIAL, ids, 64);
    CHECK_IDS(ids, n, T_BOS, T_T, T_HE);
    n = tt_encode(t, "", TOPOS_TOKENIZE_ADD_SPECIAL | TOPOS_TOKENIZE_ADD_EOS, ids, 64);
    CHECK_IDS(ids, n, T_BOS, T_EOS);
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }
}

TEST(tokenizer_gemma4_special_tokens_and_decoding) {
  tt_vocab v;
  topos_tokenizer *t = g4_make(&v, 1);
  CHECK(t);
  if (!t) return;
  int32_t ids[64];
  long n = tt_encode(t, "<bos>the cat<turn|>", TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64);
  CHECK_IDS(ids, n, T_BOS, T_T, T_HE, T_SPCAT, T_TURN);
  /* spaces are escaped per fragment, after the special tokens are cut out */
  n = tt_encode(t, "the<turn|> cat", TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64);
  CHECK_IDS(ids, n, T_T, T_HE, T_TURN, T_SPCAT);
  n = tt_encode(t, "<turn|>", 0, ids, 64); /* unparsed control text: plain bytes */
  CHECK_IDS(ids, n, B('<'), T_T, B('u'), B('r'), B('n'), B('|'), B('>'));
  n = tt_encode(t, "a<tool>t", 0, ids, 64); /* user-defined: always cut out */
  CHECK_IDS(ids, n, T_A, T_TOOL, T_T);

  char buf[64];
  size_t len;
  int32_t seq[] = {T_BOS, T_T, T_HE, T_SPCAT, T_NL2, T_TOOL, B(0xC3), B(0xA9), T_TURN};
  CHECK_OK(topos_tokenizer_decode(t, seq, 9, 0, buf, sizeof buf, &len));
  CHECK_MSG(len == 17 && memcmp(buf, "the cat\n\n<tool>\xC3\xA9", 17) == 0, "decoded %.*s",
            (int)len, buf);
  CHECK_OK(topos_tokenizer_decode(t, seq, 9, TOPOS_DECODE_SPECIAL, buf, sizeof buf, &len));
  CHECK_MSG(len == 29 && memcmp(buf, "<bos>the cat\n\n<tool>\xC3\xA9<turn|>", 29) == 0,
            "decoded %.*s", (int)len, buf);
  CHECK_OK(topos_tokenizer_decode_token(t, T_SPCAT, buf, sizeof buf, &len));
  CHECK(len == 4 && memcmp(buf, " cat", 4) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, T_SP2, buf, sizeof buf, &len));
  CHECK(len == 2 && memcmp(buf, "  ", 2) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, B(0x20), buf, sizeof buf, &len)); /* <0x20> */
  CHECK(len == 1 && buf[0] == ' ');
  CHECK_OK(topos_tokenizer_decode_token(t, T_TURN, buf, sizeof buf, &len)); /* control: nothing */
  CHECK_EQ_INT(len, 0);
  /* Gemma 4's end-of-turn markers end generation */
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, T_EOS), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, T_TURN), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, T_BOS), 0);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* Without a token_type array the "<0xXX>" pieces are still byte tokens, so
 * what the fallback emits decodes to the bytes. */
TEST(tokenizer_gemma4_without_types) {
  tt_vocab v;
  g4_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "gemma4");
  d.types = NULL;
  d.scores = NULL;
  topos_tokenizer *t = NULL;
  CHECK_OK(tt_tokenizer_via_gguf(&d, &t));
  if (t) {
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), 1);
    CHECK_EQ_INT(topos_tokenizer_bos(t), TOPOS_TOKEN_NONE); /* no default ids */
    CHECK_EQ_INT(topos_tokenizer_eos(t), TOPOS_TOKEN_NONE);
    CHECK_EQ_INT(topos_tokenizer_unk(t), TOPOS_TOKEN_NONE);
    int32_t ids[16];
    long n = tt_encode(t, "\xC3\xA9 the", TOPOS_TOKENIZE_ADD_SPECIAL, ids, 16); /* no BOS id */
    CHECK_IDS(ids, n, B(0xC3), B(0xA9), T_SPTHE);
    CHECK_EQ_INT(topos_tokenizer_token_type(t, B(0xC3)), TOPOS_TOKEN_BYTE);
    char buf[16];
    size_t len;
    CHECK_OK(topos_tokenizer_decode(t, ids, (size_t)n, 0, buf, sizeof buf, &len));
    CHECK(len == 6 && memcmp(buf, "\xC3\xA9 the", 6) == 0);
    topos_tokenizer_free(t);
  }
  tt_vocab_free(&v);
}

/* llama.cpp gives a "gpt2" vocabulary under granite-embed-multi-311m
 * gemma4's pre-type: the same encoding, BOS forced. */
TEST(tokenizer_gemma4_granite_embed_pre) {
  tt_vocab v;
  g4_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "gpt2");
  d.pre = "granite-embed-multi-311m";
  d.bos_id = T_BOS;
  d.add_bos = 0;
  topos_tokenizer *t = NULL;
  CHECK_OK(tt_tokenizer_via_gguf(&d, &t));
  if (t) {
    CHECK_EQ_INT(topos_tokenizer_kind_of(t), TOPOS_TOKENIZER_GEMMA4);
    int32_t ids[16];
    long n = tt_encode(t, "the cat\n\n\n\xC3\xA9", TOPOS_TOKENIZE_ADD_SPECIAL, ids, 16);
    CHECK_IDS(ids, n, T_BOS, T_T, T_HE, T_SPCAT, T_NL2, T_NL, B(0xC3), B(0xA9));
    topos_tokenizer_free(t);
  }
  tt_vocab_free(&v);
}

/* Any text without the byte 0xFF (the one byte without a token) survives
 * encode -> decode, valid UTF-8 or not. */
TEST(tokenizer_gemma4_round_trips) {
  static const char alphabet[] = "the cat dog \n\n\n\t\r <tool>\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80" "ac";
  tt_vocab v;
  topos_tokenizer *t = g4_make(&v, 0);
  CHECK(t);
  if (!t) return;
  topos_rng rng = topos_rng_seed(2024);
  char text[64], back[160];
  int32_t ids[160];
  for (int iter = 0; iter < 400; iter++) {
    size_t n = (size_t)(topos_rng_next(&rng) % 48);
    for (size_t i = 0; i < n; i++) {
      uint64_t r = topos_rng_next(&rng);
      text[i] = (r & 7) ? alphabet[(r >> 8) % (sizeof alphabet - 1)] : (char)((r >> 16) % 255);
    }
    size_t count, len;
    CHECK_OK(topos_tokenizer_encode(t, text, n, TOPOS_TOKENIZE_ADD_SPECIAL, ids, 160, &count));
    CHECK(count >= 1 && ids[0] == T_BOS);
    for (size_t i = 0; i < count; i++) CHECK(ids[i] >= 0 && ids[i] < T_COUNT);
    CHECK_OK(topos_tokenizer_decode(t, ids, count, 0, back, sizeof back, &len));
    CHECK_MSG(len == n && memcmp(back, text, n) == 0, "round trip %d differs", iter);
  }
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* A gemma4 file without merges, or with a malformed one, is refused with the
 * reason; random vocabularies never crash. */
TEST(tokenizer_gemma4_refuses_bad_files) {
  tt_vocab v;
  g4_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "gemma4");
  d.merges = NULL; /* the GGUF then has no tokenizer.ggml.merges key */
  topos_tokenizer *t = NULL;
  CHECK_STATUS(tt_tokenizer_via_gguf(&d, &t), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("\"gemma4\" vocabulary needs merges");
  CHECK_ERROR_HAS("tokenizer.ggml.merges");
  CHECK(t == NULL);
  CHECK_STATUS(topos_tokenizer_new(&d, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("\"gemma4\" vocabulary needs merges");
  CHECK(t == NULL);
  d = tt_desc(&v, "gemma4");
  v.merges[0] = SP "t";
  CHECK_STATUS(tt_tokenizer_via_gguf(&d, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("merge 0");
  CHECK(t == NULL);
  tt_vocab_free(&v);

  /* random small vocabularies over pieces that merge, escape and look like
   * byte tokens */
  topos_rng rng = topos_rng_seed(11);
  static const char *const units[] = {"a", "b", SP, "\n", "\xC3\xA9", "<", ">", "<0x41>", "<0xC3>", " "};
  static const char *const merges[] = {"a b", (SP " a"), "\n \n", "\xC3\xA9 a", ("ab " SP), "< >"};
  int built = 0;
  for (int iter = 0; iter < 60; iter++) {
    tt_vocab r;
    memset(&r, 0, sizeof r);
    int n = 1 + (int)(topos_rng_next(&rng) % 30);
    for (int i = 0; i < n; i++) {
      char text[32];
      size_t len = 0;
      for (uint64_t j = 1 + topos_rng_next(&rng) % 3; j > 0; j--) {
        const char *u = units[topos_rng_next(&rng) % 10];
        memcpy(text + len, u, strlen(u));
        len += strlen(u);
      }
      int32_t type = (int32_t)(topos_rng_next(&rng) % 6);
      tt_vocab_add(&r, text, len, 0, type);
    }
    r.n_merges = 6;
    for (int i = 0; i < 6; i++) r.merges[i] = merges[i];
    if (iter % 2) tt_vocab_add(&r, "<0xC3>", 6, 0, TOPOS_TOKEN_BYTE);
    topos_tokenizer_desc e = tt_desc(&r, "gemma4");
    e.bos_id = (int32_t)(topos_rng_next(&rng) % (uint64_t)r.n);
    if (iter % 3 == 0) e.types = NULL;
    if (topos_tokenizer_new(&e, &t) == TOPOS_OK) {
      built++;
      char text[32], back[256];
      int32_t ids[128];
      for (int k = 0; k < 10; k++) {
        size_t len = (size_t)(topos_rng_next(&rng) % 30);
        for (size_t j = 0; j < len; j++) {
          uint64_t x = topos_rng_next(&rng);
          text[j] = (x & 1) ? "ab \n<>"[(x >> 8) % 6] : (char)(x >> 16);
        }
        size_t count = 0, out = 0;
        CHECK_OK(topos_tokenizer_encode(t, text, len,
                                        TOPOS_TOKENIZE_PARSE_SPECIAL | TOPOS_TOKENIZE_ADD_SPECIAL,
                                        ids, 128, &count));
        for (size_t j = 0; j < count; j++) CHECK(ids[j] >= 0 && ids[j] < r.n);
        CHECK_OK(topos_tokenizer_decode(t, ids, count, TOPOS_DECODE_SPECIAL, back, sizeof back,
                                        &out));
      }
      topos_tokenizer_free(t);
      t = NULL;
    }
    tt_vocab_free(&r);
  }
  CHECK(built >= 50);
}
