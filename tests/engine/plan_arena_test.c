/* Plans run in their arena: kernels write into assigned buffers, buffers are
 * reused within a run (peak below the sum) and across runs (same memory,
 * same bits), outputs outlive their run, a steady training step allocates
 * nothing, and misuse gives distinct statuses without leaking. */
#include "plan_util.h"
#include "engine/pattern.h"
#include "ops/op_table.h"

/* x [16,16] -> 12 x tanh -> sum; `mid` observes the 6th tanh. */
typedef struct {
  topos_network *net;
  topos_sym x, mid, last, out;
} chain;

static topos_status chain_new(chain *c) {
  memset(c, 0, sizeof *c);
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  int64_t shape[] = {16, 16};
  topos_tensor *t = tg_random(TOPOS_F32, 2, shape, 81, -1, 1);
  c->x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym y = c->x;
  for (int i = 0; i < 12; ++i) {
    y = topos_tape_tanh(tape, y);
    if (i == 5) c->mid = y;
  }
  c->last = y;
  c->out = topos_tape_sum(tape, y);
  return topos_tape_seal(&tape, &c->net);
}

TEST(plan_forward_chain_runs_in_a_reused_arena) {
  chain c;
  CHECK_OK(chain_new(&c));
  topos_sym roots[2] = {c.out, c.last};
  topos_request req = {roots, 2, &c.mid, 1, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(c.net, &req, &plan));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.unshared_bytes, 12 * 1024 + 64);
  CHECK(st.arena_bytes <= 4 * 1024 + 64); /* mid and last kept, two in flight, the sum */
  topos_run *oracle = NULL;
  CHECK_OK(tp_oracle_run(c.net, NULL, NULL, 0, 1, &oracle));
  const void *arena = NULL;
  for (int r = 0; r < 3; ++r) {
    topos_run *run = NULL;
    topos_tensor *mid = NULL, *last = NULL, *want = NULL;
    CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run));
    CHECK_OK(topos_run_read(run, c.mid, &mid));
    CHECK_OK(topos_run_read(run, c.last, &last));
    /* both live in the run's one arena, and it is the same memory every run */
    CHECK(topos_tensor_storage_id(mid) == topos_tensor_storage_id(last));
    if (r == 0) arena = topos_tensor_storage_id(mid);
    CHECK(topos_tensor_storage_id(mid) == arena);
    CHECK_OK(topos_run_read(oracle, c.last, &want));
    CHECK_TENSOR_BITS(last, want);
    topos_tensor_release(want);
    CHECK_OK(topos_run_read(oracle, c.mid, &want));
    CHECK_TENSOR_BITS(mid, want);
    topos_tensor_release(want);
    topos_tensor_release(mid);
    topos_tensor_release(last);
    topos_run_free(run);
  }
  topos_run_free(oracle);
  topos_plan_free(plan);
  topos_network_free(c.net);
}

