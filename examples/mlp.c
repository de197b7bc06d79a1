/* Training a small MLP with topos, start to finish:
 *   record the model -> seal -> compile a training plan -> per step: run it,
 *   differentiate (engine route), step the parameters with SGD.
 *
 * The task: fit y = sin(3 a) * b on 64 random points (a, b) in [-1, 1]^2 with
 * a 2 -> 16 -> 1 tanh network and mean squared error. Prints `loss <value>`
 * lines; the loss falls far below half of where it starts.
 *
 *   build/bin/example_mlp */
#include <math.h>
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

enum { SAMPLES = 64, HIDDEN = 16, STEPS = 600 };

/* A small seeded generator (splitmix64), so every run prints the same lines. */
static uint64_t rng_state = 7;
static double uniform(void) { /* [0, 1) */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static double normal(void) { /* Box-Muller */
  double u = uniform(), v = uniform();
  return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

/* A tensor of normal(0, scale) values (scale 0: zeros). */
static topos_tensor *random_tensor(int rank, const int64_t *shape, double scale) {
  float values[SAMPLES * HIDDEN];
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  for (int64_t i = 0; i < n; ++i) values[i] = (float)(scale * normal());
  topos_tensor *t = NULL;
  TRY(topos_tensor_from_f32(TOPOS_F32, rank, shape, values, &t));
  return t;
}

/* One SGD update: value - lr * gradient, as a new tensor. */
static topos_status sgd(void *user, topos_sym param, topos_tensor *value, topos_tensor *gradient,
                        topos_tensor **out) {
  (void)param;
  topos_tensor *lr = NULL, *spread = NULL, *step = NULL;
  topos_status s = topos_tensor_scalar(TOPOS_F32, *(const double *)user, &lr);
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
  /* ---- data */
  float xs[SAMPLES * 2], ys[SAMPLES];
  for (int i = 0; i < SAMPLES; ++i) {
    float a = (float)(2 * uniform() - 1), b = (float)(2 * uniform() - 1);
    xs[2 * i] = a;
    xs[2 * i + 1] = b;
    ys[i] = sinf(3 * a) * b;
  }
  int64_t xshape[] = {SAMPLES, 2}, yshape[] = {SAMPLES, 1};
  topos_tensor *x_data = NULL, *y_data = NULL;
  TRY(topos_tensor_from_f32(TOPOS_F32, 2, xshape, xs, &x_data));
  TRY(topos_tensor_from_f32(TOPOS_F32, 2, yshape, ys, &y_data));

  /* ---- record the model: plain expressions, checked once below */
  topos_tape *tape = NULL;
  TRY(topos_tape_new(&tape));
  int64_t w1s[] = {2, HIDDEN}, b1s[] = {HIDDEN}, w2s[] = {HIDDEN, 1}, b2s[] = {1};
  topos_tensor *init[4] = {random_tensor(2, w1s, 1.0), random_tensor(1, b1s, 0.0),
                           random_tensor(2, w2s, 0.25), random_tensor(1, b2s, 0.0)};
  topos_sym x = topos_tape_input(tape, x_data, "x");
  topos_sym target = topos_tape_input(tape, y_data, "y");
  topos_sym w1 = topos_tape_parameter(tape, init[0], "layer1.weight");
  topos_sym b1 = topos_tape_parameter(tape, init[1], "layer1.bias");
  topos_sym w2 = topos_tape_parameter(tape, init[2], "layer2.weight");
  topos_sym b2 = topos_tape_parameter(tape, init[3], "layer2.bias");
  topos_sym hidden = topos_tape_tanh(
      tape, topos_tape_add(tape, topos_tape_matmul(tape, x, w1),
                           topos_tape_broadcast_along(tape, b1, 0, SAMPLES)));
  topos_sym prediction = topos_tape_add(tape, topos_tape_matmul(tape, hidden, w2),
                                        topos_tape_broadcast_along(tape, b2, 0, SAMPLES));
  topos_sym error = topos_tape_sub(tape, prediction, target);
  topos_sym loss = topos_tape_mean(tape, topos_tape_mul(tape, error, error));
  TRY(topos_tape_status(tape));

  /* ---- seal, take the parameters, compile a training plan */
  topos_network *net = NULL;
  TRY(topos_tape_seal(&tape, &net));
  topos_params *params = NULL;
  TRY(topos_params_from_network(net, &params));
  topos_request request = {.roots = &loss, .n_roots = 1, .backward = 1,
                           .numerics = TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  TRY(topos_plan_compile(net, &request, &plan));

  /* ---- train: run, differentiate, step */
  double lr = 0.2;
  for (int step = 0; step <= STEPS; ++step) {
    topos_run *run = NULL;
    topos_field *gradients = NULL;
    TRY(topos_plan_forward(plan, params, NULL, 0, &run));
    TRY(topos_run_backward(run, loss, &gradients));
    if (step % 50 == 0) {
      topos_tensor *value = NULL;
      double l;
      TRY(topos_run_read(run, loss, &value));
      TRY(topos_tensor_read_f64(value, &l, 1));
      topos_tensor_release(value);
      printf("loss %.6f  (step %d)\n", l, step);
    }
    TRY(topos_params_step(params, gradients, sgd, &lr));
    topos_field_free(gradients);
    topos_run_free(run);
  }

  char text[8192];
  topos_plan_describe(plan, text, sizeof text);
  printf("\nthe training plan:\n%s", text);

  topos_plan_free(plan);
  topos_params_free(params);
  topos_network_free(net);
  for (int k = 0; k < 4; ++k) topos_tensor_release(init[k]);
  topos_tensor_release(x_data);
  topos_tensor_release(y_data);
  return 0;
}
