/* Malformed vocabularies are refused with a status and a message naming the
 * entry, from arrays and from GGUF files; never a crash. */
#include "tok_util.h"

static void small_vocab(tt_vocab *v) {
  memset(v, 0, sizeof *v);
  tt_vocab_add(v, "<unk>", 5, 0, TOPOS_TOKEN_UNKNOWN);
  tt_vocab_add(v, "<s>", 3, 0, TOPOS_TOKEN_CONTROL);
  tt_vocab_add(v, "</s>", 4, 0, TOPOS_TOKEN_CONTROL);
  tt_add(v, "a", -1);
  tt_add(v, "b", -1);
  tt_add(v, "ab", -0.5f);
  v->merges[0] = "a b";
  v->n_merges = 1;
}

/* Builds from the desc and through a GGUF; both must fail with `status`
 * and a message containing `needle`. */
#define CHECK_REFUSED(desc, status, needle)                                       \
  do {                                                                            \
    topos_tokenizer *tt_t_ = NULL;                                                \
    CHECK_STATUS(topos_tokenizer_new(&(desc), &tt_t_), status);                   \
    CHECK_ERROR_HAS(needle);                                                      \
    CHECK(tt_t_ == NULL);                                                         \
    CHECK_STATUS(tt_tokenizer_via_gguf(&(desc), &tt_t_), status);                 \
    CHECK_ERROR_HAS(needle);                                                      \
    CHECK(tt_t_ == NULL);                                                         \
  } while (0)

TEST(tokenizer_refuses_bad_models) {
  tt_vocab v;
  small_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "bert");
  CHECK_REFUSED(d, TOPOS_UNSUPPORTED, "bert");
  d = tt_desc(&v, "gpt2");
  d.pre = "qwen9";
  CHECK_REFUSED(d, TOPOS_UNSUPPORTED, "qwen9");
  /* names near the DeepSeek, GLM and Kimi ones stay refused */
  static const char *const near[] = {"deepseek-v9", "deepseek", "glm3", "kimi-linear", "kimi-k3"};
  for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
    d.pre = near[i];
    CHECK_REFUSED(d, TOPOS_UNSUPPORTED, near[i]);
  }
  d = tt_desc(&v, "llama");
  d.n_tokens = 0;
  topos_tokenizer *t = NULL;
  CHECK_STATUS(topos_tokenizer_new(&d, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("empty");
  d.n_tokens = (int64_t)TOPOS_TOKENIZER_MAX_TOKENS + 1;
  CHECK_STATUS(topos_tokenizer_new(&d, &t), TOPOS_ERR_RANGE);
  d = tt_desc(&v, NULL);
  CHECK_STATUS(topos_tokenizer_new(&d, &t), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tokenizer_new(NULL, &t), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tokenizer_from_gguf(NULL, &t), TOPOS_ERR_INVALID_ARGUMENT);
  tt_vocab_free(&v);
}

TEST(tokenizer_refuses_bad_entries) {
  tt_vocab v;
  small_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "llama");
  d.scores = NULL;
  topos_tokenizer *t = NULL;
  CHECK_STATUS(topos_tokenizer_new(&d, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("scores");
  CHECK_STATUS(tt_tokenizer_via_gguf(&d, &t), TOPOS_ERR_NOT_FOUND); /* the key is absent */
  CHECK_ERROR_HAS("tokenizer.ggml.scores");

  d = tt_desc(&v, "llama");
  v.scores[4] = NAN;
  CHECK_REFUSED(d, TOPOS_ERR_FORMAT, "token 4");
  v.scores[4] = -1;

  v.types[3] = 9;
  CHECK_REFUSED(d, TOPOS_ERR_BAD_TYPE, "token 3 has type 9");
  v.types[3] = -2;
  CHECK_REFUSED(d, TOPOS_ERR_BAD_TYPE, "type -2");
  v.types[3] = TOPOS_TOKEN_BYTE; /* text "a" is not <0xXX> */
  CHECK_REFUSED(d, TOPOS_ERR_FORMAT, "<0xXX>");
  v.types[3] = TOPOS_TOKEN_NORMAL;

  free(v.tokens[4]);
  v.tokens[4] = malloc(3);
  memcpy(v.tokens[4], "\xC3(", 3);
  v.lengths[4] = 2;
  CHECK_REFUSED(d, TOPOS_ERR_BAD_STRING, "token 4");

  v.types[4] = TOPOS_TOKEN_UNUSED; /* unused entries may hold anything */
  CHECK_OK(topos_tokenizer_new(&d, &t));
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

TEST(tokenizer_refuses_bad_ids_and_merges) {
  tt_vocab v;
  small_vocab(&v);
  topos_tokenizer_desc d = tt_desc(&v, "llama");
  d.bos_id = 6;
  CHECK_REFUSED(d, TOPOS_ERR_RANGE, "bos id 6");
  d.bos_id = 1;
  d.eos_id = 1000;
  CHECK_REFUSED(d, TOPOS_ERR_RANGE, "eos id 1000");
  d.eos_id = 2;
  d.unk_id = 6;
  CHECK_REFUSED(d, TOPOS_ERR_RANGE, "unknown id 6");

  d = tt_desc(&v, "gpt2");
  v.merges[0] = "ab";
  CHECK_REFUSED(d, TOPOS_ERR_FORMAT, "merge 0");
  v.merges[0] = "a ";
  CHECK_REFUSED(d, TOPOS_ERR_FORMAT, "merge 0");
  v.merges[0] = " ";
  CHECK_REFUSED(d, TOPOS_ERR_FORMAT, "merge 0");
  v.merges[0] = "a \xFF";
  CHECK_REFUSED(d, TOPOS_ERR_BAD_STRING, "merge 0");
  v.merges[0] = " a b"; /* a left part may start with a space */
  topos_tokenizer *t = NULL;
  CHECK_OK(topos_tokenizer_new(&d, &t));
  topos_tokenizer_free(t);
  tt_vocab_free(&v);
}

/* GGUF files whose tokenizer keys have the wrong type or length. */
static topos_status build_gguf(int variant, topos_tokenizer **out) {
  static const char *const tokens[] = {"<unk>", "<s>", "</s>", "a", "b"};
  float scores[5] = {0, 0, 0, -1, -1};
  int32_t types[5] = {2, 3, 3, 1, 1};
  uint32_t nums[5] = {1, 2, 3, 4, 5};
  topos_gguf_writer *w;
  topos_status st = topos_gguf_writer_create(&w);
  if (st != TOPOS_OK) return st;
  const char *model = variant == 9 ? "gpt2" : "llama";
  if (variant != 1) st = topos_gguf_writer_add_string(w, "tokenizer.ggml.model", model);
  if (st == TOPOS_OK && variant == 2)
    st = topos_gguf_writer_add_array(w, "tokenizer.ggml.tokens", TOPOS_GGUF_U32, nums, 5);
  else if (st == TOPOS_OK && variant != 3)
    st = topos_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, NULL, 5);
  if (st == TOPOS_OK && variant == 4)
    st = topos_gguf_writer_add_array(w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, scores, 4);
  else if (st == TOPOS_OK && variant == 5)
    st = topos_gguf_writer_add_string_array(w, "tokenizer.ggml.scores", tokens, NULL, 5);
  else if (st == TOPOS_OK)
    st = topos_gguf_writer_add_array(w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, scores, 5);
  if (st == TOPOS_OK)
    st = topos_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TOPOS_GGUF_I32, types,
                                     variant == 6 ? 3 : 5);
  if (st == TOPOS_OK && variant == 7)
    st = topos_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 5);
  if (st == TOPOS_OK && variant == 8)
    st = topos_gguf_writer_add_string(w, "tokenizer.ggml.eos_token_id", "2");
  if (st == TOPOS_OK && variant == 10)
    st = topos_gguf_writer_add_u32(w, "tokenizer.ggml.add_bos_token", 1); /* not a bool */
  if (st == TOPOS_OK && variant == 11)
    st = topos_gguf_writer_add_i32(w, "tokenizer.ggml.padding_token_id", -1); /* none */
  void *bytes = NULL;
  size_t size = 0;
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, &bytes, &size);
  topos_gguf_writer_destroy(w);
  topos_gguf *g = NULL;
  if (st == TOPOS_OK) st = topos_gguf_open_memory(bytes, size, &g);
  if (st == TOPOS_OK) st = topos_tokenizer_from_gguf(g, out);
  topos_gguf_close(g);
  free(bytes);
  return st;
}

