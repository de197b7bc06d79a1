/* GGUF parsing and validation. Every count, length and offset read from the
 * file is checked against the bytes that remain BEFORE it is used, every size
 * computation is overflow-checked, and nothing is allocated from a declared
 * count until that count has been bounded by the file size. The checklist is
 * ggml's reader (reference/ggml.md §1.2) plus the CVE classes of §5. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/gguf_internal.h"

/* Smallest encodings, used to bound declared counts by the file size:
 * kv = key length (8) + 1 key byte + type (4) + 1 value byte;
 * tensor info = name length (8) + 1 name byte + n_dims (4) + ne (8) + type (4) + offset (8). */
#define TP_MIN_KV_BYTES 14u
#define TP_MIN_TENSOR_INFO_BYTES 33u

typedef struct tp_cursor {
  const uint8_t *base;
  size_t size, pos;
} tp_cursor;

static size_t tp_left(const tp_cursor *c) { return c->size - c->pos; }

/* Printable rendering of an untrusted name for messages: escapes bytes
 * outside printable ASCII, truncates long names. */
static const char *tp_show(const uint8_t *p, size_t len, char *buf, size_t size) {
  size_t o = 0, i = 0;
  for (; i < len && o + 8 < size; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '\\') {
      buf[o++] = (char)p[i];
    } else {
      o += (size_t)snprintf(buf + o, size - o, "\\x%02x", p[i]);
    }
  }
  if (i < len) o += (size_t)snprintf(buf + o, size - o, "...");
  buf[o < size ? o : size - 1] = '\0';
  return buf;
}

static topos_status tp_need(const tp_cursor *c, size_t n, const char *what) {
  if (tp_left(c) < n)
    return tp_fail(TOPOS_ERR_TRUNCATED,
                   "%s: needs %zu bytes at offset %zu but the file ends after %zu more", what, n,
                   c->pos, tp_left(c));
  return TOPOS_OK;
}

static topos_status tp_read_u32(tp_cursor *c, uint32_t *out, const char *what) {
  TP_TRY(tp_need(c, 4, what));
  *out = tp_le32(c->base + c->pos);
  c->pos += 4;
  return TOPOS_OK;
}

static topos_status tp_read_u64(tp_cursor *c, uint64_t *out, const char *what) {
  TP_TRY(tp_need(c, 8, what));
  *out = tp_le64(c->base + c->pos);
  c->pos += 8;
  return TOPOS_OK;
}

/* The bytes of a string whose length prefix was just read: checks the length
 * against the bytes left, then skips them. */
static topos_status tp_skip_string(tp_cursor *c, uint64_t len, size_t *pos, const char *what) {
  if (len > tp_left(c))
    return tp_fail(TOPOS_ERR_TRUNCATED,
                   "%s: string of %" PRIu64 " bytes at offset %zu but only %zu bytes remain",
                   what, len, c->pos, tp_left(c));
  *pos = c->pos;
  c->pos += (size_t)len;
  return TOPOS_OK;
}

/* A length-prefixed string. */
static topos_status tp_read_span(tp_cursor *c, size_t *pos, uint64_t *len, const char *what) {
  TP_TRY(tp_read_u64(c, len, what));
  return tp_skip_string(c, *len, pos, what);
}

static topos_status tp_check_name_bytes(const tp_cursor *c, size_t pos, size_t len,
                                        const char *what, int64_t index) {
  size_t bad = tp_utf8_first_invalid(c->base + pos, len);
  if (bad < len) {
    char shown[128];
    return tp_fail(TOPOS_ERR_BAD_STRING,
                   "gguf: %s #%" PRId64 " '%s' has byte 0x%02x at position %zu that is not "
                   "valid UTF-8 or is NUL",
                   what, index, tp_show(c->base + pos, len, shown, sizeof shown),
                   c->base[pos + bad], bad);
  }
  return TOPOS_OK;
}

static topos_status tp_add_arena(uint64_t *arena, uint64_t len) {
  /* len is bounded by the file size, so this cannot wrap in practice; checked anyway. */
  if (len >= UINT64_MAX - *arena)
    return tp_fail(TOPOS_ERR_OVERFLOW,
                   "gguf: a string of %" PRIu64 " bytes after %" PRIu64 " string bytes overflows",
                   len, *arena);
  *arena += len + 1;
  return TOPOS_OK;
}

