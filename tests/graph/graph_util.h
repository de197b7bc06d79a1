/* Helpers for the graph tests: seeded tensors and the gradient check.
 *
 * tg_gradcheck records loss = build(params) on a fresh tape, appends the
 * recorded gradients (topos_tape_differentiate), seals, runs once, and checks
 *   1. engine route (topos_run_backward) == recorded route, bit for bit;
 *   2. engine route == central finite differences in f64 (h = 1e-5).
 * Everything it makes is freed on every path (the suite runs under ASan). */
#ifndef TOPOS_TESTS_GRAPH_UTIL_H
#define TOPOS_TESTS_GRAPH_UTIL_H

#include <stdlib.h>

#include "test.h"

/* splitmix64, local so the tests need nothing beyond the tiers they test */
static inline uint64_t tg_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double tg_unit(uint64_t *state) { return (double)(tg_next(state) >> 11) * 0x1p-53; }

/* Seeded uniform values in [lo, hi) (f64 computed, converted once to dtype). */
static inline topos_tensor *tg_random(topos_dtype dtype, int rank, const int64_t *shape,
                                      uint64_t seed, double lo, double hi) {
  int64_t volume = 1;
  for (int i = 0; i < rank; ++i) volume *= shape[i];
  double *values = malloc((size_t)volume * sizeof *values);
  if (!values) return NULL;
  uint64_t rng = seed;
  for (int64_t i = 0; i < volume; ++i) values[i] = lo + (hi - lo) * tg_unit(&rng);
  topos_tensor *t = NULL;
  if (topos_tensor_from_f64(dtype, rank, shape, values, &t) != TOPOS_OK) t = NULL;
  free(values);
  return t;
}

/* Values with a gap around zero: |x| in [lo, hi), random signs (for kinks). */
static inline topos_tensor *tg_signed_away(int rank, const int64_t *shape, uint64_t seed,
                                           double lo, double hi) {
  int64_t volume = 1;
  for (int i = 0; i < rank; ++i) volume *= shape[i];
  double *values = malloc((size_t)volume * sizeof *values);
  if (!values) return NULL;
  uint64_t rng = seed;
  for (int64_t i = 0; i < volume; ++i) {
    double m = lo + (hi - lo) * tg_unit(&rng);
    values[i] = (tg_next(&rng) & 1) ? m : -m;
  }
  topos_tensor *t = NULL;
  if (topos_tensor_from_f64(TOPOS_F64, rank, shape, values, &t) != TOPOS_OK) t = NULL;
  free(values);
  return t;
}

/* A constant node of random values shaped like x (records through the tape). */
static inline topos_sym tg_constant_like(topos_tape *tape, topos_sym x, uint64_t seed, double lo,
                                         double hi) {
  topos_tensor_desc d;
  if (topos_tape_describe(tape, x, &d) != TOPOS_OK) return TOPOS_SYM_INVALID;
  topos_tensor *t = tg_random(d.dtype, d.rank, d.shape, seed, lo, hi);
  topos_sym s = topos_tape_constant(tape, t);
  topos_tensor_release(t);
  return s;
}

/* sum(y * w) with w a fixed random constant: a rank-0 loss whose gradient
 * with respect to y is w (so every output element matters differently). */
static inline topos_sym tg_weighted_sum(topos_tape *tape, topos_sym y, uint64_t seed) {
  topos_sym w = tg_constant_like(tape, y, seed, -1.0, 1.0);
  return topos_tape_sum(tape, topos_tape_mul(tape, y, w));
}

static inline topos_sym tg_i32_constant(topos_tape *tape, int n, const int32_t *values) {
  int64_t shape[1] = {n};
  topos_tensor *t = NULL;
  if (topos_tensor_from_data(TOPOS_I32, 1, shape, values, (size_t)n * 4, &t) != TOPOS_OK)
    return TOPOS_SYM_INVALID;
  topos_sym s = topos_tape_constant(tape, t);
  topos_tensor_release(t);
  return s;
}

typedef topos_sym (*tg_build_fn)(topos_tape *tape, const topos_sym *params, void *ctx);

static inline int tg_read_scalar(topos_run *run, topos_sym sym, double *out) {
  topos_tensor *t = NULL;
  if (topos_run_read(run, sym, &t) != TOPOS_OK) return 0;
  int ok = topos_tensor_read_f64(t, out, 1) == TOPOS_OK;
  topos_tensor_release(t);
  return ok;
}

/* Loss value with parameter k's element e replaced by value. */
static inline topos_status tg_loss_at(const topos_network *net, topos_params *params,
                                      topos_sym param, int64_t e, double value, topos_sym loss,
                                      double *out) {
  topos_tensor *current = NULL, *copy = NULL;
  topos_run *run = NULL;
  topos_status s = topos_params_get(params, param, &current);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(current, 1, &copy);
  if (s == TOPOS_OK) {
    ((double *)topos_tensor_data_mut(copy))[e] = value;
    s = topos_params_set(params, param, copy);
  }
  topos_forward_options only_loss = {&loss, 1, NULL, 0, 0};
  if (s == TOPOS_OK) s = topos_network_forward(net, params, NULL, 0, &only_loss, &run);
  if (s == TOPOS_OK && !tg_read_scalar(run, loss, out)) s = TOPOS_ERR_INTERNAL;
  if (current) topos_params_set(params, param, current); /* restore */
  topos_run_free(run);
  topos_tensor_release(copy);
  topos_tensor_release(current);
  return s;
}