TEST(tokenizer_refuses_bad_gguf_keys) {
  topos_tokenizer *t = NULL;
  CHECK_OK(build_gguf(0, &t));
  /* llama.cpp's defaults for a llama vocabulary without id keys */
  CHECK_EQ_INT(topos_tokenizer_bos(t), 1);
  CHECK_EQ_INT(topos_tokenizer_eos(t), 2);
  CHECK_EQ_INT(topos_tokenizer_unk(t), 0);
  topos_tokenizer_free(t);
  t = NULL;
  CHECK_STATUS(build_gguf(1, &t), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("tokenizer.ggml.model");
  CHECK_STATUS(build_gguf(2, &t), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("tokenizer.ggml.tokens");
  CHECK_STATUS(build_gguf(3, &t), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("tokenizer.ggml.tokens");
  CHECK_STATUS(build_gguf(4, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("4 scores for 5 tokens");
  CHECK_STATUS(build_gguf(5, &t), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("scores");
  CHECK_STATUS(build_gguf(6, &t), TOPOS_ERR_FORMAT);
  CHECK_ERROR_HAS("3 token types for 5 tokens");
  CHECK_STATUS(build_gguf(7, &t), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("bos id 5");
  CHECK_STATUS(build_gguf(8, &t), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("eos_token_id");
  CHECK_STATUS(build_gguf(9, &t), TOPOS_ERR_NOT_FOUND); /* gpt2 without merges */
  CHECK_ERROR_HAS("tokenizer.ggml.merges");
  CHECK_STATUS(build_gguf(10, &t), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("add_bos_token");
  CHECK(t == NULL);
  CHECK_OK(build_gguf(11, &t));
  CHECK_EQ_INT(topos_tokenizer_pad(t), TOPOS_TOKEN_NONE);
  topos_tokenizer_free(t);
}

/* Random vocabularies and texts: whatever is built must encode and decode
 * without crashing (ASan/valgrind watch the reads). */
TEST(tokenizer_random_vocabularies_are_safe) {
  topos_rng rng = topos_rng_seed(7);
  static const char *const units[] = {"a", "b", " ", "\xC3\xA9", "<", ">", "|", "0x", "1F",
                                      "\xE2\x96\x81"};
  int built = 0;
  for (int iter = 0; iter < 60; iter++) {
    tt_vocab v;
    memset(&v, 0, sizeof v);
    int n = 1 + (int)(topos_rng_next(&rng) % 40);
    for (int i = 0; i < n; i++) {
      char text[16];
      size_t len = 0;
      for (uint64_t j = topos_rng_next(&rng) % 4; j > 0; j--) {
        const char *u = units[topos_rng_next(&rng) % 10];
        memcpy(text + len, u, strlen(u));
        len += strlen(u);
      }
      int32_t type = (int32_t)(topos_rng_next(&rng) % 6); /* byte tokens: below */
      tt_vocab_add(&v, text, len, (float)(topos_rng_next(&rng) % 9) - 4.0f, type);
    }
    static const char *const merges[] = {"a b", "ab a", "\xC3\xA9 a", "b b", "< |"};
    v.n_merges = 5;
    for (int i = 0; i < 5; i++) v.merges[i] = merges[i];
    topos_tokenizer_desc d = tt_desc(&v, iter % 2 ? "gpt2" : "llama");
    d.unk_id = (int32_t)(topos_rng_next(&rng) % (uint64_t)n);
    if (iter % 3 == 0) tt_vocab_add(&v, "<0xC3>", 6, 0, TOPOS_TOKEN_BYTE);
    d.n_tokens = v.n;
    topos_tokenizer *t = NULL;
    if (topos_tokenizer_new(&d, &t) == TOPOS_OK) {
      built++;
      char text[32], back[256];
      int32_t ids[128];
      for (int k = 0; k < 10; k++) {
        size_t len = (size_t)(topos_rng_next(&rng) % 30);
        for (size_t j = 0; j < len; j++) text[j] = (char)topos_rng_next(&rng);
        size_t count = 0, out = 0;
        topos_status st = topos_tokenizer_encode(t, text, len, TOPOS_TOKENIZE_PARSE_SPECIAL |
                                                 TOPOS_TOKENIZE_ADD_SPECIAL, ids, 128, &count);
        CHECK(st == TOPOS_OK || st == TOPOS_ERR_NOT_FOUND);
        if (st == TOPOS_OK) {
          for (size_t j = 0; j < count; j++) CHECK(ids[j] >= 0 && ids[j] < v.n);
          CHECK_OK(topos_tokenizer_decode(t, ids, count, TOPOS_DECODE_SPECIAL, back, sizeof back,
                                          &out));
        }
      }
      topos_tokenizer_free(t);
    }
    tt_vocab_free(&v);
  }
  CHECK(built >= 50); /* the vocabularies are valid: the test exercises encoding */
}

/* A byte that has no token and no unknown token to fall back to is an error
 * naming the byte; the output is untouched. */
TEST(tokenizer_encode_without_fallback_fails) {
  tt_vocab v;
  small_vocab(&v);
  for (int model = 0; model < 2; model++) {
    topos_tokenizer_desc d = tt_desc(&v, model ? "gpt2" : "llama");
    d.types = NULL; /* <unk> is then an ordinary token */
    topos_tokenizer *t = NULL;
    CHECK_OK(topos_tokenizer_new(&d, &t));
    int32_t ids[8] = {-5, -5, -5, -5, -5, -5, -5, -5};
    size_t count = 99;
    CHECK_STATUS(topos_tokenizer_encode(t, "a\xC3\xA9", 3, 0, ids, 8, &count), TOPOS_ERR_NOT_FOUND);
    CHECK_ERROR_HAS(model ? "byte 0xC3" : "byte 0xE2"); /* llama: the ▁ prefix comes first */
    CHECK_EQ_INT(count, 0);
    CHECK_EQ_INT(ids[0], -5);
    /* with an unknown token every such byte becomes it */
    topos_tokenizer_free(t);
    d.unk_id = 0;
    CHECK_OK(topos_tokenizer_new(&d, &t));
    CHECK_OK(topos_tokenizer_encode(t, "ab", 2, 0, ids, 8, &count));
    if (model)
      CHECK_IDS(ids, count, 5); /* the merge "a b" gives "ab" */
    else
      CHECK_IDS(ids, count, 0, 0, 0, 5); /* ▁ has no token: its three bytes, then "ab" */
    topos_tokenizer_free(t);
  }
  tt_vocab_free(&v);
}
