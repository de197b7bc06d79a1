/* Helpers for the plan tests: the interpreter oracle under a chosen posture,
 * and the check "every plan result equals the interpreter's bits" over one
 * network (forward values of every node, the loss, and engine-route
 * gradients), for forward-only and backward plans in both postures compiled
 * from the same network, each run twice (plans are reused). */
#ifndef TOPOS_TESTS_ENGINE_PLAN_UTIL_H
#define TOPOS_TESTS_ENGINE_PLAN_UTIL_H

#include "../graph/graph_util.h"
#include "graph/graph_internal.h"

/* A topos_params_step callback: p - lr * g with lr = *(double *)user
 * (allocating, the plain way an example writes it). */
static inline topos_status pt_sgd(void *user, topos_sym param, topos_tensor *value,
                                  topos_tensor *gradient, topos_tensor **out) {
  (void)param;
  topos_tensor *lr = NULL, *spread = NULL, *scaled = NULL;
  topos_status s = topos_tensor_scalar(topos_tensor_dtype(value), *(double *)user, &lr);
  if (s == TOPOS_OK)
    s = topos_tensor_broadcast(lr, topos_tensor_rank(value), topos_tensor_shape(value), &spread);
  if (s == TOPOS_OK) s = topos_mul(gradient, spread, &scaled);
  if (s == TOPOS_OK) s = topos_sub(value, scaled, out);
  topos_tensor_release(lr);
  topos_tensor_release(spread);
  topos_tensor_release(scaled);
  return s;
}

/* A complete interpreter run (every node readable, backward allowed) under
 * Exact or Fast. */
static inline topos_status tp_oracle_run(const topos_network *net, const topos_params *params,
                                         const topos_feed *feeds, size_t n_feeds, int exact,
                                         topos_run **out) {
  tp_schedule sc;
  topos_status s = tp_schedule_build(net->graph, NULL, 0, NULL, 0, 0, &sc);
  if (s != TOPOS_OK) return s;
  sc.exact = exact;
  s = tp_schedule_execute(&sc, params, feeds, n_feeds, out);
  tp_schedule_free(&sc);
  return s;
}

static inline int tp_bits_or_fail(const char *file, int line, const char *what, uint32_t node,
                                  topos_tensor *a, topos_tensor *b) {
  if (topos_tensor_bits_equal(a, b)) return 1;
  char ta[512], tb[512];
  topos_tensor_format(a, ta, sizeof ta, 16);
  topos_tensor_format(b, tb, sizeof tb, 16);
  tt_fail_at(file, line, "%s of node %u: plan\n%s\n!= interpreter\n%s", what, node, ta, tb);
  return 0;
}

static inline int tp_check_plans(const char *file, int line, const topos_network *net,
                                 const topos_params *params, const topos_feed *feeds,
                                 size_t n_feeds, topos_sym loss, int differentiate) {
  int ok = 0;
  uint32_t n = topos_network_length(net);
  topos_sym *all = malloc((n ? n : 1) * sizeof *all);
  topos_run *oracle[2] = {NULL, NULL}, *run = NULL;
  topos_field *oracle_grads[2] = {NULL, NULL}, *grads = NULL;
  topos_plan *plans[2][2] = {{NULL, NULL}, {NULL, NULL}};
  topos_tensor *a = NULL, *b = NULL;
  topos_status s = TOPOS_OK;
#define TP_CHECK_TRY(expr) TT_TRY_AT(file, line, s, expr)
  if (!all) goto done;
  for (uint32_t i = 0; i < n; ++i) all[i] = topos_network_symbol(net, i);
  for (int exact = 0; exact < 2; ++exact) {
    TP_CHECK_TRY(tp_oracle_run(net, params, feeds, n_feeds, exact, &oracle[exact]));
    if (differentiate) TP_CHECK_TRY(topos_run_backward(oracle[exact], loss, &oracle_grads[exact]));
    topos_numerics numerics = exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST;
    topos_request everything = {&loss, 1, all, n, 0, numerics};
    topos_request training = {&loss, 1, NULL, 0, 1, numerics};
    TP_CHECK_TRY(topos_plan_compile(net, &everything, &plans[exact][0]));
    if (differentiate) TP_CHECK_TRY(topos_plan_compile(net, &training, &plans[exact][1]));
  }
  for (int exact = 0; exact < 2; ++exact) {
    if (topos_plan_numerics(plans[exact][0]) !=
        (exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST)) {
      tt_fail_at(file, line, "plan posture not stored");
      goto done;
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      /* forward-only, every node observed */
      TP_CHECK_TRY(topos_plan_forward(plans[exact][0], params, feeds, n_feeds, &run));
      for (uint32_t i = 0; i < n; ++i) {
        TP_CHECK_TRY(topos_run_read(run, all[i], &a));
        TP_CHECK_TRY(topos_run_read(oracle[exact], all[i], &b));
        if (!tp_bits_or_fail(file, line, "value", i, a, b)) goto done;
        topos_tensor_release(a);
        topos_tensor_release(b);
        a = b = NULL;
      }
      topos_run_free(run);
      run = NULL;
      if (!differentiate) continue;
      /* backward plan: the loss and every gradient the engine route gives */
      TP_CHECK_TRY(topos_plan_forward(plans[exact][1], params, feeds, n_feeds, &run));
      TP_CHECK_TRY(topos_run_read(run, loss, &a));
      TP_CHECK_TRY(topos_run_read(oracle[exact], loss, &b));
      if (!tp_bits_or_fail(file, line, "loss", loss.index, a, b)) goto done;
      topos_tensor_release(a);
      topos_tensor_release(b);
      a = b = NULL;
      TP_CHECK_TRY(topos_run_backward(run, loss, &grads));
      for (uint32_t i = 0; i < n; ++i) {
        if (topos_field_has(grads, all[i]) != topos_field_has(oracle_grads[exact], all[i])) {
          tt_fail_at(file, line, "gradient of node %u present in one route only", i);
          goto done;
        }
        if (!topos_field_has(grads, all[i])) continue;
        TP_CHECK_TRY(topos_field_get(grads, all[i], &a));
        TP_CHECK_TRY(topos_field_get(oracle_grads[exact], all[i], &b));
        if (!tp_bits_or_fail(file, line, "gradient", i, a, b)) goto done;
        topos_tensor_release(a);
        topos_tensor_release(b);
        a = b = NULL;
      }
      topos_field_free(grads);
      grads = NULL;
      topos_run_free(run);
      run = NULL;
    }
  }
  ok = 1;
done:
#undef TP_CHECK_TRY
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_field_free(grads);
  topos_run_free(run);
  for (int e = 0; e < 2; ++e) {
    topos_run_free(oracle[e]);
    topos_field_free(oracle_grads[e]);
    topos_plan_free(plans[e][0]);
    topos_plan_free(plans[e][1]);
  }
  free(all);
  return ok;
}

#define CHECK_PLANS(net, params, feeds, n_feeds, loss, differentiate)                          \
  do {                                                                                         \
    if (!tp_check_plans(__FILE__, __LINE__, (net), (params), (feeds), (n_feeds), (loss),      \
                        (differentiate)))                                                      \
      return;                                                                                  \
  } while (0)

#endif
