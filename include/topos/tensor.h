/* topos — tensor tier: element types, shapes, layouts (views) and refcounted
 * storage.
 *
 * A tensor is a refcounted handle to (dtype, shape, strides, offset, storage).
 * Views (reshape when possible, permute, transpose, narrow, broadcast_along,
 * unfold) make a new handle over the same storage and never copy. Strides and
 * the offset count elements, not bytes; a stride of 0 is a broadcast.
 *
 * Numerics of 16-bit types: bf16 and f16 tensors compute in f32 and round to
 * nearest even after every op; reductions (matmul, sum, sum_along, fold,
 * scatter) accumulate in f32 and round once at the end.
 *
 * Block-quantized types (Q8_0, Q4_K, MXFP4, ...) are storage kinds: their last axis
 * is packed in blocks of topos_dtype_block_size() elements and must stay
 * contiguous; outer strides and the offset must be whole blocks. They are read
 * by the quantized products and dequantization, not by elementwise ops.
 *
 * Ownership: a function that returns a tensor through `topos_tensor **out`
 * gives the caller one reference, released with topos_tensor_release(). On
 * failure *out is set to NULL (when out itself is not NULL).
 *
 * Element conversions (convert, from_f32/f64, full, scalar, set, read_f32/f64):
 *   float -> float  widening is exact; narrowing rounds to nearest even;
 *                   f64 reaches f16/bf16 through f32 (as the reference does).
 *   int -> float    one rounding to nearest even (to f16/bf16 through f32).
 *   float -> int    rounds toward zero and saturates at the type's range
 *                   (+-inf saturate); NaN is refused with TOPOS_ERR_RANGE.
 *   int -> int      saturates.
 * Block-quantized tensors have no addressable elements: get/set/convert/read
 * return TOPOS_ERR_DTYPE (dequantize first), and views that would split or
 * move the block axis (transpose, unfold or partial-block narrow of the last
 * axis, broadcast after it) return TOPOS_ERR_DTYPE. */
#ifndef TOPOS_TENSOR_H
#define TOPOS_TENSOR_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOPOS_MAX_RANK 8

/* Element types, one row each:
 *   X(enum, name, block_elements, block_bytes, ggml_type_id (-1: none), kind)
 * kind: 'f' float, 'i' integer, 'q' block-quantized.
 * Rows are appended; values never change once released. */
#define TOPOS_DTYPE_LIST(X)             \
  X(TOPOS_F32, "f32", 1, 4, 0, 'f')     \
  X(TOPOS_F64, "f64", 1, 8, 28, 'f')    \
  X(TOPOS_BF16, "bf16", 1, 2, 30, 'f')  \
  X(TOPOS_F16, "f16", 1, 2, 1, 'f')     \
  X(TOPOS_I32, "i32", 1, 4, 26, 'i')    \
  X(TOPOS_Q4_0, "q4_0", 32, 18, 2, 'q') \
  X(TOPOS_Q4_1, "q4_1", 32, 20, 3, 'q') \
  X(TOPOS_Q5_0, "q5_0", 32, 22, 6, 'q') \
  X(TOPOS_Q5_1, "q5_1", 32, 24, 7, 'q') \
  X(TOPOS_Q8_0, "q8_0", 32, 34, 8, 'q') \
  X(TOPOS_Q8_1, "q8_1", 32, 36, 9, 'q') \
  X(TOPOS_Q2_K, "q2_K", 256, 84, 10, 'q')  \
  X(TOPOS_Q3_K, "q3_K", 256, 110, 11, 'q') \
  X(TOPOS_Q4_K, "q4_K", 256, 144, 12, 'q') \
  X(TOPOS_Q5_K, "q5_K", 256, 176, 13, 'q') \
  X(TOPOS_Q6_K, "q6_K", 256, 210, 14, 'q') \
  X(TOPOS_Q8_K, "q8_K", 256, 292, 15, 'q') \
  X(TOPOS_I8, "i8", 1, 1, 24, 'i')      \
  X(TOPOS_I16, "i16", 1, 2, 25, 'i')    \
  X(TOPOS_I64, "i64", 1, 8, 27, 'i')     \
  X(TOPOS_MXFP4, "mxfp4", 32, 17, 39, 'q')

typedef enum topos_dtype {
#define TOPOS_DTYPE_ENUM_ROW(e, name, be, bb, gg, kind) e,
  TOPOS_DTYPE_LIST(TOPOS_DTYPE_ENUM_ROW)
#undef TOPOS_DTYPE_ENUM_ROW
  TOPOS_DTYPE_COUNT
} topos_dtype;

