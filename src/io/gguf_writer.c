/* GGUF writer: collects key/values (serialized at once) and tensors (held by
 * reference), then writes GGUF v3 atomically: temp file in the target's
 * directory, fsync, rename over the target; on failure the temp file is
 * removed and the target untouched. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/gguf_internal.h"

typedef struct tp_writer_kv {
  char *key;
  uint8_t *value; /* type u32 + payload, little-endian, ready to write */
  size_t value_len;
} tp_writer_kv;

typedef struct tp_writer_tensor {
  char *name;
  uint32_t ggml_type;
  int n_dims;
  int64_t ne[TOPOS_GGUF_MAX_DIMS];
  const void *data;
  size_t bytes;
  topos_tensor *hold; /* reference kept for tensors added as topos tensors */
  topos_gguf_tensor_fill fill; /* data == NULL: bytes produced row range by row range */
  void *fill_user;
  size_t row_bytes;
} tp_writer_tensor;

struct topos_gguf_writer {
  tp_writer_kv *kv;
  size_t n_kv, cap_kv;
  tp_writer_tensor *tensors;
  size_t n_tensors, cap_tensors;
  uint32_t alignment;
  long long fail_after; /* test hook, -1 = off */
};

topos_status topos_gguf_writer_create(topos_gguf_writer **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_create: NULL out");
  *out = calloc(1, sizeof **out);
  if (!*out) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer_create");
  (*out)->alignment = TOPOS_GGUF_DEFAULT_ALIGNMENT;
  (*out)->fail_after = -1;
  return TOPOS_OK;
}

void topos_gguf_writer_destroy(topos_gguf_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n_kv; ++i) {
    free(w->kv[i].key);
    free(w->kv[i].value);
  }
  for (size_t i = 0; i < w->n_tensors; ++i) {
    free(w->tensors[i].name);
    topos_tensor_release(w->tensors[i].hold);
  }
  free(w->kv);
  free(w->tensors);
  free(w);
}

void tp_gguf_writer_fail_after(topos_gguf_writer *w, long long bytes) { w->fail_after = bytes; }

/* ---- a growable little-endian byte buffer */
typedef struct tp_bytes {
  uint8_t *p;
  size_t len, cap;
  bool failed;
} tp_bytes;

static void tp_bytes_put(tp_bytes *b, const void *src, size_t n) {
  if (b->failed) return;
  if (n > SIZE_MAX - b->len) {
    b->failed = true;
    return;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n) cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, src, n);
  b->len += n;
}
static void tp_bytes_u32(tp_bytes *b, uint32_t v) {
  uint8_t t[4];
  tp_put_le32(t, v);
  tp_bytes_put(b, t, 4);
}
static void tp_bytes_u64(tp_bytes *b, uint64_t v) {
  uint8_t t[8];
  tp_put_le64(t, v);
  tp_bytes_put(b, t, 8);
}
static void tp_bytes_str(tp_bytes *b, const void *s, size_t n) {
  tp_bytes_u64(b, n);
  tp_bytes_put(b, s, n);
}
/* Host-order elements of `size` bytes to little-endian. */
static void tp_bytes_elements(tp_bytes *b, const void *src, uint64_t count, size_t size) {
  const uint16_t probe = 1;
  bool little = *(const uint8_t *)&probe == 1;
  if (little || size == 1) {
    tp_bytes_put(b, src, (size_t)count * size);
    return;
  }
  const uint8_t *s = src;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t t[8];
    for (size_t k = 0; k < size; ++k) t[k] = s[i * size + size - 1 - k];
    tp_bytes_put(b, t, size);
  }
}

/* ---- key/values */
/* A key or tensor name the reader will accept: 1..max bytes of UTF-8 (a C
 * string, so no NUL inside). Uniqueness is the caller's check. */
static topos_status tp_check_name(const char *kind, const char *name, size_t max) {
  if (!name) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer: NULL %s", kind);
  size_t len = strlen(name);
  if (len == 0 || len > max)
    return tp_fail(TOPOS_ERR_BAD_STRING, "gguf_writer: %s '%.64s' has %zu bytes, not 1..%zu",
                   kind, name, len, max);
  size_t bad = tp_utf8_first_invalid((const uint8_t *)name, len);
  if (bad != len)
    return tp_fail(TOPOS_ERR_BAD_STRING,
                   "gguf_writer: %s '%.64s' is not valid UTF-8 (byte 0x%02x at position %zu)",
                   kind, name, (unsigned char)name[bad], bad);
  return TOPOS_OK;
}