static topos_status tp_check_bools(const tp_cursor *c, size_t pos, uint64_t count,
                                   const char *key, bool is_array) {
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t v = c->base[pos + i];
    if (v > 1) {
      if (!is_array)
        return tp_fail(TOPOS_ERR_FORMAT, "gguf: key '%s': bool value %u is not 0 or 1", key, v);
      return tp_fail(TOPOS_ERR_FORMAT, "gguf: key '%s': bool element [%" PRIu64
                     "] is %u, not 0 or 1", key, i, v);
    }
  }
  return TOPOS_OK;
}

static topos_status tp_parse_array(topos_gguf *g, tp_cursor *c, tp_gguf_kv_entry *e,
                                   const char *key) {
  char what[320];
  snprintf(what, sizeof what, "gguf: key '%s' array header", key);
  uint32_t et;
  TP_TRY(tp_read_u32(c, &et, what));
  if (et == TOPOS_GGUF_ARRAY)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key '%s': arrays of arrays are not supported", key);
  if (et >= TOPOS_GGUF_TYPE_COUNT)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key '%s': unknown array element type %u", key, et);
  e->element_type = (topos_gguf_type)et;
  TP_TRY(tp_read_u64(c, &e->count, what));
  if (et == TOPOS_GGUF_STRING) {
    /* Each element needs at least its 8-byte length: bound count first. */
    if (e->count > tp_left(c) / 8)
      return tp_fail(TOPOS_ERR_TRUNCATED,
                     "gguf: key '%s': array of %" PRIu64 " strings needs at least 8 bytes each "
                     "but only %zu bytes remain",
                     key, e->count, tp_left(c));
    e->value_pos = c->pos;
    if (e->count > 0) {
      e->string_off = malloc((size_t)e->count * sizeof *e->string_off);
      if (!e->string_off)
        return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: key '%s': index of %" PRIu64 " strings",
                       key, e->count);
    }
    for (uint64_t i = 0; i < e->count; ++i) {
      /* 4-byte offsets (a vocabulary's index is half the size): an array
       * of strings spanning 4 GiB is refused */
      if (c->pos - e->value_pos > UINT32_MAX)
        return tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s': string array spans more than 4 GiB at element %" PRIu64,
                       key, i);
      e->string_off[i] = (uint32_t)(c->pos - e->value_pos);
      /* the element's name for a message is formatted only where reading
       * it fails: formatting it for each of a vocabulary's 98K tokens and
       * merges took half of SmolLM2's 50 ms load */
      if (tp_left(c) >= 8 && tp_le64(c->base + c->pos) <= tp_left(c) - 8) {
        c->pos += 8 + (size_t)tp_le64(c->base + c->pos);
        continue;
      }
      snprintf(what, sizeof what, "gguf: key '%s' string element [%" PRIu64 "]", key, i);
      size_t pos;
      uint64_t len;
      TP_TRY(tp_read_span(c, &pos, &len, what));
    }
    e->value_len = c->pos - e->value_pos;
    return TOPOS_OK;
  }
  size_t es = tp_gguf_scalar_size(e->element_type);
  if (e->count > tp_left(c) / es)
    return tp_fail(TOPOS_ERR_TRUNCATED,
                   "gguf: key '%s': array of %" PRIu64 " %s elements (%zu bytes each) but only "
                   "%zu bytes remain",
                   key, e->count, topos_gguf_type_name(e->element_type), es, tp_left(c));
  e->value_pos = c->pos;
  e->value_len = (size_t)e->count * es;
  c->pos += e->value_len;
  if (e->element_type == TOPOS_GGUF_BOOL) TP_TRY(tp_check_bools(c, e->value_pos, e->count, key, true));
  (void)g;
  return TOPOS_OK;
}

/* Keys and tensor names are validated alike; only the words differ. */
typedef struct tp_ident_kind {
  const char *owner;      /* "tensor": "tensor #3 has an empty name" */
  const char *reading;    /* what the cursor reads: "tensor info" */
  const char *noun;       /* "name" */
  const char *duplicate;  /* "tensor name": "duplicate tensor name 'x'" */
  const char *owners;     /* "tensors": "(tensors #0 and #1)" */
  uint64_t max_len;
} tp_ident_kind;

