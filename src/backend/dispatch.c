/* Where the op kernels hand tasks to the element seam. Each entry returns
 * TOPOS_UNSUPPORTED when the op kernel should run its own reference loop
 * (other dtypes, layouts the seam does not take). */
#include <stdlib.h>

#include "backend/backend_internal.h"
#include "tensor/tensor_internal.h"

static int tp_float_dtype(topos_dtype d) { return d == TOPOS_F32 || d == TOPOS_F64; }

static topos_status tp_matmul_into(const topos_tensor *a, const topos_tensor *b,
                                   topos_tensor *out) {
  const topos_element *element = topos_element_of(a->dtype);
  int r = a->rank;
  size_t size = tp_dtype_size(a->dtype);
  topos_gemm_task task = {a->shape[r - 2], b->shape[r - 1], a->shape[r - 1],
                          NULL, a->strides[r - 2], a->strides[r - 1],
                          NULL, b->strides[r - 2], b->strides[r - 1],
                          NULL, b->shape[r - 1]};
  int64_t batches = a->volume / (task.m * task.k);
  int64_t index[TOPOS_MAX_RANK] = {0}; /* batch position; the last two stay 0 */
  char *base_a = (char *)a->storage->data, *base_b = (char *)b->storage->data;
  char *c = (char *)tp_tensor_base(out);
  for (int64_t batch = 0; batch < batches; ++batch) {
    task.a = base_a + (size_t)tp_tensor_element_offset(a, index) * size;
    task.b = base_b + (size_t)tp_tensor_element_offset(b, index) * size;
    task.c = c + (size_t)(batch * task.m * task.n) * size;
    TP_TRY(topos_element_gemm(element, &task));
    if (r > 2) tp_index_next(r - 2, a->shape, index);
  }
  return TOPOS_OK;
}

topos_status tp_backend_matmul(const topos_tensor *a, const topos_tensor *b, topos_tensor **out) {
  if (!tp_float_dtype(a->dtype) || a->dtype != b->dtype || a->rank < 2 || a->rank != b->rank)
    return TOPOS_UNSUPPORTED;
  int64_t shape[TOPOS_MAX_RANK];
  for (int axis = 0; axis < a->rank; ++axis) shape[axis] = a->shape[axis];
  shape[a->rank - 1] = b->shape[b->rank - 1];
  topos_tensor *result;
  TP_TRY(tp_tensor_empty(a->dtype, a->rank, shape, &result));
  topos_status s = tp_matmul_into(a, b, result);
  if (s != TOPOS_OK) {
    topos_tensor_release(result);
    return s;
  }
  *out = result;
  return TOPOS_OK;
}

static int tp_map_op_of(int op, topos_map_op *out) {
  switch (op) {
    case TOPOS_OP_EXP: *out = TOPOS_MAP_EXP; return 1;
    case TOPOS_OP_LN: *out = TOPOS_MAP_LN; return 1;
    case TOPOS_OP_SQRT: *out = TOPOS_MAP_SQRT; return 1;
    case TOPOS_OP_TANH: *out = TOPOS_MAP_TANH; return 1;
    case TOPOS_OP_NEG: *out = TOPOS_MAP_NEG; return 1;
    case TOPOS_OP_RELU: *out = TOPOS_MAP_RELU; return 1;
    default: return 0;
  }
}

topos_status tp_backend_unary(int op, topos_tensor *a, topos_tensor **out) {
  topos_map_op map;
  if (!tp_float_dtype(a->dtype) || !tp_map_op_of(op, &map)) return TOPOS_UNSUPPORTED;
  const topos_element *element = topos_element_of(a->dtype);
  if (topos_tensor_is_contiguous(a)) {
    topos_tensor *result;
    TP_TRY(tp_tensor_empty(a->dtype, a->rank, a->shape, &result));
    topos_status s = topos_element_map(element, map, tp_tensor_base(a), tp_tensor_base(result),
                                       a->volume);
    if (s != TOPOS_OK) {
      topos_tensor_release(result);
      return s;
    }
    *out = result;
    return TOPOS_OK;
  }
  /* A broadcast view: compute the distinct elements only (the view with its
   * stride-0 axes collapsed to extent 1), then spread the result the same
   * way. Other strided layouts keep the reference loop. */
  int64_t distinct_shape[TOPOS_MAX_RANK], spread[TOPOS_MAX_RANK];
  int broadcast = 0;
  for (int axis = 0; axis < a->rank; ++axis) {
    int held = a->strides[axis] == 0 && a->shape[axis] > 1;
    broadcast |= held;
    distinct_shape[axis] = held ? 1 : a->shape[axis];
  }
  if (!broadcast) return TOPOS_UNSUPPORTED;
  topos_tensor *distinct = NULL, *packed = NULL, *small = NULL;
  topos_status s = tp_tensor_view(a, a->rank, distinct_shape, a->strides, a->offset, &distinct);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(distinct, 0, &packed);
  if (s == TOPOS_OK) s = tp_tensor_empty(a->dtype, a->rank, distinct_shape, &small);
  if (s == TOPOS_OK)
    s = topos_element_map(element, map, tp_tensor_base(packed), tp_tensor_base(small),
                          small->volume);
  if (s == TOPOS_OK) {
    tp_contiguous_strides(a->rank, distinct_shape, spread);
    for (int axis = 0; axis < a->rank; ++axis)
      if (distinct_shape[axis] != a->shape[axis]) spread[axis] = 0;
    s = tp_tensor_view(small, a->rank, a->shape, spread, 0, out);
  }
  topos_tensor_release(distinct);
  topos_tensor_release(packed);
  topos_tensor_release(small);
  return s;
}

topos_status tp_backend_binary(int op, const topos_tensor *a, const topos_tensor *b,
                               topos_tensor **out) {
  if (!tp_float_dtype(a->dtype) || a->dtype != b->dtype) return TOPOS_UNSUPPORTED;
  if (!topos_backend_enabled(TOPOS_BACKEND_DEFAULT)) return TOPOS_UNSUPPORTED;
  topos_tensor *result;
  TP_TRY(tp_tensor_empty(a->dtype, a->rank, a->shape, &result));
  topos_status s = tp_default_binary((topos_op)op, a, b, result);
  if (s != TOPOS_OK) {
    topos_tensor_release(result);
    return s;
  }
  *out = result;
  return TOPOS_OK;
}