static topos_status tp_check_key(const topos_gguf_writer *w, const char *key) {
  TP_TRY(tp_check_name("key", key, TOPOS_GGUF_MAX_KEY));
  for (size_t i = 0; i < w->n_kv; ++i)
    if (strcmp(w->kv[i].key, key) == 0)
      return tp_fail(TOPOS_ERR_DUPLICATE, "gguf_writer: duplicate key '%s'", key);
  return TOPOS_OK;
}

/* Takes ownership of value bytes (also on failure). */
static topos_status tp_append_kv(topos_gguf_writer *w, const char *key, tp_bytes *value) {
  if (value->failed) {
    free(value->p);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: value of key '%.64s'", key);
  }
  void *grown;
  topos_status st = tp_grow_array(w->kv, sizeof *w->kv, w->n_kv, &w->cap_kv, 16,
                                  "gguf_writer: key/value table", &grown);
  if (st != TOPOS_OK) {
    free(value->p);
    return st;
  }
  w->kv = grown;
  char *k = strdup(key);
  if (!k) {
    free(value->p);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: key '%.64s'", key);
  }
  w->kv[w->n_kv++] = (tp_writer_kv){k, value->p, value->len};
  return TOPOS_OK;
}

static topos_status tp_add_scalar(topos_gguf_writer *w, const char *key, topos_gguf_type type,
                                  const void *value) {
  TP_TRY(tp_check_key(w, key));
  if (strcmp(key, "general.alignment") == 0) {
    if (type != TOPOS_GGUF_U32)
      return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf_writer: general.alignment must be u32, not %s",
                     topos_gguf_type_name(type));
    uint32_t a;
    memcpy(&a, value, 4);
    if (a == 0 || (a & (a - 1)) != 0)
      return tp_fail(TOPOS_ERR_ALIGNMENT, "gguf_writer: alignment %u is not a power of two", a);
    w->alignment = a;
  }
  if (type == TOPOS_GGUF_BOOL && *(const uint8_t *)value > 1)
    return tp_fail(TOPOS_ERR_FORMAT, "gguf_writer: key '%s': bool must be 0 or 1", key);
  tp_bytes b = {0};
  tp_bytes_u32(&b, type);
  tp_bytes_elements(&b, value, 1, tp_gguf_scalar_size(type));
  return tp_append_kv(w, key, &b);
}

#define TP_DEFINE_ADD(fn, ctype, type)                                          \
  topos_status fn(topos_gguf_writer *w, const char *key, ctype v) {             \
    if (!w) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, #fn ": NULL writer");    \
    return tp_add_scalar(w, key, type, &v);                                     \
  }
TP_DEFINE_ADD(topos_gguf_writer_add_u8, uint8_t, TOPOS_GGUF_U8)
TP_DEFINE_ADD(topos_gguf_writer_add_i8, int8_t, TOPOS_GGUF_I8)
TP_DEFINE_ADD(topos_gguf_writer_add_u16, uint16_t, TOPOS_GGUF_U16)
TP_DEFINE_ADD(topos_gguf_writer_add_i16, int16_t, TOPOS_GGUF_I16)
TP_DEFINE_ADD(topos_gguf_writer_add_u32, uint32_t, TOPOS_GGUF_U32)
TP_DEFINE_ADD(topos_gguf_writer_add_i32, int32_t, TOPOS_GGUF_I32)
TP_DEFINE_ADD(topos_gguf_writer_add_u64, uint64_t, TOPOS_GGUF_U64)
TP_DEFINE_ADD(topos_gguf_writer_add_i64, int64_t, TOPOS_GGUF_I64)
TP_DEFINE_ADD(topos_gguf_writer_add_f32, float, TOPOS_GGUF_F32)
TP_DEFINE_ADD(topos_gguf_writer_add_f64, double, TOPOS_GGUF_F64)
#undef TP_DEFINE_ADD

