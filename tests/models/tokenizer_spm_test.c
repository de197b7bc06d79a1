/* SentencePiece-style ("llama") tokenizer: hand-derived encodings of a toy
 * vocabulary with scores, byte fallback, the leading-space rule, BOS/EOS,
 * special tokens, decoding and round trips. */
#include "tok_util.h"

#define U "\xE2\x96\x81" /* U+2581, SentencePiece's space */

typedef struct spm_ids {
  int sp, h, e, l, o, he, el, ll, lo, llo, hello, sp_hello, sp_w, or_, ld, sp_wor, sp_world;
  int a, b, c, ab, bc, x, y, z, xy, yz, user;
} spm_ids;

static int byte_id(int b) { return 3 + b; }

static void spm_vocab(tt_vocab *v, spm_ids *k, int with_bytes) {
  memset(v, 0, sizeof *v);
  tt_vocab_add(v, "<unk>", 5, 0, TOPOS_TOKEN_UNKNOWN);
  tt_vocab_add(v, "<s>", 3, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "</s>", 4, 0, TOPOS_TOKEN_CONTROL);
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    if (with_bytes) {
      tt_vocab_add(v, name, 6, 0, TOPOS_TOKEN_BYTE);
    } else { /* same ids, other names: no fallback */
      snprintf(name, sizeof name, "<u%02X>", b);
      tt_vocab_add(v, name, 5, 0, TOPOS_TOKEN_UNUSED);
    }
  }
  k->sp = tt_add(v, U, -1);
  k->h = tt_add(v, "h", -2), k->e = tt_add(v, "e", -2), k->l = tt_add(v, "l", -2);
  k->o = tt_add(v, "o", -2);
  tt_add(v, "w", -2), tt_add(v, "r", -2), tt_add(v, "d", -2);
  k->he = tt_add(v, "he", -5), k->el = tt_add(v, "el", -4.5f), k->ll = tt_add(v, "ll", -4);
  k->lo = tt_add(v, "lo", -6), k->llo = tt_add(v, "llo", -3), k->hello = tt_add(v, "hello", -1);
  k->sp_hello = tt_add(v, U "hello", -0.5f), k->sp_w = tt_add(v, U "w", -2);
  k->or_ = tt_add(v, "or", -7), k->ld = tt_add(v, "ld", -2.5f);
  k->sp_wor = tt_add(v, U "wor", -3.5f), k->sp_world = tt_add(v, U "world", -0.8f);
  k->a = tt_add(v, "a", -2), k->b = tt_add(v, "b", -2), k->c = tt_add(v, "c", -2);
  k->ab = tt_add(v, "ab", -1), k->bc = tt_add(v, "bc", -1);
  k->x = tt_add(v, "x", -2), k->y = tt_add(v, "y", -2), k->z = tt_add(v, "z", -2);
  k->xy = tt_add(v, "xy", -2), k->yz = tt_add(v, "yz", -1);
  k->user = tt_vocab_add(v, "<|user|>", 8, 0, TOPOS_TOKEN_USER_DEFINED);
}

static topos_tokenizer *spm_make(tt_vocab *v, spm_ids *k, int with_bytes, int via_gguf) {
  spm_vocab(v, k, with_bytes);
  topos_tokenizer_desc d = tt_desc(v, "llama");
  d.bos_id = 1, d.eos_id = 2, d.unk_id = 0;
  topos_tokenizer *t = NULL;
  topos_status st = via_gguf ? tt_tokenizer_via_gguf(&d, &t) : topos_tokenizer_new(&d, &t);
  if (st != TOPOS_OK) {
    tt_fail_at(__FILE__, __LINE__, "building the toy SPM vocabulary: %s", topos_last_error());
    tt_vocab_free(v);
    return NULL;
  }
  return t;
}

