/* `topos bench plan`: an MLP training step through a compiled plan.
 *
 * Model: x [64,32] -> tanh(x W1 + b1) [64,64] -> tanh(. W2 + b2) [64,64]
 * -> . W3 [64,10] -> log_softmax -> mean negative log-likelihood against
 * fixed one-hot labels. A step is forward + engine-route backward + an SGD
 * update written into the parameters' own bytes.
 *
 * Prints: time per step and per evaluated node (plan and interpreter), heap
 * allocations of the first steps and per steady-state step (counted by the
 * tensor tier: headers, storage, buffers, kernel scratch, run contexts), and
 * the forward-only plan's arena peak against the sum of all node sizes.
 *
 *   topos bench plan [--steps N] [--json] [--exact] */
#include <stdlib.h>
#include <string.h>

#include "engine/plan_internal.h"
#include "tools/cli.h"

enum { BATCH = 64, IN = 32, HID = 64, OUT = 10 };

static double now_ns(void) {
  return tp_cli_now() * 1e9;
}

static uint64_t bench_rng = 0x1234;
static float uniform(float lo, float hi) {
  uint64_t z = (bench_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return lo + (hi - lo) * (float)((double)((z ^ (z >> 31)) >> 11) * 0x1p-53);
}

static topos_status random_tensor(int rank, const int64_t *shape, float scale, topos_tensor **out) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  float *v = malloc((size_t)n * sizeof *v);
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; ++i) v[i] = uniform(-scale, scale);
  topos_status s = topos_tensor_from_f32(TOPOS_F32, rank, shape, v, out);
  free(v);
  return s;
}

typedef struct {
  float lr;
  float *buffer; /* one gradient at a time, largest parameter */
} sgd_state;

/* value -= lr * gradient in the parameter's own bytes (runs are freed first) */
static topos_status sgd_in_place(void *user, topos_sym param, topos_tensor *value,
                                 topos_tensor *gradient, topos_tensor **out) {
  (void)param;
  sgd_state *sgd = user;
  int64_t n = topos_tensor_volume(value);
  topos_status s = topos_tensor_read_f32(gradient, sgd->buffer, n);
  if (s != TOPOS_OK) return s;
  float *w = topos_tensor_data_mut(value);
  for (int64_t i = 0; i < n; ++i) w[i] -= sgd->lr * sgd->buffer[i];
  *out = topos_tensor_retain(value);
  return TOPOS_OK;
}

typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym x, loss;
  topos_tensor *x_data;
} model;

static topos_status model_build(model *m) {
  memset(m, 0, sizeof *m);
  topos_tape *tape = NULL;
  TP_TRY(topos_tape_new(&tape));
  int64_t xs[] = {BATCH, IN}, shapes[6][2] = {{IN, HID}, {HID, 0}, {HID, HID}, {HID, 0}, {HID, OUT}, {OUT, 0}};
  topos_status s = random_tensor(2, xs, 1.0f, &m->x_data);
  float onehot[BATCH * OUT] = {0};
  for (int i = 0; i < BATCH; ++i) onehot[i * OUT + (i * 7) % OUT] = 1.0f;
  int64_t ls[] = {BATCH, OUT};
  topos_tensor *labels = NULL;
  if (s == TOPOS_OK) s = topos_tensor_from_f32(TOPOS_F32, 2, ls, onehot, &labels);
  topos_sym p[6];
  for (int k = 0; k < 6 && s == TOPOS_OK; ++k) {
    topos_tensor *init = NULL;
    int rank = shapes[k][1] ? 2 : 1;
    s = random_tensor(rank, shapes[k], k % 2 ? 0.1f : 0.3f, &init);
    if (s == TOPOS_OK) p[k] = topos_tape_parameter(tape, init, NULL);
    topos_tensor_release(init);
  }
  if (s != TOPOS_OK) {
    topos_tensor_release(labels);
    topos_tape_free(tape);
    return s;
  }
  topos_tensor_desc xd = topos_tensor_describe(m->x_data);
  m->x = topos_tape_input_desc(tape, &xd, "x");
  topos_sym y = topos_tape_constant(tape, labels);
  topos_tensor_release(labels);
  topos_sym h = m->x;
  for (int layer = 0; layer < 3; ++layer) {
    topos_sym z = topos_tape_add(tape, topos_tape_matmul(tape, h, p[2 * layer]),
                                 topos_tape_broadcast_along(tape, p[2 * layer + 1], 0, BATCH));
    h = layer < 2 ? topos_tape_tanh(tape, z) : topos_tape_log_softmax(tape, z, 1);
  }
  m->loss = topos_tape_neg(tape, topos_tape_mean(tape, topos_tape_sum_along(tape, topos_tape_mul(tape, h, y), 1)));
  TP_TRY(topos_tape_seal(&tape, &m->net));
  return topos_params_from_network(m->net, &m->params);
}