static inline int tg_gradcheck(const char *file, int line, size_t n,
                               topos_tensor *const *initials, tg_build_fn build, void *ctx,
                               double tol) {
  int ok = 0;
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  topos_tensor *engine = NULL, *recorded = NULL;
  double *analytic = NULL;
  topos_sym p[8], g[8], loss;
  topos_status s;
#define TG_TRY(expr) TT_TRY_AT(file, line, s, expr)
  if (n > 8) {
    tt_fail_at(file, line, "gradcheck: at most 8 parameters");
    return 0;
  }
  for (size_t k = 0; k < n; ++k)
    if (!initials[k]) {
      tt_fail_at(file, line, "gradcheck: initial %zu is NULL", k);
      return 0;
    }
  TG_TRY(topos_tape_new(&tape));
  for (size_t k = 0; k < n; ++k) p[k] = topos_tape_parameter(tape, initials[k], NULL);
  loss = build(tape, p, ctx);
  TG_TRY(topos_tape_status(tape));
  TG_TRY(topos_tape_differentiate(tape, loss, n, p, g));
  TG_TRY(topos_tape_seal(&tape, &net));
  TG_TRY(topos_params_from_network(net, &params));
  TG_TRY(topos_network_forward(net, params, NULL, 0, NULL, &run));
  TG_TRY(topos_run_backward(run, loss, &field));
  for (size_t k = 0; k < n; ++k) {
    TG_TRY(topos_field_get(field, p[k], &engine));
    TG_TRY(topos_run_read(run, g[k], &recorded));
    if (!topos_tensor_bits_equal(engine, recorded)) {
      char a[512], b[512];
      topos_tensor_format(engine, a, sizeof a, 12);
      topos_tensor_format(recorded, b, sizeof b, 12);
      tt_fail_at(file, line, "parameter %zu: engine route\n%s\n!= recorded route\n%s", k, a, b);
      goto done;
    }
    if (tol <= 0) { /* parity only */
      topos_tensor_release(engine);
      topos_tensor_release(recorded);
      engine = recorded = NULL;
      continue;
    }
    int64_t volume = topos_tensor_volume(engine);
    analytic = malloc((size_t)volume * sizeof *analytic);
    if (!analytic) goto done;
    TG_TRY(topos_tensor_read_f64(engine, analytic, volume));
    double *x0 = malloc((size_t)volume * sizeof *x0);
    if (!x0) goto done;
    if (topos_tensor_read_f64(initials[k], x0, volume) != TOPOS_OK) {
      free(x0);
      goto done;
    }
    const double h = 1e-5;
    for (int64_t e = 0; e < volume; ++e) {
      double up, down;
      s = tg_loss_at(net, params, p[k], e, x0[e] + h, loss, &up);
      if (s == TOPOS_OK) s = tg_loss_at(net, params, p[k], e, x0[e] - h, loss, &down);
      if (s != TOPOS_OK) {
        free(x0);
        tt_fail_at(file, line, "finite difference run: %s: %s", topos_status_name(s),
                   topos_last_error());
        goto done;
      }
      double fd = (up - down) / (2 * h), an = analytic[e];
      double scale = fmax(1.0, fmax(fabs(fd), fabs(an)));
      if (!(fabs(fd - an) <= tol * scale)) {
        free(x0);
        tt_fail_at(file, line, "parameter %zu element %lld: analytic %.12g, finite difference %.12g",
                   k, (long long)e, an, fd);
        goto done;
      }
    }
    free(x0);
    free(analytic);
    analytic = NULL;
    topos_tensor_release(engine);
    topos_tensor_release(recorded);
    engine = recorded = NULL;
  }
  ok = 1;
done:
#undef TG_TRY
  free(analytic);
  topos_tensor_release(engine);
  topos_tensor_release(recorded);
  topos_field_free(field);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  return ok;
}

/* Checks the gradients of build's loss w.r.t. n parameters, releasing the
 * initial tensors afterwards. */
#define CHECK_GRADS(n, initials, build, ctx)                                     \
  do {                                                                           \
    int tg_ok_ = tg_gradcheck(__FILE__, __LINE__, (n), (initials), (build), (ctx), 1e-6); \
    for (size_t tg_k_ = 0; tg_k_ < (size_t)(n); ++tg_k_) topos_tensor_release((initials)[tg_k_]); \
    if (!tg_ok_) return;                                                         \
  } while (0)

/* Engine route == recorded route bitwise only (any dtype, no finite differences). */
#define CHECK_GRAD_PARITY(n, initials, build, ctx)                               \
  do {                                                                           \
    int tg_ok_ = tg_gradcheck(__FILE__, __LINE__, (n), (initials), (build), (ctx), 0); \
    for (size_t tg_k_ = 0; tg_k_ < (size_t)(n); ++tg_k_) topos_tensor_release((initials)[tg_k_]); \
    if (!tg_ok_) return;                                                         \
  } while (0)

#endif
