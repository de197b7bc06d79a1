/* Helpers for the nn tests: run a sealed tape and read a node. */
#ifndef TOPOS_TESTS_NN_UTIL_H
#define TOPOS_TESTS_NN_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "topos.h"

/* Seals the tape (consumed), runs every node and reads `node` into out as f64. */
static inline topos_status tn_eval(topos_tape **tape, topos_sym node, double *out, int64_t count) {
  topos_network *net = NULL;
  topos_run *run = NULL;
  topos_tensor *t = NULL;
  topos_params *params = NULL;
  topos_status s = topos_tape_seal(tape, &net);
  if (s == TOPOS_OK) s = topos_params_from_network(net, &params);
  if (s == TOPOS_OK) s = topos_network_forward(net, params, NULL, 0, NULL, &run);
  if (s == TOPOS_OK) s = topos_run_read(run, node, &t);
  if (s == TOPOS_OK) s = topos_tensor_read_f64(t, out, count);
  topos_tensor_release(t);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
  return s;
}

static inline topos_tensor *tn_tensor(topos_dtype dtype, int rank, const int64_t *shape,
                                      const double *values) {
  topos_tensor *t = NULL;
  topos_tensor_from_f64(dtype, rank, shape, values, &t);
  return t;
}

static inline topos_sym tn_const(topos_tape *tape, topos_dtype dtype, int rank,
                                 const int64_t *shape, const double *values) {
  topos_tensor *t = tn_tensor(dtype, rank, shape, values);
  topos_sym s = topos_tape_constant(tape, t);
  topos_tensor_release(t);
  return s;
}

static inline topos_sym tn_param(topos_tape *tape, const char *name, topos_dtype dtype, int rank,
                                 const int64_t *shape, const double *values) {
  topos_tensor *t = tn_tensor(dtype, rank, shape, values);
  topos_sym s = topos_tape_parameter(tape, t, name);
  topos_tensor_release(t);
  return s;
}

#endif