static void model_free(model *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
  topos_tensor_release(m->x_data);
}

typedef struct {
  double ns_per_step;
  uint64_t allocs_first, allocs_second, allocs_steady_total;
  double final_loss;
} loop_result;

/* plan == NULL: the interpreter (complete run) does the step */
static topos_status train(model *m, const topos_plan *plan, int steps, sgd_state *sgd,
                          loop_result *r) {
  topos_feed feed = {m->x, m->x_data};
  memset(r, 0, sizeof *r);
  double start = 0;
  int timed_from = steps > 4 ? 2 : 0;
  for (int step = 0; step < steps; ++step) {
    if (step == timed_from) start = now_ns();
    uint64_t before = tp_heap_allocations();
    topos_run *run = NULL;
    topos_field *grads = NULL;
    topos_status s = plan ? topos_plan_forward(plan, m->params, &feed, 1, &run)
                          : topos_network_forward(m->net, m->params, &feed, 1, NULL, &run);
    if (s == TOPOS_OK) s = topos_run_backward(run, m->loss, &grads);
    if (s == TOPOS_OK && step == steps - 1) {
      topos_tensor *l = NULL;
      s = topos_run_read(run, m->loss, &l);
      if (s == TOPOS_OK) s = topos_tensor_read_f64(l, &r->final_loss, 1);
      topos_tensor_release(l);
    }
    topos_run_free(run);
    if (s == TOPOS_OK) s = topos_params_step(m->params, grads, sgd_in_place, sgd);
    topos_field_free(grads);
    if (s != TOPOS_OK) return s;
    uint64_t made = tp_heap_allocations() - before;
    if (step == 0) r->allocs_first = made;
    else if (step == 1) r->allocs_second = made;
    else r->allocs_steady_total += made;
  }
  r->ns_per_step = (now_ns() - start) / (steps - timed_from);
  return TOPOS_OK;
}

