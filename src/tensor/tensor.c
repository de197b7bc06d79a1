/* Tensor handles: creation, refcounting, queries and element access. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

/* ---- validation shared by every constructor */

/* Checks dtype and shape for a new contiguous tensor and returns its volume
 * and byte size. Block-quantized dtypes need rank >= 1 and a last extent in
 * whole blocks. */
static topos_status tp_check_new(const char *fn, topos_dtype dtype, int rank, const int64_t *shape,
                                 int64_t *volume, size_t *bytes) {
  char text[128];
  if ((unsigned)dtype >= (unsigned)TOPOS_DTYPE_COUNT)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
  topos_status s = tp_shape_volume(rank, shape, volume);
  if (s != TOPOS_OK) return tp_fail_context(s, "%s", fn);
  if (topos_dtype_is_quantized(dtype)) {
    int64_t block = topos_dtype_block_size(dtype);
    if (rank == 0 || shape[rank - 1] % block != 0)
      return tp_fail(TOPOS_ERR_SHAPE,
                     "%s: %s stores blocks of %lld elements along the last axis; shape %s is "
                     "not whole blocks",
                     fn, topos_dtype_name(dtype), (long long)block,
                     tp_shape_string(rank, shape, text, sizeof text));
  }
  s = topos_dtype_bytes(dtype, *volume, bytes);
  if (s != TOPOS_OK) return tp_fail_context(s, "%s", fn);
  return TOPOS_OK;
}

static topos_status tp_check_out(const char *fn, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL out", fn);
  *out = NULL;
  return TOPOS_OK;
}

/* Takes over one reference to storage (released on failure). */
static topos_status tp_tensor_assemble(topos_dtype dtype, int rank, const int64_t *shape,
                                       const int64_t *strides, int64_t offset, int64_t volume,
                                       tp_storage *storage, topos_tensor **out) {
  topos_tensor *t = tp_tensor_header_new(); /* a plan's recycled header, else the heap */
  if (!t) {
    tp_storage_release(storage);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tensor: out of memory for a handle");
  }
  memset(t, 0, sizeof *t);
  atomic_init(&t->refs, 1);
  t->dtype = dtype;
  t->rank = rank;
  for (int axis = 0; axis < rank; ++axis) {
    t->shape[axis] = shape[axis];
    t->strides[axis] = strides[axis];
  }
  t->offset = offset;
  t->volume = volume;
  t->storage = storage;
  *out = t;
  return TOPOS_OK;
}

static topos_status tp_tensor_new(const char *fn, topos_dtype dtype, int rank,
                                  const int64_t *shape, bool zero, topos_tensor **out) {
  TP_TRY(tp_check_out(fn, out));
  int64_t volume;
  size_t bytes;
  TP_TRY(tp_check_new(fn, dtype, rank, shape, &volume, &bytes));
  tp_storage *storage;
  int64_t offset = 0;
  topos_tensor *exact = NULL;
  /* inside a plan run: the op's assigned buffer or the run's scratch */
  if (tp_tensor_place(dtype, rank, shape, volume, bytes, &storage, &offset, &exact)) {
    if (exact) {
      if (zero) memset(tp_tensor_base(exact), 0, bytes);
      *out = exact;
      return TOPOS_OK;
    }
    if (zero) memset((char *)storage->data + (size_t)offset * tp_dtype_size(dtype), 0, bytes);
  } else {
    topos_status s = tp_storage_heap(bytes, zero, &storage);
    if (s != TOPOS_OK) return tp_fail_context(s, "%s", fn);
  }
  int64_t strides[TOPOS_MAX_RANK];
  tp_contiguous_strides(rank, shape, strides);
  return tp_tensor_assemble(dtype, rank, shape, strides, offset, volume, storage, out);
}