TEST(tokenizer_spm_known_encodings) {
  for (int via = 0; via < 2; via++) {
    tt_vocab v;
    spm_ids k;
    topos_tokenizer *t = spm_make(&v, &k, 1, via);
    CHECK(t);
    int32_t ids[64];
    long n;
    CHECK_EQ_INT(topos_tokenizer_kind_of(t), TOPOS_TOKENIZER_SPM);
    CHECK_EQ_INT(topos_tokenizer_vocab_size(t), v.n);
    CHECK_EQ_INT(topos_tokenizer_add_space_prefix(t), 1);
    CHECK_EQ_INT(topos_tokenizer_add_bos(t), 1);
    /* ll(-4) first, then llo(-3), he(-5), hello(-1), ▁hello(-0.5) */
    n = tt_encode(t, "hello", 0, ids, 64);
    CHECK_IDS(ids, n, k.sp_hello);
    n = tt_encode(t, "hello world", 0, ids, 64);
    CHECK_IDS(ids, n, k.sp_hello, k.sp_world);
    /* equal scores: the leftmost pair wins (ab, not bc) */
    n = tt_encode(t, "abc", 0, ids, 64);
    CHECK_IDS(ids, n, k.sp, k.ab, k.c);
    /* higher score wins regardless of position */
    n = tt_encode(t, "xyz", 0, ids, 64);
    CHECK_IDS(ids, n, k.sp, k.x, k.yz);
    /* the leading-space rule: one ▁ is added, a space in the text is another */
    n = tt_encode(t, " hello", 0, ids, 64);
    CHECK_IDS(ids, n, k.sp, k.sp_hello);
    /* BOS and EOS */
    n = tt_encode(t, "hello", TOPOS_TOKENIZE_ADD_BOS, ids, 64);
    CHECK_IDS(ids, n, 1, k.sp_hello);
    n = tt_encode(t, "hello", TOPOS_TOKENIZE_ADD_SPECIAL, ids, 64);
    CHECK_IDS(ids, n, 1, k.sp_hello);
    n = tt_encode(t, "hello", TOPOS_TOKENIZE_ADD_BOS | TOPOS_TOKENIZE_ADD_EOS, ids, 64);
    CHECK_IDS(ids, n, 1, k.sp_hello, 2);
    n = tt_encode(t, "", TOPOS_TOKENIZE_ADD_BOS, ids, 64);
    CHECK_IDS(ids, n, 1);
    n = tt_encode(t, "", 0, ids, 64);
    CHECK_EQ_INT(n, 0);
    topos_tokenizer_free(t);
    tt_vocab_free(&v);
  }
}

TEST(tokenizer_spm_byte_fallback) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  int32_t ids[64];
  /* é = C3 A9: not in the vocabulary, so its two bytes */
  long n = tt_encode(t, "h\xC3\xA9", 0, ids, 64);
  CHECK_IDS(ids, n, k.sp, k.h, byte_id(0xC3), byte_id(0xA9));
  /* 😀 = F0 9F 98 80 between known pieces */
  n = tt_encode(t, "he\xF0\x9F\x98\x80llo", 0, ids, 64);
  CHECK_IDS(ids, n, k.sp, k.he, byte_id(0xF0), byte_id(0x9F), byte_id(0x98), byte_id(0x80), k.llo);
  /* invalid UTF-8 bytes are single symbols and fall back byte by byte */
  n = tt_encode(t, "\xFF\xC3", 0, ids, 64);
  CHECK_IDS(ids, n, k.sp, byte_id(0xFF), byte_id(0xC3));
  /* a NUL byte is ordinary text */
  size_t count;
  CHECK_OK(topos_tokenizer_encode(t, "a\0b", 3, 0, ids, 64, &count));
  CHECK_IDS(ids, count, k.sp, k.a, byte_id(0), k.b);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);

  /* without byte tokens every unknown byte becomes <unk> */
  t = spm_make(&v, &k, 0, 0);
  CHECK(t);
  n = tt_encode(t, "h\xC3\xA9", 0, ids, 64);
  CHECK_IDS(ids, n, k.sp, k.h, 0, 0);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

TEST(tokenizer_spm_special_tokens) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  int32_t ids[64];
  /* control tokens only with PARSE_SPECIAL; a space is prefixed after them */
  long n = tt_encode(t, "hello<s>hello", TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64);
  CHECK_IDS(ids, n, k.sp_hello, 1, k.sp_hello);
  n = tt_encode(t, "hello<s>hello", 0, ids, 64);
  CHECK_IDS(ids, n, k.sp_hello, byte_id('<'), byte_id('s'), byte_id('>'), k.hello);
  /* user-defined tokens are always cut out */
  n = tt_encode(t, "<|user|>hello", 0, ids, 64);
  CHECK_IDS(ids, n, k.user, k.sp_hello);
  n = tt_encode(t, "</s></s>", TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64);
  CHECK_IDS(ids, n, 2, 2);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

