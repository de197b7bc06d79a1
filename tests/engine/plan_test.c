/* Plans: pruning, declared readability, liveness, describe, and bit identity
 * with the interpreter for forward and backward runs. */
#include "plan_util.h"

/* x [4,3] input, W1 [3,5], W2 [5,2]; h = tanh(x W1); y = h W2;
 * loss = sum(y*y); a side branch (exp of W1) nobody asks for. */
typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym x, w1, w2, h, y, loss, side;
} model;

static topos_status model_new(model *m) {
  memset(m, 0, sizeof *m);
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  int64_t xs[] = {4, 3}, w1s[] = {3, 5}, w2s[] = {5, 2};
  topos_tensor *x = tg_random(TOPOS_F32, 2, xs, 1, -1, 1), *w1 = tg_random(TOPOS_F32, 2, w1s, 2, -1, 1),
               *w2 = tg_random(TOPOS_F32, 2, w2s, 3, -1, 1);
  m->x = topos_tape_input(tape, x, "x");
  m->w1 = topos_tape_parameter(tape, w1, "w1");
  m->w2 = topos_tape_parameter(tape, w2, "w2");
  topos_tensor_release(x);
  topos_tensor_release(w1);
  topos_tensor_release(w2);
  m->side = topos_tape_exp(tape, m->w1);
  m->h = topos_tape_tanh(tape, topos_tape_matmul(tape, m->x, m->w1));
  m->y = topos_tape_matmul(tape, m->h, m->w2);
  m->loss = topos_tape_sum(tape, topos_tape_mul(tape, m->y, m->y));
  s = topos_tape_seal(&tape, &m->net);
  if (s == TOPOS_OK) s = topos_params_from_network(m->net, &m->params);
  return s;
}

static void model_free(model *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
}

TEST(plan_forward_matches_the_interpreter_and_prunes) {
  model m;
  CHECK_OK(model_new(&m));
  topos_request req = {&m.loss, 1, &m.h, 1, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(m.net, &req, &plan));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.nodes, 9);
  CHECK_EQ_INT(st.evaluated, 8); /* the side branch is pruned */
  CHECK_EQ_INT(st.readable, 2);
  CHECK(st.peak < st.retain_all);
  topos_run *run = NULL, *oracle = NULL;
  CHECK_OK(topos_plan_forward(plan, m.params, NULL, 0, &run));
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, NULL, &oracle));
  topos_tensor *a = NULL, *b = NULL;
  CHECK_OK(topos_run_read(run, m.loss, &a));
  CHECK_OK(topos_run_read(oracle, m.loss, &b));
  CHECK_TENSOR_BITS(a, b);
  topos_tensor_release(a);
  topos_tensor_release(b);
  CHECK_OK(topos_run_read(run, m.h, &a));
  CHECK_OK(topos_run_read(oracle, m.h, &b));
  CHECK_TENSOR_BITS(a, b);
  topos_tensor_release(a);
  topos_tensor_release(b);
  a = NULL;
  CHECK_STATUS(topos_run_read(run, m.y, &a), TOPOS_ERR_NOT_READABLE);
  CHECK_STATUS(topos_run_read(run, m.side, &a), TOPOS_ERR_NOT_READABLE);
  topos_field *field = NULL;
  CHECK_STATUS(topos_run_backward(run, m.loss, &field), TOPOS_ERR_STATE);
  topos_run_free(run);
  topos_run_free(oracle);
  topos_plan_free(plan);
  model_free(&m);
}

TEST(plan_backward_and_recorded_gradients_match_the_interpreter) {
  /* engine route through a backward plan vs the complete interpreter run */
  model m;
  CHECK_OK(model_new(&m));
  topos_request req = {&m.loss, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(m.net, &req, &plan));
  topos_network_free(m.net); /* the plan keeps what it needs */
  m.net = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  CHECK_OK(topos_plan_forward(plan, m.params, NULL, 0, &run));
  CHECK_OK(topos_run_backward(run, m.loss, &field));
  topos_tensor *g = NULL;
  CHECK_OK(topos_field_get(field, m.w1, &g));
  CHECK(topos_tensor_volume(g) == 15);
  topos_tensor_release(g);
  topos_field_free(field);
  topos_run_free(run);
  topos_plan_free(plan);
  model_free(&m);
}