topos_status topos_gguf_writer_add_bool(topos_gguf_writer *w, const char *key, int v) {
  if (!w) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_bool: NULL writer");
  uint8_t b = v ? 1 : 0;
  return tp_add_scalar(w, key, TOPOS_GGUF_BOOL, &b);
}

topos_status topos_gguf_writer_add_string_n(topos_gguf_writer *w, const char *key,
                                            const char *value, size_t length) {
  if (!w || (!value && length))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_string: NULL argument");
  TP_TRY(tp_check_key(w, key));
  tp_bytes b = {0};
  tp_bytes_u32(&b, TOPOS_GGUF_STRING);
  tp_bytes_str(&b, value, length);
  return tp_append_kv(w, key, &b);
}

topos_status topos_gguf_writer_add_string(topos_gguf_writer *w, const char *key, const char *value) {
  if (!value) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_string: NULL value");
  return topos_gguf_writer_add_string_n(w, key, value, strlen(value));
}

topos_status topos_gguf_writer_add_array(topos_gguf_writer *w, const char *key,
                                         topos_gguf_type element_type, const void *elements,
                                         uint64_t count) {
  if (!w || (!elements && count))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_array: NULL argument");
  size_t es = tp_gguf_scalar_size(element_type);
  if (es == 0)
    return tp_fail(TOPOS_ERR_BAD_TYPE,
                   "gguf_writer: key '%.64s': array elements of type %s need another function",
                   key ? key : "(null)", topos_gguf_type_name(element_type));
  if (count > SIZE_MAX / es)
    return tp_fail(TOPOS_ERR_OVERFLOW,
                   "gguf_writer: key '%.64s': %" PRIu64 " elements of %zu bytes overflow the size type",
                   key ? key : "(null)", count, es);
  TP_TRY(tp_check_key(w, key));
  if (element_type == TOPOS_GGUF_BOOL)
    for (uint64_t i = 0; i < count; ++i)
      if (((const uint8_t *)elements)[i] > 1)
        return tp_fail(TOPOS_ERR_FORMAT, "gguf_writer: key '%s': bool element %" PRIu64
                       " is not 0 or 1", key, i);
  tp_bytes b = {0};
  tp_bytes_u32(&b, TOPOS_GGUF_ARRAY);
  tp_bytes_u32(&b, element_type);
  tp_bytes_u64(&b, count);
  tp_bytes_elements(&b, elements, count, es);
  return tp_append_kv(w, key, &b);
}

topos_status topos_gguf_writer_add_string_array(topos_gguf_writer *w, const char *key,
                                                const char *const *strings, const size_t *lengths,
                                                uint64_t count) {
  if (!w || (!strings && count))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_string_array: NULL argument");
  TP_TRY(tp_check_key(w, key));
  tp_bytes b = {0};
  tp_bytes_u32(&b, TOPOS_GGUF_ARRAY);
  tp_bytes_u32(&b, TOPOS_GGUF_STRING);
  tp_bytes_u64(&b, count);
  for (uint64_t i = 0; i < count; ++i) {
    if (!strings[i]) {
      free(b.p);
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer: key '%s': string %" PRIu64 " is NULL",
                     key, i);
    }
    tp_bytes_str(&b, strings[i], lengths ? lengths[i] : strlen(strings[i]));
  }
  return tp_append_kv(w, key, &b);
}