TEST(tokenizer_spm_capacity_and_arguments) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  int32_t ids[4] = {-7, -7, -7, -7};
  size_t count = 0;
  /* ask for the size */
  CHECK_STATUS(topos_tokenizer_encode(t, "hello world", 11, TOPOS_TOKENIZE_ADD_BOS, NULL, 0, &count),
               TOPOS_ERR_RANGE);
  CHECK_EQ_INT(count, 3);
  CHECK_STATUS(topos_tokenizer_encode(t, "hello world", 11, TOPOS_TOKENIZE_ADD_BOS, ids, 2, &count),
               TOPOS_ERR_RANGE);
  CHECK_EQ_INT(count, 3);
  CHECK_EQ_INT(ids[0], 1);
  CHECK_EQ_INT(ids[1], k.sp_hello);
  CHECK_EQ_INT(ids[2], -7); /* nothing past capacity */
  CHECK_STATUS(topos_tokenizer_encode(t, NULL, 3, 0, ids, 4, &count), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tokenizer_encode(t, "a", 1, 0, NULL, 4, &count), TOPOS_ERR_INVALID_ARGUMENT);
  char buf[8];
  size_t len;
  CHECK_STATUS(topos_tokenizer_decode_token(t, -1, buf, 8, &len), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tokenizer_decode_token(t, v.n, buf, 8, &len), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tokenizer_decode_token(t, k.sp_world, buf, 3, &len), TOPOS_ERR_RANGE);
  CHECK_EQ_INT(len, 6);
  CHECK(memcmp(buf, " wo", 3) == 0);
  int32_t bad[2] = {k.h, 100000};
  CHECK_STATUS(topos_tokenizer_decode(t, bad, 2, 0, buf, 8, &len), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("100000");
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

TEST(tokenizer_spm_decode_pieces) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  char buf[32];
  size_t len;
  CHECK_OK(topos_tokenizer_decode_token(t, k.sp_hello, buf, sizeof buf, &len));
  CHECK(len == 6 && memcmp(buf, " hello", 6) == 0);
  CHECK_OK(topos_tokenizer_decode_token_ex(t, k.sp_hello, TOPOS_DECODE_STRIP_LEADING_SPACE, buf,
                                           sizeof buf, &len));
  CHECK(len == 5 && memcmp(buf, "hello", 5) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, byte_id(0xC3), buf, sizeof buf, &len));
  CHECK(len == 1 && (unsigned char)buf[0] == 0xC3);
  CHECK_OK(topos_tokenizer_decode_token(t, 1, buf, sizeof buf, &len)); /* control: nothing */
  CHECK_EQ_INT(len, 0);
  CHECK_OK(topos_tokenizer_decode_token_ex(t, 1, TOPOS_DECODE_SPECIAL, buf, sizeof buf, &len));
  CHECK(len == 3 && memcmp(buf, "<s>", 3) == 0);
  CHECK_OK(topos_tokenizer_decode_token(t, k.user, buf, sizeof buf, &len));
  CHECK(len == 8 && memcmp(buf, "<|user|>", 8) == 0);
  /* a sequence: BOS skipped, the prefix space dropped once */
  int32_t seq[] = {1, k.sp_hello, k.sp_world, byte_id(0xC3), byte_id(0xA9)};
  CHECK_OK(topos_tokenizer_decode(t, seq, 5, 0, buf, sizeof buf, &len));
  CHECK(len == 13 && memcmp(buf, "hello world\xC3\xA9", 13) == 0);
  CHECK_OK(topos_tokenizer_decode(t, seq, 5, TOPOS_DECODE_SPECIAL, buf, sizeof buf, &len));
  CHECK(len == 17 && memcmp(buf, "<s> hello world\xC3\xA9", 17) == 0);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, 2), 1);
  CHECK_EQ_INT(topos_tokenizer_is_eog(t, 1), 0);
  CHECK_EQ_INT(topos_tokenizer_token_type(t, 0), TOPOS_TOKEN_UNKNOWN);
  CHECK_EQ_INT(topos_tokenizer_find(t, U "world", 8), k.sp_world);
  CHECK_EQ_INT(topos_tokenizer_find(t, "nope", 4), TOPOS_TOKEN_NONE);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

static const char *const spm_round_trip_texts[] = {
    "hello world", " hello", "  two leading", "trailing  ", "a  b   c", "héllo wörld 😀",
    "\t\n\r", "x", "12345 67", "日本語のテキスト", "mixed\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!",
    "abcxyzhello", "<s>", "\xFF\xFE invalid \xC3", "",
};

