/* A multilayer perceptron over Linear layers for the small examples:
 * sizes[0] -> sizes[1] -> ... with an activation between stages and an affine
 * last stage. */
#ifndef TOPOS_EXAMPLES_MLP_UTIL_H
#define TOPOS_EXAMPLES_MLP_UTIL_H

#include <stdio.h>

#include "topos.h"

#define EX_MLP_MAX 8

typedef struct ex_mlp {
  topos_linear stage[EX_MLP_MAX];
  int count;
  topos_activation act;
} ex_mlp;

static inline topos_status ex_mlp_new(topos_tape *tape, const int64_t *sizes, int n_sizes,
                                      topos_activation act, topos_rng *rng, ex_mlp *m) {
  m->count = n_sizes - 1;
  m->act = act;
  for (int i = 0; i < m->count && i < EX_MLP_MAX; ++i) {
    char name[32];
    snprintf(name, sizeof name, "mlp.%d", i);
    topos_status s =
        topos_linear_new(tape, name, sizes[i], sizes[i + 1], 1, TOPOS_F32, rng, &m->stage[i]);
    if (s != TOPOS_OK) return s;
  }
  return topos_tape_status(tape);
}

static inline topos_sym ex_mlp_apply(topos_tape *tape, const ex_mlp *m, topos_sym x) {
  for (int i = 0; i < m->count; ++i) {
    x = topos_linear_apply(tape, &m->stage[i], x);
    if (i + 1 < m->count) x = topos_nn_activate(tape, m->act, x);
  }
  return x;
}

/* One training step on a backward plan: forward, loss value, backward,
 * optimizer update. */
static inline topos_status ex_train_step(const topos_plan *plan, topos_params *params,
                                         const topos_feed *feeds, size_t n_feeds, topos_sym loss,
                                         topos_optimizer *opt, double *loss_value) {
  topos_run *run = NULL;
  topos_field *grads = NULL;
  topos_tensor *lv = NULL;
  topos_status s = topos_plan_forward(plan, params, feeds, n_feeds, &run);
  if (s == TOPOS_OK) s = topos_run_read(run, loss, &lv);
  if (s == TOPOS_OK) s = topos_tensor_get(lv, NULL, loss_value);
  if (s == TOPOS_OK) s = topos_run_backward(run, loss, &grads);
  if (s == TOPOS_OK) s = topos_optimizer_step(opt, params, grads);
  topos_tensor_release(lv);
  topos_field_free(grads);
  topos_run_free(run);
  return s;
}

/* Runs a forward plan and copies a readable node into out (count floats). */
static inline topos_status ex_eval(const topos_plan *plan, const topos_params *params,
                                   const topos_feed *feeds, size_t n_feeds, topos_sym node,
                                   float *out, int64_t count) {
  topos_run *run = NULL;
  topos_tensor *v = NULL;
  topos_status s = topos_plan_forward(plan, params, feeds, n_feeds, &run);
  if (s == TOPOS_OK) s = topos_run_read(run, node, &v);
  if (s == TOPOS_OK) s = topos_tensor_read_f32(v, out, count);
  topos_tensor_release(v);
  topos_run_free(run);
  return s;
}

#endif