static const tp_ident_kind tp_key_kind = {"key/value", "key/value", "key", "key",
                                          "key/values", TOPOS_GGUF_MAX_KEY};
static const tp_ident_kind tp_tensor_name_kind = {"tensor", "tensor info", "name", "tensor name",
                                                  "tensors", TOPOS_GGUF_MAX_NAME};

/* Reads entry #i's identifier: non-empty, within kind->max_len, inside the
 * file, valid UTF-8 without NUL, not seen before in `names`. Leaves its
 * printable rendering in shown and counts its bytes into the arena. */
static topos_status tp_read_ident(tp_cursor *c, const tp_ident_kind *kind, int64_t i,
                                  tp_strmap *names, size_t *pos, size_t *len, char *shown,
                                  size_t shown_size, uint64_t *arena) {
  char what[64];
  snprintf(what, sizeof what, "gguf: %s #%" PRId64 " %s", kind->reading, i, kind->noun);
  uint64_t n;
  TP_TRY(tp_read_u64(c, &n, what));
  if (n == 0)
    return tp_fail(TOPOS_ERR_BAD_STRING, "gguf: %s #%" PRId64 " has an empty %s", kind->owner, i,
                   kind->noun);
  if (n > kind->max_len)
    return tp_fail(TOPOS_ERR_BAD_STRING,
                   "gguf: %s #%" PRId64 " %s length %" PRIu64 " exceeds %" PRIu64 " bytes",
                   kind->owner, i, kind->noun, n, kind->max_len);
  TP_TRY(tp_skip_string(c, n, pos, what));
  *len = (size_t)n;
  TP_TRY(tp_check_name_bytes(c, *pos, *len, kind->owner, i));
  tp_show(c->base + *pos, *len, shown, shown_size);
  /* i < TP_GGUF_MAX_KV, TP_GGUF_MAX_TENSORS (2^24): fits the map's values */
  int32_t prev = tp_strmap_put(names, (const char *)c->base + *pos, *len, (int32_t)i, false);
  if (prev >= 0)
    return tp_fail(TOPOS_ERR_DUPLICATE,
                   "gguf: duplicate %s '%s' (%s #%" PRId32 " and #%" PRId64 ")", kind->duplicate,
                   shown, kind->owners, prev, i);
  return tp_add_arena(arena, n);
}

static topos_status tp_parse_kv(topos_gguf *g, tp_cursor *c, int64_t i, uint64_t *arena) {
  tp_gguf_kv_entry *e = &g->kv[i];
  char what[320], key[160];
  TP_TRY(tp_read_ident(c, &tp_key_kind, i, &g->kv_names, &e->key_pos, &e->key_len, key,
                       sizeof key, arena));

  snprintf(what, sizeof what, "gguf: key '%s' value", key);
  uint32_t type;
  TP_TRY(tp_read_u32(c, &type, what));
  if (type >= TOPOS_GGUF_TYPE_COUNT)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key '%s' has unknown value type %u", key, type);
  e->type = e->element_type = (topos_gguf_type)type;
  e->count = 1;
  if (e->type == TOPOS_GGUF_ARRAY) {
    TP_TRY(tp_parse_array(g, c, e, key));
  } else if (e->type == TOPOS_GGUF_STRING) {
    uint64_t slen;
    TP_TRY(tp_read_span(c, &e->value_pos, &slen, what));
    e->value_len = (size_t)slen;
    TP_TRY(tp_add_arena(arena, slen));
  } else {
    size_t es = tp_gguf_scalar_size(e->type);
    TP_TRY(tp_need(c, es, what));
    e->value_pos = c->pos;
    e->value_len = es;
    c->pos += es;
    if (e->type == TOPOS_GGUF_BOOL) TP_TRY(tp_check_bools(c, e->value_pos, 1, key, false));
  }

  if (e->key_len == 17 && memcmp(c->base + e->key_pos, "general.alignment", 17) == 0) {
    if (e->type != TOPOS_GGUF_U32)
      return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key 'general.alignment' has type %s, must be u32",
                     topos_gguf_type_name(e->type));
    uint32_t a = tp_le32(c->base + e->value_pos);
    if (a == 0 || (a & (a - 1)) != 0)
      return tp_fail(TOPOS_ERR_ALIGNMENT,
                     "gguf: general.alignment = %u is not a non-zero power of two", a);
    g->alignment = a;
  }
  return TOPOS_OK;
}