TEST(tokenizer_spm_round_trips) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  int32_t ids[256];
  char buf[512];
  for (size_t i = 0; i < sizeof spm_round_trip_texts / sizeof spm_round_trip_texts[0]; i++) {
    const char *s = spm_round_trip_texts[i];
    for (unsigned flags = 0; flags <= TOPOS_TOKENIZE_ADD_BOS; flags++) {
      size_t count, len;
      CHECK_OK(topos_tokenizer_encode(t, s, strlen(s), flags, ids, 256, &count));
      CHECK_OK(topos_tokenizer_decode(t, ids, count, 0, buf, sizeof buf, &len));
      CHECK_MSG(len == strlen(s) && memcmp(buf, s, len) == 0, "round trip of \"%s\" gave \"%.*s\"",
                s, (int)len, buf);
      /* streaming: pieces concatenated, the first one stripped */
      size_t at = 0;
      for (size_t j = flags ? 1 : 0, first = j; j < count; j++) {
        size_t piece;
        CHECK_OK(topos_tokenizer_decode_token_ex(t, ids[j],
                                                 j == first ? TOPOS_DECODE_STRIP_LEADING_SPACE : 0,
                                                 buf + at, sizeof buf - at, &piece));
        at += piece;
      }
      CHECK(at == strlen(s) && memcmp(buf, s, at) == 0);
    }
  }
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* A long text must stay fast (no cubic merge loop) and still round-trip. */
TEST(tokenizer_spm_long_text) {
  tt_vocab v;
  spm_ids k;
  topos_tokenizer *t = spm_make(&v, &k, 1, 0);
  CHECK(t);
  size_t n = 50000;
  char *text = malloc(n + 1);
  CHECK(text);
  static const char pattern[] = "hello world abc xyz \xC3\xA9 ";
  for (size_t i = 0; i < n; i++) text[i] = pattern[i % (sizeof pattern - 1)];
  text[n] = 0;
  size_t count = 0;
  topos_status st = topos_tokenizer_encode(t, text, n, 0, NULL, 0, &count);
  CHECK(st == TOPOS_ERR_RANGE && count > 0);
  int32_t *ids = malloc(count * sizeof *ids);
  char *back = malloc(n + 16);
  size_t len = 0;
  if (ids && back && topos_tokenizer_encode(t, text, n, 0, ids, count, &count) == TOPOS_OK &&
      topos_tokenizer_decode(t, ids, count, 0, back, n + 16, &len) == TOPOS_OK) {
    st = (len == n && memcmp(back, text, n) == 0) ? TOPOS_OK : TOPOS_ERR_INTERNAL;
  } else {
    st = TOPOS_ERR_INTERNAL;
  }
  free(ids), free(back), free(text);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
  CHECK_OK(st);
}

/* Without tokenizer.ggml.token_type, "<0xXX>" pieces still act as bytes. */
TEST(tokenizer_spm_untyped_byte_pieces) {
  tt_vocab v;
  spm_ids k;
  spm_vocab(&v, &k, 1);
  topos_tokenizer_desc d = tt_desc(&v, "llama");
  d.types = NULL;
  topos_tokenizer *t = NULL;
  CHECK_OK(topos_tokenizer_new(&d, &t));
  CHECK_EQ_INT(topos_tokenizer_token_type(t, byte_id(0xC3)), TOPOS_TOKEN_BYTE);
  CHECK_EQ_INT(topos_tokenizer_token_type(t, 1), TOPOS_TOKEN_NORMAL);
  int32_t ids[16];
  char buf[16];
  size_t len;
  long n = tt_encode(t, "h\xC3\xA9", 0, ids, 16);
  CHECK_IDS(ids, n, k.sp, k.h, byte_id(0xC3), byte_id(0xA9));
  CHECK_OK(topos_tokenizer_decode(t, ids, (size_t)n, 0, buf, sizeof buf, &len));
  CHECK(len == 3 && memcmp(buf, "h\xC3\xA9", 3) == 0);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
  CHECK_EQ_INT(topos_tokenizer_vocab_size(NULL), 0);
  CHECK_EQ_INT(topos_tokenizer_bos(NULL), TOPOS_TOKEN_NONE);
  CHECK_EQ_INT(topos_tokenizer_is_eog(NULL, 0), 0);
}

/* A leading BOS is skipped only when the vocabulary adds one; otherwise the
 * space-prefix strip falls on the BOS (as llama.cpp's detokenize). */
TEST(tokenizer_spm_decode_bos_rule) {
  tt_vocab v;
  spm_ids k;
  spm_vocab(&v, &k, 1);
  topos_tokenizer_desc d = tt_desc(&v, "llama");
  d.bos_id = 1, d.eos_id = 2, d.unk_id = 0;
  d.add_bos = 0;
  topos_tokenizer *t = NULL;
  CHECK_OK(topos_tokenizer_new(&d, &t));
  int32_t seq[] = {1, k.sp_hello};
  char buf[16];
  size_t len;
  CHECK_OK(topos_tokenizer_decode(t, seq, 2, 0, buf, sizeof buf, &len));
  CHECK(len == 6 && memcmp(buf, " hello", 6) == 0);
  CHECK_OK(topos_tokenizer_decode(t, seq + 1, 1, 0, buf, sizeof buf, &len));
  CHECK(len == 5 && memcmp(buf, "hello", 5) == 0);
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}
