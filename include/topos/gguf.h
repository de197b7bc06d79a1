/* topos — io tier: GGUF model files (reader and writer).
 *
 * Reader. topos_gguf_open() maps the file read-only (MAP_PRIVATE) and parses
 * and validates ALL of it before returning: header, every key/value, every
 * tensor description, and that every tensor's bytes lie inside the file,
 * aligned and without overlap. A file that opens is safe to walk: no accessor
 * reads outside the mapping. A hostile file fails with a distinct status and
 * a message naming the key or tensor and the offending value.
 *
 * Accepted: GGUF v2 and v3, little-endian. Rejected: v1 (TOPOS_ERR_VERSION),
 * big-endian files (TOPOS_ERR_ENDIAN), future versions (TOPOS_ERR_VERSION).
 *
 * Policy decisions beyond ggml's reader (each is tested):
 *  - keys: non-empty, at most 65535 bytes, valid UTF-8 without NUL bytes;
 *    tensor names: non-empty, at most 63 bytes, valid UTF-8 without NUL.
 *    String VALUES are only length-checked (tokenizer vocabularies may hold
 *    arbitrary bytes); they may even contain NUL, hence the lengths below.
 *  - arrays of arrays are rejected (as ggml does), bool values must be 0 or 1.
 *  - tensors: 1..4 dims, every extent > 0, rows whole blocks, known ggml type.
 *  - tensor data may appear in ANY order (ggml demands declaration order) but
 *    every tensor must start on the alignment and no two may overlap.
 *
 * Dimension order: GGUF stores ne[0] as the fastest-varying extent. topos
 * shapes are row-major, so shape = ne reversed: a {K, M} weight is [M, K].
 *
 * Ownership: the reader owns every pointer it hands out (names, strings,
 * array data); they stay valid until topos_gguf_close(). Tensors made with
 * topos_gguf_tensor() point into the same mapping with zero copies and keep
 * the mapping alive on their own: the reader may be closed before them. */
#ifndef TOPOS_GGUF_H
#define TOPOS_GGUF_H

#include "base.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types; the values are the GGUF file ids. */
typedef enum topos_gguf_type {
  TOPOS_GGUF_U8 = 0,
  TOPOS_GGUF_I8 = 1,
  TOPOS_GGUF_U16 = 2,
  TOPOS_GGUF_I16 = 3,
  TOPOS_GGUF_U32 = 4,
  TOPOS_GGUF_I32 = 5,
  TOPOS_GGUF_F32 = 6,
  TOPOS_GGUF_BOOL = 7,
  TOPOS_GGUF_STRING = 8,
  TOPOS_GGUF_ARRAY = 9,
  TOPOS_GGUF_U64 = 10,
  TOPOS_GGUF_I64 = 11,
  TOPOS_GGUF_F64 = 12,
  TOPOS_GGUF_TYPE_COUNT = 13
} topos_gguf_type;

/* "u32", "string", "array", ...; "invalid" for other values. */
TOPOS_API const char *topos_gguf_type_name(topos_gguf_type type);

#define TOPOS_GGUF_DEFAULT_ALIGNMENT 32u
#define TOPOS_GGUF_MAX_DIMS 4
#define TOPOS_GGUF_MAX_NAME 63     /* bytes in a tensor name */
#define TOPOS_GGUF_MAX_KEY 65535   /* bytes in a key */

/* ---- ggml tensor types, including those topos cannot compute with (IQ*,
 * TQ*, MXFP4...): the reader lists them, topos_gguf_tensor() refuses them. */
typedef struct topos_ggml_type_info {
  const char *name;      /* "q4_K", "iq2_xxs", ... */
  int64_t block_size;    /* elements per block */
  int64_t block_bytes;   /* bytes per block */
} topos_ggml_type_info;
/* TOPOS_ERR_BAD_TYPE for ids that are unknown or were removed from ggml. */
TOPOS_API topos_status topos_ggml_type_info_get(uint32_t ggml_type, topos_ggml_type_info *out);

/* ================================================================ reader */
typedef struct topos_gguf topos_gguf;

/* Maps and validates a file. On success *out owns the mapping (one reference). */
TOPOS_API topos_status topos_gguf_open(const char *path, topos_gguf **out);
/* Same over caller memory, without copying: `bytes` must stay alive and
 * unchanged until the reader and every tensor made from it are released. */
