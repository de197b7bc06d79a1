/* Internal: a byte-string -> int32 hash map (FNV-1a, linear probing, at most
 * three quarters full, 16-byte slots: a 49152-token vocabulary and its
 * merges take 1 MiB each), shared by the GGUF reader (key and tensor names -> index) and
 * the tokenizer (token text -> id, merge -> rank). Keys are not copied: they
 * point into memory the owner keeps alive (a GGUF mapping, a tokenizer's
 * text buffer). The capacity is fixed at init for the entries to come. */
#ifndef TP_BASE_STRMAP_H
#define TP_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topos/base.h"

typedef struct tp_strmap_entry {
  const char *key; /* NULL: empty slot */
  uint32_t length; /* compared before the bytes */
  int32_t value;
} tp_strmap_entry;
typedef struct tp_strmap {
  tp_strmap_entry *slots;
  size_t mask; /* capacity - 1; capacity a power of two */
} tp_strmap;

/* Room for `expected` entries. what names the table in messages
 * ("gguf: key names"). */
topos_status tp_strmap_init(tp_strmap *map, size_t expected, const char *what);
void tp_strmap_free(tp_strmap *map);
/* Inserts key -> value (value >= 0, length <= UINT32_MAX; at most `expected`
 * distinct keys in all) and returns -1. When the key is present, returns the
 * value it holds, which `overwrite` replaces. */
int32_t tp_strmap_put(tp_strmap *map, const char *key, size_t length, int32_t value,
                      bool overwrite);
/* The value or -1. */
int32_t tp_strmap_get(const tp_strmap *map, const char *key, size_t length);

#endif
