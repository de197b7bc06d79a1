/* Internal (engine): the convolution chain the nn tier composes, shared by
 * the conv patterns (patterns_conv.c, patterns_conv_direct.c):
 *   [pad(axis 3) <- pad(axis 2) <-] x [B,C,H,W]
 *   unfold(axis 2, KH) -> unfold(axis 4, KW) -> permute [0,2,4,1,3,5]
 *   -> reshape [B*OH*OW, C*KH*KW] (the patch matrix) */
#ifndef TP_ENGINE_CONV_CHAIN_H
#define TP_ENGINE_CONV_CHAIN_H

#include "graph/graph_internal.h"

/* The chain ending at `reshape`: its members ascending (reshape last, at
 * most 7) and the image x; false when the nodes are not that chain. */
bool tp_conv_walk(const tp_graph *g, uint32_t reshape, uint32_t *members, uint32_t *count,
                  uint32_t *image);

#endif
