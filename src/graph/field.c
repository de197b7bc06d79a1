/* Fields: one tensor per node of a graph (gradients, optimizer state). A
 * missing entry reads as zeros of the node's shape. */
#include <stdlib.h>

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
  const topos_tensor_desc *desc = &field->graph->nodes[index].desc;
  return topos_tensor_zeros(desc->dtype, desc->rank, desc->shape, out);
}

int topos_field_has(const topos_field *field, topos_sym sym) {
  if (!field || !topos_sym_is_valid(sym) || sym.origin != field->graph->origin ||
      sym.index >= field->graph->count)
    return 0;
  return field->values[sym.index] != NULL;
}
