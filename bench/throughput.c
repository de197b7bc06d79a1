/* topos bench throughput: one MLP training step, 1024 -> 2048 tanh -> 512,
 * batch 1024, f32, squared-error loss and plain SGD, written with the eager
 * ops (forward, hand-written backward, update); loss = mean squared error. About 19 GFLOP per step, so
 * it measures how much of the ladder reaches a whole step: products, the
 * tanh map, the bias adds over broadcast views and the elementwise updates.
 *
 * Rows: the default rung alone in Exact (bit-identical to the reference),
 * every compiled backend in Exact, every compiled backend in Fast, then the
 * same model recorded on a tape and run as a compiled plan (forward,
 * engine backward, SGD) with Exact and Fast requests. The reference loops
 * alone (--reference) take minutes per step here. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "tools/cli.h"

typedef struct tp_mlp {
  topos_tensor *x, *y, *w1, *b1, *w2, *b2;
} tp_mlp;

/* tensors released at the end of a step */
typedef struct tp_bag {
  topos_tensor *t[64];
  int n;
} tp_bag;
static topos_tensor *tp_bag_keep(tp_bag *bag, topos_tensor *t) {
  if (bag->n < 64) bag->t[bag->n++] = t;
  return t;
}
static void tp_bag_free(tp_bag *bag) {
  for (int i = 0; i < bag->n; ++i) topos_tensor_release(bag->t[i]);
  bag->n = 0;
}

#define TP_STEP(call)                   \
  do {                                  \
    topos_tensor *tp_r_ = NULL;         \
    s = (call);                         \
    if (s != TOPOS_OK) goto done;       \
    (void)tp_r_;                        \
  } while (0)

/* A tensor of the shape of `like` holding `value` everywhere, as a view. */
static topos_status tp_fill_like(tp_bag *bag, const topos_tensor *like, double value,
                                 topos_tensor **out) {
  topos_tensor *scalar = NULL;
  TP_TRY(topos_tensor_scalar(TOPOS_F32, value, &scalar));
  tp_bag_keep(bag, scalar);
  TP_TRY(topos_tensor_broadcast(scalar, topos_tensor_rank(like), topos_tensor_shape(like), out));
  tp_bag_keep(bag, *out);
  return TOPOS_OK;
}

/* param -= lr * grad (new tensor replaces param) */
static topos_status tp_sgd(tp_bag *bag, topos_tensor **param, topos_tensor *grad) {
  topos_tensor *lr = NULL, *scaled = NULL, *next = NULL;
  TP_TRY(tp_fill_like(bag, grad, 0.01, &lr));
  TP_TRY(topos_mul(grad, lr, &scaled));
  tp_bag_keep(bag, scaled);
  TP_TRY(topos_sub(*param, scaled, &next));
  topos_tensor_release(*param);
  *param = next;
  return TOPOS_OK;
}

static topos_status tp_mlp_step(tp_mlp *m, double *loss_out) {
  tp_bag bag = {{0}, 0};
  topos_status s = TOPOS_OK;
  topos_tensor *pre1, *b1v, *h, *pre2, *b2v, *out, *diff, *two, *dout, *ht, *dw2, *db2, *w2t, *dh,
      *hh, *ones, *dtanh, *dpre, *xt, *dw1, *db1, *sq, *total;
  int64_t batch = topos_tensor_shape(m->x)[0];
#define K(t) tp_bag_keep(&bag, t)
  TP_STEP(topos_matmul(m->x, m->w1, &pre1));
  K(pre1);
  TP_STEP(topos_tensor_broadcast_along(m->b1, 0, batch, &b1v));
  K(b1v);
  TP_STEP(topos_add(pre1, b1v, &h));
  K(h);
  TP_STEP(topos_tanh(h, &h));
  K(h);
  TP_STEP(topos_matmul(h, m->w2, &pre2));
  K(pre2);
  TP_STEP(topos_tensor_broadcast_along(m->b2, 0, batch, &b2v));
  K(b2v);
  TP_STEP(topos_add(pre2, b2v, &out));
  K(out);
  TP_STEP(topos_sub(out, m->y, &diff));
  K(diff);
  TP_STEP(topos_mul(diff, diff, &sq));
  K(sq);
  TP_STEP(topos_sum(sq, &total));
  K(total);
  TP_STEP(topos_tensor_get(total, NULL, loss_out));
  *loss_out /= (double)topos_tensor_volume(diff); /* the mean squared error */
  TP_STEP(tp_fill_like(&bag, diff, 2.0 / (double)topos_tensor_volume(diff), &two));
  TP_STEP(topos_mul(diff, two, &dout));
  K(dout);
  TP_STEP(topos_tensor_transpose(h, &ht));
  K(ht);
  TP_STEP(topos_matmul(ht, dout, &dw2));
  K(dw2);
  TP_STEP(topos_sum_along(dout, 0, &db2));
  K(db2);
  TP_STEP(topos_tensor_transpose(m->w2, &w2t));
  K(w2t);
  TP_STEP(topos_matmul(dout, w2t, &dh));
  K(dh);
  TP_STEP(topos_mul(h, h, &hh));
  K(hh);
  TP_STEP(tp_fill_like(&bag, hh, 1.0, &ones));
  TP_STEP(topos_sub(ones, hh, &dtanh));
  K(dtanh);
  TP_STEP(topos_mul(dh, dtanh, &dpre));
  K(dpre);
  TP_STEP(topos_tensor_transpose(m->x, &xt));
  K(xt);
  TP_STEP(topos_matmul(xt, dpre, &dw1));
  K(dw1);
  TP_STEP(topos_sum_along(dpre, 0, &db1));
  K(db1);
  TP_STEP(tp_sgd(&bag, &m->w1, dw1));
  TP_STEP(tp_sgd(&bag, &m->b1, db1));
  TP_STEP(tp_sgd(&bag, &m->w2, dw2));
  TP_STEP(tp_sgd(&bag, &m->b2, db2));
#undef K
done:
  tp_bag_free(&bag);
  return s;
}

