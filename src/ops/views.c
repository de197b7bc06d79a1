/* Layout ops. Transpose, permute, narrow, broadcast, broadcast_along and
 * unfold return views through the tensor tier (no copy); reshape is a view
 * when the layout allows and a contiguous copy otherwise. pad is the one
 * copying op here: the operand placed inside zeros. */
#include "ops/kernel.h"

topos_status tp_forward_transpose(topos_tensor *const *in, const topos_op_attrs *attrs,
                                  const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  (void)desc;
  return topos_tensor_transpose(in[0], out);
}

topos_status tp_forward_permute(topos_tensor *const *in, const topos_op_attrs *attrs,
                                const topos_tensor_desc *desc, topos_tensor **out) {
  (void)desc;
  return topos_tensor_permute(in[0], attrs->order, out);
}

topos_status tp_forward_reshape(topos_tensor *const *in, const topos_op_attrs *attrs,
                                const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  /* desc has the -1 extent resolved */
  return topos_tensor_reshape(in[0], desc->rank, desc->shape, out);
}

topos_status tp_forward_narrow(topos_tensor *const *in, const topos_op_attrs *attrs,
                               const topos_tensor_desc *desc, topos_tensor **out) {
  (void)desc;
  return topos_tensor_narrow(in[0], attrs->axis, attrs->start, attrs->length, out);
}

topos_status tp_forward_broadcast(topos_tensor *const *in, const topos_op_attrs *attrs,
                                  const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  return topos_tensor_broadcast(in[0], desc->rank, desc->shape, out);
}

topos_status tp_forward_broadcast_along(topos_tensor *const *in, const topos_op_attrs *attrs,
                                        const topos_tensor_desc *desc, topos_tensor **out) {
  (void)desc;
  return topos_tensor_broadcast_along(in[0], attrs->axis, attrs->length, out);
}

topos_status tp_forward_unfold(topos_tensor *const *in, const topos_op_attrs *attrs,
                               const topos_tensor_desc *desc, topos_tensor **out) {
  (void)desc;
  return topos_tensor_unfold(in[0], attrs->axis, attrs->size, attrs->step, attrs->dilation, out);
}

/* pad: result[..., start + i, ...] = a[..., i, ...], zeros elsewhere. Pure
 * data movement, so any plain dtype; the zeros are all-zero bits (+0). */
topos_status tp_forward_pad(topos_tensor *const *in, const topos_op_attrs *attrs,
                            const topos_tensor_desc *desc, topos_tensor **out) {
  const topos_tensor *a = in[0];
  size_t esize = tp_dtype_size(a->dtype);
  if (esize == 0)
    return tp_fail(TOPOS_ERR_INTERNAL, "pad: dtype %s reached a plain kernel",
                   topos_dtype_name(a->dtype));
  topos_tensor *result;
  TP_TRY(topos_tensor_zeros(desc->dtype, desc->rank, desc->shape, &result));
  const char *src = (const char *)a->storage->data;
  char *dst = (char *)tp_tensor_base(result);
  int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a);
  int64_t rows = a->volume / inner;
  int64_t index[TOPOS_MAX_RANK] = {0}, target[TOPOS_MAX_RANK];
  for (int64_t row = 0; row < rows; ++row) {
    for (int axis = 0; axis < a->rank; ++axis) target[axis] = index[axis];
    target[attrs->axis] += attrs->start;
    int64_t from = tp_tensor_element_offset(a, index);
    int64_t to = tp_tensor_element_offset(result, target);
    /* the last axis may be the padded one: its stride in result is 1 either way */
    for (int64_t j = 0; j < inner; ++j)
      memcpy(dst + (size_t)(to - result->offset + j) * esize,
             src + (size_t)(from + j * sa) * esize, esize);
    tp_next_row(a, index);
  }
  *out = result;
  return TOPOS_OK;
}