TOPOS_API const char *topos_dtype_name(topos_dtype dtype);
/* Parses "f32", "q4_K" (case-insensitive); TOPOS_ERR_NOT_FOUND otherwise. */
TOPOS_API topos_status topos_dtype_parse(const char *name, topos_dtype *out);
TOPOS_API int64_t topos_dtype_block_size(topos_dtype dtype);  /* elements per block (1 for plain) */
TOPOS_API int64_t topos_dtype_block_bytes(topos_dtype dtype); /* bytes per block */
TOPOS_API int topos_dtype_is_float(topos_dtype dtype);        /* f32, f64, bf16, f16 */
TOPOS_API int topos_dtype_is_quantized(topos_dtype dtype);
/* ggml type id of the dtype, or -1; and back (TOPOS_ERR_BAD_TYPE if unknown). */
TOPOS_API int topos_dtype_ggml_id(topos_dtype dtype);
TOPOS_API topos_status topos_dtype_from_ggml_id(uint32_t id, topos_dtype *out);
/* Bytes for `elements` contiguous elements; TOPOS_ERR_SHAPE if not whole blocks,
 * TOPOS_ERR_OVERFLOW on overflow. */
TOPOS_API topos_status topos_dtype_bytes(topos_dtype dtype, int64_t elements, size_t *out);

typedef struct topos_tensor topos_tensor;

/* Storage kinds: where the bytes live. */
typedef enum topos_storage_kind {
  TOPOS_STORAGE_HEAP,     /* allocated by topos, 64-byte aligned */
  TOPOS_STORAGE_MAPPED,   /* a file mapping (GGUF); read-only */
  TOPOS_STORAGE_EXTERNAL, /* caller memory with a release callback */
} topos_storage_kind;

/* Called once when the last tensor over external or mapped storage is released. */
typedef void (*topos_release_fn)(void *context, void *data, size_t bytes);

/* ---- creation */
/* New contiguous tensor filled with zeros. rank 0 is a scalar. Every extent must be > 0. */
TOPOS_API topos_status topos_tensor_zeros(topos_dtype dtype, int rank, const int64_t *shape,
                                          topos_tensor **out);
/* New contiguous tensor holding a copy of `data` (row-major, `bytes` must match). */
TOPOS_API topos_status topos_tensor_from_data(topos_dtype dtype, int rank, const int64_t *shape,
                                              const void *data, size_t bytes, topos_tensor **out);
/* Convenience: copy from f32 / f64 values, converting to dtype with the rules
 * above (any float or integer dtype; NaN into an integer dtype fails). */
TOPOS_API topos_status topos_tensor_from_f32(topos_dtype dtype, int rank, const int64_t *shape,
                                             const float *values, topos_tensor **out);
TOPOS_API topos_status topos_tensor_from_f64(topos_dtype dtype, int rank, const int64_t *shape,
                                             const double *values, topos_tensor **out);
/* Scalar (rank 0) of a float (or integer) dtype. */
TOPOS_API topos_status topos_tensor_scalar(topos_dtype dtype, double value, topos_tensor **out);
/* Every element equal to value (float or integer dtypes). */
TOPOS_API topos_status topos_tensor_full(topos_dtype dtype, int rank, const int64_t *shape,
                                         double value, topos_tensor **out);
/* Wraps caller memory without copying. `release` (may be NULL) runs when the
 * last view is released. kind is TOPOS_STORAGE_EXTERNAL or TOPOS_STORAGE_MAPPED
 * (mapped storage is read-only: topos_tensor_data_mut refuses it). `bytes` is
 * the size of the region (at least what the shape needs) and is what release
 * receives. Plain dtypes need data aligned to their element size
 * (TOPOS_ERR_ALIGNMENT). If wrap fails, release is never called and the caller
 * still owns data. */
TOPOS_API topos_status topos_tensor_wrap(topos_dtype dtype, int rank, const int64_t *shape,
                                         void *data, size_t bytes, topos_storage_kind kind,
                                         topos_release_fn release, void *context,
                                         topos_tensor **out);

/* Adds a reference and returns tensor; every reference is dropped with
 * topos_tensor_release, the last one frees the header (and the storage when
 * no other tensor shares it). */
TOPOS_API topos_tensor *topos_tensor_retain(topos_tensor *tensor);
TOPOS_API void topos_tensor_release(topos_tensor *tensor); /* NULL is fine */

/* ---- queries (never fail on a valid tensor) */
TOPOS_API topos_dtype topos_tensor_dtype(const topos_tensor *t);
TOPOS_API int topos_tensor_rank(const topos_tensor *t);
TOPOS_API const int64_t *topos_tensor_shape(const topos_tensor *t);   /* rank entries */
TOPOS_API const int64_t *topos_tensor_strides(const topos_tensor *t); /* in elements */
TOPOS_API int64_t topos_tensor_offset(const topos_tensor *t);         /* in elements */
TOPOS_API int64_t topos_tensor_volume(const topos_tensor *t);         /* product of extents */
TOPOS_API int topos_tensor_is_contiguous(const topos_tensor *t);      /* row-major, no gaps */
TOPOS_API topos_storage_kind topos_tensor_storage_kind(const topos_tensor *t);
/* Identity of the storage object: two tensors are views of the same bytes iff equal. */
TOPOS_API const void *topos_tensor_storage_id(const topos_tensor *t);
/* Pointer to the element at the tensor's offset (read-only). */
TOPOS_API const void *topos_tensor_data(const topos_tensor *t);
/* Writable pointer: only for heap or external storage. NULL (and an error
 * message) for mapped storage. Writing through a view writes every view. */
