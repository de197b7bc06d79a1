/* Helper for the fused-pattern tests: compile a plan over a network's roots,
 * tell whether it runs the pattern, and read the first root from the plan
 * and from the interpreter under the same posture. */
#ifndef TOPOS_TESTS_ENGINE_FUSION_UTIL_H
#define TOPOS_TESTS_ENGINE_FUSION_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "test.h"

/* NULL, or why it could not: *fused is whether the plan's description names
 * "fused:<pattern>"; *plan_value and *interp_value (the caller releases them)
 * are roots[0] from the plan at `threads` threads and from the interpreter. */
static inline const char *fu_plan_and_interpreter(const topos_network *net, topos_sym *roots,
                                                  size_t n_roots, topos_numerics num, int threads,
                                                  const char *pattern, int *fused,
                                                  topos_tensor **plan_value,
                                                  topos_tensor **interp_value) {
  const char *reason = "compile failed";
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  char *text = NULL, want[64];
  *plan_value = *interp_value = NULL;
  topos_request r = {roots, n_roots, NULL, 0, 0, num};
  if (topos_plan_compile(net, &r, &plan) != TOPOS_OK) goto done;
  reason = "describe failed";
  size_t need = topos_plan_describe(plan, NULL, 0);
  text = malloc(need + 1);
  if (!text) goto done;
  topos_plan_describe(plan, text, need + 1);
  snprintf(want, sizeof want, "fused:%s", pattern);
  *fused = strstr(text, want) != NULL;
  reason = "run failed";
  if (topos_set_threads(threads) != TOPOS_OK) goto done;
  topos_numerics saved = topos_numerics_enter(num);
  topos_status s1 = topos_network_forward(net, NULL, NULL, 0, NULL, &ref);
  topos_numerics_restore(saved);
  topos_status s2 = topos_plan_forward(plan, NULL, NULL, 0, &run);
  if (s1 != TOPOS_OK || s2 != TOPOS_OK || topos_run_read(ref, roots[0], interp_value) != TOPOS_OK ||
      topos_run_read(run, roots[0], plan_value) != TOPOS_OK)
    goto done;
  reason = NULL;
done:
  free(text);
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  return reason;
}

/* NULL when the plan fuses `pattern` exactly when want_fused says, and
 * gives roots[0] with the interpreter's bits; else why not. */
static inline const char *fu_fused_bits(const topos_network *net, topos_sym *roots, size_t n_roots,
                                        topos_numerics num, int threads, const char *pattern,
                                        int want_fused) {
  topos_tensor *a = NULL, *b = NULL;
  int fused = 0;
  const char *reason = fu_plan_and_interpreter(net, roots, n_roots, num, threads, pattern, &fused, &a, &b);
  if (!reason && fused != want_fused) reason = "the pattern fused where it should not, or did not";
  if (!reason && !topos_tensor_bits_equal(a, b)) reason = "plan differs from the interpreter";
  topos_tensor_release(a);
  topos_tensor_release(b);
  return reason;
}

#endif
