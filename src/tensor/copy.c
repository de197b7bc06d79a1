/* Copies out of any layout: contiguous, convert, read_f32/f64, bits_equal.
 * All walk the tensor row by row in logical row-major order, where a row is
 * the last axis (one element for a scalar). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

typedef struct tp_rows {
  int outer;                     /* axes before the row axis */
  int64_t length, stride;        /* elements in a row, and their stride */
  int64_t index[TOPOS_MAX_RANK]; /* over the outer axes */
} tp_rows;

static tp_rows tp_rows_start(const topos_tensor *t) {
  tp_rows r;
  memset(&r, 0, sizeof r);
  r.outer = t->rank > 0 ? t->rank - 1 : 0;
  r.length = t->rank > 0 ? t->shape[t->rank - 1] : 1;
  r.stride = t->rank > 0 ? t->strides[t->rank - 1] : 1;
  return r;
}

/* Element offset (from storage start) of the current row's first element. */
static int64_t tp_rows_offset(const topos_tensor *t, const tp_rows *r) {
  int64_t off = t->offset;
  for (int axis = 0; axis < r->outer; ++axis) off += r->index[axis] * t->strides[axis];
  return off;
}

static bool tp_rows_next(const topos_tensor *t, tp_rows *r) {
  return tp_index_next(r->outer, t->shape, r->index);
}

static const char *tp_block_address(const topos_tensor *t, int64_t element_offset) {
  return (const char *)t->storage->data + (size_t)(element_offset / topos_dtype_block_size(t->dtype)) *
                                              (size_t)topos_dtype_block_bytes(t->dtype);
}

/* Packs t's elements (or blocks) row-major into dst. */
static void tp_pack(const topos_tensor *t, char *dst) {
  tp_rows r = tp_rows_start(t);
  const char *base = t->storage->data;
  size_t size = tp_dtype_size(t->dtype);
  do {
    int64_t off = tp_rows_offset(t, &r);
    if (size == 0) { /* block-quantized: rows are whole contiguous blocks */
      size_t row_bytes = (size_t)(r.length / topos_dtype_block_size(t->dtype)) *
                         (size_t)topos_dtype_block_bytes(t->dtype);
      memcpy(dst, tp_block_address(t, off), row_bytes);
      dst += row_bytes;
    } else if (r.stride == 1) {
      memcpy(dst, base + (size_t)off * size, (size_t)r.length * size);
      dst += (size_t)r.length * size;
    } else {
      for (int64_t j = 0; j < r.length; ++j, dst += size)
        memcpy(dst, base + (size_t)(off + j * r.stride) * size, size);
    }
  } while (tp_rows_next(t, &r));
}

void tp_tensor_pack_into(const topos_tensor *t, void *dst) { tp_pack(t, dst); }

topos_status topos_tensor_contiguous(topos_tensor *t, int force, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "contiguous: NULL out");
  *out = NULL;
  if (!t) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "contiguous: NULL tensor");
  if (!force && topos_tensor_is_contiguous(t)) {
    *out = topos_tensor_retain(t);
    return TOPOS_OK;
  }
  topos_tensor *copy;
  topos_status s = tp_tensor_empty(t->dtype, t->rank, t->shape, &copy);
  if (s != TOPOS_OK) return tp_fail_context(s, "contiguous");
  tp_pack(t, tp_tensor_base(copy));
  *out = copy;
  return TOPOS_OK;
}

static topos_status tp_check_elements(const char *fn, topos_dtype dtype) {
  if (topos_dtype_is_quantized(dtype))
    return tp_fail(TOPOS_ERR_DTYPE,
                   "%s: %s is block-quantized; dequantize it to f32 first (or quantize an f32 "
                   "tensor to produce it)",
                   fn, topos_dtype_name(dtype));
  if ((unsigned)dtype >= (unsigned)TOPOS_DTYPE_COUNT)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
  return TOPOS_OK;
}