static topos_status tp_parse_tensor_info(topos_gguf *g, tp_cursor *c, int64_t i,
                                         uint64_t *arena) {
  tp_gguf_tensor_entry *t = &g->tensors[i];
  char what[320], name[160];
  TP_TRY(tp_read_ident(c, &tp_tensor_name_kind, i, &g->tensor_names, &t->name_pos, &t->name_len,
                       name, sizeof name, arena));

  snprintf(what, sizeof what, "gguf: tensor '%s' info", name);
  uint32_t n_dims;
  TP_TRY(tp_read_u32(c, &n_dims, what));
  if (n_dims < 1 || n_dims > TOPOS_GGUF_MAX_DIMS)
    return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf: tensor '%s' has n_dims = %u, outside 1..%d", name,
                   n_dims, TOPOS_GGUF_MAX_DIMS);
  t->n_dims = (int)n_dims;
  int64_t elements = 1;
  for (int d = 0; d < TOPOS_GGUF_MAX_DIMS; ++d) t->ne[d] = 1;
  for (int d = 0; d < t->n_dims; ++d) {
    uint64_t ne;
    TP_TRY(tp_read_u64(c, &ne, what));
    if (ne == 0 || ne > (uint64_t)INT64_MAX)
      return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf: tensor '%s' has ne[%d] = %" PRId64
                     ", extents must be positive", name, d, (int64_t)ne);
    t->ne[d] = (int64_t)ne;
    if (elements > INT64_MAX / t->ne[d])
      return tp_fail(TOPOS_ERR_OVERFLOW,
                     "gguf: tensor '%s' element count overflows int64 at ne[%d] = %" PRId64, name,
                     d, t->ne[d]);
    elements *= t->ne[d];
  }
  t->elements = elements;
  TP_TRY(tp_read_u32(c, &t->ggml_type, what));
  topos_ggml_type_info info;
  if (topos_ggml_type_info_get(t->ggml_type, &info) != TOPOS_OK)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: tensor '%s' has unknown ggml type id %u", name,
                   t->ggml_type);
  if (t->ne[0] % info.block_size != 0)
    return tp_fail(TOPOS_ERR_BAD_DIMS,
                   "gguf: tensor '%s': row of ne[0] = %" PRId64 " elements is not a whole "
                   "number of %" PRId64 "-element %s blocks",
                   name, t->ne[0], info.block_size, info.name);
  int64_t blocks = elements / info.block_size;
  if (blocks > INT64_MAX / info.block_bytes || (uint64_t)(blocks * info.block_bytes) > SIZE_MAX)
    return tp_fail(TOPOS_ERR_OVERFLOW,
                   "gguf: tensor '%s': %" PRId64 " blocks of %" PRId64 " bytes overflow the size type",
                   name, blocks, info.block_bytes);
  t->bytes = (uint64_t)(blocks * info.block_bytes);
  TP_TRY(tp_read_u64(c, &t->offset, what));
  return TOPOS_OK;
}

typedef struct tp_placed {
  uint64_t offset;
  int64_t index;
} tp_placed;
static int tp_by_offset(const void *a, const void *b) {
  uint64_t x = ((const tp_placed *)a)->offset, y = ((const tp_placed *)b)->offset;
  return x < y ? -1 : x > y;
}

