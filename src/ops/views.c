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
  int r = a->rank;
  int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a);
  int64_t rows = inner > 0 ? a->volume / inner : 0;
  int64_t index[TOPOS_MAX_RANK] = {0};
  /* running element offsets of the row's first element: operand (from its
   * storage) and result (from its base, shifted by start along the axis) */
  int64_t from = a->offset, to = attrs->start * result->strides[attrs->axis];
  for (int64_t row = 0; row < rows; ++row) {
    /* the last axis may be the padded one: its stride in result is 1 either way */
    char *d = dst + (size_t)to * esize;
    const char *x = src + (size_t)from * esize;
    if (sa == 1) /* a contiguous row moves as one block */
      memcpy(d, x, (size_t)inner * esize);
    else if (esize == 4)
      for (int64_t j = 0; j < inner; ++j) memcpy(d + j * 4, x + j * sa * 4, 4);
    else if (esize == 8)
      for (int64_t j = 0; j < inner; ++j) memcpy(d + j * 8, x + j * sa * 8, 8);
    else
      for (int64_t j = 0; j < inner; ++j)
        memcpy(d + (size_t)j * esize, x + (size_t)(j * sa) * esize, esize);
    for (int i = r - 2; i >= 0; --i) { /* next row: odometer over the outer axes */
      from += a->strides[i];
      to += result->strides[i];
      if (++index[i] < a->shape[i]) break;
      from -= a->shape[i] * a->strides[i];
      to -= a->shape[i] * result->strides[i];
      index[i] = 0;
    }
  }
  *out = result;
  return TOPOS_OK;
}
