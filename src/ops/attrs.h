/* Internal: builders for topos_op_attrs, shared by the eager conveniences,
 * the tape sugar and the backward rules. Fields an op does not read are
 * zero, so two recordings of one op carry identical attributes. */
#ifndef TP_OPS_ATTRS_H
#define TP_OPS_ATTRS_H

#include <string.h>

#include "topos/ops.h"

static inline topos_op_attrs tp_attrs_none(void) {
  topos_op_attrs attrs;
  memset(&attrs, 0, sizeof attrs);
  return attrs;
}

/* sum_along, log_softmax, log_sum_exp; the start of narrow, pad, unfold, ... */
static inline topos_op_attrs tp_attrs_axis(int axis) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.axis = axis;
  return attrs;
}

/* reshape and broadcast to `shape`; rank must be 0..TOPOS_MAX_RANK. */
static inline topos_op_attrs tp_attrs_shape(int rank, const int64_t *shape) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.rank = rank;
  if (rank > 0) memcpy(attrs.shape, shape, (size_t)rank * sizeof *shape);
  return attrs;
}

#endif