static topos_status tp_random(int rank, const int64_t *shape, double scale, uint64_t seed,
                              topos_tensor **out) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  float *v = malloc((size_t)n * sizeof(float));
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  uint64_t st = seed;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (st += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    v[i] = (float)(((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0) * scale);
  }
  topos_status s = topos_tensor_from_f32(TOPOS_F32, rank, shape, v, out);
  free(v);
  return s;
}

static topos_status tp_mlp_init(tp_mlp *m, int64_t batch) {
  int64_t sx[2] = {batch, 1024}, sy[2] = {batch, 512}, s1[2] = {1024, 2048}, s2[2] = {2048, 512};
  int64_t sb1[1] = {2048}, sb2[1] = {512};
  memset(m, 0, sizeof *m);
  TP_TRY(tp_random(2, sx, 1.0, 1, &m->x));
  TP_TRY(tp_random(2, sy, 1.0, 2, &m->y));
  TP_TRY(tp_random(2, s1, 0.03, 3, &m->w1));
  TP_TRY(tp_random(1, sb1, 0.01, 4, &m->b1));
  TP_TRY(tp_random(2, s2, 0.02, 5, &m->w2));
  TP_TRY(tp_random(1, sb2, 0.01, 6, &m->b2));
  return TOPOS_OK;
}

static void tp_mlp_free(tp_mlp *m) {
  topos_tensor *all[] = {m->x, m->y, m->w1, m->b1, m->w2, m->b2};
  for (int i = 0; i < 6; ++i) topos_tensor_release(all[i]);
}


/* ---- the same step through the engine: record, differentiate, compile a
 * plan with the request's numerics, then forward + backward + SGD. */
static topos_status tp_plan_sgd(void *user, topos_sym param, topos_tensor *value,
                                topos_tensor *gradient, topos_tensor **out) {
  (void)param, (void)user;
  tp_bag bag = {{0}, 0};
  topos_tensor *lr = NULL, *step = NULL;
  topos_status s = tp_fill_like(&bag, gradient, 0.01, &lr);
  if (s == TOPOS_OK) s = topos_mul(gradient, lr, &step);
  if (s == TOPOS_OK) s = topos_sub(value, step, out);
  topos_tensor_release(step);
  tp_bag_free(&bag);
  return s;
}

static topos_status tp_plan_bench(topos_numerics numerics, int steps, int64_t batch, double *best,
                                  double *loss_out) {
  tp_mlp m;
  TP_TRY(tp_mlp_init(&m, batch));
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *state = NULL;
  topos_plan *plan = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) goto done;
  topos_sym x = topos_tape_input(tape, m.x, "x"), y = topos_tape_input(tape, m.y, "y");
  topos_sym w1 = topos_tape_parameter(tape, m.w1, "w1"), b1 = topos_tape_parameter(tape, m.b1, "b1");
  topos_sym w2 = topos_tape_parameter(tape, m.w2, "w2"), b2 = topos_tape_parameter(tape, m.b2, "b2");
  topos_sym h = topos_tape_tanh(tape, topos_tape_add(tape, topos_tape_matmul(tape, x, w1),
                                                     topos_tape_broadcast_along(tape, b1, 0, batch)));
  topos_sym out = topos_tape_add(tape, topos_tape_matmul(tape, h, w2),
                                 topos_tape_broadcast_along(tape, b2, 0, batch));
  topos_sym diff = topos_tape_sub(tape, out, y);
  topos_sym loss = topos_tape_mean(tape, topos_tape_mul(tape, diff, diff));
  if ((s = topos_tape_status(tape)) != TOPOS_OK) goto done;
  if ((s = topos_tape_seal(&tape, &net)) != TOPOS_OK) goto done;
  if ((s = topos_params_from_network(net, &state)) != TOPOS_OK) goto done;
  topos_request request = {&loss, 1, NULL, 0, 1, numerics};
  if ((s = topos_plan_compile(net, &request, &plan)) != TOPOS_OK) goto done;
  *best = 1e30;
  for (int i = 0; i < steps && s == TOPOS_OK; ++i) {
    topos_run *run = NULL;
    topos_field *grads = NULL;
    topos_tensor *l = NULL;
    double t0 = tp_cli_now();
    s = topos_plan_forward(plan, state, NULL, 0, &run);
    if (s == TOPOS_OK) s = topos_run_backward(run, loss, &grads);
    if (s == TOPOS_OK) s = topos_params_step(state, grads, tp_plan_sgd, NULL);
    double dt = tp_cli_now() - t0;
    if (s == TOPOS_OK) s = topos_run_read(run, loss, &l);
    if (s == TOPOS_OK) s = topos_tensor_read_f64(l, loss_out, 1);
    if (dt < *best) *best = dt;
    topos_tensor_release(l);
    topos_field_free(grads);
    topos_run_free(run);
  }
