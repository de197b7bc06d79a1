/* GGUF reader: opening (mmap or caller memory), metadata accessors and
 * zero-copy tensors over the mapping. Parsing lives in gguf_parse.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf_internal.h"

static topos_status tp_gguf_from_mapping(tp_gguf_mapping *m, topos_gguf **out) {
  topos_gguf *g = calloc(1, sizeof *g);
  if (!g) {
    tp_gguf_mapping_release(m);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: reader");
  }
  g->mapping = m;
  topos_status st = tp_gguf_parse(g);
  if (st != TOPOS_OK) {
    topos_gguf_close(g);
    return st;
  }
  *out = g;
  return TOPOS_OK;
}

/* MAP_PRIVATE + PROT_READ: nothing we do can reach the file. (Another
 * process truncating the file while it is mapped would still fault.)
 *
 * Decoding streams every weight once per token, through a TLB miss per
 * 4 KiB page. MADV_HUGEPAGE asks readahead for 2 MiB page-cache folios where
 * the filesystem has them, and the kernel maps those with one entry each
 * (it aligns large file mappings itself). A hint: failure changes nothing. */
static void *tp_gguf_map_file(int fd, size_t size) {
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
#ifdef MADV_HUGEPAGE
  if (p != MAP_FAILED && size >= ((size_t)8 << 20)) madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

topos_status topos_gguf_open(const char *path, topos_gguf **out) {
  if (!path || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_open: NULL argument");
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tp_fail(TOPOS_ERR_IO, "gguf: cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return tp_fail(TOPOS_ERR_IO, "gguf: cannot stat '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return tp_fail(TOPOS_ERR_IO, "gguf: '%s' is not a regular file", path);
  }
  if (st.st_size == 0) {
    close(fd);
    return tp_fail(TOPOS_ERR_TRUNCATED, "gguf: '%s' is empty", path);
  }
  if ((uint64_t)st.st_size > SIZE_MAX) {
    close(fd);
    return tp_fail(TOPOS_ERR_OVERFLOW, "gguf: '%s' is larger than the address space", path);
  }
  size_t size = (size_t)st.st_size;
  void *p = tp_gguf_map_file(fd, size);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return tp_fail(TOPOS_ERR_IO, "gguf: cannot map '%s': %s", path, strerror(e));
  tp_gguf_mapping *m = malloc(sizeof *m);
  if (!m) {
    munmap(p, size);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: mapping record");
  }
  atomic_init(&m->refs, 1);
  m->base = p;
  m->size = size;
  m->is_mmap = true;
  topos_status s = tp_gguf_from_mapping(m, out);
  if (s != TOPOS_OK) return tp_fail_context(s, "%s", path);
  return TOPOS_OK;
}

topos_status topos_gguf_open_memory(const void *bytes, size_t size, topos_gguf **out) {
  if (!out || (!bytes && size > 0))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_open_memory: NULL argument");
  *out = NULL;
  tp_gguf_mapping *m = malloc(sizeof *m);
  if (!m) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf: mapping record");
  static const uint8_t empty[1];
  atomic_init(&m->refs, 1);
  m->base = bytes ? bytes : empty;
  m->size = size;
  m->is_mmap = false;
  return tp_gguf_from_mapping(m, out);
}

void topos_gguf_close(topos_gguf *g) {
  if (!g) return;
  tp_gguf_free_parsed(g);
  tp_gguf_mapping_release(g->mapping);
  free(g);
}

uint32_t topos_gguf_version(const topos_gguf *g) { return g->version; }
uint32_t topos_gguf_alignment(const topos_gguf *g) { return g->alignment; }
uint64_t topos_gguf_file_size(const topos_gguf *g) { return g->mapping->size; }
uint64_t topos_gguf_data_offset(const topos_gguf *g) { return g->data_offset; }

/* index names one of the file's `count` key/values or tensors. */
static topos_status tp_check_index(const char *what, int64_t index, int64_t count) {
  if (index < 0 || index >= count)
    return tp_fail(TOPOS_ERR_RANGE, "gguf: %s index %" PRId64 " outside 0..%" PRId64
                   " (the file has %" PRId64 ")", what, index, count - 1, count);
  return TOPOS_OK;
}

/* ---- metadata */
int64_t topos_gguf_kv_count(const topos_gguf *g) { return g->n_kv; }

topos_status topos_gguf_kv_at(const topos_gguf *g, int64_t index, topos_gguf_kv *out) {
  TP_TRY(tp_check_index("key/value", index, g->n_kv));
  const tp_gguf_kv_entry *e = &g->kv[index];
  *out = (topos_gguf_kv){e->key, e->type, e->element_type, e->count};
  return TOPOS_OK;
}

topos_status topos_gguf_find_key(const topos_gguf *g, const char *key, int64_t *index) {
  if (!key) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_find_key: NULL key");
  int64_t i = tp_strmap_get(&g->kv_names, key, strlen(key));
  if (i < 0) return tp_fail(TOPOS_ERR_NOT_FOUND, "gguf: key '%s' not found", key);
  if (index) *index = i;
  return TOPOS_OK;
}

static topos_status tp_entry(const topos_gguf *g, const char *key, const tp_gguf_kv_entry **out) {
  int64_t i;
  TP_TRY(topos_gguf_find_key(g, key, &i));
  *out = &g->kv[i];
  return TOPOS_OK;
}

static topos_status tp_wrong_type(const tp_gguf_kv_entry *e, const char *requested) {
  if (e->type == TOPOS_GGUF_ARRAY)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key '%s' has type array of %s, requested %s",
                   e->key, topos_gguf_type_name(e->element_type), requested);
  return tp_fail(TOPOS_ERR_BAD_TYPE, "gguf: key '%s' has type %s, requested %s", e->key,
                 topos_gguf_type_name(e->type), requested);
}

/* Integer value of key as (signed or unsigned) 64-bit, type-checked. */
static topos_status tp_get_int(const topos_gguf *g, const char *key, const char *requested,
                               const tp_gguf_kv_entry **e, int64_t *s, uint64_t *u, int *is_signed) {
  TP_TRY(tp_entry(g, key, e));
  if (!tp_gguf_type_is_integer((*e)->type)) return tp_wrong_type(*e, requested);
  tp_gguf_load_int((*e)->type, g->mapping->base + (*e)->value_pos, s, u, is_signed);
  return TOPOS_OK;
}

/* One getter per target type: the range of the target is [lo, hi]. */
#define TP_DEFINE_INT_GETTER(fn, ctype, tname, lo, hi)                                           \
  topos_status fn(const topos_gguf *g, const char *key, ctype *out) {                           \
    const tp_gguf_kv_entry *e;                                                                  \
    int64_t s;                                                                                  \
    uint64_t u;                                                                                 \
    int is_signed;                                                                              \
    TP_TRY(tp_get_int(g, key, tname, &e, &s, &u, &is_signed));                                  \
    if (is_signed ? (s < (int64_t)(lo) || (s > 0 && (uint64_t)s > (uint64_t)(hi)))             \
                  : (u > (uint64_t)(hi)))                                                       \
      return is_signed ? tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s' = %" PRId64 " (%s) does not " \
                                 "fit %s", key, s, topos_gguf_type_name(e->type), tname)        \
                       : tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s' = %" PRIu64 " (%s) does not " \
                                 "fit %s", key, u, topos_gguf_type_name(e->type), tname);       \
    *out = is_signed ? (ctype)s : (ctype)u;                                                     \
    return TOPOS_OK;                                                                            \
  }

TP_DEFINE_INT_GETTER(topos_gguf_get_u32, uint32_t, "u32", 0, UINT32_MAX)
TP_DEFINE_INT_GETTER(topos_gguf_get_i32, int32_t, "i32", INT32_MIN, INT32_MAX)
TP_DEFINE_INT_GETTER(topos_gguf_get_u64, uint64_t, "u64", 0, UINT64_MAX)
TP_DEFINE_INT_GETTER(topos_gguf_get_i64, int64_t, "i64", INT64_MIN, INT64_MAX)

static float tp_load_f32(const uint8_t *p) {
  uint32_t u = tp_le32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double tp_load_f64(const uint8_t *p) {
  uint64_t u = tp_le64(p);
  double f;
  memcpy(&f, &u, 8);
  return f;
}

topos_status topos_gguf_get_f64(const topos_gguf *g, const char *key, double *out) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_entry(g, key, &e));
  const uint8_t *p = g->mapping->base + e->value_pos;
  if (e->type == TOPOS_GGUF_F32) *out = tp_load_f32(p);
  else if (e->type == TOPOS_GGUF_F64) *out = tp_load_f64(p);
  else return tp_wrong_type(e, "f64");
  return TOPOS_OK;
}

topos_status topos_gguf_get_f32(const topos_gguf *g, const char *key, float *out) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_entry(g, key, &e));
  const uint8_t *p = g->mapping->base + e->value_pos;
  if (e->type == TOPOS_GGUF_F32) {
    *out = tp_load_f32(p);
  } else if (e->type == TOPOS_GGUF_F64) {
    double d = tp_load_f64(p);
    float f = (float)d;
    /* Only exact narrowing: a silent rounding would hide a file's intent. */
    if (!((double)f == d || (isnan(d) && isnan(f))))
      return tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s' = %.17g (f64) is not exact in f32", key, d);
    *out = f;
  } else {
    return tp_wrong_type(e, "f32");
  }
  return TOPOS_OK;
}