topos_status topos_gguf_writer_copy_kv(topos_gguf_writer *w, const topos_gguf *from,
                                       int64_t kv_index) {
  if (!w || !from) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_copy_kv: NULL argument");
  topos_gguf_kv kv;
  TP_TRY(topos_gguf_kv_at(from, kv_index, &kv));
  const tp_gguf_kv_entry *e = &from->kv[kv_index];
  const uint8_t *base = from->mapping->base;
  if (e->type != TOPOS_GGUF_ARRAY && e->type != TOPOS_GGUF_STRING) {
    /* File bytes are little-endian; tp_add_scalar takes host order. */
    const uint8_t *p = base + e->value_pos;
    size_t es = tp_gguf_scalar_size(e->type); /* read only the value's own bytes */
    uint8_t u8 = p[0];
    uint16_t u16 = es >= 2 ? tp_le16(p) : 0;
    uint32_t u32 = es >= 4 ? tp_le32(p) : 0;
    uint64_t u64 = es >= 8 ? tp_le64(p) : 0;
    const void *host = es == 1 ? (const void *)&u8 : es == 2 ? (const void *)&u16
                       : es == 4 ? (const void *)&u32 : (const void *)&u64;
    return tp_add_scalar(w, e->key, e->type, host);
  }
  TP_TRY(tp_check_key(w, e->key));
  /* The reader validated these bytes; they are already little-endian. */
  tp_bytes b = {0};
  tp_bytes_u32(&b, e->type);
  if (e->type == TOPOS_GGUF_STRING) {
    tp_bytes_str(&b, base + e->value_pos, e->value_len);
  } else {
    tp_bytes_u32(&b, e->element_type);
    tp_bytes_u64(&b, e->count);
    tp_bytes_put(&b, base + e->value_pos, e->value_len);
  }
  return tp_append_kv(w, e->key, &b);
}

topos_status topos_gguf_writer_set_alignment(topos_gguf_writer *w, uint32_t alignment) {
  if (!w) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_set_alignment: NULL writer");
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return tp_fail(TOPOS_ERR_ALIGNMENT, "gguf_writer: alignment %u is not a power of two",
                   alignment);
  for (size_t i = 0; i < w->n_kv; ++i)
    if (strcmp(w->kv[i].key, "general.alignment") == 0) {
      tp_put_le32(w->kv[i].value + 4, alignment);
      w->alignment = alignment;
      return TOPOS_OK;
    }
  if (alignment == TOPOS_GGUF_DEFAULT_ALIGNMENT) return TOPOS_OK;
  return topos_gguf_writer_add_u32(w, "general.alignment", alignment);
}

/* ---- tensors */
static topos_status tp_append_tensor(topos_gguf_writer *w, const char *name, uint32_t ggml_type,
                                     int n_dims, const int64_t *ne, const void *data, size_t bytes,
                                     topos_tensor *hold, topos_gguf_tensor_fill fill, void *fill_user) {
  TP_TRY(tp_check_name("tensor name", name, TOPOS_GGUF_MAX_NAME));
  for (size_t i = 0; i < w->n_tensors; ++i)
    if (strcmp(w->tensors[i].name, name) == 0)
      return tp_fail(TOPOS_ERR_DUPLICATE, "gguf_writer: duplicate tensor name '%s'", name);
  topos_ggml_type_info info;
  if (topos_ggml_type_info_get(ggml_type, &info) != TOPOS_OK)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf_writer: tensor '%s': unknown ggml type id %u", name,
                   ggml_type);
  if (n_dims < 1 || n_dims > TOPOS_GGUF_MAX_DIMS)
    return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf_writer: tensor '%s' has %d dims, not 1..4", name,
                   n_dims);
  int64_t elements = 1;
  for (int d = 0; d < n_dims; ++d) {
    if (ne[d] <= 0)
      return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf_writer: tensor '%s' ne[%d] = %" PRId64
                     " must be positive", name, d, ne[d]);
    if (elements > INT64_MAX / ne[d])
      return tp_fail(TOPOS_ERR_OVERFLOW, "gguf_writer: tensor '%s' element count overflows", name);
    elements *= ne[d];
  }
  if (ne[0] % info.block_size != 0)
    return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf_writer: tensor '%s': ne[0] = %" PRId64
                   " is not a whole number of %s blocks (%" PRId64 ")", name, ne[0], info.name,
                   info.block_size);
  int64_t blocks = elements / info.block_size;
  if (blocks > INT64_MAX / info.block_bytes)
    return tp_fail(TOPOS_ERR_OVERFLOW, "gguf_writer: tensor '%s' byte size overflows", name);
  if (fill) /* produced while writing: the shape gives the size */
    bytes = (size_t)(blocks * info.block_bytes);
  else if ((uint64_t)(blocks * info.block_bytes) != bytes)
    return tp_fail(TOPOS_ERR_SHAPE, "gguf_writer: tensor '%s' needs %" PRId64 " bytes of %s, got %zu",
                   name, blocks * info.block_bytes, info.name, bytes);
  if (!data && bytes && !fill) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer: tensor '%s': NULL data", name);
  TP_GROW(w->tensors, w->n_tensors, w->cap_tensors, 16, "gguf_writer: tensor table");
  char *copy = strdup(name);
  if (!copy) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: tensor name");
  tp_writer_tensor *t = &w->tensors[w->n_tensors++];
  *t = (tp_writer_tensor){copy, ggml_type, n_dims, {1, 1, 1, 1}, fill ? NULL : data, bytes, hold,
                          fill, fill_user, (size_t)(ne[0] / info.block_size * info.block_bytes)};
  for (int d = 0; d < n_dims; ++d) t->ne[d] = ne[d];
  return TOPOS_OK;
}

