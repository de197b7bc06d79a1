/* What `topos gguf quantize IN OUT TYPE` must have written, shared by the
 * quantize tests (gguf_cli_test.c: q8_0, gguf_mxfp4_test.c: mxfp4). */
#ifndef TOPOS_TESTS_IO_GGUF_QUANTIZED_UTIL_H
#define TOPOS_TESTS_IO_GGUF_QUANTIZED_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "topos.h"

/* b holds a's tensors in order with their names and extents; vectors (the
 * norms) stay f32, byte for byte; every matrix is of `type` (ggml id
 * ggml_type), each row the bytes topos_quantize_row makes of a's f32 row.
 * *matrices: how many matrices there were. */
static inline int tq_quantized_rows(topos_gguf *a, topos_gguf *b, topos_dtype type, uint32_t ggml_type,
                                    int *matrices) {
  int ok = topos_gguf_tensor_count(b) == topos_gguf_tensor_count(a);
  *matrices = 0;
  for (int64_t i = 0; ok && i < topos_gguf_tensor_count(a); ++i) {
    topos_gguf_tensor_info ta, tb;
    const void *da, *db;
    size_t na, nb;
    ok = topos_gguf_tensor_at(a, i, &ta) == TOPOS_OK && topos_gguf_tensor_at(b, i, &tb) == TOPOS_OK &&
         topos_gguf_tensor_bytes(a, i, &da, &na) == TOPOS_OK &&
         topos_gguf_tensor_bytes(b, i, &db, &nb) == TOPOS_OK && strcmp(ta.name, tb.name) == 0 &&
         ta.n_dims == tb.n_dims && memcmp(ta.ne, tb.ne, sizeof ta.ne) == 0;
    if (!ok) break;
    if (ta.n_dims == 1) {
      ok = tb.ggml_type == 0 && na == nb && memcmp(da, db, na) == 0;
      continue;
    }
    const int64_t rows = ta.ne[1];
    size_t row_q = 0;
    ok = topos_dtype_bytes(type, ta.ne[0], &row_q) == TOPOS_OK;
    uint8_t *q = ok ? malloc(row_q) : NULL;
    ok = ok && tb.ggml_type == ggml_type && tb.has_dtype && tb.dtype == type && nb == row_q * (size_t)rows && q;
    for (int64_t r = 0; ok && r < rows; ++r)
      ok = topos_quantize_row(type, (const float *)da + r * ta.ne[0], q, ta.ne[0]) == TOPOS_OK &&
           memcmp(q, (const uint8_t *)db + (size_t)r * row_q, row_q) == 0;
    free(q);
    ++*matrices;
  }
  return ok;
}

#endif