topos_status topos_gguf_get_bool(const topos_gguf *g, const char *key, int *out) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_entry(g, key, &e));
  if (e->type != TOPOS_GGUF_BOOL) return tp_wrong_type(e, "bool");
  *out = g->mapping->base[e->value_pos];
  return TOPOS_OK;
}

topos_status topos_gguf_get_string(const topos_gguf *g, const char *key, const char **out,
                                   size_t *length) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_entry(g, key, &e));
  if (e->type != TOPOS_GGUF_STRING) return tp_wrong_type(e, "string");
  *out = e->string;
  if (length) *length = e->value_len;
  return TOPOS_OK;
}

topos_status topos_gguf_array_at(const topos_gguf *g, int64_t kv_index, topos_gguf_array *out) {
  topos_gguf_kv kv;
  TP_TRY(topos_gguf_kv_at(g, kv_index, &kv));
  const tp_gguf_kv_entry *e = &g->kv[kv_index];
  if (e->type != TOPOS_GGUF_ARRAY) return tp_wrong_type(e, "array");
  out->kv_index = kv_index;
  out->element_type = e->element_type;
  out->count = e->count;
  out->data = e->element_type == TOPOS_GGUF_STRING ? NULL : g->mapping->base + e->value_pos;
  return TOPOS_OK;
}