topos_status tp_tensor_on_storage(tp_storage *s, int64_t offset, topos_dtype dtype, int rank,
                                  const int64_t *shape, topos_tensor **out) {
  TP_TRY(tp_check_out("on_storage", out));
  int64_t volume;
  size_t bytes;
  TP_TRY(tp_check_new("on_storage", dtype, rank, shape, &volume, &bytes));
  size_t size = tp_dtype_size(dtype), start;
  if (size == 0 || offset < 0 || __builtin_mul_overflow((size_t)offset, size, &start) ||
      start > s->bytes || bytes > s->bytes - start)
    return tp_fail(TOPOS_ERR_RANGE, "on_storage: %zu bytes at element %lld do not fit %zu bytes",
                   bytes, (long long)offset, s->bytes);
  int64_t strides[TOPOS_MAX_RANK];
  tp_contiguous_strides(rank, shape, strides);
  tp_storage_retain(s);
  return tp_tensor_assemble(dtype, rank, shape, strides, offset, volume, s, out);
}

topos_status tp_tensor_empty(topos_dtype dtype, int rank, const int64_t *shape,
                             topos_tensor **out) {
  return tp_tensor_new("empty", dtype, rank, shape, false, out);
}

topos_status topos_tensor_zeros(topos_dtype dtype, int rank, const int64_t *shape,
                                topos_tensor **out) {
  return tp_tensor_new("zeros", dtype, rank, shape, true, out);
}

topos_status topos_tensor_from_data(topos_dtype dtype, int rank, const int64_t *shape,
                                    const void *data, size_t bytes, topos_tensor **out) {
  TP_TRY(tp_check_out("from_data", out));
  int64_t volume;
  size_t needed;
  TP_TRY(tp_check_new("from_data", dtype, rank, shape, &volume, &needed));
  if (!data) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "from_data: NULL data");
  if (bytes != needed) {
    char text[128];
    return tp_fail(TOPOS_ERR_SHAPE, "from_data: %zu bytes given, %s %s needs %zu", bytes,
                   topos_dtype_name(dtype), tp_shape_string(rank, shape, text, sizeof text),
                   needed);
  }
  TP_TRY(tp_tensor_new("from_data", dtype, rank, shape, false, out));
  memcpy(tp_tensor_base(*out), data, bytes);
  return TOPOS_OK;
}

static topos_status tp_check_plain(const char *fn, topos_dtype dtype) {
  if ((unsigned)dtype >= (unsigned)TOPOS_DTYPE_COUNT)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
  if (topos_dtype_is_quantized(dtype))
    return tp_fail(TOPOS_ERR_DTYPE,
                   "%s: %s is block-quantized; elements are not addressable (quantize an f32 "
                   "tensor or dequantize this one)",
                   fn, topos_dtype_name(dtype));
  return TOPOS_OK;
}

/* Fills a fresh contiguous tensor from values[i] (or the single value when
 * `values` is NULL), converting each with tp_store. */
static topos_status tp_tensor_fill(const char *fn, topos_dtype dtype, int rank,
                                   const int64_t *shape, const float *f32s, const double *f64s,
                                   double value, topos_tensor **out) {
  TP_TRY(tp_check_out(fn, out));
  TP_TRY(tp_check_plain(fn, dtype));
  topos_tensor *t;
  TP_TRY(tp_tensor_new(fn, dtype, rank, shape, false, &t));
  size_t size = tp_dtype_size(dtype);
  char *dst = tp_tensor_base(t);
  for (int64_t i = 0; i < t->volume; ++i) {
    double x = f32s ? (double)f32s[i] : f64s ? f64s[i] : value;
    tp_value v = tp_value_of_double(x);
    if (!tp_store(dtype, dst + (size_t)i * size, v)) {
      topos_tensor_release(t);
      return tp_fail(TOPOS_ERR_RANGE, "%s: NaN at element %lld cannot be stored as %s", fn,
                     (long long)i, topos_dtype_name(dtype));
    }
  }
  *out = t;
  return TOPOS_OK;
}

topos_status topos_tensor_from_f32(topos_dtype dtype, int rank, const int64_t *shape,
                                   const float *values, topos_tensor **out) {
  if (!values) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "from_f32: NULL values");
  return tp_tensor_fill("from_f32", dtype, rank, shape, values, NULL, 0.0, out);
}

topos_status topos_tensor_from_f64(topos_dtype dtype, int rank, const int64_t *shape,
                                   const double *values, topos_tensor **out) {
  if (!values) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "from_f64: NULL values");
  return tp_tensor_fill("from_f64", dtype, rank, shape, NULL, values, 0.0, out);
}

topos_status topos_tensor_scalar(topos_dtype dtype, double value, topos_tensor **out) {
  return tp_tensor_fill("scalar", dtype, 0, NULL, NULL, NULL, value, out);
}