/* Placement of tensor data: aligned, inside the data section, no overlap. */
static topos_status tp_check_placement(topos_gguf *g) {
  size_t size = g->mapping->size;
  uint64_t data_size = g->data_offset <= size ? size - g->data_offset : 0;
  for (int64_t i = 0; i < g->n_tensors; ++i) {
    const tp_gguf_tensor_entry *t = &g->tensors[i];
    char name[160];
    tp_show(g->mapping->base + t->name_pos, t->name_len, name, sizeof name);
    if (t->offset % g->alignment != 0)
      return tp_fail(TOPOS_ERR_ALIGNMENT,
                     "gguf: tensor '%s' offset %" PRIu64 " is not a multiple of the alignment %u",
                     name, t->offset, g->alignment);
    if (t->offset > data_size)
      return tp_fail(TOPOS_ERR_BAD_OFFSET,
                     "gguf: tensor '%s' offset %" PRIu64 " lies beyond the data section (%" PRIu64
                     " bytes from file offset %" PRIu64 ")",
                     name, t->offset, data_size, g->data_offset);
    if (t->bytes > data_size - t->offset)
      return tp_fail(TOPOS_ERR_TRUNCATED,
                     "gguf: tensor '%s' data [%" PRIu64 ", +%" PRIu64 ") is not within the file "
                     "(data section holds %" PRIu64 " bytes): file truncated or corrupt",
                     name, t->offset, t->bytes, data_size);
  }
  if (g->n_tensors < 2) return TOPOS_OK;
  tp_placed *order = malloc((size_t)g->n_tensors * sizeof *order);
  if (!order) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: order of %" PRId64 " tensors", g->n_tensors);
  for (int64_t i = 0; i < g->n_tensors; ++i) order[i] = (tp_placed){g->tensors[i].offset, i};
  qsort(order, (size_t)g->n_tensors, sizeof *order, tp_by_offset);
  topos_status st = TOPOS_OK;
  for (int64_t k = 1; k < g->n_tensors && st == TOPOS_OK; ++k) {
    const tp_gguf_tensor_entry *a = &g->tensors[order[k - 1].index];
    const tp_gguf_tensor_entry *b = &g->tensors[order[k].index];
    if (a->offset + a->bytes > b->offset) {
      char na[160], nb[160];
      tp_show(g->mapping->base + a->name_pos, a->name_len, na, sizeof na);
      tp_show(g->mapping->base + b->name_pos, b->name_len, nb, sizeof nb);
      st = tp_fail(TOPOS_ERR_BAD_OFFSET,
                   "gguf: tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64
                   ") overlap",
                   na, a->offset, a->offset + a->bytes, nb, b->offset, b->offset + b->bytes);
    }
  }
  free(order);
  return st;
}

static topos_status tp_build_arena(topos_gguf *g, uint64_t arena_bytes) {
  if (arena_bytes == 0) return TOPOS_OK;
  if (arena_bytes > SIZE_MAX)
    return tp_fail(TOPOS_ERR_OVERFLOW, "gguf: %" PRIu64 " bytes of names and strings exceed the size type",
                   arena_bytes);
  g->arena = malloc((size_t)arena_bytes);
  if (!g->arena)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: %" PRIu64 " bytes of names and strings",
                   arena_bytes);
  char *p = g->arena;
  const uint8_t *base = g->mapping->base;
#define TP_COPY_OUT(dst, pos, len) \
  do {                             \
    memcpy(p, base + (pos), (len)); \
    p[(len)] = '\0';               \
    (dst) = p;                     \
    p += (len) + 1;                \
  } while (0)
  for (int64_t i = 0; i < g->n_kv; ++i) {
    tp_gguf_kv_entry *e = &g->kv[i];
    TP_COPY_OUT(e->key, e->key_pos, e->key_len);
    if (e->type == TOPOS_GGUF_STRING) TP_COPY_OUT(e->string, e->value_pos, e->value_len);
  }
  for (int64_t i = 0; i < g->n_tensors; ++i)
    TP_COPY_OUT(g->tensors[i].name, g->tensors[i].name_pos, g->tensors[i].name_len);
#undef TP_COPY_OUT
  return TOPOS_OK;
}

