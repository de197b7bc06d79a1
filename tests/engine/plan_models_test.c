/* Whole small models through plans: an MLP training step and a convolution
 * (pad + unfold + matmul) equal the interpreter bitwise in both postures;
 * training loops driven by plans. */
#include "plan_util.h"

/* x [8,4] input, two tanh layers with biases, squared error against t. */
typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym x, t, loss, out, p[4];
  topos_tensor *xv, *tv;
} mlp;

static topos_status mlp_new(mlp *m) {
  memset(m, 0, sizeof *m);
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  int64_t xs[] = {8, 4}, ts[] = {8, 2}, w1[] = {4, 6}, b1[] = {6}, w2[] = {6, 2}, b2[] = {2};
  m->xv = tg_random(TOPOS_F32, 2, xs, 61, -1, 1);
  m->tv = tg_random(TOPOS_F32, 2, ts, 62, -1, 1);
  topos_tensor *init[4] = {tg_random(TOPOS_F32, 2, w1, 63, -0.5, 0.5), tg_random(TOPOS_F32, 1, b1, 64, -0.1, 0.1),
                           tg_random(TOPOS_F32, 2, w2, 65, -0.5, 0.5), tg_random(TOPOS_F32, 1, b2, 66, -0.1, 0.1)};
  topos_tensor_desc xd = topos_tensor_describe(m->xv);
  m->x = topos_tape_input_desc(tape, &xd, "x");
  m->t = topos_tape_input(tape, m->tv, "target");
  const char *names[4] = {"w1", "b1", "w2", "b2"};
  for (int k = 0; k < 4; ++k) {
    m->p[k] = topos_tape_parameter(tape, init[k], names[k]);
    topos_tensor_release(init[k]);
  }
  topos_sym h = topos_tape_tanh(tape, topos_tape_add(tape, topos_tape_matmul(tape, m->x, m->p[0]),
                                                     topos_tape_broadcast_along(tape, m->p[1], 0, 8)));
  m->out = topos_tape_add(tape, topos_tape_matmul(tape, h, m->p[2]),
                          topos_tape_broadcast_along(tape, m->p[3], 0, 8));
  topos_sym e = topos_tape_sub(tape, m->out, m->t);
  m->loss = topos_tape_mean(tape, topos_tape_mul(tape, e, e));
  s = topos_tape_seal(&tape, &m->net);
  if (s == TOPOS_OK) s = topos_params_from_network(m->net, &m->params);
  return s;
}

static void mlp_free(mlp *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
  topos_tensor_release(m->xv);
  topos_tensor_release(m->tv);
}

TEST(plan_mlp_step_equals_interpreter) {
  mlp m;
  CHECK_OK(mlp_new(&m));
  topos_feed feed = {m.x, m.xv};
  CHECK_PLANS(m.net, m.params, &feed, 1, m.loss, 1);
  mlp_free(&m);
}

/* 1-d convolution as pad + unfold + matmul: x [2, 10, 3] (batch, length,
 * channels), kernel 3, padding 1, weights [9, 4]. */
TEST(plan_convolution_equals_interpreter) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t xs[] = {2, 10, 3}, ws[] = {9, 4};
  topos_tensor *xv = tg_random(TOPOS_F32, 3, xs, 71, -1, 1), *wv = tg_random(TOPOS_F32, 2, ws, 72, -0.5, 0.5);
  topos_sym x = topos_tape_input(tape, xv, "x"), w = topos_tape_parameter(tape, wv, "w");
  topos_tensor_release(xv);
  topos_tensor_release(wv);
  topos_sym padded = topos_tape_pad(tape, x, 1, 1, 12);
  topos_sym windows = topos_tape_unfold(tape, padded, 1, 3, 1, 1);        /* [2,10,3,3]: (b, pos, c, k) */
  static const int order[] = {0, 1, 3, 2};                                  /* (b, pos, k, c) */
  int64_t flat[] = {2, 10, 9};
  topos_sym cols = topos_tape_reshape(tape, topos_tape_permute(tape, windows, order), 3, flat);
  int64_t wb[] = {2, 9, 4};
  topos_sym y = topos_tape_relu(tape, topos_tape_matmul(tape, cols, topos_tape_broadcast_to(tape, w, 3, wb)));
  topos_sym loss = tg_weighted_sum(tape, y, 73);
  CHECK_OK(topos_tape_status(tape));
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_PLANS(net, params, NULL, 0, loss, 1);
  topos_params_free(params);
  topos_network_free(net);
}


TEST(plan_training_loop_exact_and_fast_plans_agree_with_interpreter_loop) {
  /* three loops from the same start: Exact plan, Fast plan, interpreter;
   * 25 SGD steps each end in identical parameters, and the loss falls */
  mlp m;
  CHECK_OK(mlp_new(&m));
  topos_feed feed = {m.x, m.xv};
  topos_request exact = {&m.loss, 1, &m.out, 1, 1, TOPOS_NUMERICS_EXACT};
  topos_request fast = {&m.loss, 1, NULL, 0, 1, TOPOS_NUMERICS_FAST};
  topos_plan *plans[2] = {NULL, NULL};
  CHECK_OK(topos_plan_compile(m.net, &exact, &plans[0]));
  CHECK_OK(topos_plan_compile(m.net, &fast, &plans[1]));
  topos_params *state[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3; ++k) CHECK_OK(topos_params_copy(m.params, &state[k]));
  double lr = 0.5, first = 0, last = 0;
  for (int step = 0; step < 25; ++step) {
    double losses[3];
    for (int k = 0; k < 3; ++k) {
      topos_run *run = NULL;
      topos_field *grads = NULL;
      if (k < 2) CHECK_OK(topos_plan_forward(plans[k], state[k], &feed, 1, &run));
      else CHECK_OK(tp_oracle_run(m.net, state[k], &feed, 1, 1, &run));
      CHECK_OK(topos_run_backward(run, m.loss, &grads));
      CHECK(tg_read_scalar(run, m.loss, &losses[k]));
      CHECK_OK(topos_params_step(state[k], grads, pt_sgd, &lr));
      topos_field_free(grads);
      topos_run_free(run);
    }
    CHECK_BITS_F64(losses[0], losses[2]);
    CHECK_BITS_F64(losses[1], losses[2]);
    if (step == 0) first = losses[0];
    last = losses[0];
  }
  CHECK_MSG(last < first * 0.8, "loss %g -> %g", first, last);
  for (int p = 0; p < 4; ++p) {
    topos_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(topos_params_get(state[0], m.p[p], &a));
    CHECK_OK(topos_params_get(state[1], m.p[p], &b));
    CHECK_OK(topos_params_get(state[2], m.p[p], &c));
    int same = topos_tensor_bits_equal(a, c) && topos_tensor_bits_equal(b, c);
    topos_tensor_release(a);
    topos_tensor_release(b);
    topos_tensor_release(c);
    CHECK(same);
  }
  for (int k = 0; k < 3; ++k) topos_params_free(state[k]);
  topos_plan_free(plans[0]);
  topos_plan_free(plans[1]);
  mlp_free(&m);
}
