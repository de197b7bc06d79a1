/* Shape helpers: validation, checked volume, row-major strides, printing. */
#include <stdio.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

void tp_contiguous_strides(int rank, const int64_t *shape, int64_t *strides) {
  int64_t stride = 1;
  for (int axis = rank - 1; axis >= 0; --axis) {
    strides[axis] = stride;
    stride *= shape[axis]; /* callers validated the volume, so this cannot overflow */
  }
}

topos_status tp_shape_volume(int rank, const int64_t *shape, int64_t *out) {
  char text[128];
  if (rank < 0 || rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "rank %d outside 0..%d", rank, TOPOS_MAX_RANK);
  if (rank > 0 && !shape) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "NULL shape of rank %d", rank);
  int64_t volume = 1;
  for (int axis = 0; axis < rank; ++axis) {
    if (shape[axis] <= 0)
      return tp_fail(TOPOS_ERR_SHAPE, "extent %lld of axis %d in shape %s must be > 0",
                     (long long)shape[axis], axis, tp_shape_string(rank, shape, text, sizeof text));
    if (__builtin_mul_overflow(volume, shape[axis], &volume))
      return tp_fail(TOPOS_ERR_OVERFLOW, "volume of shape %s overflows 64 bits",
                     tp_shape_string(rank, shape, text, sizeof text));
  }
  *out = volume;
  return TOPOS_OK;
}

const char *tp_shape_string(int rank, const int64_t *shape, char *buf, size_t size) {
  if (!buf || size == 0) return buf;
  size_t used = 0;
  buf[0] = '\0';
  int n = snprintf(buf, size, "[");
  if (n > 0) used += (size_t)n;
  for (int axis = 0; axis < rank && used < size; ++axis) {
    n = snprintf(buf + used, size - used, axis ? ",%lld" : "%lld", (long long)shape[axis]);
    if (n > 0) used += (size_t)n;
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}
