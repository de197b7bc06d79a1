/* Fields: one tensor per node of a graph (gradients, optimizer state). A
 * missing entry reads as zeros of the node's shape. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

topos_status tp_field_new(tp_graph *graph, topos_field **out) {
  topos_field *field = calloc(1, sizeof *field);
  topos_tensor **values = calloc(graph->count ? graph->count : 1, sizeof *values);
  if (!field || !values) {
    free(field);
    free(values);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "field: out of memory");
  }
  field->graph = tp_graph_retain(graph);
  field->values = values;
  *out = field;
  return TOPOS_OK;
}

void topos_field_free(topos_field *field) {
  if (!field) return;
  if (field->recycle) {
    field->recycle(field);
    return;
  }
  for (uint32_t i = 0; i < field->graph->count; ++i) topos_tensor_release(field->values[i]);
  free(field->values);
  tp_graph_release(field->graph);
  free(field);
}

topos_status topos_field_get(const topos_field *field, topos_sym sym, topos_tensor **out) {
  if (out) *out = NULL;
  if (!field || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "field_get: NULL argument");
  uint32_t index;
  TP_TRY(tp_graph_resolve(field->graph, sym, "field_get", &index));
  if (field->values[index]) {
    *out = topos_tensor_retain(field->values[index]);
    return TOPOS_OK;
  }
  const topos_tensor_desc *desc = field->graph->nodes[index].desc;
  return topos_tensor_zeros(desc->dtype, desc->rank, desc->shape, out);
}

int topos_field_has(const topos_field *field, topos_sym sym) {
  if (!field || !topos_sym_is_valid(sym) || sym.origin != field->graph->origin ||
      sym.index >= field->graph->count)
    return 0;
  return field->values[sym.index] != NULL;
}

topos_status topos_field_new(const topos_network *net, topos_field **out) {
  if (out) *out = NULL;
  if (!net || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "field_new: NULL argument");
  return tp_field_new(net->graph, out);
}

topos_status topos_field_set(topos_field *field, topos_sym sym, topos_tensor *value) {
  if (!field || !value) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "field_set: NULL argument");
  uint32_t index;
  TP_TRY(tp_graph_resolve(field->graph, sym, "field_set", &index));
  const topos_tensor_desc *want = field->graph->nodes[index].desc;
  topos_tensor_desc got = topos_tensor_describe(value);
  if (got.dtype != want->dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "field_set: node %u is %s, got %s", index,
                   topos_dtype_name(want->dtype), topos_dtype_name(got.dtype));
  if (got.rank != want->rank || memcmp(got.shape, want->shape, (size_t)got.rank * sizeof(int64_t))) {
    char a[96], b[96];
    return tp_fail(TOPOS_ERR_SHAPE, "field_set: node %u has shape %s, got %s", index,
                   tp_shape_string(want->rank, want->shape, a, sizeof a),
                   tp_shape_string(got.rank, got.shape, b, sizeof b));
  }
  topos_tensor_retain(value);
  topos_tensor_release(field->values[index]);
  field->values[index] = value;
  return TOPOS_OK;
}
