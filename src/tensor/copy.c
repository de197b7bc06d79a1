/* Copies out of any layout: contiguous, convert, read_f32/f64, bits_equal.
 * All walk the tensor row by row in logical row-major order, where a row is
 * the last axis (one element for a scalar). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
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

typedef struct tp_pack_job {
  const char *base;
  char *dst;
  size_t size;
  int rank; /* coalesced: no unit axes, >= 1 */
  int64_t shape[TOPOS_MAX_RANK], strides[TOPOS_MAX_RANK];
  int64_t offset;
} tp_pack_job;

/* Blocks [b0, b1) of axis 0 when rank >= 3 (else everything): the two
 * innermost axes run as nested loops (an im2col view's rows are a window's
 * few elements), an odometer steps the axes between. */
static void tp_pack_range(void *ctx, int64_t b0, int64_t b1) {
  const tp_pack_job *w = ctx;
  int rank = w->rank;
  size_t size = w->size;
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, w->shape, sizeof shape);
  int64_t block = 1; /* elements per index of axis 0 */
  for (int axis = 1; axis < rank; ++axis) block *= shape[axis];
  int64_t off = w->offset;
  char *dst = w->dst;
  if (rank >= 3) {
    shape[0] = b1 - b0;
    off += b0 * w->strides[0];
    dst += (size_t)(b0 * block) * size;
    if (shape[0] <= 0) return;
  }
  const int64_t *strides = w->strides;
  int64_t length = shape[rank - 1], stride = strides[rank - 1];
  int64_t rows = rank >= 2 ? shape[rank - 2] : 1, row_stride = rank >= 2 ? strides[rank - 2] : 0;
  int64_t index[TOPOS_MAX_RANK] = {0};
  for (;;) {
    for (int64_t q = 0; q < rows; ++q) {
      const char *x = w->base + (size_t)(off + q * row_stride) * size;
      if (stride == 1 && length * (int64_t)size >= 64) /* short rows: no libc call */
        memcpy(dst, x, (size_t)length * size);
      else if (size == 4)
        for (int64_t j = 0; j < length; ++j) memcpy(dst + j * 4, x + j * stride * 4, 4);
      else if (size == 8)
        for (int64_t j = 0; j < length; ++j) memcpy(dst + j * 8, x + j * stride * 8, 8);
      else
        for (int64_t j = 0; j < length; ++j)
          memcpy(dst + (size_t)j * size, x + (size_t)(j * stride) * size, size);
      dst += (size_t)length * size;
    }
    int axis = rank - 3;
    for (; axis >= 0; --axis) { /* next block: odometer over the outer axes */
      off += strides[axis];
      if (++index[axis] < shape[axis]) break;
      off -= shape[axis] * strides[axis];
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

/* Packs t's elements (or blocks) row-major into dst. Plain dtypes walk
 * coalesced axes (unit axes dropped, an axis merged into the next when they
 * step as one run) with a running offset, so a permuted view's short rows cost
 * no per-row index arithmetic; the order, and so the bytes, are the same. */
static void tp_pack(const topos_tensor *t, char *dst) {
  const char *base = t->storage->data;
  size_t size = tp_dtype_size(t->dtype);
  if (size == 0) { /* block-quantized: rows are whole contiguous blocks */
    tp_rows r = tp_rows_start(t);
    do {
      int64_t off = tp_rows_offset(t, &r);
      size_t row_bytes = (size_t)(r.length / topos_dtype_block_size(t->dtype)) *
                         (size_t)topos_dtype_block_bytes(t->dtype);
      memcpy(dst, tp_block_address(t, off), row_bytes);
      dst += row_bytes;
    } while (tp_rows_next(t, &r));
    return;
  }
  int rank = 0;
  int64_t shape[TOPOS_MAX_RANK], strides[TOPOS_MAX_RANK];
  for (int axis = 0; axis < t->rank; ++axis) {
    if (t->shape[axis] == 0) return; /* nothing to move */
    if (t->shape[axis] == 1) continue;
    if (rank > 0 && strides[rank - 1] == t->shape[axis] * t->strides[axis]) {
      shape[rank - 1] *= t->shape[axis];
      strides[rank - 1] = t->strides[axis];
      continue;
    }
    shape[rank] = t->shape[axis];
    strides[rank] = t->strides[axis];
    ++rank;
  }
  if (rank == 0) { /* one element */
    memcpy(dst, base + (size_t)t->offset * size, size);
    return;
  }
  tp_pack_job job = {base, dst, size, rank, {0}, {0}, t->offset};
  memcpy(job.shape, shape, sizeof shape);
  memcpy(job.strides, strides, sizeof strides);
  /* threads take blocks of the outermost axis (each writes its own part of
   * dst) when there is one above the nested pair and enough to move */
  int64_t volume = 1;
  for (int axis = 0; axis < rank; ++axis) volume *= shape[axis];
  if (rank >= 3 && volume >= (1 << 16))
    tp_parallel_for(shape[0], 1, tp_pack_range, &job);
  else
    tp_pack_range(&job, 0, rank >= 3 ? shape[0] : 1);
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