TOPOS_API topos_status topos_gguf_open_memory(const void *bytes, size_t size, topos_gguf **out);
/* Frees the parsed metadata and drops the reader's reference on the mapping.
 * NULL is fine. */
TOPOS_API void topos_gguf_close(topos_gguf *gguf);

TOPOS_API uint32_t topos_gguf_version(const topos_gguf *gguf);
TOPOS_API uint32_t topos_gguf_alignment(const topos_gguf *gguf);
TOPOS_API uint64_t topos_gguf_file_size(const topos_gguf *gguf);
TOPOS_API uint64_t topos_gguf_data_offset(const topos_gguf *gguf); /* start of tensor data */

/* ---- metadata */
typedef struct topos_gguf_kv {
  const char *key;               /* NUL-terminated */
  topos_gguf_type type;
  topos_gguf_type element_type;  /* arrays only; else equal to type */
  uint64_t count;                /* array element count; 1 for scalars */
} topos_gguf_kv;

TOPOS_API int64_t topos_gguf_kv_count(const topos_gguf *gguf);
/* Keys in file order: index 0 .. kv_count-1. TOPOS_ERR_RANGE otherwise. */
TOPOS_API topos_status topos_gguf_kv_at(const topos_gguf *gguf, int64_t index, topos_gguf_kv *out);
/* Index of key; TOPOS_ERR_NOT_FOUND (with message) if absent. */
TOPOS_API topos_status topos_gguf_find_key(const topos_gguf *gguf, const char *key, int64_t *index);

/* Typed getters. Integer getters accept every integer type (u8..i64) whose
 * value fits the requested type (else TOPOS_ERR_RANGE naming the value):
 * counts are u32 in most real files and u64 in the spec. get_f32 accepts f32
 * (and f64 exactly representable in f32); get_f64 accepts f32 and f64;
 * get_bool accepts only bool. Any other type gives TOPOS_ERR_BAD_TYPE naming
 * the key, the stored type and the requested one. Absent: TOPOS_ERR_NOT_FOUND. */
TOPOS_API topos_status topos_gguf_get_u32(const topos_gguf *gguf, const char *key, uint32_t *out);
TOPOS_API topos_status topos_gguf_get_i32(const topos_gguf *gguf, const char *key, int32_t *out);
TOPOS_API topos_status topos_gguf_get_u64(const topos_gguf *gguf, const char *key, uint64_t *out);
TOPOS_API topos_status topos_gguf_get_i64(const topos_gguf *gguf, const char *key, int64_t *out);
TOPOS_API topos_status topos_gguf_get_f32(const topos_gguf *gguf, const char *key, float *out);
TOPOS_API topos_status topos_gguf_get_f64(const topos_gguf *gguf, const char *key, double *out);
TOPOS_API topos_status topos_gguf_get_bool(const topos_gguf *gguf, const char *key, int *out);
/* A NUL-terminated copy owned by the reader; *length (may be NULL) is the
 * byte length (the value itself may contain NUL bytes). */
TOPOS_API topos_status topos_gguf_get_string(const topos_gguf *gguf, const char *key,
                                             const char **out, size_t *length);

/* Arrays. For numeric and bool elements `data` points at `count` packed
 * little-endian elements inside the mapping (NOT aligned: read with memcpy or
 * the element accessors below). For string arrays data is NULL. */
typedef struct topos_gguf_array {
  int64_t kv_index;
  topos_gguf_type element_type;
  uint64_t count;
  const void *data;
} topos_gguf_array;
TOPOS_API topos_status topos_gguf_get_array(const topos_gguf *gguf, const char *key,
                                            topos_gguf_array *out);
/* Same, by key index (for keys of type array; TOPOS_ERR_BAD_TYPE otherwise). */
TOPOS_API topos_status topos_gguf_array_at(const topos_gguf *gguf, int64_t kv_index,
                                           topos_gguf_array *out);
/* Element i of an array. int: integer or bool elements. float: f32/f64.
 * string: pointer into the mapping, NOT NUL-terminated, with its length. */
TOPOS_API topos_status topos_gguf_array_int(const topos_gguf *gguf, int64_t kv_index,
                                            uint64_t i, int64_t *out);
TOPOS_API topos_status topos_gguf_array_uint(const topos_gguf *gguf, int64_t kv_index,
                                             uint64_t i, uint64_t *out);