topos_status topos_gguf_writer_add_tensor_raw(topos_gguf_writer *w, const char *name,
                                              uint32_t ggml_type, int n_dims, const int64_t *ne,
                                              const void *data, size_t bytes) {
  if (!w || !ne) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_tensor_raw: NULL argument");
  return tp_append_tensor(w, name, ggml_type, n_dims, ne, data, bytes, NULL, NULL, NULL);
}

topos_status topos_gguf_writer_add_tensor_fill(topos_gguf_writer *w, const char *name,
                                               uint32_t ggml_type, int n_dims, const int64_t *ne,
                                               topos_gguf_tensor_fill fill, void *user) {
  if (!w || !ne || !fill)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_tensor_fill: NULL argument");
  return tp_append_tensor(w, name, ggml_type, n_dims, ne, NULL, 0, NULL, fill, user);
}

topos_status topos_gguf_writer_add_tensor(topos_gguf_writer *w, const char *name,
                                          topos_tensor *tensor) {
  if (!w || !tensor) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_add_tensor: NULL argument");
  topos_dtype dt = topos_tensor_dtype(tensor);
  int id = topos_dtype_ggml_id(dt);
  if (id < 0)
    return tp_fail(TOPOS_ERR_DTYPE, "gguf_writer: tensor '%.64s': dtype %s has no ggml type",
                   name ? name : "(null)", topos_dtype_name(dt));
  int rank = topos_tensor_rank(tensor);
  if (rank > TOPOS_GGUF_MAX_DIMS)
    return tp_fail(TOPOS_ERR_BAD_DIMS, "gguf_writer: tensor '%.64s' has rank %d, GGUF allows 1..4",
                   name ? name : "(null)", rank);
  const int64_t *shape = topos_tensor_shape(tensor);
  int64_t ne[TOPOS_GGUF_MAX_DIMS] = {1, 1, 1, 1};
  int n_dims = rank > 0 ? rank : 1; /* a scalar is written as ne = {1} */
  for (int d = 0; d < rank; ++d) ne[d] = shape[rank - 1 - d];
  topos_tensor *c;
  TP_TRY(topos_tensor_contiguous(tensor, 0, &c));
  size_t bytes;
  topos_status st = topos_dtype_bytes(dt, topos_tensor_volume(c), &bytes);
  if (st == TOPOS_OK)
    st = tp_append_tensor(w, name, (uint32_t)id, n_dims, ne, topos_tensor_data(c), bytes, c, NULL, NULL);
  if (st != TOPOS_OK) topos_tensor_release(c);
  return st;
}

/* ---- serialization through a sink: a file descriptor or a memory buffer. */
typedef struct tp_sink {
  int fd;          /* -1: memory */
  tp_bytes mem;
  uint8_t buf[1 << 16];
  size_t buffered;
  uint64_t written;
  long long fail_after;
} tp_sink;

static topos_status tp_sink_raw(tp_sink *s, const uint8_t *p, size_t n) {
  if (s->fail_after >= 0 && s->written + n > (uint64_t)s->fail_after)
    return tp_fail(TOPOS_ERR_IO, "gguf_writer: write failed after %" PRIu64 " bytes: %s "
                   "(simulated)", s->written, strerror(ENOSPC));
  if (s->fd < 0) {
    tp_bytes_put(&s->mem, p, n);
    if (s->mem.failed) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: output buffer");
  } else {
    size_t done = 0;
    while (done < n) {
      ssize_t k = write(s->fd, p + done, n - done);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0)
        return tp_fail(TOPOS_ERR_IO, "gguf_writer: write failed after %" PRIu64 " bytes: %s",
                       s->written + done, k < 0 ? strerror(errno) : "no progress");
      done += (size_t)k;
    }
  }
  s->written += n;
  return TOPOS_OK;
}

