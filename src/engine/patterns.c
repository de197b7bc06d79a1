/* The pattern table of the plan compiler (see pattern.h for the contract):
 * one row per fused pattern, each defined in its own file; and the members
 * step every match ends with. */
#include "engine/pattern.h"

#include <string.h>

extern const tp_pattern tp_pattern_conv_im2col; /* patterns_conv.c */
extern const tp_pattern tp_pattern_max_pool;    /* patterns_pool.c */
extern const tp_pattern tp_pattern_batch_norm;  /* patterns_batch_norm.c */
extern const tp_pattern tp_pattern_concat;    /* patterns_concat.c */
extern const tp_pattern tp_pattern_qlinear_concat; /* patterns_qlinear_concat.c */
extern const tp_pattern tp_pattern_seed_mul;    /* patterns_seed.c */
extern const tp_pattern tp_pattern_pool_backward; /* patterns_pool_backward.c */
extern const tp_pattern tp_pattern_im2col;        /* patterns_conv.c */
extern const tp_pattern tp_pattern_softmax;       /* patterns_softmax.c */
extern const tp_pattern tp_pattern_col2im;        /* patterns_col2im.c */
extern const tp_pattern tp_pattern_relu_grad;     /* patterns_relu_grad.c */
extern const tp_pattern tp_pattern_matmul_bias;   /* patterns_matmul_bias.c */
extern const tp_pattern tp_pattern_conv_forward;  /* patterns_conv_direct.c */
extern const tp_pattern tp_pattern_conv_wgrad;    /* patterns_conv_direct.c */
extern const tp_pattern tp_pattern_relu_permuted; /* patterns_relu.c */
extern const tp_pattern tp_pattern_swiglu;        /* patterns_swiglu.c */
extern const tp_pattern tp_pattern_geglu;         /* patterns_geglu.c */
extern const tp_pattern tp_pattern_attention;     /* patterns_attention.c */
extern const tp_pattern tp_pattern_rope;          /* patterns_rope.c */
extern const tp_pattern tp_pattern_rmsnorm;       /* patterns_rmsnorm.c */

const tp_pattern *const tp_plan_patterns[] = {&tp_pattern_conv_forward, &tp_pattern_conv_wgrad,
                                              &tp_pattern_pool_backward, &tp_pattern_conv_im2col, &tp_pattern_max_pool,
                                              &tp_pattern_batch_norm, &tp_pattern_attention, &tp_pattern_rope, &tp_pattern_rmsnorm, &tp_pattern_qlinear_concat, &tp_pattern_concat,
                                              &tp_pattern_seed_mul, &tp_pattern_im2col,
                                              &tp_pattern_col2im, &tp_pattern_relu_grad,
                                              &tp_pattern_matmul_bias, &tp_pattern_softmax,
                                              &tp_pattern_relu_permuted, &tp_pattern_swiglu, &tp_pattern_geglu};
const size_t tp_plan_pattern_count = sizeof tp_plan_patterns / sizeof tp_plan_patterns[0];

bool tp_fusion_take_members(tp_fusion *f, uint32_t *members, uint32_t n, uint32_t root) {
  if (n == 0 || n > TP_FUSION_MAX_MEMBERS) return false;
  for (uint32_t i = 1; i < n; ++i) /* insertion sort: groups are small */
    for (uint32_t j = i; j > 0 && members[j] < members[j - 1]; --j) {
      uint32_t t = members[j];
      members[j] = members[j - 1];
      members[j - 1] = t;
    }
  for (uint32_t i = 1; i < n; ++i)
    if (members[i] == members[i - 1]) return false;
  if (members[n - 1] != root) return false;
  f->n_members = n;
  memcpy(f->members, members, n * sizeof *members);
  return true;
}