TOPOS_API topos_status topos_gguf_array_float(const topos_gguf *gguf, int64_t kv_index,
                                              uint64_t i, double *out);
TOPOS_API topos_status topos_gguf_array_string(const topos_gguf *gguf, int64_t kv_index,
                                               uint64_t i, const char **data, size_t *length);
/* Scalar value of key index as raw little-endian bytes inside the mapping
 * (numeric/bool types; for strings, the bytes after the length). */
TOPOS_API topos_status topos_gguf_value_bytes(const topos_gguf *gguf, int64_t kv_index,
                                              const void **data, size_t *bytes);

/* ---- tensors */
typedef struct topos_gguf_tensor_info {
  const char *name;          /* NUL-terminated */
  uint32_t ggml_type;        /* the id stored in the file */
  const char *type_name;     /* "f32", "q4_K", "iq2_xxs" */
  int has_dtype;             /* 1 if ggml_type maps to a topos dtype */
  topos_dtype dtype;         /* valid when has_dtype */
  int n_dims;                /* 1..4 */
  int64_t ne[TOPOS_GGUF_MAX_DIMS];    /* GGUF order, ne[0] fastest; 1 past n_dims */
  int64_t shape[TOPOS_GGUF_MAX_DIMS]; /* row-major topos shape: ne reversed (n_dims entries) */
  int64_t elements;
  uint64_t offset;           /* relative to the data section */
  uint64_t file_offset;      /* absolute position in the file */
  uint64_t bytes;
} topos_gguf_tensor_info;

TOPOS_API int64_t topos_gguf_tensor_count(const topos_gguf *gguf);
/* Tensors in file order: index 0 .. tensor_count-1, TOPOS_ERR_RANGE
 * otherwise. The strings in *out belong to the reader (valid while open). */
TOPOS_API topos_status topos_gguf_tensor_at(const topos_gguf *gguf, int64_t index,
                                            topos_gguf_tensor_info *out);
/* Index of the tensor called name; TOPOS_ERR_NOT_FOUND (with message) if
 * absent. index may be NULL to test presence only. */
TOPOS_API topos_status topos_gguf_find_tensor(const topos_gguf *gguf, const char *name,
                                              int64_t *index);
/* The tensor's bytes inside the mapping (valid while the reader is open). */
TOPOS_API topos_status topos_gguf_tensor_bytes(const topos_gguf *gguf, int64_t index,
                                               const void **data, size_t *bytes);
/* A topos tensor over the mapped bytes, zero copies (TOPOS_STORAGE_MAPPED,
 * read-only); it holds a reference on the mapping. ggml types without a topos
 * dtype (IQ*, TQ*, MXFP4, ...) fail with TOPOS_ERR_DTYPE. */
TOPOS_API topos_status topos_gguf_tensor(topos_gguf *gguf, const char *name, topos_tensor **out);
TOPOS_API topos_status topos_gguf_tensor_by_index(topos_gguf *gguf, int64_t index,
                                                  topos_tensor **out);

/* ================================================================ writer
 * Collects key/values and tensors, then writes a GGUF v3 file atomically: a
 * temporary file in the target's directory is written, fsync'ed and renamed
 * over the target. On any failure the temporary file is removed and the
 * target is left untouched. Keys and tensors are written in insertion order;
 * tensor data is laid out sequentially, each padded to the alignment. */
typedef struct topos_gguf_writer topos_gguf_writer;

/* An empty writer (alignment 32). *out belongs to the caller
 * (topos_gguf_writer_destroy). */
TOPOS_API topos_status topos_gguf_writer_create(topos_gguf_writer **out);
/* Releases everything the writer holds (NULL is fine). */
TOPOS_API void topos_gguf_writer_destroy(topos_gguf_writer *writer);
/* Non-zero power of two (default 32). Also records general.alignment (u32)
 * when it differs from 32; adding general.alignment as a u32 is equivalent. */
TOPOS_API topos_status topos_gguf_writer_set_alignment(topos_gguf_writer *writer, uint32_t alignment);

/* Scalars. Keys must be valid (non-empty UTF-8, no NUL, <= 65535 bytes) and
 * new (TOPOS_ERR_DUPLICATE). Values are copied. */
