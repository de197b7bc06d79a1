/* Helper for the fused-pattern tests: compile a plan over a network's roots,
 * tell whether it runs the pattern, and read the first root from the plan
 * and from the interpreter under the same posture. */
#ifndef TOPOS_TESTS_ENGINE_FUSION_UTIL_H
#define TOPOS_TESTS_ENGINE_FUSION_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "test.h"

/* count floats uniform in [-span/2, span/2) from an LCG seeded with seed
 * (malloc'ed; NULL when out of memory): the pattern tests' inputs. */
static inline float *fu_uniform_f32(int64_t count, uint32_t seed, float span) {
  float *v = malloc((size_t)count * sizeof *v);
  for (int64_t i = 0; v && i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * span;
  }
  return v;
}

/* A [rows, n] f32 tensor of v (NULL on failure); v is freed. */
static inline topos_tensor *fu_tensor_of(float *v, int64_t rows, int64_t n) {
  int64_t shape[2] = {rows, n};
  topos_tensor *t = NULL;
  if (!v || topos_tensor_from_f32(TOPOS_F32, 2, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* Compiles roots[0..n_roots) under num; *fused is whether the plan's
 * description names "fused:<pattern>"; *plan_value is roots[0] from the plan
 * and, when interp_value is not NULL, *interp_value roots[0] from the
 * interpreter under ref_num (the caller releases both). */
static inline topos_status fu_plan_and_reference(const topos_network *net, topos_sym *roots,
                                                 size_t n_roots, topos_numerics num,
                                                 topos_numerics ref_num, const char *pattern,
                                                 int *fused, topos_tensor **plan_value,
                                                 topos_tensor **interp_value) {
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  char want[64];
  *plan_value = NULL;
  if (interp_value) *interp_value = NULL;
  topos_request r = {roots, n_roots, NULL, 0, 0, num};
  topos_status st = topos_plan_compile(net, &r, &plan);
  if (st == TOPOS_OK) {
    size_t need = topos_plan_describe(plan, NULL, 0);
    char *text = malloc(need + 1);
    if (!text) st = TOPOS_ERR_OUT_OF_MEMORY;
    if (text) {
      topos_plan_describe(plan, text, need + 1);
      snprintf(want, sizeof want, "fused:%s", pattern);
      *fused = strstr(text, want) != NULL;
      free(text);
    }
  }
  if (st == TOPOS_OK) st = topos_plan_forward(plan, NULL, NULL, 0, &run);
  if (st == TOPOS_OK) st = topos_run_read(run, roots[0], plan_value);
  if (st == TOPOS_OK && interp_value) {
    topos_numerics saved = topos_numerics_enter(ref_num);
    st = topos_network_forward(net, NULL, NULL, 0, NULL, &ref);
    topos_numerics_restore(saved);
    if (st == TOPOS_OK) st = topos_run_read(ref, roots[0], interp_value);
  }
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  return st;
}

/* NULL, or why it could not: the same at `threads` threads, the interpreter
 * under the plan's posture. */
static inline const char *fu_plan_and_interpreter(const topos_network *net, topos_sym *roots,
                                                  size_t n_roots, topos_numerics num, int threads,
                                                  const char *pattern, int *fused,
                                                  topos_tensor **plan_value,
                                                  topos_tensor **interp_value) {
  *plan_value = *interp_value = NULL;
  if (topos_set_threads(threads) != TOPOS_OK) return "setting the threads failed";
  if (fu_plan_and_reference(net, roots, n_roots, num, num, pattern, fused, plan_value, interp_value) !=
      TOPOS_OK)
    return "compile or run failed";
  return NULL;
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
