/* Robustness: a small valid file truncated at every length and with every
 * byte flipped under several masks either opens or is rejected with a
 * status, never a crash or an out-of-bounds read (this runs under ASan in CI:
 * each mutant is copied into an exactly-sized heap buffer so any read past
 * the end is caught). Files that open are walked completely. */
#include <stdlib.h>

#include "test.h"

/* A small but feature-complete file: scalars, numeric/bool/string arrays,
 * f32, f16 and q8_0 tensors. */
static topos_status tt_make_sample(void **bytes, size_t *size) {
  topos_gguf_writer *w;
  topos_status st = topos_gguf_writer_create(&w);
  if (st != TOPOS_OK) return st;
  static float f[16];
  static uint16_t h[32];
  static uint8_t q[34];
  for (int i = 0; i < 16; ++i) f[i] = (float)i - 7.5f;
  for (int i = 0; i < 32; ++i) h[i] = topos_f32_to_f16((float)i / 8);
  for (int i = 0; i < 34; ++i) q[i] = (uint8_t)(i * 7);
  uint32_t u32s[2] = {3, 4};
  uint8_t bools[2] = {1, 0};
  const char *toks[3] = {"<s>", "a", "bc"};
  int64_t ne_f[2] = {4, 4}, ne_h[1] = {32}, ne_q[1] = {32};
  if (st == TOPOS_OK) st = topos_gguf_writer_add_string(w, "general.architecture", "llama");
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, "llama.block_count", 1);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_f32(w, "llama.eps", 1e-5f);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_bool(w, "b", 1);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_array(w, "u", TOPOS_GGUF_U32, u32s, 2);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_array(w, "bb", TOPOS_GGUF_BOOL, bools, 2);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_string_array(w, "toks", toks, NULL, 3);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_tensor_raw(w, "f", 0, 2, ne_f, f, sizeof f);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_tensor_raw(w, "h", 1, 1, ne_h, h, sizeof h);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_tensor_raw(w, "q", 8, 1, ne_q, q, sizeof q);
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, bytes, size);
  topos_gguf_writer_destroy(w);
  return st;
}

/* Reads everything a consumer could: every key through every getter, every
 * array element, every tensor's bytes and (when possible) a topos tensor. */
static unsigned tt_walk(topos_gguf *g) {
  unsigned sum = 0;
  for (int64_t i = 0; i < topos_gguf_kv_count(g); ++i) {
    topos_gguf_kv kv;
    if (topos_gguf_kv_at(g, i, &kv) != TOPOS_OK) continue;
    uint64_t u;
    int64_t s;
    double d;
    float f;
    int b;
    const char *str;
    size_t len;
    sum += topos_gguf_get_u64(g, kv.key, &u) + topos_gguf_get_i64(g, kv.key, &s);
    sum += topos_gguf_get_f64(g, kv.key, &d) + topos_gguf_get_f32(g, kv.key, &f);
    sum += topos_gguf_get_bool(g, kv.key, &b);
    if (topos_gguf_get_string(g, kv.key, &str, &len) == TOPOS_OK)
      for (size_t k = 0; k < len; ++k) sum += (unsigned char)str[k];
    topos_gguf_array a;
    if (topos_gguf_array_at(g, i, &a) == TOPOS_OK) {
      for (uint64_t e = 0; e < a.count; ++e) {
        if (topos_gguf_array_string(g, i, e, &str, &len) == TOPOS_OK) {
          for (size_t k = 0; k < len; ++k) sum += (unsigned char)str[k];
        } else {
          sum += topos_gguf_array_int(g, i, e, &s) + topos_gguf_array_float(g, i, e, &d);
        }
      }
    }
  }
  for (int64_t i = 0; i < topos_gguf_tensor_count(g); ++i) {
    topos_gguf_tensor_info info;
    const void *data;
    size_t bytes;
    if (topos_gguf_tensor_at(g, i, &info) != TOPOS_OK) continue;
    if (topos_gguf_tensor_bytes(g, i, &data, &bytes) == TOPOS_OK)
      for (size_t k = 0; k < bytes; ++k) sum += ((const uint8_t *)data)[k];
    topos_tensor *t;
    if (topos_gguf_tensor_by_index(g, i, &t) == TOPOS_OK) {
      sum += (unsigned)topos_tensor_volume(t);
      topos_tensor_release(t);
    }
  }
  return sum;
}

/* Opens a mutant from an exactly-sized copy; returns 1 if it opened. */
static int tt_try(const uint8_t *bytes, size_t n, unsigned *sum) {
  uint8_t *copy = malloc(n ? n : 1);
  if (!copy) return -1;
  memcpy(copy, bytes, n);
  topos_gguf *g = NULL;
  topos_status st = topos_gguf_open_memory(copy, n, &g);
  int opened = st == TOPOS_OK;
  if (opened) {
    *sum += tt_walk(g);
    topos_gguf_close(g);
  } else if (topos_last_error()[0] == '\0' || g != NULL) {
    opened = -1; /* a failure must come with a message and no handle */
  }
  free(copy);
  return opened;
}

TEST(gguf_mutate_every_truncation) {
  void *bytes;
  size_t size;
  CHECK_OK(tt_make_sample(&bytes, &size));
  unsigned sum = 0;
  int full = tt_try(bytes, size, &sum);
  int opened_short = 0;
  for (size_t n = 0; n < size; ++n) {
    int r = tt_try(bytes, n, &sum);
    if (r < 0) {
      free(bytes);
      CHECK_MSG(0, "truncation at %zu: failure without message", n);
    }
    opened_short += r;
  }
  free(bytes);
  CHECK_EQ_INT(full, 1);
  /* Only the zero padding after the last tensor may be cut and still open:
   * q8_0 tensor (34 bytes) is last, padded to 64, so at most 30 short files. */
  CHECK(opened_short <= 30);
}

TEST(gguf_mutate_every_byte_flip) {
  void *bytes;
  size_t size;
  CHECK_OK(tt_make_sample(&bytes, &size));
  uint8_t *p = bytes;
  static const uint8_t masks[5] = {0xFF, 0x01, 0x80, 0x7F, 0x10};
  unsigned sum = 0;
  int opened = 0, rejected = 0;
  for (int m = 0; m < 5; ++m) {
    for (size_t i = 0; i < size; ++i) {
      p[i] ^= masks[m];
      int r = tt_try(p, size, &sum);
      p[i] ^= masks[m];
      if (r < 0) {
        free(bytes);
        CHECK_MSG(0, "flip 0x%02x at %zu: failure without message", masks[m], i);
      }
      if (r) ++opened;
      else ++rejected;
    }
  }
  free(bytes);
  /* Both outcomes must occur: header flips are rejected, data flips open. */
  CHECK(opened > 0 && rejected > 0);
}
