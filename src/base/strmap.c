/* The string map (see strmap.h). */
#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static uint64_t tp_fnv1a(const char *s, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

topos_status tp_strmap_init(tp_strmap *map, size_t expected, const char *what) {
  map->slots = NULL;
  map->mask = 0;
  size_t cap = 16;
  while (cap / 4 * 3 < expected) { /* at most three quarters full */
    if (cap > SIZE_MAX / 4 / sizeof(tp_strmap_entry))
      return tp_fail(TOPOS_ERR_OVERFLOW, "%s: table for %zu entries too large", what, expected);
    cap *= 2;
  }
  map->slots = calloc(cap, sizeof *map->slots);
  if (!map->slots) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s: table of %zu slots", what, cap);
  map->mask = cap - 1;
  return TOPOS_OK;
}

void tp_strmap_free(tp_strmap *map) {
  free(map->slots);
  map->slots = NULL;
  map->mask = 0;
}

int32_t tp_strmap_put(tp_strmap *map, const char *key, size_t length, int32_t value,
                      bool overwrite) {
  uint64_t h = tp_fnv1a(key, length);
  for (size_t i = (size_t)h & map->mask;; i = (i + 1) & map->mask) {
    tp_strmap_entry *e = &map->slots[i];
    if (!e->key) {
      *e = (tp_strmap_entry){key ? key : "", (uint32_t)length, value};
      return -1;
    }
    if (e->length == length && memcmp(e->key, key, length) == 0) {
      int32_t held = e->value;
      if (overwrite) e->value = value;
      return held;
    }
  }
}

int32_t tp_strmap_get(const tp_strmap *map, const char *key, size_t length) {
  if (!map->slots || length > UINT32_MAX) return -1;
  uint64_t h = tp_fnv1a(key, length);
  for (size_t i = (size_t)h & map->mask;; i = (i + 1) & map->mask) {
    const tp_strmap_entry *e = &map->slots[i];
    if (!e->key) return -1;
    if (e->length == length && memcmp(e->key, key, length) == 0) return e->value;
  }
}
