/* The pattern table of the plan compiler (see pattern.h for the contract).
 * Empty for now: fused conv (im2col + GEMM), max-pool and batch-norm patterns
 * add their rows here, one file each. */
#include "engine/pattern.h"

const tp_pattern *const tp_plan_patterns[] = {NULL}; /* sentinel keeps the array non-empty */
const size_t tp_plan_pattern_count = 0;