TEST(plan_outputs_outlive_their_run_and_concurrent_runs_do_not_share) {
  chain c;
  CHECK_OK(chain_new(&c));
  topos_request req = {&c.last, 1, NULL, 0, 0, TOPOS_NUMERICS_FAST};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(c.net, &req, &plan));
  int64_t shape[] = {16, 16};
  topos_tensor *x2 = tg_random(TOPOS_F32, 2, shape, 82, -1, 1), *saved = NULL;
  topos_feed feed = {c.x, x2};
  topos_run *r1 = NULL, *r2 = NULL;
  topos_tensor *a = NULL, *b = NULL;
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &r1));
  CHECK_OK(topos_run_read(r1, c.last, &a));
  CHECK_OK(topos_tensor_contiguous(a, 1, &saved));
  topos_run_free(r1); /* a is still held: its bytes must never be reused */
  CHECK_OK(topos_plan_forward(plan, NULL, &feed, 1, &r2));
  CHECK_OK(topos_run_read(r2, c.last, &b));
  CHECK(topos_tensor_storage_id(a) != topos_tensor_storage_id(b));
  CHECK_TENSOR_BITS(a, saved);
  CHECK(!topos_tensor_bits_equal(a, b)); /* other feed, other values */
  /* two runs alive at once, from one plan */
  topos_run *r3 = NULL;
  topos_tensor *c3 = NULL;
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &r3));
  CHECK_OK(topos_run_read(r3, c.last, &c3));
  CHECK_TENSOR_BITS(c3, saved);
  CHECK(topos_tensor_storage_id(c3) != topos_tensor_storage_id(b));
  topos_tensor *b_again = NULL;
  CHECK_OK(topos_run_read(r2, c.last, &b_again));
  CHECK_TENSOR_BITS(b, b_again);
  /* the plan and network may go first: runs keep what they need */
  topos_plan_free(plan);
  topos_network_free(c.net);
  topos_run_free(r3);
  topos_run_free(r2);
  CHECK_TENSOR_BITS(c3, saved);
  topos_tensor *all[] = {a, b, b_again, c3, saved, x2};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k) topos_tensor_release(all[k]);
}

/* ---- steady state: zero heap allocations per training step */

typedef struct {
  float lr;
  float buffer[64];
} sgd_in_place;

/* value -= lr * gradient, written into the parameter's own bytes (the run
 * that read it is freed first, and params made the value as a fresh copy) */
static topos_status step_in_place(void *user, topos_sym param, topos_tensor *value,
                                  topos_tensor *gradient, topos_tensor **out) {
  (void)param;
  sgd_in_place *sgd = user;
  int64_t n = topos_tensor_volume(value);
  if (n > 64) return TOPOS_ERR_INTERNAL;
  topos_status s = topos_tensor_read_f32(gradient, sgd->buffer, n);
  if (s != TOPOS_OK) return s;
  float *w = topos_tensor_data_mut(value);
  for (int64_t i = 0; i < n; ++i) w[i] -= sgd->lr * sgd->buffer[i];
  *out = topos_tensor_retain(value);
  return TOPOS_OK;
}

TEST(plan_training_step_allocates_nothing_in_steady_state) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t xs[] = {8, 3}, w1s[] = {3, 5}, w2s[] = {5, 2}, ts[] = {8, 2};
  topos_tensor *xv = tg_random(TOPOS_F32, 2, xs, 91, -1, 1), *tv = tg_random(TOPOS_F32, 2, ts, 92, -1, 1);
  topos_tensor *w1 = tg_random(TOPOS_F32, 2, w1s, 93, -1, 1), *w2 = tg_random(TOPOS_F32, 2, w2s, 94, -1, 1);
  topos_tensor_desc xd = topos_tensor_describe(xv);
  topos_sym x = topos_tape_input_desc(tape, &xd, "x"), t = topos_tape_constant(tape, tv);
  topos_sym p1 = topos_tape_parameter(tape, w1, "w1"), p2 = topos_tape_parameter(tape, w2, "w2");
  topos_sym h = topos_tape_tanh(tape, topos_tape_matmul(tape, x, p1));
  topos_sym e = topos_tape_sub(tape, topos_tape_matmul(tape, h, p2), t);
  topos_sym loss = topos_tape_mean(tape, topos_tape_mul(tape, e, e));
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  topos_request req = {&loss, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  topos_feed feed = {x, xv};
  sgd_in_place sgd = {0.2f, {0}};
  uint64_t before = 0;
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    if (step == 1) before = tp_heap_allocations(); /* the first step sizes everything */
    topos_run *run = NULL;
    topos_field *grads = NULL;
    CHECK_OK(topos_plan_forward(plan, params, &feed, 1, &run));
    double value;
    CHECK(tg_read_scalar(run, loss, &value));
    if (step == 0) first = value;
    last = value;
    CHECK_OK(topos_run_backward(run, loss, &grads));
    topos_run_free(run);
    CHECK_OK(topos_params_step(params, grads, step_in_place, &sgd));
    topos_field_free(grads);
  }
  uint64_t steady = tp_heap_allocations() - before;
  CHECK_MSG(steady == 0, "%llu heap allocations in 11 steps after the first",
            (unsigned long long)steady);
  CHECK(last < first);
  /* the same loop through the interpreter allocates (the count is live) */
  before = tp_heap_allocations();
  topos_run *run = NULL;
  CHECK_OK(topos_network_forward(net, params, &feed, 1, NULL, &run));
  topos_run_free(run);
  CHECK(tp_heap_allocations() > before);
  topos_plan_free(plan);
  topos_params_free(params);
  topos_network_free(net);
  topos_tensor *all[] = {xv, tv, w1, w2};
  for (size_t k = 0; k < 4; ++k) topos_tensor_release(all[k]);
}