static topos_status tp_sink_flush(tp_sink *s) {
  size_t n = s->buffered;
  s->buffered = 0;
  return n ? tp_sink_raw(s, s->buf, n) : TOPOS_OK;
}

static topos_status tp_sink_put(tp_sink *s, const void *p, size_t n) {
  if (n > sizeof s->buf - s->buffered) {
    TP_TRY(tp_sink_flush(s));
    if (n >= sizeof s->buf) return tp_sink_raw(s, p, n);
  }
  memcpy(s->buf + s->buffered, p, n);
  s->buffered += n;
  return TOPOS_OK;
}

static topos_status tp_sink_u32(tp_sink *s, uint32_t v) {
  uint8_t t[4];
  tp_put_le32(t, v);
  return tp_sink_put(s, t, 4);
}
static topos_status tp_sink_u64(tp_sink *s, uint64_t v) {
  uint8_t t[8];
  tp_put_le64(t, v);
  return tp_sink_put(s, t, 8);
}
static topos_status tp_sink_zeros(tp_sink *s, size_t n) {
  static const uint8_t zeros[256];
  while (n) {
    size_t k = n < sizeof zeros ? n : sizeof zeros;
    TP_TRY(tp_sink_put(s, zeros, k));
    n -= k;
  }
  return TOPOS_OK;
}

/* A produced tensor: row ranges of about 1 MiB through one chunk buffer. */
static topos_status tp_sink_fill(tp_sink *s, const tp_writer_tensor *t) {
  const int64_t rows = (int64_t)(t->bytes / t->row_bytes);
  int64_t step = (int64_t)((1u << 20) / t->row_bytes);
  if (step < 1) step = 1;
  if (step > rows) step = rows;
  uint8_t *chunk = malloc((size_t)step * t->row_bytes);
  if (!chunk) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: tensor '%s': chunk of %" PRId64 " rows",
                             t->name, step);
  topos_status st = TOPOS_OK;
  for (int64_t r = 0; r < rows && st == TOPOS_OK; r += step) {
    const int64_t n = rows - r < step ? rows - r : step;
    st = t->fill(t->fill_user, r, n, chunk);
    if (st != TOPOS_OK) tp_fail_context(st, "gguf_writer: producing tensor '%s' rows %" PRId64 "..%" PRId64,
                                        t->name, r, r + n - 1);
    else st = tp_sink_put(s, chunk, (size_t)n * t->row_bytes);
  }
  free(chunk);
  return st;
}

static topos_status tp_serialize(const topos_gguf_writer *w, tp_sink *s) {
  uint64_t a = w->alignment;
  TP_TRY(tp_sink_put(s, TP_GGUF_MAGIC, 4));
  TP_TRY(tp_sink_u32(s, 3));
  TP_TRY(tp_sink_u64(s, w->n_tensors));
  TP_TRY(tp_sink_u64(s, w->n_kv));
  for (size_t i = 0; i < w->n_kv; ++i) {
    size_t len = strlen(w->kv[i].key);
    TP_TRY(tp_sink_u64(s, len));
    TP_TRY(tp_sink_put(s, w->kv[i].key, len));
    TP_TRY(tp_sink_put(s, w->kv[i].value, w->kv[i].value_len));
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < w->n_tensors; ++i) {
    const tp_writer_tensor *t = &w->tensors[i];
    size_t len = strlen(t->name);
    TP_TRY(tp_sink_u64(s, len));
    TP_TRY(tp_sink_put(s, t->name, len));
    TP_TRY(tp_sink_u32(s, (uint32_t)t->n_dims));
    for (int d = 0; d < t->n_dims; ++d) TP_TRY(tp_sink_u64(s, (uint64_t)t->ne[d]));
    TP_TRY(tp_sink_u32(s, t->ggml_type));
    TP_TRY(tp_sink_u64(s, offset));
    uint64_t padded = t->bytes + (a - t->bytes % a) % a;
    if (padded < t->bytes || offset > UINT64_MAX - padded)
      return tp_fail(TOPOS_ERR_OVERFLOW,
                     "gguf_writer: tensor '%s' (%" PRIu64 " bytes at data offset %" PRIu64
                     ") overflows the data section size",
                     t->name, t->bytes, offset);
    offset += padded;
  }
  /* The data section (and the padding before it) exists only with tensors:
   * a metadata-only file ends after its last key/value, whatever the alignment. */
  if (w->n_tensors == 0) return tp_sink_flush(s);
  uint64_t pos = s->written + s->buffered;
  TP_TRY(tp_sink_zeros(s, (size_t)((a - pos % a) % a)));
  for (size_t i = 0; i < w->n_tensors; ++i) {
    const tp_writer_tensor *t = &w->tensors[i];
    if (t->fill) TP_TRY(tp_sink_fill(s, t));
    else TP_TRY(tp_sink_put(s, t->data, t->bytes));
    TP_TRY(tp_sink_zeros(s, (size_t)((a - t->bytes % a) % a)));
  }
  return tp_sink_flush(s);
}