topos_status topos_tensor_convert(const topos_tensor *t, topos_dtype dtype, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "convert: NULL out");
  *out = NULL;
  if (!t) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "convert: NULL tensor");
  TP_TRY(tp_check_elements("convert", t->dtype));
  TP_TRY(tp_check_elements("convert", dtype));
  topos_tensor *result;
  topos_status s = tp_tensor_empty(dtype, t->rank, t->shape, &result);
  if (s != TOPOS_OK) return tp_fail_context(s, "convert");
  if (dtype == t->dtype) {
    tp_pack(t, tp_tensor_base(result));
    *out = result;
    return TOPOS_OK;
  }
  const char *src = t->storage->data;
  char *dst = tp_tensor_base(result);
  size_t src_size = tp_dtype_size(t->dtype), dst_size = tp_dtype_size(dtype);
  tp_rows r = tp_rows_start(t);
  int64_t done = 0;
  do {
    int64_t off = tp_rows_offset(t, &r);
    for (int64_t j = 0; j < r.length; ++j, ++done) {
      tp_value v = tp_load(t->dtype, src + (size_t)(off + j * r.stride) * src_size);
      if (!tp_store(dtype, dst + (size_t)done * dst_size, v)) {
        topos_tensor_release(result);
        return tp_fail(TOPOS_ERR_RANGE,
                       "convert: element %lld (row-major) of the %s tensor is NaN, which %s "
                       "cannot hold",
                       (long long)done, topos_dtype_name(t->dtype), topos_dtype_name(dtype));
      }
    }
  } while (tp_rows_next(t, &r));
  *out = result;
  return TOPOS_OK;
}

/* One definition for read_f32 and read_f64. */
#define TP_DEFINE_READ(suffix, type, plain_dtype, value_fn)                                      \
  topos_status topos_tensor_read_##suffix(const topos_tensor *t, type *out, int64_t count) {    \
    if (!t || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "read_" #suffix ": NULL argument"); \
    TP_TRY(tp_check_elements("read_" #suffix, t->dtype));                                       \
    if (count != t->volume)                                                                      \
      return tp_fail(TOPOS_ERR_SHAPE, "read_" #suffix ": buffer of %lld entries for a tensor of " \
                     "volume %lld",                                                              \
                     (long long)count, (long long)t->volume);                                    \
    const char *src = t->storage->data;                                                          \
    size_t size = tp_dtype_size(t->dtype);                                                       \
    tp_rows r = tp_rows_start(t);                                                                \
    do {                                                                                         \
      int64_t off = tp_rows_offset(t, &r);                                                       \
      if (t->dtype == plain_dtype && r.stride == 1) {                                            \
        memcpy(out, src + (size_t)off * size, (size_t)r.length * size);                          \
        out += r.length;                                                                         \
      } else {                                                                                   \
        for (int64_t j = 0; j < r.length; ++j)                                                   \
          *out++ = value_fn(tp_load(t->dtype, src + (size_t)(off + j * r.stride) * size));       \
      }                                                                                          \
    } while (tp_rows_next(t, &r));                                                               \
    return TOPOS_OK;                                                                             \
  }

TP_DEFINE_READ(f32, float, TOPOS_F32, tp_value_f32)
TP_DEFINE_READ(f64, double, TOPOS_F64, tp_value_f64)
#undef TP_DEFINE_READ

int topos_tensor_bits_equal(const topos_tensor *a, const topos_tensor *b) {
  if (!a || !b) return 0;
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int axis = 0; axis < a->rank; ++axis)
    if (a->shape[axis] != b->shape[axis]) return 0;
  size_t size = tp_dtype_size(a->dtype);
  tp_rows ra = tp_rows_start(a), rb = tp_rows_start(b);
  do {
    int64_t oa = tp_rows_offset(a, &ra), ob = tp_rows_offset(b, &rb);
    if (size == 0) {
      size_t row_bytes = (size_t)(ra.length / topos_dtype_block_size(a->dtype)) *
                         (size_t)topos_dtype_block_bytes(a->dtype);
      if (memcmp(tp_block_address(a, oa), tp_block_address(b, ob), row_bytes) != 0) return 0;
      continue;
    }
    const char *pa = (const char *)a->storage->data, *pb = (const char *)b->storage->data;
    for (int64_t j = 0; j < ra.length; ++j)
      if (memcmp(pa + (size_t)(oa + j * ra.stride) * size, pb + (size_t)(ob + j * rb.stride) * size,
                 size) != 0)
        return 0;
  } while (tp_rows_next(a, &ra) && tp_rows_next(b, &rb));
  return 1;
}
