/* The reverse sweep, shared by the engine route (eager algebra) and the
 * recorded route (recording algebra). See algebra.h for the contract and the
 * fixed accumulation order. */
#include <string.h>

#include "graph/algebra.h"

/* Adds one contribution into grads[x]: zero + c for the first, then grad + c.
 * A clean first contribution is zero + c already, bit for bit (algebra.h), so
 * it is shared instead of added: no zeros, no pass over the elements. */
static topos_status accumulate(tp_algebra *alg, const tp_graph *graph, tp_handle *grads,
                               uint32_t x, tp_handle contribution, bool clean) {
  tp_handle base = grads[x], sum;
  if (base == TP_NONE && clean) return alg->share(alg, contribution, &grads[x]);
  if (base == TP_NONE) {
    topos_tensor_desc desc = *graph->nodes[x].desc;
    TP_TRY(alg->fill(alg, &desc, 0.0, &base));
  }
  tp_handle in[2] = {base, contribution};
  TP_TRY(alg->apply(alg, TOPOS_OP_ADD, in, NULL, &sum));
  if (grads[x] != TP_NONE) alg->release(alg, grads[x]);
  grads[x] = sum;
  return TOPOS_OK;
}

static topos_status sweep_node(tp_algebra *alg, tp_graph *graph, uint32_t i, const uint8_t *active,
                               tp_handle *grads) {
  /* copy: recording may move the node array */
  tp_node node = graph->nodes[i];
  int arity = topos_op_arity(node.op);
  tp_handle inputs[TP_MAX_ARITY], output, cot[TP_MAX_ARITY];
  for (int j = 0; j < TP_MAX_ARITY; ++j) inputs[j] = cot[j] = TP_NONE;
  topos_tensor_desc descs[TP_MAX_ARITY];
  for (int j = 0; j < arity; ++j) {
    TP_TRY(alg->node_value(alg, node.operands[j], &inputs[j]));
    descs[j] = *graph->nodes[node.operands[j]].desc;
  }
  TP_TRY(alg->node_value(alg, i, &output));
  tp_rule_args args = {inputs, descs, output, node.desc, grads[i], node.attrs};
  TP_TRY(tp_backward_rules[node.op](alg, &args, cot));
  for (int j = 0; j < arity; ++j) {
    uint32_t x = node.operands[j];
    if (cot[j] == TP_NONE || (active && !active[x])) continue;
    bool clean = (tp_backward_clean[node.op] >> j) & 1u;
    TP_TRY(accumulate(alg, graph, grads, x, cot[j], clean));
  }
  return TOPOS_OK;
}

topos_status tp_sweep(tp_algebra *alg, tp_graph *graph, uint32_t loss, const uint8_t *active,
                      tp_handle *grads) {
  const topos_tensor_desc *desc = graph->nodes[loss].desc;
  if (desc->rank != 0) {
    char buf[96];
    return tp_fail(TOPOS_ERR_SHAPE, "backward: loss (node %u, %s) has shape %s; it must be rank 0",
                   loss, tp_node_label(&graph->nodes[loss]),
                   tp_shape_string(desc->rank, desc->shape, buf, sizeof buf));
  }
  if (!topos_dtype_is_float(desc->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "backward: loss (node %u) is %s, not a float type", loss,
                   topos_dtype_name(desc->dtype));
  if (active && !active[loss]) return TOPOS_OK; /* nothing wanted depends on it */
  topos_tensor_desc seed_desc = *desc;
  TP_TRY(alg->fill(alg, &seed_desc, 1.0, &grads[loss]));
  for (uint32_t i = loss + 1; i-- > 0;) {
    if (grads[i] == TP_NONE || graph->nodes[i].kind != TOPOS_NODE_OP) continue;
    if (active && !active[i]) continue;
    size_t mark = alg->mark(alg);
    topos_status s = sweep_node(alg, graph, i, active, grads);
    /* keep every gradient made in this step; drop the rule's scratch */
    tp_handle keep[TP_MAX_ARITY];
    size_t n_keep = 0;
    const tp_node *node = &graph->nodes[i];
    for (int j = 0; j < topos_op_arity(node->op); ++j)
      if (grads[node->operands[j]] != TP_NONE) keep[n_keep++] = grads[node->operands[j]];
    alg->collect(alg, mark, keep, n_keep);
    if (s != TOPOS_OK) return s;
  }
  return TOPOS_OK;
}
