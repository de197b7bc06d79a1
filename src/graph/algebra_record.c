/* The recording algebra: handles are node indices on a tape and applying an
 * op records it (the recorded route of differentiation). Only the public
 * recording API is used, so gradient nodes are ordinary nodes. */
#include <string.h>

#include "graph/algebra.h"

static tp_record_algebra *recorder(tp_algebra *self) { return (tp_record_algebra *)self; }

static topos_sym sym_of(tp_record_algebra *alg, tp_handle h) {
  return (topos_sym){alg->tape->graph->origin, (uint32_t)h};
}

static topos_status record_apply(tp_algebra *self, topos_op op, const tp_handle *inputs,
                                 const topos_op_attrs *attrs, tp_handle *out) {
  tp_record_algebra *alg = recorder(self);
  topos_sym in[TP_MAX_ARITY] = {TOPOS_SYM_INVALID, TOPOS_SYM_INVALID, TOPOS_SYM_INVALID}, sym;
  for (int j = 0; j < topos_op_arity(op); ++j) in[j] = sym_of(alg, inputs[j]);
  TP_TRY(topos_tape_record(alg->tape, op, in, attrs, &sym));
  *out = sym.index;
  return TOPOS_OK;
}

/* Mirrors the eager fill exactly: a scalar, broadcast when rank > 0. */
static topos_status record_fill(tp_algebra *self, const topos_tensor_desc *like, double value,
                                tp_handle *out) {
  tp_record_algebra *alg = recorder(self);
  topos_sym sym = topos_tape_scalar(alg->tape, like->dtype, value);
  if (like->rank > 0) sym = topos_tape_broadcast(alg->tape, sym, like->rank, like->shape);
  if (!topos_sym_is_valid(sym)) return topos_tape_status(alg->tape);
  *out = sym.index;
  return TOPOS_OK;
}

static topos_status record_node_value(tp_algebra *self, uint32_t index, tp_handle *out) {
  (void)self;
  *out = index;
  return TOPOS_OK;
}

static size_t record_mark(tp_algebra *self) {
  (void)self;
  return 0;
}
static void record_collect(tp_algebra *self, size_t mark, const tp_handle *keep, size_t n) {
  (void)self, (void)mark, (void)keep, (void)n;
}
static void record_release(tp_algebra *self, tp_handle h) { (void)self, (void)h; }

/* a node may be read by any number of consumers: the handle itself */
static topos_status record_share(tp_algebra *self, tp_handle h, tp_handle *out) {
  (void)self;
  *out = h;
  return TOPOS_OK;
}

void tp_record_algebra_init(tp_record_algebra *alg, topos_tape *tape) {
  memset(alg, 0, sizeof *alg);
  alg->base.apply = record_apply;
  alg->base.fill = record_fill;
  alg->base.node_value = record_node_value;
  alg->base.mark = record_mark;
  alg->base.collect = record_collect;
  alg->base.release = record_release;
  alg->base.share = record_share;
  alg->tape = tape;
}
