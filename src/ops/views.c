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
  /* walk the operand over coalesced axes (unit axes dropped, an axis merged
   * into the next when it steps as one run in both operand and result), so
   * a pad along a unit lane axis is one long strided row, not one row per
   * element; running offsets instead of per-row index arithmetic */
  int rank = 0;
  int64_t shape[TOPOS_MAX_RANK], sa[TOPOS_MAX_RANK], sr[TOPOS_MAX_RANK];
  for (int axis = 0; axis < a->rank; ++axis) {
    if (a->shape[axis] == 0) rank = -1;
    if (rank < 0) break;
    if (a->shape[axis] == 1) continue;
    int64_t e = a->shape[axis], xa = a->strides[axis], xr = result->strides[axis];
    if (rank > 0 && sa[rank - 1] == e * xa && sr[rank - 1] == e * xr) {
      shape[rank - 1] *= e;
      sa[rank - 1] = xa;
      sr[rank - 1] = xr;
      continue;
    }
    shape[rank] = e;
    sa[rank] = xa;
    sr[rank] = xr;
    ++rank;
  }
  if (rank == 0) { /* one element */
    shape[0] = 1;
    sa[0] = sr[0] = 1;
    rank = 1;
  }
  int64_t index[TOPOS_MAX_RANK] = {0};
  /* the row's first element: operand from its storage, result from its base
   * shifted by start along the padded axis */
  int64_t from = a->offset, to = attrs->start * result->strides[attrs->axis];
  int64_t length = rank > 0 ? shape[rank - 1] : 0, xa = rank > 0 ? sa[rank - 1] : 0,
          xr = rank > 0 ? sr[rank - 1] : 0;
  while (rank > 0) {
    char *d = dst + (size_t)to * esize;
    const char *x = src + (size_t)from * esize;
    if (xa == 1 && xr == 1) /* a contiguous row moves as one block */
      memcpy(d, x, (size_t)length * esize);
    else if (esize == 4)
      for (int64_t j = 0; j < length; ++j) memcpy(d + j * xr * 4, x + j * xa * 4, 4);
    else if (esize == 8)
      for (int64_t j = 0; j < length; ++j) memcpy(d + j * xr * 8, x + j * xa * 8, 8);
    else
      for (int64_t j = 0; j < length; ++j)
        memcpy(d + (size_t)(j * xr) * esize, x + (size_t)(j * xa) * esize, esize);
    int axis = rank - 2;
    for (; axis >= 0; --axis) { /* next row: odometer over the outer axes */
      from += sa[axis];
      to += sr[axis];
      if (++index[axis] < shape[axis]) break;
      from -= shape[axis] * sa[axis];
      to -= shape[axis] * sr[axis];
      index[axis] = 0;
    }
    if (axis < 0) break;
  }
  *out = result;
  return TOPOS_OK;
}
