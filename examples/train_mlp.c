/* Record a small MLP, differentiate it, compile a training plan and fit XOR
 * with plain SGD — the canonical training step of topos in C.
 *
 *   build/bin/example_train_mlp */
#include <stdio.h>
#include <stdlib.h>

#include "topos.h"

#define TRY(expr)                                                                     \
  do {                                                                                \
    topos_status s_ = (expr);                                                         \
    if (s_ != TOPOS_OK) {                                                             \
      fprintf(stderr, "%s failed: %s\n", #expr, topos_last_error());                  \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static topos_tensor *tensor(int rank, const int64_t *shape, const float *values) {
  topos_tensor *t = NULL;
  TRY(topos_tensor_from_f32(TOPOS_F32, rank, shape, values, &t));
  return t;
}

/* p - lr * g */
static topos_status sgd(void *user, topos_sym param, topos_tensor *value, topos_tensor *gradient,
                        topos_tensor **out) {
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

int main(void) {
  const float xs[] = {0, 0, 0, 1, 1, 0, 1, 1}, ys[] = {0, 1, 1, 0};
  const float w1v[] = {0.5f, -0.6f, 0.9f, 0.3f, 0.8f, -0.7f, -0.4f, 0.6f};
  const float w2v[] = {0.7f, -0.8f, 0.6f, 0.5f};
  const float zeros[] = {0, 0, 0, 0};
  int64_t xshape[] = {4, 2}, yshape[] = {4, 1}, w1shape[] = {2, 4}, b1shape[] = {4},
          w2shape[] = {4, 1}, b2shape[] = {1};

  topos_tape *tape = NULL;
  TRY(topos_tape_new(&tape));
  topos_tensor *x0 = tensor(2, xshape, xs), *y0 = tensor(2, yshape, ys);
  topos_tensor *w1 = tensor(2, w1shape, w1v), *b1 = tensor(1, b1shape, zeros);
  topos_tensor *w2 = tensor(2, w2shape, w2v), *b2 = tensor(1, b2shape, zeros);
  topos_sym x = topos_tape_input(tape, x0, "x"), target = topos_tape_input(tape, y0, "target");
  topos_sym params[4] = {topos_tape_parameter(tape, w1, "layer1.weight"),
                         topos_tape_parameter(tape, b1, "layer1.bias"),
                         topos_tape_parameter(tape, w2, "layer2.weight"),
                         topos_tape_parameter(tape, b2, "layer2.bias")};
  /* the model is a plain expression; a mistake anywhere shows up once, below */
  topos_sym h = topos_tape_tanh(tape, topos_tape_add(tape, topos_tape_matmul(tape, x, params[0]),
                                                     topos_tape_broadcast_along(tape, params[1], 0, 4)));
  topos_sym y = topos_tape_add(tape, topos_tape_matmul(tape, h, params[2]),
                               topos_tape_broadcast_along(tape, params[3], 0, 4));
  topos_sym error = topos_tape_sub(tape, y, target);
  topos_sym loss = topos_tape_mean(tape, topos_tape_mul(tape, error, error));
  TRY(topos_tape_status(tape));

  topos_network *net = NULL;
  TRY(topos_tape_seal(&tape, &net));
  topos_params *state = NULL;
  TRY(topos_params_from_network(net, &state));
  topos_request request = {&loss, 1, &y, 1, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  TRY(topos_plan_compile(net, &request, &plan));

  float lr = 0.2f;
  for (int step = 0; step <= 500; ++step) {
    topos_run *run = NULL;
    topos_field *grads = NULL;
    TRY(topos_plan_forward(plan, state, NULL, 0, &run));
    TRY(topos_run_backward(run, loss, &grads));
    if (step % 100 == 0) {
      topos_tensor *l = NULL;
      double value;
      TRY(topos_run_read(run, loss, &l));
      TRY(topos_tensor_read_f64(l, &value, 1));
      printf("step %3d  loss %.6f\n", step, value);
      topos_tensor_release(l);
    }
    TRY(topos_params_step(state, grads, sgd, &lr));
    topos_field_free(grads);
    topos_run_free(run);
  }
  char text[4096];
  topos_plan_describe(plan, text, sizeof text);
  printf("\n%s", text);

  topos_plan_free(plan);
  topos_params_free(state);
  topos_network_free(net);
  topos_tensor *all[] = {x0, y0, w1, b1, w2, b2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  return 0;
}