TOPOS_API topos_status topos_gguf_writer_add_u8(topos_gguf_writer *w, const char *key, uint8_t v);
TOPOS_API topos_status topos_gguf_writer_add_i8(topos_gguf_writer *w, const char *key, int8_t v);
TOPOS_API topos_status topos_gguf_writer_add_u16(topos_gguf_writer *w, const char *key, uint16_t v);
TOPOS_API topos_status topos_gguf_writer_add_i16(topos_gguf_writer *w, const char *key, int16_t v);
TOPOS_API topos_status topos_gguf_writer_add_u32(topos_gguf_writer *w, const char *key, uint32_t v);
TOPOS_API topos_status topos_gguf_writer_add_i32(topos_gguf_writer *w, const char *key, int32_t v);
TOPOS_API topos_status topos_gguf_writer_add_u64(topos_gguf_writer *w, const char *key, uint64_t v);
TOPOS_API topos_status topos_gguf_writer_add_i64(topos_gguf_writer *w, const char *key, int64_t v);
TOPOS_API topos_status topos_gguf_writer_add_f32(topos_gguf_writer *w, const char *key, float v);
TOPOS_API topos_status topos_gguf_writer_add_f64(topos_gguf_writer *w, const char *key, double v);
TOPOS_API topos_status topos_gguf_writer_add_bool(topos_gguf_writer *w, const char *key, int v);
TOPOS_API topos_status topos_gguf_writer_add_string(topos_gguf_writer *w, const char *key,
                                                    const char *value);
/* A string value of `length` bytes (may contain NUL). */
TOPOS_API topos_status topos_gguf_writer_add_string_n(topos_gguf_writer *w, const char *key,
                                                      const char *value, size_t length);
/* Array of numeric or bool elements: `count` elements of element_type packed
 * in host order (bool: one byte each, 0 or 1). Copied. */
TOPOS_API topos_status topos_gguf_writer_add_array(topos_gguf_writer *w, const char *key,
                                                   topos_gguf_type element_type,
                                                   const void *elements, uint64_t count);
/* Array of strings; lengths may be NULL (then strlen of each). Copied. */
TOPOS_API topos_status topos_gguf_writer_add_string_array(topos_gguf_writer *w, const char *key,
                                                          const char *const *strings,
                                                          const size_t *lengths, uint64_t count);
/* Copies key `kv_index` (any type, arrays included) from an open reader. */
TOPOS_API topos_status topos_gguf_writer_copy_kv(topos_gguf_writer *w, const topos_gguf *from,
                                                 int64_t kv_index);

/* Tensors. From a topos tensor (any dtype with a ggml id, rank 1..4; rank 0
 * is written as ne={1}): the writer keeps a reference (a contiguous copy if
 * the tensor is a non-contiguous view) until it is destroyed. */
TOPOS_API topos_status topos_gguf_writer_add_tensor(topos_gguf_writer *w, const char *name,
                                                    topos_tensor *tensor);
/* From raw bytes of any known ggml type (quantized blocks included), GGUF ne
 * order. NOT copied: `data` must stay alive until the writer is destroyed. */
TOPOS_API topos_status topos_gguf_writer_add_tensor_raw(topos_gguf_writer *w, const char *name,
                                                        uint32_t ggml_type, int n_dims,
                                                        const int64_t *ne, const void *data,
                                                        size_t bytes);
/* A tensor whose bytes are produced while the file is written: `fill` is
 * called with consecutive row ranges (a row = ne[0] elements, ggml_type's
 * blocks) and writes rows*row_bytes bytes at dst; a status other than
 * TOPOS_OK aborts the write (the target stays untouched). `user` must stay
 * valid until the last write. So a converter holds one chunk at a time,
 * never the whole output. */
typedef topos_status (*topos_gguf_tensor_fill)(void *user, int64_t row0, int64_t rows, void *dst);
TOPOS_API topos_status topos_gguf_writer_add_tensor_fill(topos_gguf_writer *w, const char *name,
                                                         uint32_t ggml_type, int n_dims,
                                                         const int64_t *ne,
                                                         topos_gguf_tensor_fill fill, void *user);
/* Writes the file atomically (see above). The writer stays usable. */
TOPOS_API topos_status topos_gguf_writer_write(topos_gguf_writer *w, const char *path);
/* Serializes into a new buffer owned by the caller (free with free()). */
TOPOS_API topos_status topos_gguf_writer_write_memory(topos_gguf_writer *w, void **bytes,
                                                      size_t *size);

#ifdef __cplusplus
}
#endif
#endif