topos_status topos_gguf_get_array(const topos_gguf *g, const char *key, topos_gguf_array *out) {
  int64_t i;
  TP_TRY(topos_gguf_find_key(g, key, &i));
  return topos_gguf_array_at(g, i, out);
}

/* Element i of array kv_index, checked; returns its entry. */
static topos_status tp_element(const topos_gguf *g, int64_t kv_index, uint64_t i,
                               const tp_gguf_kv_entry **out) {
  topos_gguf_array a;
  TP_TRY(topos_gguf_array_at(g, kv_index, &a));
  const tp_gguf_kv_entry *e = &g->kv[kv_index];
  if (i >= e->count)
    return tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s': element %" PRIu64 " of an array of %" PRIu64,
                   e->key, i, e->count);
  *out = e;
  return TOPOS_OK;
}

static topos_status tp_element_int(const topos_gguf *g, int64_t kv_index, uint64_t i, int64_t *s,
                                   uint64_t *u, int *is_signed, const char *requested) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_element(g, kv_index, i, &e));
  if (!tp_gguf_type_is_integer(e->element_type) && e->element_type != TOPOS_GGUF_BOOL)
    return tp_wrong_type(e, requested);
  size_t es = tp_gguf_scalar_size(e->element_type);
  tp_gguf_load_int(e->element_type, g->mapping->base + e->value_pos + i * es, s, u, is_signed);
  return TOPOS_OK;
}

topos_status topos_gguf_array_int(const topos_gguf *g, int64_t kv_index, uint64_t i, int64_t *out) {
  int64_t s;
  uint64_t u;
  int is_signed;
  TP_TRY(tp_element_int(g, kv_index, i, &s, &u, &is_signed, "integer elements"));
  if (!is_signed && u > (uint64_t)INT64_MAX)
    return tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s'[%" PRIu64 "] = %" PRIu64 " does not fit i64",
                   g->kv[kv_index].key, i, u);
  *out = is_signed ? s : (int64_t)u;
  return TOPOS_OK;
}

topos_status topos_gguf_array_uint(const topos_gguf *g, int64_t kv_index, uint64_t i,
                                   uint64_t *out) {
  int64_t s;
  uint64_t u;
  int is_signed;
  TP_TRY(tp_element_int(g, kv_index, i, &s, &u, &is_signed, "integer elements"));
  if (is_signed && s < 0)
    return tp_fail(TOPOS_ERR_RANGE, "gguf: key '%s'[%" PRIu64 "] = %" PRId64 " is negative",
                   g->kv[kv_index].key, i, s);
  *out = is_signed ? (uint64_t)s : u;
  return TOPOS_OK;
}

topos_status topos_gguf_array_float(const topos_gguf *g, int64_t kv_index, uint64_t i,
                                    double *out) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_element(g, kv_index, i, &e));
  const uint8_t *p = g->mapping->base + e->value_pos;
  if (e->element_type == TOPOS_GGUF_F32) *out = tp_load_f32(p + 4 * i);
  else if (e->element_type == TOPOS_GGUF_F64) *out = tp_load_f64(p + 8 * i);
  else return tp_wrong_type(e, "float elements");
  return TOPOS_OK;
}

