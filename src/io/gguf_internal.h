/* Internal structures of the GGUF reader and writer (src/io/gguf_*.c). */
#ifndef TP_IO_GGUF_INTERNAL_H
#define TP_IO_GGUF_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "base/error.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "topos/gguf.h"

#define TP_GGUF_MAGIC "GGUF"
/* Sanity caps on declared counts (far above any real model). */
#define TP_GGUF_MAX_KV (1 << 24)
#define TP_GGUF_MAX_TENSORS (1 << 24)

/* ---- little-endian loads and stores, independent of the host byte order. */
static inline uint16_t tp_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t tp_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t tp_le64(const uint8_t *p) {
  return (uint64_t)tp_le32(p) | ((uint64_t)tp_le32(p + 4) << 32);
}
static inline void tp_put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tp_put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

/* Bytes of one scalar of a numeric/bool GGUF type; 0 for string, array, invalid. */
size_t tp_gguf_scalar_size(topos_gguf_type type);
int tp_gguf_type_is_integer(topos_gguf_type type); /* u8..i64, not bool */
/* Reads a scalar integer/bool of `type` at p into a signed or unsigned 64-bit
 * value (exactly one of the two is meaningful: *is_signed says which). */
void tp_gguf_load_int(topos_gguf_type type, const uint8_t *p, int64_t *s, uint64_t *u,
                      int *is_signed);

/* ---- the refcounted mapping: lives while the reader or any tensor holds it. */
typedef struct tp_gguf_mapping {
  atomic_long refs;
  const uint8_t *base;
  size_t size;
  bool is_mmap; /* munmap when the last reference goes */
} tp_gguf_mapping;

void tp_gguf_mapping_retain(tp_gguf_mapping *m);
void tp_gguf_mapping_release(tp_gguf_mapping *m);

typedef struct tp_gguf_kv_entry {
  size_t key_pos, key_len;  /* in the mapping */
  const char *key;          /* NUL-terminated copy in the arena */
  topos_gguf_type type;
  topos_gguf_type element_type;
  uint64_t count;           /* 1 for scalars */
  size_t value_pos;         /* scalar: the value; string: its bytes; array: first element */
  size_t value_len;         /* scalar: bytes; string: length; numeric array: total bytes */
  const char *string;       /* scalar strings: NUL-terminated copy in the arena */
  uint32_t *string_off;     /* string arrays: each element's length prefix, bytes past value_pos */
} tp_gguf_kv_entry;

typedef struct tp_gguf_tensor_entry {
  size_t name_pos, name_len;
  const char *name;
  uint32_t ggml_type;
  int n_dims;
  int64_t ne[TOPOS_GGUF_MAX_DIMS];
  int64_t elements;
  uint64_t offset; /* relative to the data section */
  uint64_t bytes;
} tp_gguf_tensor_entry;

struct topos_gguf {
  tp_gguf_mapping *mapping;
  uint32_t version;
  uint32_t alignment;
  uint64_t data_offset;
  int64_t n_kv, n_tensors;
  tp_gguf_kv_entry *kv;
  tp_gguf_tensor_entry *tensors;
  tp_strmap kv_names, tensor_names;
  char *arena; /* NUL-terminated copies of keys, tensor names and scalar strings */
};

/* Parses and validates the bytes of `g->mapping` into g (fields zeroed on
 * entry). On failure the caller frees g with tp_gguf_free_parsed. */
topos_status tp_gguf_parse(topos_gguf *g);
void tp_gguf_free_parsed(topos_gguf *g);

/* ---- writer test hook: the next write fails after `bytes` bytes as if the
 * disk were full (-1 disables). Used by tests to prove atomicity. */
void tp_gguf_writer_fail_after(topos_gguf_writer *w, long long bytes);

#endif
