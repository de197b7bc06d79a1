/* The per-thread numerics posture: scopes nest and plans restore it. */
#include "base/numerics.h"
#include "test.h"

TEST(numerics_posture_nests_and_plans_restore_it) {
  CHECK_EQ_INT(tp_numerics_exact(), 0); /* Fast by default */
  int outer = tp_numerics_enter(1);
  CHECK_EQ_INT(tp_numerics_exact(), 1);
  int inner = tp_numerics_enter(0);
  CHECK_EQ_INT(tp_numerics_exact(), 0);
  tp_numerics_leave(inner);
  CHECK_EQ_INT(tp_numerics_exact(), 1);
  tp_numerics_leave(outer);
  CHECK_EQ_INT(tp_numerics_exact(), 0);

  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym x = topos_tape_exp(tape, topos_tape_scalar(tape, TOPOS_F32, 1.0));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {&x, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  CHECK(topos_plan_numerics(plan) == TOPOS_NUMERICS_EXACT);
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run));
  CHECK_EQ_INT(tp_numerics_exact(), 0);
  CHECK_OK(topos_run_backward(run, x, &field));
  CHECK_EQ_INT(tp_numerics_exact(), 0);
  topos_field_free(field);
  topos_run_free(run);
  topos_plan_free(plan);
  topos_network_free(net);
}