topos_status tp_gguf_parse(topos_gguf *g) {
  tp_cursor c = {g->mapping->base, g->mapping->size, 0};
  g->alignment = TOPOS_GGUF_DEFAULT_ALIGNMENT;
  if (c.size < 4)
    return tp_fail(TOPOS_ERR_TRUNCATED, "gguf: file of %zu bytes is too short to hold the magic",
                   c.size);
  if (memcmp(c.base, TP_GGUF_MAGIC, 4) != 0) {
    char shown[64];
    return tp_fail(TOPOS_ERR_BAD_MAGIC,
                   "gguf: invalid magic '%s' (bytes %02x %02x %02x %02x), expected 'GGUF'",
                   tp_show(c.base, 4, shown, sizeof shown), c.base[0], c.base[1], c.base[2],
                   c.base[3]);
  }
  c.pos = 4;
  TP_TRY(tp_read_u32(&c, &g->version, "gguf: header version"));
  if (g->version == 0) return tp_fail(TOPOS_ERR_VERSION, "gguf: version 0 is invalid");
  if ((g->version & 0xFFFF) == 0)
    return tp_fail(TOPOS_ERR_ENDIAN,
                   "gguf: version field reads 0x%08x, i.e. version %u stored big-endian; only "
                   "little-endian GGUF files are supported",
                   g->version, __builtin_bswap32(g->version));
  if (g->version == 1)
    return tp_fail(TOPOS_ERR_VERSION, "gguf: GGUF version 1 is no longer supported (only 2 and 3)");
  if (g->version > 3)
    return tp_fail(TOPOS_ERR_VERSION, "gguf: version %u is newer than the supported 2 and 3",
                   g->version);
  uint64_t n_tensors, n_kv;
  TP_TRY(tp_read_u64(&c, &n_tensors, "gguf: header n_tensors"));
  TP_TRY(tp_read_u64(&c, &n_kv, "gguf: header n_kv"));
  if (n_tensors > TP_GGUF_MAX_TENSORS)
    return tp_fail(TOPOS_ERR_FORMAT, "gguf: n_tensors = %" PRIu64 " exceeds the limit of %d",
                   n_tensors, TP_GGUF_MAX_TENSORS);
  if (n_kv > TP_GGUF_MAX_KV)
    return tp_fail(TOPOS_ERR_FORMAT, "gguf: n_kv = %" PRIu64 " exceeds the limit of %d", n_kv,
                   TP_GGUF_MAX_KV);
  /* Both counts are < 2^24, so this bound cannot overflow. */
  uint64_t min_bytes = n_kv * TP_MIN_KV_BYTES + n_tensors * TP_MIN_TENSOR_INFO_BYTES;
  if (min_bytes > tp_left(&c))
    return tp_fail(TOPOS_ERR_TRUNCATED,
                   "gguf: header declares %" PRIu64 " key/values and %" PRIu64
                   " tensors, which need at least %" PRIu64 " bytes, but only %zu remain",
                   n_kv, n_tensors, min_bytes, tp_left(&c));
  g->n_kv = (int64_t)n_kv;
  g->n_tensors = (int64_t)n_tensors;
  if (n_kv > 0 && !(g->kv = calloc((size_t)n_kv, sizeof *g->kv)))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: %" PRIu64 " key/values", n_kv);
  if (n_tensors > 0 && !(g->tensors = calloc((size_t)n_tensors, sizeof *g->tensors)))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: %" PRIu64 " tensors", n_tensors);
  TP_TRY(tp_strmap_init(&g->kv_names, (size_t)g->n_kv, "gguf: key names"));
  TP_TRY(tp_strmap_init(&g->tensor_names, (size_t)g->n_tensors, "gguf: tensor names"));

  uint64_t arena = 0;
  for (int64_t i = 0; i < g->n_kv; ++i) TP_TRY(tp_parse_kv(g, &c, i, &arena));
  for (int64_t i = 0; i < g->n_tensors; ++i) TP_TRY(tp_parse_tensor_info(g, &c, i, &arena));

  size_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
  g->data_offset = (uint64_t)c.pos + pad;
  if (g->n_tensors > 0 && g->data_offset > c.size)
    return tp_fail(TOPOS_ERR_TRUNCATED,
                   "gguf: tensor data would start at offset %" PRIu64
                   " (after padding to %u), past the end of the %zu-byte file",
                   g->data_offset, g->alignment, c.size);
  TP_TRY(tp_check_placement(g));
  return tp_build_arena(g, arena);
}

void tp_gguf_free_parsed(topos_gguf *g) {
  for (int64_t i = 0; g->kv && i < g->n_kv; ++i) free(g->kv[i].string_off);
  free(g->kv);
  free(g->tensors);
  tp_strmap_free(&g->kv_names);
  tp_strmap_free(&g->tensor_names);
  free(g->arena);
  g->kv = NULL;
  g->tensors = NULL;
  g->arena = NULL;
}