topos_status topos_tensor_full(topos_dtype dtype, int rank, const int64_t *shape, double value,
                               topos_tensor **out) {
  return tp_tensor_fill("full", dtype, rank, shape, NULL, NULL, value, out);
}

topos_status topos_tensor_wrap(topos_dtype dtype, int rank, const int64_t *shape, void *data,
                               size_t bytes, topos_storage_kind kind, topos_release_fn release,
                               void *context, topos_tensor **out) {
  TP_TRY(tp_check_out("wrap", out));
  int64_t volume;
  size_t needed;
  TP_TRY(tp_check_new("wrap", dtype, rank, shape, &volume, &needed));
  if (kind != TOPOS_STORAGE_EXTERNAL && kind != TOPOS_STORAGE_MAPPED)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "wrap: storage kind %d must be TOPOS_STORAGE_EXTERNAL or TOPOS_STORAGE_MAPPED",
                   (int)kind);
  if (!data) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "wrap: NULL data");
  if (bytes < needed) {
    char text[128];
    return tp_fail(TOPOS_ERR_SHAPE, "wrap: %zu bytes given, %s %s needs %zu", bytes,
                   topos_dtype_name(dtype), tp_shape_string(rank, shape, text, sizeof text),
                   needed);
  }
  size_t size = tp_dtype_size(dtype);
  if (size > 1 && (uintptr_t)data % size != 0)
    return tp_fail(TOPOS_ERR_ALIGNMENT, "wrap: %s data at %p is not %zu-byte aligned",
                   topos_dtype_name(dtype), data, size);
  tp_storage *storage;
  /* The callback is attached only on success: a failed wrap leaves the
   * caller owning the bytes. */
  TP_TRY(tp_storage_wrap(data, bytes, kind, NULL, NULL, &storage));
  int64_t strides[TOPOS_MAX_RANK];
  tp_contiguous_strides(rank, shape, strides);
  TP_TRY(tp_tensor_assemble(dtype, rank, shape, strides, 0, volume, storage, out));
  storage->release = release;
  storage->context = context;
  return TOPOS_OK;
}

