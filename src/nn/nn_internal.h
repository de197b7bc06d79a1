/* Internal helpers shared by the nn tier: operand descriptions that turn a
 * bad operand into the tape's sticky error, named parameter creation and
 * constant fills. Only public API underneath. */
#ifndef TP_NN_INTERNAL_H
#define TP_NN_INTERNAL_H

#include "topos/nn.h"

/* 1 and *desc filled, or 0 with the tape failed ("what: message"). */
int tp_nn_describe(topos_tape *tape, topos_sym x, const char *what, topos_tensor_desc *desc);
/* Makes status/message the tape's sticky error; returns TOPOS_SYM_INVALID. */
topos_sym tp_nn_fail(topos_tape *tape, topos_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records `initial` as a parameter named "prefix.suffix" (unnamed when prefix
 * is NULL) and releases the caller's reference to initial. */
topos_sym tp_nn_parameter(topos_tape *tape, const char *prefix, const char *suffix,
                          topos_tensor *initial);
/* A constant shaped like desc, every element value (a broadcast scalar). */
topos_sym tp_nn_filled(topos_tape *tape, const topos_tensor_desc *desc, double value);
/* Status of the tape after a constructor; makes a failing status sticky. */
topos_status tp_nn_status(topos_tape *tape, topos_status status);

#endif