done:
  topos_plan_free(plan);
  topos_params_free(state);
  topos_network_free(net);
  topos_tape_free(tape);
  tp_mlp_free(&m);
  return s;
}

static int tp_bench_throughput(int argc, char **argv) {
  int steps = 3, with_reference = 0, json = 0;
  int64_t batch = 1024;
  for (int i = 1; i < argc; ++i) {
    long v;
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      if (!tp_cli_long(argv[++i], 1, 1000000, &v))
        return tp_cli_bad_value("bench throughput", "--steps", argv[i], "a count in 1..1000000");
      steps = (int)v;
    } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      if (!tp_cli_long(argv[++i], 1, 1L << 20, &v))
        return tp_cli_bad_value("bench throughput", "--batch", argv[i], "a batch size in 1..1048576");
      batch = v;
    }
    else if (strcmp(argv[i], "--reference") == 0) with_reference = 1;
    else if (strcmp(argv[i], "--json") == 0) json = 1;
    else {
      fprintf(stderr, "usage: topos bench throughput [--steps N] [--batch B] [--reference] [--json]\n");
      return 2;
    }
  }
  if (steps < 1 || batch < 1) return 2;
  struct {
    const char *name;
    int only_default, none;
    topos_numerics posture;
  } rows[] = {{"reference", 0, 1, TOPOS_NUMERICS_EXACT},
              {"default exact", 1, 0, TOPOS_NUMERICS_EXACT},
              {"all exact", 0, 0, TOPOS_NUMERICS_EXACT},
              {"all fast", 0, 0, TOPOS_NUMERICS_FAST}};
  if (!json) printf("MLP 1024 -> 2048 tanh -> 512, batch %lld, f32 (ms/step, best of %d)\n", (long long)batch, steps);
  for (size_t r = with_reference ? 0 : 1; r < sizeof rows / sizeof rows[0]; ++r) {
    for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b)
      topos_backend_set_enabled((topos_backend)b,
                                !rows[r].none && (!rows[r].only_default || b == TOPOS_BACKEND_DEFAULT));
    topos_numerics saved = topos_numerics_enter(rows[r].posture);
    tp_mlp m;
    topos_status s = tp_mlp_init(&m, batch);
    double best = 1e30, loss = 0;
    for (int i = 0; s == TOPOS_OK && i < steps; ++i) {
      double t0 = tp_cli_now();
      s = tp_mlp_step(&m, &loss);
      double dt = tp_cli_now() - t0;
      if (dt < best) best = dt;
    }
    tp_mlp_free(&m);
    topos_numerics_restore(saved);
    if (s != TOPOS_OK) return tp_cli_fail("bench throughput", s, rows[r].name);
    if (json)
      printf("{\"bench\":\"throughput\",\"rows\":\"%s\",\"batch\":%lld,\"ms_per_step\":%.1f,\"loss\":%.9g}\n",
             rows[r].name, (long long)batch, best * 1e3, loss);
    else
      printf("  %-14s %9.1f ms   (loss after %d steps %.9g)\n", rows[r].name, best * 1e3, steps, loss);
    fflush(stdout);
  }
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) topos_backend_set_enabled((topos_backend)b, 1);
  /* the engine route: the request's numerics reaches the chain */
  for (int exact = 1; exact >= 0; --exact) {
    double best = 0, loss = 0;
    topos_status s = tp_plan_bench(exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST, steps, batch,
                                   &best, &loss);
    const char *name = exact ? "plan exact" : "plan fast";
    if (s != TOPOS_OK) return tp_cli_fail("bench throughput", s, name);
    if (json)
      printf("{\"bench\":\"throughput\",\"rows\":\"%s\",\"batch\":%lld,\"ms_per_step\":%.1f,\"loss\":%.9g}\n",
             name, (long long)batch, best * 1e3, loss);
    else
      printf("  %-14s %9.1f ms   (loss of the last step %.9g)\n", name, best * 1e3, loss);
    fflush(stdout);
  }
  return 0;
}

TOPOS_COMMAND("bench-throughput", "an MLP training step (1024 -> 2048 tanh -> 512, batch 1024)",
              tp_bench_throughput)