/* ---- misuse */

TEST(plan_misuse_gives_distinct_statuses) {
  chain c, other;
  CHECK_OK(chain_new(&c));
  CHECK_OK(chain_new(&other));
  topos_plan *plan = NULL, *train = NULL;
  topos_request req = {&c.out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  /* foreign symbols at compile, run, read and backward */
  topos_request foreign = {&other.out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_STATUS(topos_plan_compile(c.net, &foreign, &plan), TOPOS_ERR_FOREIGN);
  topos_request bad_numerics = {&c.out, 1, NULL, 0, 0, (topos_numerics)7};
  CHECK_STATUS(topos_plan_compile(c.net, &bad_numerics, &plan), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_OK(topos_plan_compile(c.net, &req, &plan));
  topos_feed wrong = {other.x, NULL};
  int64_t shape[] = {16, 16}, small[] = {4, 4};
  topos_tensor *good = tg_random(TOPOS_F32, 2, shape, 83, -1, 1), *bad = tg_random(TOPOS_F32, 2, small, 84, -1, 1);
  wrong.value = good;
  topos_run *run = NULL;
  CHECK_STATUS(topos_plan_forward(plan, NULL, &wrong, 1, &run), TOPOS_ERR_FOREIGN);
  CHECK(run == NULL);
  topos_feed misshapen = {c.x, bad};
  CHECK_STATUS(topos_plan_forward(plan, NULL, &misshapen, 1, &run), TOPOS_ERR_SHAPE);
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run)); /* still usable after failures */
  topos_tensor *value = NULL;
  CHECK_STATUS(topos_run_read(run, other.out, &value), TOPOS_ERR_FOREIGN);
  CHECK_STATUS(topos_run_read(run, c.mid, &value), TOPOS_ERR_NOT_READABLE); /* computed, not declared */
  CHECK_STATUS(topos_run_read(run, c.last, &value), TOPOS_ERR_NOT_READABLE);
  topos_field *field = NULL;
  CHECK_STATUS(topos_run_backward(run, c.out, &field), TOPOS_ERR_STATE); /* forward-only */
  topos_run_free(run);
  run = NULL;
  /* backward plan: foreign loss, a loss that is not rank 0 */
  topos_sym roots[2] = {c.out, c.last};
  topos_request training = {roots, 2, NULL, 0, 1, TOPOS_NUMERICS_FAST};
  CHECK_OK(topos_plan_compile(c.net, &training, &train));
  CHECK_OK(topos_plan_forward(train, NULL, NULL, 0, &run));
  CHECK_STATUS(topos_run_backward(run, other.out, &field), TOPOS_ERR_FOREIGN);
  CHECK_STATUS(topos_run_backward(run, c.last, &field), TOPOS_ERR_SHAPE);
  CHECK_OK(topos_run_backward(run, c.out, &field));
  topos_field *second = NULL; /* a second field from one run comes from the heap */
  CHECK_OK(topos_run_backward(run, c.out, &second));
  topos_tensor *ga = NULL, *gb = NULL;
  CHECK_OK(topos_field_get(field, c.x, &ga));
  CHECK_OK(topos_field_get(second, c.x, &gb));
  CHECK_TENSOR_BITS(ga, gb);
  topos_tensor_release(ga);
  topos_tensor_release(gb);
  topos_run_free(run); /* before its fields: they stay readable */
  CHECK_OK(topos_field_get(field, c.x, &ga));
  topos_tensor_release(ga);
  topos_field_free(field);
  topos_field_free(second);
  topos_plan_free(train);
  topos_plan_free(plan);
  /* missing feed: an input without a default */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_tensor_desc d = topos_tensor_describe(good);
  topos_sym in = topos_tape_input_desc(tape, &d, "in");
  topos_sym s = topos_tape_sum(tape, topos_tape_exp(tape, in));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request need = {&s, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_OK(topos_plan_compile(net, &need, &plan));
  CHECK_STATUS(topos_plan_forward(plan, NULL, NULL, 0, &run), TOPOS_ERR_MISSING_FEED);
  topos_feed feed = {in, good};
  CHECK_OK(topos_plan_forward(plan, NULL, &feed, 1, &run));
  topos_run_free(run);
  topos_plan_free(plan);
  topos_network_free(net);
  topos_tensor_release(good);
  topos_tensor_release(bad);
  topos_network_free(c.net);
  topos_network_free(other.net);
}

/* ---- the pattern hook: a toy pattern fusing exp(neg(x)) into one step */

static bool match_exp_neg(const tp_graph *graph, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  const tp_node *node = &graph->nodes[root];
  if (node->op != TOPOS_OP_EXP) return false;
  uint32_t inner = node->operands[0];
  const tp_node *neg = &graph->nodes[inner];
  if (!evaluated[inner] || neg->kind != TOPOS_NODE_OP || neg->op != TOPOS_OP_NEG) return false;
  f->n_members = 2;
  f->members[0] = inner;
  f->members[1] = root;
  f->n_inputs = 1;
  f->inputs[0] = neg->operands[0];
  return true;
}

static int fused_runs;

static topos_status run_exp_neg(const tp_fusion *f, const tp_graph *graph,
                                topos_tensor *const *inputs, topos_tensor *dst, topos_tensor **out) {
  (void)graph;
  (void)f;
  ++fused_runs;
  topos_tensor *negated = NULL;
  TP_TRY(topos_op_forward(TOPOS_OP_NEG, inputs, NULL, &negated)); /* the run's scratch */
  topos_status s = tp_op_forward_into(TOPOS_OP_EXP, &negated, NULL, dst, out);
  topos_tensor_release(negated);
  return s;
}

static const tp_pattern exp_neg = {"exp_neg", match_exp_neg, run_exp_neg};

TEST(plan_pattern_hook_fuses_invisibly) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t shape[] = {3, 4};
  topos_tensor *t = tg_random(TOPOS_F32, 2, shape, 85, -1, 1);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym n1 = topos_tape_neg(tape, x), e1 = topos_tape_exp(tape, n1);     /* fusable */
  topos_sym n2 = topos_tape_neg(tape, e1), e2 = topos_tape_exp(tape, n2);    /* n2 observed: not */
  topos_sym out = topos_tape_sum(tape, e2);
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {&out, 1, &n2, 1, 0, TOPOS_NUMERICS_EXACT};
  const tp_pattern *table[] = {&exp_neg};
  topos_plan *plan = NULL;
  CHECK_OK(tp_plan_compile_with(net, &req, table, 1, &plan));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.fused, 1);
  CHECK_EQ_INT(st.steps, 4); /* fused(n1,e1), n2, e2, sum */
  char text[2048];
  topos_plan_describe(plan, text, sizeof text);
  CHECK_MSG(strstr(text, "fused:exp_neg") && strstr(text, "fused into 2"), "%s", text);
  topos_run *run = NULL, *oracle = NULL;
  fused_runs = 0;
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run));
  CHECK_EQ_INT(fused_runs, 1);
  CHECK_OK(tp_oracle_run(net, NULL, NULL, 0, 1, &oracle));
  topos_tensor *a = NULL, *b = NULL;
  CHECK_OK(topos_run_read(run, out, &a));
  CHECK_OK(topos_run_read(oracle, out, &b));
  CHECK_TENSOR_BITS(a, b);
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_run_free(run);
  topos_run_free(oracle);
  topos_plan_free(plan);
  /* a backward plan may not fuse away a value a backward rule reads (exp's
   * output is read by its own rule, neg's by none: n1 may go, but e1 is the
   * root; and with n1 read by a later mul it may not) */
  req.backward = 1;
  CHECK_OK(tp_plan_compile_with(net, &req, table, 1, &plan));
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.fused, 1);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* ---- one plan, many threads: each run gets its own context */

