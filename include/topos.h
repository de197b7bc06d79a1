/* topos — tensor programs on the hardware people already own.
 * Umbrella header: include this one. Tiers: base -> tensor -> ops -> graph ->
 * engine -> backend; quant and io (GGUF) beside them; nn and models on top. */
#ifndef TOPOS_H
#define TOPOS_H

#include "topos/base.h"
#include "topos/tensor.h"
#include "topos/ops.h"
#include "topos/quant.h"
#include "topos/graph.h"
#include "topos/engine.h"
#include "topos/gguf.h"
#include "topos/qmatmul.h"
#include "topos/tokenizer.h"
#include "topos/sampler.h"
#include "topos/chat.h"
#include "topos/llama.h"
#include "topos/backend.h"
#include "topos/nn.h"
#include "topos/data.h"

#endif