static topos_sym build_mlp(topos_tape *tape, const topos_sym *params, void *ctx) {
  (void)ctx;
  int64_t xs[] = {4, 3};
  topos_tensor *xv = tg_random(TOPOS_F32, 2, xs, 9, -1, 1);
  topos_sym x = topos_tape_constant(tape, xv);
  topos_tensor_release(xv);
  topos_sym h = topos_tape_tanh(tape, topos_tape_matmul(tape, x, params[0]));
  topos_sym y = topos_tape_matmul(tape, h, params[1]);
  return topos_tape_mean(tape, topos_tape_mul(tape, y, y));
}

TEST(plan_forward_only_recorded_gradients_equal_engine_gradients) {
  /* the memory-lean training path: recorded gradients as roots of a
   * forward-only plan give the engine route's bits */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t w1s[] = {3, 5}, w2s[] = {5, 2};
  topos_tensor *w1 = tg_random(TOPOS_F32, 2, w1s, 10, -1, 1), *w2 = tg_random(TOPOS_F32, 2, w2s, 11, -1, 1);
  topos_sym p[2] = {topos_tape_parameter(tape, w1, "w1"), topos_tape_parameter(tape, w2, "w2")};
  topos_tensor_release(w1);
  topos_tensor_release(w2);
  topos_sym loss = build_mlp(tape, p, NULL), g[2];
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, p, g));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_params *params = NULL;
  CHECK_OK(topos_params_from_network(net, &params));
  topos_sym roots[3] = {loss, g[0], g[1]};
  topos_request forward_only = {roots, 3, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_request training = {&loss, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *lean = NULL, *retain = NULL;
  CHECK_OK(topos_plan_compile(net, &forward_only, &lean));
  CHECK_OK(topos_plan_compile(net, &training, &retain));
  topos_run *r1 = NULL, *r2 = NULL;
  topos_field *recorded = NULL, *engine = NULL;
  CHECK_OK(topos_plan_forward(lean, params, NULL, 0, &r1));
  CHECK_OK(topos_run_recorded_gradients(r1, 2, p, g, &recorded));
  CHECK_OK(topos_plan_forward(retain, params, NULL, 0, &r2));
  CHECK_OK(topos_run_backward(r2, loss, &engine));
  for (int k = 0; k < 2; ++k) {
    topos_tensor *a = NULL, *b = NULL;
    CHECK_OK(topos_field_get(recorded, p[k], &a));
    CHECK_OK(topos_field_get(engine, p[k], &b));
    CHECK_TENSOR_BITS(a, b);
    topos_tensor_release(a);
    topos_tensor_release(b);
  }
  topos_field_free(recorded);
  topos_field_free(engine);
  topos_run_free(r1);
  topos_run_free(r2);
  topos_plan_free(lean);
  topos_plan_free(retain);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(plan_describe_golden) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {2, 3};
  topos_tensor *t = tg_random(TOPOS_F32, 2, s, 12, -1, 1);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym e = topos_tape_exp(tape, x);
  topos_sym unused = topos_tape_neg(tape, x);
  (void)unused;
  topos_sym l = topos_tape_sum(tape, topos_tape_tanh(tape, e));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {&l, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  char text[1024];
  size_t n = topos_plan_describe(plan, text, sizeof text);
  CHECK(n < sizeof text);
  const char *expected =
      "     0  input            f32[2,3]             freed after 1    source\n"
      "     1  exp              f32[2,3]             freed after 3    arena [0,64)\n"
      "     3  tanh             f32[2,3]             freed after 4    arena [64,128)\n"
      "     4  sum              f32[]                kept             arena [0,64)\n"
      "plan: forward; 4 of 5 nodes evaluated, 1 readable; numerics exact\n"
      "steps: 3 (0 fused)\n"
      "live volume: peak 12 elements at node 1, retain-all 19\n"
      "arena: 128 bytes for 3 buffers, 192 without reuse\n";
  CHECK_MSG(strcmp(text, expected) == 0, "describe gave:\n%s", text);
  /* a short buffer is truncated but still reports the full length */
  char small[8];
  CHECK_EQ_INT(topos_plan_describe(plan, small, sizeof small), n);
  CHECK_EQ_INT(strlen(small), 7);
  topos_plan_free(plan);
  req.backward = 1;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  n = topos_plan_describe(plan, text, sizeof text);
  const char *expected_backward =
      "     0  input            f32[2,3]             freed after 1    source\n"
      "     1  exp              f32[2,3]             retained         arena [0,64)\n"
      "     3  tanh             f32[2,3]             retained         arena [64,128)\n"
      "     4  sum              f32[]                kept             arena [128,192)\n"
      "plan: retain; 4 of 5 nodes evaluated, 1 readable; numerics exact\n"
      "steps: 3 (0 fused)\n"
      "live volume: retain-all 19, release floor 13 at node 4\n"
      "arena: 192 bytes for 3 buffers, 192 without reuse\n";
  CHECK_MSG(strcmp(text, expected_backward) == 0, "describe gave:\n%s", text);
  topos_plan_free(plan);
  topos_network_free(net);
}

TEST(plan_compile_errors) {
  model m;
  CHECK_OK(model_new(&m));
  topos_plan *plan = NULL;
  topos_request none = {NULL, 0, NULL, 0, 0, TOPOS_NUMERICS_FAST};
  CHECK_STATUS(topos_plan_compile(m.net, &none, &plan), TOPOS_ERR_INVALID_ARGUMENT);
  topos_sym foreign = {m.loss.origin + 1000, 0};
  topos_request bad = {&foreign, 1, NULL, 0, 0, TOPOS_NUMERICS_FAST};
  CHECK_STATUS(topos_plan_compile(m.net, &bad, &plan), TOPOS_ERR_FOREIGN);
  CHECK(plan == NULL);
  model_free(&m);
}


TEST(plan_training_loops_by_both_routes_stay_bitwise_equal) {
  /* 20 SGD steps on an f32 MLP: engine route (backward plan) and recorded
   * route (forward-only plan over recorded gradients) end in identical
   * parameters, and the loss goes down */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t w1s[] = {3, 5}, w2s[] = {5, 2};
  topos_tensor *w1 = tg_random(TOPOS_F32, 2, w1s, 20, -1, 1), *w2 = tg_random(TOPOS_F32, 2, w2s, 21, -1, 1);
  topos_sym p[2] = {topos_tape_parameter(tape, w1, "w1"), topos_tape_parameter(tape, w2, "w2")};
  topos_tensor_release(w1);
  topos_tensor_release(w2);
  topos_sym loss = build_mlp(tape, p, NULL), g[2];
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, p, g));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_sym roots[3] = {loss, g[0], g[1]};
  topos_request lean_req = {roots, 3, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_request train_req = {&loss, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *lean = NULL, *train = NULL;
  CHECK_OK(topos_plan_compile(net, &lean_req, &lean));
  CHECK_OK(topos_plan_compile(net, &train_req, &train));
  topos_params *a = NULL, *b = NULL;
  CHECK_OK(topos_params_from_network(net, &a));
  CHECK_OK(topos_params_from_network(net, &b));
  double lr = 0.1, first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    topos_run *ra = NULL, *rb = NULL;
    topos_field *ga = NULL, *gb = NULL;
    CHECK_OK(topos_plan_forward(train, a, NULL, 0, &ra));
    CHECK_OK(topos_run_backward(ra, loss, &ga));
    CHECK_OK(topos_plan_forward(lean, b, NULL, 0, &rb));
    CHECK_OK(topos_run_recorded_gradients(rb, 2, p, g, &gb));
    double la, lb;
    CHECK(tg_read_scalar(ra, loss, &la) && tg_read_scalar(rb, loss, &lb));
    CHECK_BITS_F64(la, lb);
    if (step == 0) first = la;
    last = la;
    CHECK_OK(topos_params_step(a, ga, pt_sgd, &lr));
    CHECK_OK(topos_params_step(b, gb, pt_sgd, &lr));
    topos_field_free(ga);
    topos_field_free(gb);
    topos_run_free(ra);
    topos_run_free(rb);
  }
  CHECK(last < first * 0.9);
  for (int k = 0; k < 2; ++k) {
    topos_tensor *ta = NULL, *tb = NULL;
    CHECK_OK(topos_params_get(a, p[k], &ta));
    CHECK_OK(topos_params_get(b, p[k], &tb));
    CHECK_TENSOR_BITS(ta, tb);
    topos_tensor_release(ta);
    topos_tensor_release(tb);
  }
  topos_params_free(a);
  topos_params_free(b);
  topos_plan_free(lean);
  topos_plan_free(train);
  topos_network_free(net);
}