topos_status topos_gguf_writer_write_memory(topos_gguf_writer *w, void **bytes, size_t *size) {
  if (!w || !bytes || !size)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_write_memory: NULL argument");
  *bytes = NULL;
  *size = 0;
  tp_sink *s = calloc(1, sizeof *s);
  if (!s) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: sink");
  s->fd = -1;
  s->fail_after = w->fail_after;
  topos_status st = tp_serialize(w, s);
  if (st == TOPOS_OK) {
    *bytes = s->mem.p;
    *size = s->mem.len;
  } else {
    free(s->mem.p);
  }
  free(s);
  return st;
}

/* Best effort: makes the rename itself durable. */
static void tp_fsync_parent(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) {
    strcpy(dir, ".");
  } else {
    size_t n = (size_t)(slash - path);
    if (n == 0) n = 1;
    if (n >= sizeof dir) return;
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

topos_status topos_gguf_writer_write(topos_gguf_writer *w, const char *path) {
  if (!w || !path) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_writer_write: NULL argument");
  size_t len = strlen(path);
  static const char suffix[] = ".tmp-XXXXXX";
  char *tmp = malloc(len + sizeof suffix);
  tp_sink *s = calloc(1, sizeof *s);
  if (!tmp || !s) {
    free(tmp);
    free(s);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf_writer: temp path");
  }
  memcpy(tmp, path, len);
  memcpy(tmp + len, suffix, sizeof suffix);
  /* Same directory as the target, so the final rename cannot cross filesystems. */
  int fd = mkstemp(tmp);
  if (fd < 0) {
    topos_status st = tp_fail(TOPOS_ERR_IO, "gguf_writer: cannot create a temporary file next to "
                              "'%s': %s", path, strerror(errno));
    free(tmp);
    free(s);
    return st;
  }
  fchmod(fd, 0644); /* mkstemp creates 0600; model files are normally world-readable */
  s->fd = fd;
  s->fail_after = w->fail_after;
  topos_status st = tp_serialize(w, s);
  if (st == TOPOS_OK && fsync(fd) != 0)
    st = tp_fail(TOPOS_ERR_IO, "gguf_writer: fsync of '%s' failed: %s", tmp, strerror(errno));
  if (close(fd) != 0 && st == TOPOS_OK)
    st = tp_fail(TOPOS_ERR_IO, "gguf_writer: close of '%s' failed: %s", tmp, strerror(errno));
  if (st == TOPOS_OK && rename(tmp, path) != 0)
    st = tp_fail(TOPOS_ERR_IO, "gguf_writer: cannot rename '%s' to '%s': %s", tmp, path,
                 strerror(errno));
  if (st != TOPOS_OK) {
    unlink(tmp);
    tp_fail_context(st, "gguf_writer: '%s' left unchanged", path);
  } else {
    tp_fsync_parent(path);
  }
  free(tmp);
  free(s);
  return st;
}
