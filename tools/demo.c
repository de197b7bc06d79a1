/* `topos demo`: the main job in miniature until the training examples land —
 * record an MLP, differentiate it, compile a training plan and fit a
 * synthetic classification task (points inside a circle), printing what each
 * stage did. */
#include <math.h>
#include <stdlib.h>

#include "tools/cli.h"

#define DEMO_TRY(expr)                                  \
  do {                                                  \
    topos_status s_ = (expr);                           \
    if (s_ != TOPOS_OK) return tp_cli_fail("demo", s_, #expr); \
  } while (0)

enum { DEMO_BATCH = 256, DEMO_HIDDEN = 32, DEMO_STEPS = 600 };

static topos_status demo_sgd(void *user, topos_sym param, topos_tensor *value,
                             topos_tensor *gradient, topos_tensor **out) {
  (void)param;
  topos_tensor *lr = NULL, *spread = NULL, *step = NULL;
  topos_status s = topos_tensor_scalar(TOPOS_F32, *(float *)user, &lr);
  if (s == TOPOS_OK)
    s = topos_tensor_broadcast(lr, topos_tensor_rank(value), topos_tensor_shape(value), &spread);
  if (s == TOPOS_OK) s = topos_mul(gradient, spread, &step);
  if (s == TOPOS_OK) s = topos_sub(value, step, out);
  topos_tensor_release(lr);
  topos_tensor_release(spread);
  topos_tensor_release(step);
  return s;
}

static int tp_cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  static float xs[DEMO_BATCH * 2], labels[DEMO_BATCH], w1v[2 * DEMO_HIDDEN], w2v[DEMO_HIDDEN];
  topos_rng rng = topos_rng_seed(7);
  for (int i = 0; i < DEMO_BATCH; ++i) { /* points in [-1,1]^2, label 1 inside radius 0.6 */
    float x = (float)(2 * topos_rng_unit(&rng) - 1), y = (float)(2 * topos_rng_unit(&rng) - 1);
    xs[2 * i] = x, xs[2 * i + 1] = y;
    labels[i] = x * x + y * y < 0.36f ? 1.0f : -1.0f;
  }
  for (int i = 0; i < 2 * DEMO_HIDDEN; ++i) w1v[i] = (float)(topos_rng_normal(&rng) * 1.0);
  for (int i = 0; i < DEMO_HIDDEN; ++i) w2v[i] = (float)(topos_rng_normal(&rng) / sqrt(DEMO_HIDDEN));

  int64_t xshape[] = {DEMO_BATCH, 2}, yshape[] = {DEMO_BATCH, 1}, w1shape[] = {2, DEMO_HIDDEN},
          b1shape[] = {DEMO_HIDDEN}, w2shape[] = {DEMO_HIDDEN, 1}, b2shape[] = {1};
  topos_tensor *x0 = NULL, *y0 = NULL, *w1 = NULL, *b1 = NULL, *w2 = NULL, *b2 = NULL;
  DEMO_TRY(topos_tensor_from_f32(TOPOS_F32, 2, xshape, xs, &x0));
  DEMO_TRY(topos_tensor_from_f32(TOPOS_F32, 2, yshape, labels, &y0));
  DEMO_TRY(topos_tensor_from_f32(TOPOS_F32, 2, w1shape, w1v, &w1));
  DEMO_TRY(topos_tensor_zeros(TOPOS_F32, 1, b1shape, &b1));
  DEMO_TRY(topos_tensor_from_f32(TOPOS_F32, 2, w2shape, w2v, &w2));
  DEMO_TRY(topos_tensor_zeros(TOPOS_F32, 1, b2shape, &b2));

  topos_tape *tape = NULL;
  DEMO_TRY(topos_tape_new(&tape));
  topos_sym x = topos_tape_input(tape, x0, "x"), target = topos_tape_input(tape, y0, "target");
  topos_sym pw1 = topos_tape_parameter(tape, w1, "hidden.weight");
  topos_sym pb1 = topos_tape_parameter(tape, b1, "hidden.bias");
  topos_sym pw2 = topos_tape_parameter(tape, w2, "out.weight");
  topos_sym pb2 = topos_tape_parameter(tape, b2, "out.bias");
  topos_sym h = topos_tape_tanh(tape, topos_tape_add(tape, topos_tape_matmul(tape, x, pw1),
                                      topos_tape_broadcast_along(tape, pb1, 0, DEMO_BATCH)));
  topos_sym y = topos_tape_add(tape, topos_tape_matmul(tape, h, pw2),
                               topos_tape_broadcast_along(tape, pb2, 0, DEMO_BATCH));
  topos_sym err = topos_tape_sub(tape, y, target);
  topos_sym loss = topos_tape_mean(tape, topos_tape_mul(tape, err, err));
  DEMO_TRY(topos_tape_status(tape));
  printf("recorded an MLP 2 -> %d tanh -> 1 on %u nodes\n", DEMO_HIDDEN, topos_tape_length(tape));

  topos_network *net = NULL;
  DEMO_TRY(topos_tape_seal(&tape, &net));
  topos_params *state = NULL;
  DEMO_TRY(topos_params_from_network(net, &state));
  topos_request request = {&loss, 1, &y, 1, 1, TOPOS_NUMERICS_FAST};
  topos_plan *plan = NULL;
  DEMO_TRY(topos_plan_compile(net, &request, &plan));

  float lr = 0.1f;
  double first = 0, last = 0;
  for (int step = 0; step <= DEMO_STEPS; ++step) {
    topos_run *run = NULL;
    topos_field *grads = NULL;
    topos_tensor *value = NULL;
    DEMO_TRY(topos_plan_forward(plan, state, NULL, 0, &run));
    DEMO_TRY(topos_run_read(run, loss, &value));
    DEMO_TRY(topos_tensor_read_f64(value, &last, 1));
    topos_tensor_release(value);
    if (step == 0) first = last;
    if (step % 100 == 0) printf("step %4d  loss %.5f\n", step, last);
    if (step == DEMO_STEPS) { /* accuracy of the sign of y on the training points */
      float out[DEMO_BATCH];
      int right = 0;
      DEMO_TRY(topos_run_read(run, y, &value));
      DEMO_TRY(topos_tensor_read_f32(value, out, DEMO_BATCH));
      topos_tensor_release(value);
      for (int i = 0; i < DEMO_BATCH; ++i) right += (out[i] > 0) == (labels[i] > 0);
      printf("classified %d of %d points (%.1f%%); loss %.4f -> %.4f\n", right, DEMO_BATCH,
             100.0 * right / DEMO_BATCH, first, last);
    } else {
      DEMO_TRY(topos_run_backward(run, loss, &grads));
      DEMO_TRY(topos_params_step(state, grads, demo_sgd, &lr));
      topos_field_free(grads);
    }
    topos_run_free(run);
  }
  char text[8192];
  topos_plan_describe(plan, text, sizeof text);
  printf("\nthe training plan:\n%s", text);
  topos_plan_free(plan);
  topos_params_free(state);
  topos_network_free(net);
  topos_tensor *all[] = {x0, y0, w1, b1, w2, b2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  return 0;
}

TOPOS_COMMAND("demo", "train a small network and show what each stage did", tp_cmd_demo)
