/* libFuzzer target for the data loaders: raw DEFLATE, gzip and IDX over
 * arbitrary bytes (output capped at 1 MiB): no crash, no leak, no read
 * outside the input, results within their stated bounds.
 * Seeds (fuzz/corpus/fuzz_data/): a gzip member of text, a raw fixed-Huffman
 * stream, a stored block and a small IDX file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  void *out = NULL;
  size_t n = 0, used = 0;
  if (topos_inflate(data, size, 1 << 20, &out, &n, &used) == TOPOS_OK) {
    if (used > size) __builtin_trap();
    free(out);
  }
  out = NULL;
  if (topos_gunzip(data, size, 1 << 20, &out, &n) == TOPOS_OK) {
    if (n > (1u << 20)) __builtin_trap();
    free(out);
  }
  topos_tensor *t = NULL;
  if (topos_idx_parse(data, size, TOPOS_F32, &t) == TOPOS_OK) {
    if (topos_tensor_volume(t) <= 0) __builtin_trap();
    topos_tensor_release(t);
  }
  return 0;
}