topos_tensor *topos_tensor_retain(topos_tensor *t) {
  if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

void topos_tensor_release(topos_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
  tp_storage_release(t->storage);
  tp_tensor_header_discard(t); /* inside a plan run: kept for reuse */
}

/* ---- views over the same storage */

/* Lowest and highest element offset a layout reaches; false on overflow. */
static bool tp_layout_span(int rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                           int64_t *lo, int64_t *hi) {
  *lo = *hi = offset;
  for (int axis = 0; axis < rank; ++axis) {
    int64_t reach;
    if (__builtin_mul_overflow(shape[axis] - 1, strides[axis], &reach)) return false;
    if (reach < 0 ? __builtin_add_overflow(*lo, reach, lo) : __builtin_add_overflow(*hi, reach, hi))
      return false;
  }
  return true;
}

topos_status tp_tensor_view(topos_tensor *t, int rank, const int64_t *shape,
                            const int64_t *strides, int64_t offset, topos_tensor **out) {
  char text[128];
  TP_TRY(tp_check_out("view", out));
  int64_t volume;
  topos_status s = tp_shape_volume(rank, shape, &volume);
  if (s != TOPOS_OK) return tp_fail_context(s, "view");
  if (topos_dtype_is_quantized(t->dtype)) {
    int64_t block = topos_dtype_block_size(t->dtype);
    bool whole = rank > 0 && strides[rank - 1] == 1 && shape[rank - 1] % block == 0 &&
                 offset % block == 0;
    for (int axis = 0; whole && axis < rank - 1; ++axis)
      whole = strides[axis] % block == 0;
    if (!whole)
      return tp_fail(TOPOS_ERR_DTYPE,
                     "view: %s layout of shape %s must keep the last axis contiguous in whole "
                     "blocks of %lld",
                     topos_dtype_name(t->dtype), tp_shape_string(rank, shape, text, sizeof text),
                     (long long)block);
  }
  int64_t lo, hi;
  size_t needed = 0;
  bool fits = tp_layout_span(rank, shape, strides, offset, &lo, &hi) && lo >= 0 && hi < INT64_MAX;
  if (fits) {
    int64_t end = hi + 1;
    /* Block dtypes: the checks above make `end` whole blocks. */
    fits = topos_dtype_bytes(t->dtype, end, &needed) == TOPOS_OK && needed <= t->storage->bytes;
  }
  if (!fits)
    return tp_fail(TOPOS_ERR_RANGE,
                   "view: layout of shape %s at offset %lld reaches outside %zu bytes of storage",
                   tp_shape_string(rank, shape, text, sizeof text), (long long)offset,
                   t->storage->bytes);
  tp_storage_retain(t->storage);
  return tp_tensor_assemble(t->dtype, rank, shape, strides, offset, volume, t->storage, out);
}

/* ---- queries */

topos_dtype topos_tensor_dtype(const topos_tensor *t) { return t->dtype; }
int topos_tensor_rank(const topos_tensor *t) { return t->rank; }
const int64_t *topos_tensor_shape(const topos_tensor *t) { return t->shape; }
const int64_t *topos_tensor_strides(const topos_tensor *t) { return t->strides; }
int64_t topos_tensor_offset(const topos_tensor *t) { return t->offset; }
int64_t topos_tensor_volume(const topos_tensor *t) { return t->volume; }
topos_storage_kind topos_tensor_storage_kind(const topos_tensor *t) { return t->storage->kind; }
const void *topos_tensor_storage_id(const topos_tensor *t) { return t->storage; }
const void *topos_tensor_data(const topos_tensor *t) { return tp_tensor_base(t); }

int topos_tensor_is_contiguous(const topos_tensor *t) {
  int64_t expected = 1;
  for (int axis = t->rank - 1; axis >= 0; --axis) {
    if (t->shape[axis] == 1) continue; /* a unit axis's stride addresses nothing */
    if (t->strides[axis] != expected) return 0;
    expected *= t->shape[axis];
  }
  return 1;
}

void *topos_tensor_data_mut(topos_tensor *t) {
  if (t->storage->kind == TOPOS_STORAGE_MAPPED) {
    tp_fail(TOPOS_ERR_STATE, "data_mut: %s tensor is over read-only mapped storage",
            topos_dtype_name(t->dtype));
    return NULL;
  }
  return tp_tensor_base(t);
}

/* ---- element access */

static topos_status tp_check_index(const char *fn, const topos_tensor *t, const int64_t *index) {
  char shape_text[128], index_text[128];
  if (t->rank > 0 && !index) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL index", fn);
  for (int axis = 0; axis < t->rank; ++axis)
    if (index[axis] < 0 || index[axis] >= t->shape[axis])
      return tp_fail(TOPOS_ERR_RANGE, "%s: index %s out of range for shape %s (axis %d)", fn,
                     tp_shape_string(t->rank, index, index_text, sizeof index_text),
                     tp_shape_string(t->rank, t->shape, shape_text, sizeof shape_text), axis);
  return TOPOS_OK;
}

topos_status topos_tensor_get(const topos_tensor *t, const int64_t *index, double *out) {
  if (!t || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "get: NULL argument");
  TP_TRY(tp_check_plain("get", t->dtype));
  TP_TRY(tp_check_index("get", t, index));
  const char *p = (const char *)t->storage->data +
                  (size_t)tp_tensor_element_offset(t, index) * tp_dtype_size(t->dtype);
  *out = tp_value_f64(tp_load(t->dtype, p));
  return TOPOS_OK;
}

topos_status topos_tensor_set(topos_tensor *t, const int64_t *index, double value) {
  if (!t) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "set: NULL tensor");
  TP_TRY(tp_check_plain("set", t->dtype));
  TP_TRY(tp_check_index("set", t, index));
  if (t->storage->kind == TOPOS_STORAGE_MAPPED)
    return tp_fail(TOPOS_ERR_STATE, "set: tensor is over read-only mapped storage");
  char *p = (char *)t->storage->data +
            (size_t)tp_tensor_element_offset(t, index) * tp_dtype_size(t->dtype);
  if (!tp_store(t->dtype, p, tp_value_of_double(value)))
    return tp_fail(TOPOS_ERR_RANGE, "set: NaN cannot be stored as %s", topos_dtype_name(t->dtype));
  return TOPOS_OK;
}
