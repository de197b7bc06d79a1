/* The sealed network: read-only queries. Immutable after sealing, so every
 * query is safe from any number of threads. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

void topos_network_free(topos_network *net) {
  if (!net) return;
  tp_graph_release(net->graph);
  free(net);
}

uint32_t topos_network_length(const topos_network *net) { return net ? net->graph->count : 0; }

topos_status topos_network_describe(const topos_network *net, topos_sym sym,
                                    topos_tensor_desc *out) {
  if (!net || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "network_describe: NULL argument");
  uint32_t index;
  TP_TRY(tp_graph_resolve(net->graph, sym, "network_describe", &index));
  *out = *net->graph->nodes[index].desc;
  return TOPOS_OK;
}

topos_status topos_network_node(const topos_network *net, topos_sym sym, topos_node_kind *kind,
                                topos_op *op) {
  if (!net) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "network_node: network is NULL");
  uint32_t index;
  TP_TRY(tp_graph_resolve(net->graph, sym, "network_node", &index));
  const tp_node *node = &net->graph->nodes[index];
  if (kind) *kind = node->kind;
  if (op && node->kind == TOPOS_NODE_OP) *op = node->op;
  return TOPOS_OK;
}

const char *topos_network_name(const topos_network *net, topos_sym sym) {
  if (!net || !topos_sym_is_valid(sym) || sym.origin != net->graph->origin ||
      sym.index >= net->graph->count)
    return NULL;
  return net->graph->nodes[sym.index].name;
}

topos_status topos_network_find(const topos_network *net, const char *name, topos_sym *out) {
  if (!net || !name || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "network_find: NULL argument");
  const tp_graph *graph = net->graph;
  for (uint32_t i = 0; i < graph->count; ++i) {
    const char *other = graph->nodes[i].name;
    if (other && strcmp(other, name) == 0) {
      *out = (topos_sym){graph->origin, i};
      return TOPOS_OK;
    }
  }
  return tp_fail(TOPOS_ERR_NOT_FOUND, "network_find: no parameter or input named \"%s\"", name);
}

topos_sym topos_network_symbol(const topos_network *net, uint32_t index) {
  if (!net || index >= net->graph->count) return TOPOS_SYM_INVALID;
  return (topos_sym){net->graph->origin, index};
}