TOPOS_API void *topos_tensor_data_mut(topos_tensor *t);

/* ---- element access (float and integer dtypes), index has rank entries
 * (NULL for rank 0); out-of-range indices give TOPOS_ERR_RANGE. get returns
 * the exact value (i64 beyond 2^53 rounds to nearest); set converts with the
 * rules above and refuses mapped storage (TOPOS_ERR_STATE). */
TOPOS_API topos_status topos_tensor_get(const topos_tensor *t, const int64_t *index, double *out);
TOPOS_API topos_status topos_tensor_set(topos_tensor *t, const int64_t *index, double value);
/* Copies all elements in row-major logical order (any layout) into f32/f64
 * buffers; `count` must equal the volume (TOPOS_ERR_SHAPE otherwise). */
TOPOS_API topos_status topos_tensor_read_f32(const topos_tensor *t, float *out, int64_t count);
TOPOS_API topos_status topos_tensor_read_f64(const topos_tensor *t, double *out, int64_t count);

/* ---- views: never copy (except reshape of a layout that cannot be viewed) */
/* Reshape: a view whenever the layout allows it — every run of old axes that
 * merges into new ones is itself contiguous (covers contiguous tensors, unit
 * axes inserted/removed, splitting any axis); otherwise the elements are
 * copied into new contiguous storage (logical row-major order) and the result
 * views that copy. One extent may be -1. */
TOPOS_API topos_status topos_tensor_reshape(topos_tensor *t, int rank, const int64_t *shape,
                                            topos_tensor **out);
/* Axis i of the result is axis order[i] of t. */
TOPOS_API topos_status topos_tensor_permute(topos_tensor *t, const int *order, topos_tensor **out);
/* Swaps the last two axes (rank >= 2); identity view for rank < 2. */
TOPOS_API topos_status topos_tensor_transpose(topos_tensor *t, topos_tensor **out);
/* Elements [start, start+length) of axis. length > 0. */
TOPOS_API topos_status topos_tensor_narrow(topos_tensor *t, int axis, int64_t start,
                                           int64_t length, topos_tensor **out);
/* Inserts a new axis at position `axis` (0..rank) with extent count, stride 0. */
TOPOS_API topos_status topos_tensor_broadcast_along(topos_tensor *t, int axis, int64_t count,
                                                    topos_tensor **out);
/* Spreads a volume-1 tensor to any shape (all strides 0). */
TOPOS_API topos_status topos_tensor_broadcast(topos_tensor *t, int rank, const int64_t *shape,
                                              topos_tensor **out);
/* Sliding window: axis of extent E becomes (count, size) with
 * count = (E - dilation*(size-1) - 1)/step + 1; windows overlap and alias. */
TOPOS_API topos_status topos_tensor_unfold(topos_tensor *t, int axis, int64_t size, int64_t step,
                                           int64_t dilation, topos_tensor **out);

/* ---- copies */
/* Contiguous copy (or a new reference to t if already contiguous and !force). */
TOPOS_API topos_status topos_tensor_contiguous(topos_tensor *t, int force, topos_tensor **out);
/* Element type conversion (float and integer dtypes, rules above) into new
 * contiguous storage, also when dtype is unchanged. Quantized: TOPOS_ERR_DTYPE. */
TOPOS_API topos_status topos_tensor_convert(const topos_tensor *t, topos_dtype dtype,
                                            topos_tensor **out);
/* 1 if dtype, shape and every element's bits are equal (NaNs equal by bits). */
TOPOS_API int topos_tensor_bits_equal(const topos_tensor *a, const topos_tensor *b);

/* ---- printing: writes a NumPy-like rendering into buf; returns the length it
 * needed (like snprintf; buf may be NULL when size is 0). A header line
 * "tensor f32 [2,3]" then the values, floats in the shortest form that reads
 * back to the same bits. If the volume exceeds max_elements, each axis longer
 * than 6 shows its first and last 3 entries around "...". max_elements == 0
 * prints the header only; negative never summarises. Block-quantized tensors
 * print the header and block count only. */
TOPOS_API size_t topos_tensor_format(const topos_tensor *t, char *buf, size_t size,
                                     int64_t max_elements);

#ifdef __cplusplus
}
#endif
#endif