#include <pthread.h>

typedef struct {
  const topos_plan *plan;
  const topos_params *params;
  topos_sym loss, w;
  topos_tensor *loss_value, *gradient;
  topos_status status;
} thread_job;

static void *train_once(void *arg) {
  thread_job *job = arg;
  for (int repeat = 0; repeat < 5 && job->status == TOPOS_OK; ++repeat) {
    topos_run *run = NULL;
    topos_field *field = NULL;
    topos_tensor_release(job->loss_value);
    topos_tensor_release(job->gradient);
    job->loss_value = job->gradient = NULL;
    job->status = topos_plan_forward(job->plan, job->params, NULL, 0, &run);
    if (job->status == TOPOS_OK) job->status = topos_run_backward(run, job->loss, &field);
    if (job->status == TOPOS_OK) job->status = topos_run_read(run, job->loss, &job->loss_value);
    if (job->status == TOPOS_OK) job->status = topos_field_get(field, job->w, &job->gradient);
    topos_field_free(field);
    topos_run_free(run);
  }
  return NULL;
}

TEST(plan_runs_concurrently_from_many_threads) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t xs[] = {16, 8}, ws[] = {8, 8};
  topos_tensor *xv = tg_random(TOPOS_F32, 2, xs, 95, -1, 1), *wv = tg_random(TOPOS_F32, 2, ws, 96, -1, 1);
  topos_sym x = topos_tape_constant(tape, xv), w = topos_tape_parameter(tape, wv, "w");
  topos_tensor_release(xv);
  topos_tensor_release(wv);
  topos_sym h = topos_tape_tanh(tape, topos_tape_matmul(tape, x, w));
  topos_sym loss = topos_tape_sum(tape, topos_tape_mul(tape, h, topos_tape_matmul(tape, h, w)));
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  topos_request req = {&loss, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  topos_run *oracle = NULL;
  topos_field *want = NULL;
  topos_tensor *want_loss = NULL, *want_grad = NULL;
  CHECK_OK(tp_oracle_run(net, params, NULL, 0, 1, &oracle));
  CHECK_OK(topos_run_backward(oracle, loss, &want));
  CHECK_OK(topos_run_read(oracle, loss, &want_loss));
  CHECK_OK(topos_field_get(want, w, &want_grad));
  thread_job jobs[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (thread_job){plan, params, loss, w, NULL, NULL, TOPOS_OK};
    CHECK(pthread_create(&threads[i], NULL, train_once, &jobs[i]) == 0);
  }
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  int all_equal = 1;
  for (int i = 0; i < 4; ++i) {
    all_equal &= jobs[i].status == TOPOS_OK && topos_tensor_bits_equal(jobs[i].loss_value, want_loss) &&
                 topos_tensor_bits_equal(jobs[i].gradient, want_grad);
    topos_tensor_release(jobs[i].loss_value);
    topos_tensor_release(jobs[i].gradient);
  }
  CHECK(all_equal);
  topos_tensor_release(want_loss);
  topos_tensor_release(want_grad);
  topos_field_free(want);
  topos_run_free(oracle);
  topos_plan_free(plan);
  topos_params_free(params);
  topos_network_free(net);
}
