/* The eager algebra: handles are tensors computed now with the reference
 * kernels (the engine route of differentiation). Scratch tensors made while a
 * rule runs are released by collect(); gradients kept by the sweep live until
 * release(). */
#include <stdlib.h>
#include <string.h>

#include "graph/algebra.h"
#include "ops/attrs.h"

static tp_eager_algebra *eager(tp_algebra *self) { return (tp_eager_algebra *)self; }

/* Takes ownership of one reference to t. */
static topos_status put(tp_eager_algebra *alg, topos_tensor *t, tp_handle *out) {
  if (alg->n_slots == alg->cap_slots) {
    size_t next = alg->cap_slots ? alg->cap_slots * 2 : 64;
    topos_tensor **grown = realloc(alg->slots, next * sizeof *grown);
    if (!grown) goto oom;
    alg->slots = grown;
    alg->cap_slots = next;
  }
  if (alg->n_log == alg->cap_log) {
    size_t next = alg->cap_log ? alg->cap_log * 2 : 64;
    size_t *grown = realloc(alg->log, next * sizeof *grown);
    if (!grown) goto oom;
    alg->log = grown;
    alg->cap_log = next;
  }
  alg->slots[alg->n_slots] = t;
  alg->log[alg->n_log++] = alg->n_slots;
  *out = (tp_handle)alg->n_slots++;
  return TOPOS_OK;
oom:
  topos_tensor_release(t);
  return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "backward: out of memory");
}

static void drop(tp_eager_algebra *alg, topos_tensor *t) {
  if (alg->drop) alg->drop(alg->drop_context, t);
  else topos_tensor_release(t);
}

static topos_tensor *get(tp_eager_algebra *alg, tp_handle h) {
  return (h >= 0 && (size_t)h < alg->n_slots) ? alg->slots[h] : NULL;
}

static topos_status eager_apply(tp_algebra *self, topos_op op, const tp_handle *inputs,
                                const topos_op_attrs *attrs, tp_handle *out) {
  tp_eager_algebra *alg = eager(self);
  topos_tensor *in[TP_MAX_ARITY] = {NULL};
  int arity = topos_op_arity(op);
  for (int j = 0; j < arity; ++j) {
    in[j] = get(alg, inputs[j]);
    if (!in[j])
      return tp_fail(TOPOS_ERR_INTERNAL, "backward: %s: operand %d is not a live value",
                     topos_op_name(op), j);
  }
  topos_op_attrs none = tp_attrs_none();
  if (!attrs) attrs = &none;
  topos_tensor *t = NULL;
  topos_status s = topos_op_forward(op, in, attrs, &t);
  if (s != TOPOS_OK) return tp_fail_context(s, "backward");
  return put(alg, t, out);
}

static topos_status eager_fill(tp_algebra *self, const topos_tensor_desc *like, double value,
                               tp_handle *out) {
  topos_tensor *scalar = NULL;
  TP_TRY(topos_tensor_scalar(like->dtype, value, &scalar));
  if (like->rank == 0) return put(eager(self), scalar, out);
  topos_op_attrs attrs = tp_attrs_shape(like->rank, like->shape);
  topos_tensor *spread = NULL;
  topos_status s = topos_op_forward(TOPOS_OP_BROADCAST, &scalar, &attrs, &spread);
  topos_tensor_release(scalar);
  if (s != TOPOS_OK) return s;
  return put(eager(self), spread, out);
}

static topos_status eager_node_value(tp_algebra *self, uint32_t index, tp_handle *out) {
  tp_eager_algebra *alg = eager(self);
  topos_tensor *t = alg->run->values[index];
  /* A plan releases values no backward rule reads (tp_backward_reads): such
   * a handle is dead, and a rule that used it would fail in apply ("not a
   * live value") instead of reading freed memory. */
  return put(alg, t ? topos_tensor_retain(t) : NULL, out);
}

static size_t eager_mark(tp_algebra *self) { return eager(self)->n_log; }

static void eager_collect(tp_algebra *self, size_t mark, const tp_handle *keep, size_t n_keep) {
  tp_eager_algebra *alg = eager(self);
  for (size_t k = mark; k < alg->n_log; ++k) {
    size_t h = alg->log[k];
    bool kept = false;
    for (size_t j = 0; j < n_keep && !kept; ++j) kept = keep[j] == (tp_handle)h;
    if (kept) continue;
    if (alg->slots[h]) drop(alg, alg->slots[h]);
    alg->slots[h] = NULL;
  }
  alg->n_log = mark < alg->n_log ? mark : alg->n_log;
}

static void eager_release(tp_algebra *self, tp_handle h) {
  tp_eager_algebra *alg = eager(self);
  if (h < 0 || (size_t)h >= alg->n_slots) return;
  if (alg->slots[h]) drop(alg, alg->slots[h]);
  alg->slots[h] = NULL;
}

static topos_status eager_share(tp_algebra *self, tp_handle h, tp_handle *out) {
  tp_eager_algebra *alg = eager(self);
  topos_tensor *t = get(alg, h);
  if (!t) return tp_fail(TOPOS_ERR_INTERNAL, "backward: shared gradient is not a live value");
  return put(alg, topos_tensor_retain(t), out);
}

void tp_eager_algebra_init(tp_eager_algebra *alg, const topos_run *run) {
  memset(alg, 0, sizeof *alg);
  alg->base.apply = eager_apply;
  alg->base.fill = eager_fill;
  alg->base.node_value = eager_node_value;
  alg->base.mark = eager_mark;
  alg->base.collect = eager_collect;
  alg->base.release = eager_release;
  alg->base.share = eager_share;
  alg->run = run;
}

topos_tensor *tp_eager_algebra_take(tp_eager_algebra *alg, tp_handle h) {
  topos_tensor *t = get(alg, h);
  return t ? topos_tensor_retain(t) : NULL;
}

void tp_eager_algebra_free(tp_eager_algebra *alg) {
  for (size_t i = 0; i < alg->n_slots; ++i) topos_tensor_release(alg->slots[i]);
  free(alg->slots);
  free(alg->log);
  memset(alg, 0, sizeof *alg);
}
