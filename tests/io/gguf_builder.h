/* A tiny byte builder for handcrafted GGUF files in tests (valid and
 * deliberately broken ones). Everything little-endian. */
#ifndef TT_GGUF_BUILDER_H
#define TT_GGUF_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topos/gguf.h"

typedef struct gb {
  uint8_t p[8192];
  size_t len;
} gb;

static inline void gb_bytes(gb *b, const void *s, size_t n) {
  if (b->len + n > sizeof b->p) abort(); /* a test bug, not a library path */
  memcpy(b->p + b->len, s, n);
  b->len += n;
}
static inline void gb_u8(gb *b, uint8_t v) { gb_bytes(b, &v, 1); }
static inline void gb_u32(gb *b, uint32_t v) {
  for (int i = 0; i < 4; ++i) gb_u8(b, (uint8_t)(v >> (8 * i)));
}
static inline void gb_u64(gb *b, uint64_t v) {
  for (int i = 0; i < 8; ++i) gb_u8(b, (uint8_t)(v >> (8 * i)));
}
static inline void gb_str(gb *b, const char *s) {
  gb_u64(b, strlen(s));
  gb_bytes(b, s, strlen(s));
}
static inline void gb_pad(gb *b, size_t align) {
  while (b->len % align) gb_u8(b, 0);
}
static inline void gb_zeros(gb *b, size_t n) {
  while (n--) gb_u8(b, 0);
}
/* magic, version, n_tensors, n_kv */
static inline void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  gb_bytes(b, "GGUF", 4);
  gb_u32(b, version);
  gb_u64(b, n_tensors);
  gb_u64(b, n_kv);
}
static inline void gb_kv_u32(gb *b, const char *key, uint32_t v) {
  gb_str(b, key);
  gb_u32(b, TOPOS_GGUF_U32);
  gb_u32(b, v);
}
static inline void gb_kv_str(gb *b, const char *key, const char *v) {
  gb_str(b, key);
  gb_u32(b, TOPOS_GGUF_STRING);
  gb_str(b, v);
}
/* Tensor info with n_dims extents. */
static inline void gb_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                             uint32_t type, uint64_t offset) {
  gb_str(b, name);
  gb_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) gb_u64(b, ne[d]);
  gb_u32(b, type);
  gb_u64(b, offset);
}

#endif
