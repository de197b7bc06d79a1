/* libFuzzer target for tokenizers built from GGUF metadata: the input is a
 * GGUF file; when it opens and its tokenizer.ggml.* keys build a tokenizer,
 * a few fixed texts and the input's own tail are encoded (with and without
 * special-token parsing) and decoded, and every id must be in the vocabulary.
 * A failing build must leave *out NULL and a message.
 *
 * Seeds (fuzz/corpus/fuzz_tokenizer/): spm.bin (llama: <unk> <s> </s>, 256
 * byte tokens, a few scored pieces, a user-defined token) and bpe.bin (gpt2,
 * pre "smollm": the 256 byte code points, six merges, a control and a
 * user-defined token), both written with topos_gguf_writer; bpe-tekken.bin
 * and bpe-gpt-4o.bin are bpe.bin with those pre-tokenizers (the cased
 * patterns), rewritten with gguf-py; bpe-deepseek-llm.bin,
 * bpe-deepseek-coder.bin and bpe-deepseek-v3.bin likewise (lists of
 * expressions, each splitting the pieces the one before left), and
 * bpe-kimi-k2.bin (Han runs, then words by case without Han); bpe-qwen35.bin
 * that file under the qwen35 pre-tokenizer (marks inside the letter runs).
 * bpe-gemma4.bin (gemma4: tests/models/tokenizer_gemma4_test.c's toy
 * vocabulary, <0x00>..<0xFE> byte tokens, ▁ pieces and newline runs, with
 * eleven more pieces and nine more merges; add_bos_token false) was written
 * with topos_gguf_writer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topos.h"

static volatile unsigned fz_sink;

static void fz_round(const topos_tokenizer *t, const char *text, size_t len, unsigned flags) {
  int32_t ids[512];
  size_t count = 0;
  topos_status st = topos_tokenizer_encode(t, text, len, flags, ids, 512, &count);
  if (st != TOPOS_OK && st != TOPOS_ERR_RANGE && st != TOPOS_ERR_NOT_FOUND) __builtin_trap();
  if (st == TOPOS_ERR_RANGE && count <= 512) __builtin_trap();
  size_t n = count < 512 ? count : 512;
  int32_t vocab = topos_tokenizer_vocab_size(t);
  for (size_t i = 0; st != TOPOS_ERR_NOT_FOUND && i < n; i++)
    if (ids[i] < 0 || ids[i] >= vocab) __builtin_trap();
  if (st == TOPOS_ERR_NOT_FOUND) return;
  char buf[4096];
  size_t out = 0;
  st = topos_tokenizer_decode(t, ids, n, TOPOS_DECODE_SPECIAL, buf, sizeof buf, &out);
  if (st != TOPOS_OK && st != TOPOS_ERR_RANGE) __builtin_trap();
  fz_sink += (unsigned)out;
  for (size_t i = 0; i < n && i < 8; i++) {
    st = topos_tokenizer_decode_token(t, ids[i], buf, 16, &out);
    if (st != TOPOS_OK && st != TOPOS_ERR_RANGE) __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topos_gguf *g = NULL;
  if (topos_gguf_open_memory(data, size, &g) != TOPOS_OK) return 0;
  topos_tokenizer *t = (topos_tokenizer *)(uintptr_t)1;
  topos_status st = topos_tokenizer_from_gguf(g, &t);
  topos_gguf_close(g);
  if (st != TOPOS_OK) {
    if (t != NULL || topos_last_error()[0] == 0) __builtin_trap();
    return 0;
  }
  static const char *const texts[] = {"hello world", " <s>a\xC3\xA9 12", "\xF0\x9F\x98\x80\n\n  x",
                                      "\xC3\x89" "COLE e\xCC\x81'S 1234/x\xE6\x97\xA5" "A", ""};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    fz_round(t, texts[i], strlen(texts[i]), 0);
    fz_round(t, texts[i], strlen(texts[i]), TOPOS_TOKENIZE_PARSE_SPECIAL | TOPOS_TOKENIZE_ADD_SPECIAL);
  }
  size_t tail = size < 64 ? size : 64;
  fz_round(t, (const char *)data + size - tail, tail, TOPOS_TOKENIZE_PARSE_SPECIAL);
  topos_tokenizer_free(t);
  return 0;
}