static int tp_cmd_bench_plan(int argc, char **argv) {
  int steps = 200, json = 0;
  topos_numerics numerics = TOPOS_NUMERICS_FAST;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--exact")) numerics = TOPOS_NUMERICS_EXACT;
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      long v;
      if (!tp_cli_long(argv[++i], 1, 10000000, &v)) return tp_cli_bad_value("bench plan", "--steps", argv[i], "a count in 1..10000000");
      steps = (int)v;
    }
    else {
      fprintf(stderr, "usage: topos bench plan [--steps N] [--json] [--exact]\n");
      return 2;
    }
  }
  if (steps < 3) steps = 3;
  model m;
  topos_status s = model_build(&m);
  if (s != TOPOS_OK) return tp_cli_fail("bench plan", s, "building the model");
  float buffer[HID * HID];
  sgd_state sgd = {0.05f, buffer};
  topos_request training = {&m.loss, 1, NULL, 0, 1, numerics};
  topos_request forward_only = {&m.loss, 1, NULL, 0, 0, numerics};
  topos_plan *train_plan = NULL, *forward_plan = NULL;
  s = topos_plan_compile(m.net, &training, &train_plan);
  if (s == TOPOS_OK) s = topos_plan_compile(m.net, &forward_only, &forward_plan);
  loop_result plan_r, interp_r;
  topos_params *start = NULL;
  if (s == TOPOS_OK) s = topos_params_copy(m.params, &start);
  if (s == TOPOS_OK) s = train(&m, train_plan, steps, &sgd, &plan_r);
  if (s == TOPOS_OK) {
    topos_params_free(m.params); /* the interpreter loop starts from the same weights */
    m.params = start;
    start = NULL;
    s = train(&m, NULL, steps, &sgd, &interp_r);
  }
  topos_plan_stats ts, fs;
  if (s == TOPOS_OK) s = topos_plan_stats_get(train_plan, &ts);
  if (s == TOPOS_OK) s = topos_plan_stats_get(forward_plan, &fs);
  if (s != TOPOS_OK) {
    int rc = tp_cli_fail("bench plan", s, "running");
    topos_params_free(start);
    topos_plan_free(train_plan);
    topos_plan_free(forward_plan);
    model_free(&m);
    return rc;
  }
  int steady = steps - 2;
  double plan_ns_node = plan_r.ns_per_step / ts.evaluated, interp_ns_node = interp_r.ns_per_step / ts.evaluated;
  if (json) {
    printf("{\"bench\":\"plan\",\"model\":\"mlp %dx%d-%d-%d-%d\",\"numerics\":\"%s\",\"steps\":%d,"
           "\"nodes\":%u,\"evaluated\":%u,"
           "\"plan\":{\"ns_per_step\":%.0f,\"ns_per_node\":%.1f,\"allocs_first_step\":%llu,"
           "\"allocs_second_step\":%llu,\"allocs_per_steady_step\":%.3f,\"final_loss\":%.9g},"
           "\"interpreter\":{\"ns_per_step\":%.0f,\"ns_per_node\":%.1f,\"allocs_first_step\":%llu,"
           "\"allocs_per_steady_step\":%.3f,\"final_loss\":%.9g},"
           "\"forward_only\":{\"arena_peak_bytes\":%lld,\"sum_node_bytes\":%lld,\"buffers\":%u},"
           "\"training\":{\"arena_bytes\":%lld,\"sum_node_bytes\":%lld}}\n",
           BATCH, IN, HID, HID, OUT, numerics == TOPOS_NUMERICS_EXACT ? "exact" : "fast", steps,
           ts.nodes, ts.evaluated, plan_r.ns_per_step, plan_ns_node,
           (unsigned long long)plan_r.allocs_first, (unsigned long long)plan_r.allocs_second,
           (double)plan_r.allocs_steady_total / steady, plan_r.final_loss, interp_r.ns_per_step,
           interp_ns_node, (unsigned long long)interp_r.allocs_first,
           (double)interp_r.allocs_steady_total / steady, interp_r.final_loss,
           (long long)fs.arena_bytes, (long long)fs.unshared_bytes,
           tp_plan_buffers(forward_plan)->buffers, (long long)ts.arena_bytes,
           (long long)ts.unshared_bytes);
  } else {
    printf("MLP training step: batch %d, %d -> %d -> %d -> %d, log-softmax NLL, SGD in place; "
           "numerics %s, %d steps\n", BATCH, IN, HID, HID, OUT,
           numerics == TOPOS_NUMERICS_EXACT ? "exact" : "fast", steps);
    printf("network: %u nodes, %u evaluated per step (forward)\n\n", ts.nodes, ts.evaluated);
    printf("%-12s %12s %12s %14s %14s %16s\n", "route", "us/step", "ns/node", "allocs step1",
           "allocs step2", "allocs/steady");
    printf("%-12s %12.1f %12.1f %14llu %14llu %16.3f\n", "plan", plan_r.ns_per_step / 1e3,
           plan_ns_node, (unsigned long long)plan_r.allocs_first,
           (unsigned long long)plan_r.allocs_second, (double)plan_r.allocs_steady_total / steady);
    printf("%-12s %12.1f %12.1f %14llu %14llu %16.3f\n", "interpreter", interp_r.ns_per_step / 1e3,
           interp_ns_node, (unsigned long long)interp_r.allocs_first,
           (unsigned long long)interp_r.allocs_second, (double)interp_r.allocs_steady_total / steady);
    printf("(ns/node: whole step, forward + backward + update, over the forward nodes; final "
           "loss plan %.6f, interpreter %.6f)\n\n", plan_r.final_loss, interp_r.final_loss);
    printf("%-22s %14s %16s %8s\n", "memory", "arena bytes", "sum of nodes", "ratio");
    printf("%-22s %14lld %16lld %8.2f\n", "forward-only plan", (long long)fs.arena_bytes,
           (long long)fs.unshared_bytes, (double)fs.arena_bytes / (double)fs.unshared_bytes);
    printf("%-22s %14lld %16lld %8.2f\n", "training plan", (long long)ts.arena_bytes,
           (long long)ts.unshared_bytes, (double)ts.arena_bytes / (double)ts.unshared_bytes);
  }
  topos_plan_free(train_plan);
  topos_plan_free(forward_plan);
  model_free(&m);
  return 0;
}

TOPOS_COMMAND("bench-plan", "MLP training step through a plan: ns/node, heap allocations, arena peak",
              tp_cmd_bench_plan)
