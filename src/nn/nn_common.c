/* Helpers for the nn tier (see nn_internal.h). */
#include <stdarg.h>
#include <stdio.h>

#include "nn/nn_internal.h"

int tp_nn_describe(topos_tape *tape, topos_sym x, const char *what, topos_tensor_desc *desc) {
  if (!tape || topos_tape_status(tape) != TOPOS_OK) return 0;
  topos_status s = topos_tape_describe(tape, x, desc);
  if (s == TOPOS_OK) return 1;
  char message[600];
  snprintf(message, sizeof message, "%s: %s", what, topos_last_error());
  topos_tape_fail(tape, s, message);
  return 0;
}

topos_sym tp_nn_fail(topos_tape *tape, topos_status status, const char *fmt, ...) {
  char message[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (tape) topos_tape_fail(tape, status, message);
  return TOPOS_SYM_INVALID;
}

topos_sym tp_nn_parameter(topos_tape *tape, const char *prefix, const char *suffix,
                          topos_tensor *initial) {
  char name[256];
  if (prefix) {
    int n = snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    if (n < 0 || (size_t)n >= sizeof name) {
      topos_tensor_release(initial);
      return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "nn: parameter name '%s.%s' too long",
                        prefix, suffix);
    }
  }
  topos_sym s = topos_tape_parameter(tape, initial, prefix ? name : NULL);
  topos_tensor_release(initial);
  return s;
}

topos_sym tp_nn_filled(topos_tape *tape, const topos_tensor_desc *desc, double value) {
  topos_sym s = topos_tape_scalar(tape, desc->dtype, value);
  return desc->rank > 0 ? topos_tape_broadcast(tape, s, desc->rank, desc->shape) : s;
}

topos_status tp_nn_status(topos_tape *tape, topos_status status) {
  if (!tape) return status;
  if (status != TOPOS_OK && topos_tape_status(tape) == TOPOS_OK)
    topos_tape_fail(tape, status, topos_last_error());
  return topos_tape_status(tape);
}