topos_status topos_gguf_array_string(const topos_gguf *g, int64_t kv_index, uint64_t i,
                                     const char **data, size_t *length) {
  const tp_gguf_kv_entry *e = NULL;
  TP_TRY(tp_element(g, kv_index, i, &e));
  if (e->element_type != TOPOS_GGUF_STRING) return tp_wrong_type(e, "string elements");
  const uint8_t *p = g->mapping->base + e->value_pos + e->string_off[i];
  *data = (const char *)p + 8;
  *length = (size_t)tp_le64(p); /* validated against the file while parsing */
  return TOPOS_OK;
}

topos_status topos_gguf_value_bytes(const topos_gguf *g, int64_t kv_index, const void **data,
                                    size_t *bytes) {
  topos_gguf_kv kv;
  TP_TRY(topos_gguf_kv_at(g, kv_index, &kv));
  const tp_gguf_kv_entry *e = &g->kv[kv_index];
  if (e->type == TOPOS_GGUF_ARRAY) return tp_wrong_type(e, "a scalar");
  *data = g->mapping->base + e->value_pos;
  *bytes = e->value_len;
  return TOPOS_OK;
}

/* ---- tensors */
int64_t topos_gguf_tensor_count(const topos_gguf *g) { return g->n_tensors; }

topos_status topos_gguf_tensor_at(const topos_gguf *g, int64_t index, topos_gguf_tensor_info *out) {
  TP_TRY(tp_check_index("tensor", index, g->n_tensors));
  const tp_gguf_tensor_entry *t = &g->tensors[index];
  topos_ggml_type_info info;
  TP_TRY(topos_ggml_type_info_get(t->ggml_type, &info)); /* validated while parsing */
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->ggml_type = t->ggml_type;
  out->type_name = info.name;
  topos_dtype dt;
  if (topos_dtype_from_ggml_id(t->ggml_type, &dt) == TOPOS_OK) {
    out->has_dtype = 1;
    out->dtype = dt;
  } else {
    topos_clear_error();
  }
  out->n_dims = t->n_dims;
  for (int d = 0; d < TOPOS_GGUF_MAX_DIMS; ++d) {
    out->ne[d] = t->ne[d];
    out->shape[d] = d < t->n_dims ? t->ne[t->n_dims - 1 - d] : 1;
  }
  out->elements = t->elements;
  out->offset = t->offset;
  out->file_offset = g->data_offset + t->offset;
  out->bytes = t->bytes;
  return TOPOS_OK;
}

topos_status topos_gguf_find_tensor(const topos_gguf *g, const char *name, int64_t *index) {
  if (!name) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_find_tensor: NULL name");
  int64_t i = tp_strmap_get(&g->tensor_names, name, strlen(name));
  if (i < 0) return tp_fail(TOPOS_ERR_NOT_FOUND, "gguf: tensor '%s' not found", name);
  if (index) *index = i;
  return TOPOS_OK;
}

topos_status topos_gguf_tensor_bytes(const topos_gguf *g, int64_t index, const void **data,
                                     size_t *bytes) {
  TP_TRY(tp_check_index("tensor", index, g->n_tensors));
  const tp_gguf_tensor_entry *t = &g->tensors[index];
  *data = g->mapping->base + g->data_offset + t->offset;
  *bytes = (size_t)t->bytes;
  return TOPOS_OK;
}

static void tp_gguf_tensor_release(void *context, void *data, size_t bytes) {
  (void)data;
  (void)bytes;
  tp_gguf_mapping_release(context);
}

topos_status topos_gguf_tensor_by_index(topos_gguf *g, int64_t index, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gguf_tensor: NULL out");
  *out = NULL;
  topos_gguf_tensor_info info;
  TP_TRY(topos_gguf_tensor_at(g, index, &info));
  if (!info.has_dtype)
    return tp_fail(TOPOS_ERR_DTYPE,
                   "gguf: tensor '%s' has ggml type %s (id %u), which topos cannot compute with",
                   info.name, info.type_name, info.ggml_type);
  const void *data;
  size_t bytes;
  TP_TRY(topos_gguf_tensor_bytes(g, index, &data, &bytes));
  tp_gguf_mapping_retain(g->mapping);
  /* The mapping is read-only; MAPPED storage makes topos refuse writes. */
  topos_status st = topos_tensor_wrap(info.dtype, info.n_dims, info.shape, (void *)data, bytes,
                                      TOPOS_STORAGE_MAPPED, tp_gguf_tensor_release, g->mapping, out);
  if (st != TOPOS_OK) {
    tp_gguf_mapping_release(g->mapping);
    return tp_fail_context(st, "gguf: tensor '%s'", info.name);
  }
  return TOPOS_OK;
}

topos_status topos_gguf_tensor(topos_gguf *g, const char *name, topos_tensor **out) {
  if (out) *out = NULL;
  int64_t i;
  TP_TRY(topos_gguf_find_tensor(g, name, &i));
  return topos_gguf_tensor_by_index(g, i, out);
}
