/* `topos bench train`: ms per training step of the MNIST LeNet (batch 64:
 * forward, backward, SGD-momentum update) at 1 and 2 threads, side by side
 * with PyTorch's time for the same network in the same run when
 * `python3 -c "import torch"` works. Synthetic inputs (the step's cost does
 * not depend on the pixels). --json prints one row per thread count.
 * The step is the one examples/mnist.c takes: gradients recorded on the tape
 * (only those of the parameters) and evaluated by one forward plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

static const char *tp_bt_build(void) {
#if defined(TOPOS_HAVE_CUDA)
  return "cuda";
#elif defined(TOPOS_HAVE_BLAS)
  return "blas";
#elif defined(TOPOS_HAVE_SIMD)
  return "simd";
#else
  return "default";
#endif
}

typedef struct {
  int recorded; /* gradients recorded on the tape (topos_tape_differentiate), one forward plan */
  topos_sym grads[8], param_syms[8];
  size_t n_params;
  topos_network *net;
  topos_params *params;
  topos_plan *plan;
  topos_optimizer *opt;
  topos_sym x, t, loss;
  topos_tensor *bx, *bt;
} tp_bt_model;

static void tp_bt_free(tp_bt_model *m) {
  topos_tensor_release(m->bx);
  topos_tensor_release(m->bt);
  topos_optimizer_free(m->opt);
  topos_plan_free(m->plan);
  topos_params_free(m->params);
  topos_network_free(m->net);
}

static topos_status tp_bt_build_model(tp_bt_model *m, int64_t batch) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(1);
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  topos_conv2d c1, c2;
  topos_linear fc;
  topos_conv2d_new(tape, "conv1", 1, 8, 3, 1, 1, 1, TOPOS_F32, &rng, &c1);
  topos_conv2d_new(tape, "conv2", 8, 16, 3, 1, 1, 1, TOPOS_F32, &rng, &c2);
  topos_linear_new(tape, "head", 784, 10, 1, TOPOS_F32, &rng, &fc);
  topos_tensor_desc xd = {TOPOS_F32, 4, {batch, 1, 28, 28}}, td = {TOPOS_I32, 1, {batch}};
  m->x = topos_tape_input_desc(tape, &xd, "images");
  m->t = topos_tape_input_desc(tape, &td, "labels");
  topos_sym h = topos_max_pool2d(tape, topos_tape_relu(tape, topos_conv2d_apply(tape, &c1, m->x)), 2, 2);
  h = topos_max_pool2d(tape, topos_tape_relu(tape, topos_conv2d_apply(tape, &c2, h)), 2, 2);
  int64_t flat[2] = {batch, 784};
  m->loss = topos_cross_entropy(
      tape, topos_linear_apply(tape, &fc, topos_tape_reshape(tape, h, 2, flat)), m->t);
  topos_sym roots[9] = {m->loss};
  m->n_params = 6;
  topos_sym ps[6] = {c1.weight, c1.bias, c2.weight, c2.bias, fc.weight, fc.bias};
  memcpy(m->param_syms, ps, sizeof ps);
  if (m->recorded) {
    s = topos_tape_differentiate(tape, m->loss, m->n_params, m->param_syms, m->grads);
    if (s != TOPOS_OK) {
      topos_tape_free(tape);
      return s;
    }
    memcpy(roots + 1, m->grads, m->n_params * sizeof *roots);
  }
  s = topos_tape_seal(&tape, &m->net);
  if (s == TOPOS_OK) s = topos_params_from_network(m->net, &m->params);
  topos_request req = {.roots = roots, .n_roots = m->recorded ? 1 + m->n_params : 1,
                       .backward = !m->recorded};
  if (s == TOPOS_OK) s = topos_plan_compile(m->net, &req, &m->plan);
  topos_optimizer_options oo = {.kind = TOPOS_OPT_SGD, .lr = 0.05, .momentum = 0.9};
  if (s == TOPOS_OK) s = topos_optimizer_new(m->net, &oo, &m->opt);
  if (s == TOPOS_OK) s = topos_init_normal(&rng, TOPOS_F32, 4, xd.shape, 0, 1, &m->bx);
  if (s == TOPOS_OK) s = topos_tensor_zeros(TOPOS_I32, 1, td.shape, &m->bt);
  if (s == TOPOS_OK) {
    int32_t *labels = topos_tensor_data_mut(m->bt);
    for (int64_t i = 0; i < batch; ++i) labels[i] = (int32_t)(topos_rng_next(&rng) % 10);
  }
  return s;
}

static topos_status tp_bt_step(tp_bt_model *m) {
  topos_feed feeds[2] = {{m->x, m->bx}, {m->t, m->bt}};
  topos_run *run = NULL;
  topos_field *grads = NULL;
  topos_status s = topos_plan_forward(m->plan, m->params, feeds, 2, &run);
  if (s == TOPOS_OK && m->recorded)
    s = topos_run_recorded_gradients(run, m->n_params, m->param_syms, m->grads, &grads);
  else if (s == TOPOS_OK)
    s = topos_run_backward(run, m->loss, &grads);
  if (s == TOPOS_OK) s = topos_optimizer_step(m->opt, m->params, grads);
  topos_field_free(grads);
  topos_run_free(run);
  return s;
}

static const char *tp_bt_torch_script =
    "import sys, time\n"
    "import torch\n"
    "threads, steps, batch = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(threads)\n"
    "torch.manual_seed(1)\n"
    "net = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(),\n"
    "    torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),\n"
    "    torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(784, 10))\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)\n"
    "loss_fn = torch.nn.CrossEntropyLoss()\n"
    "x = torch.randn(batch, 1, 28, 28)\n"
    "t = torch.randint(0, 10, (batch,))\n"
    "def step():\n"
    "    opt.zero_grad()\n"
    "    loss = loss_fn(net(x), t)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "for _ in range(5): step()\n"
    "t0 = time.perf_counter()\n"
    "for _ in range(steps): step()\n"
    "print('ms_per_step %.4f' % (1e3 * (time.perf_counter() - t0) / steps))\n";

/* PyTorch's ms/step, or a negative value when torch cannot be imported. */
static double tp_bt_torch(int threads, int steps, int64_t batch) {
  static int unavailable;
  if (unavailable) return -1;
  char path[] = "/tmp/topos-bench-train-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  size_t len = strlen(tp_bt_torch_script);
  int ok = write(fd, tp_bt_torch_script, len) == (ssize_t)len;
  close(fd);
  double ms = -1;
  /* $TOPOS_PYTHON, then python3 on PATH (a venv), then Debian's python3-torch */
  const char *pythons[3] = {getenv("TOPOS_PYTHON"), "python3", "/usr/bin/python3"};
  for (int k = 0; ok && ms < 0 && k < 3; ++k) {
    if (!pythons[k] || !*pythons[k]) continue;
    char cmd[768];
    snprintf(cmd, sizeof cmd, "%s %s %d %d %lld 2>/dev/null", pythons[k], path, threads, steps,
             (long long)batch);
    FILE *p = popen(cmd, "r");
    if (p) {
      char line[256];
      while (fgets(line, sizeof line, p))
        if (sscanf(line, "ms_per_step %lf", &ms) == 1) break;
      pclose(p);
    }
  }
  remove(path);
  if (ms < 0) unavailable = 1; /* ask once per run */
  return ms;
}

static int tp_bench_train(int argc, char **argv) {
  int json = 0, steps = 20, no_peer = 0, recorded = 1, counts_given = 0, describe = 0;
  int counts[8] = {1, 2}, n_counts = 2;
  int64_t batch = 64;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: topos bench train [--json] [--steps N] [--no-peer] [--engine-route] "
             "[--describe] [THREADS...]\n\n"
             "ms/step of the MNIST LeNet training step (batch 64) at 1 and 2 threads,\n"
             "with PyTorch's time for the same network when python3 can import torch.\n"
             "Gradients are recorded on the tape and run in one forward plan (as topos train\n"
             "mnist does); --engine-route uses a backward plan and topos_run_backward.\n"
             "--describe prints the step's plan (topos_plan_describe) and stops.\n");
      return 0;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--describe")) {
      describe = 1;
    } else if (!strcmp(argv[i], "--no-peer")) {
      no_peer = 1;
    } else if (!strcmp(argv[i], "--engine-route")) {
      recorded = 0;
    } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      long v;
      if (!tp_cli_long(argv[++i], 1, 10000000, &v))
        return tp_cli_bad_value("bench train", "--steps", argv[i], "a count in 1..10000000");
      steps = (int)v;
    } else {
      long t;
      if (!tp_cli_long(argv[i], 1, 256, &t)) {
        fprintf(stderr, "topos bench train: bad thread count '%s'\n", argv[i]);
        return 2;
      }
      if (!counts_given) n_counts = 0; /* thread counts given replace the default 1 2 */
      counts_given = 1;
      if (n_counts < 8) counts[n_counts++] = (int)t;
    }
  }
  tp_bt_model m = {0};
  m.recorded = recorded;
  topos_status s = tp_bt_build_model(&m, batch);
  if (s != TOPOS_OK) {
    tp_bt_free(&m);
    return tp_cli_fail("bench train", s, "building the LeNet");
  }
  if (describe) {
    size_t need = topos_plan_describe(m.plan, NULL, 0) + 1;
    char *text = malloc(need);
    if (text) {
      topos_plan_describe(m.plan, text, need);
      fputs(text, stdout);
    }
    free(text);
    tp_bt_free(&m);
    return text ? 0 : 1;
  }
  if (!json)
    printf("%-10s %-8s %-12s %-16s %s\n", "build", "threads", "ms/step", "pytorch ms/step",
           "ratio (topos/pytorch)");
  for (int c = 0; c < n_counts; ++c) {
    s = topos_set_threads(counts[c]);
    for (int w = 0; s == TOPOS_OK && w < 3; ++w) s = tp_bt_step(&m);
    double t0 = tp_cli_now();
    for (int k = 0; s == TOPOS_OK && k < steps; ++k) s = tp_bt_step(&m);
    double ms = 1e3 * (tp_cli_now() - t0) / steps;
    if (s != TOPOS_OK) {
      tp_bt_free(&m);
      return tp_cli_fail("bench train", s, "training step");
    }
    double peer = no_peer ? -1 : tp_bt_torch(counts[c], steps * 5, batch);
    if (json) {
      printf("{\"bench\":\"train\",\"model\":\"mnist-lenet\",\"build\":\"%s\",\"threads\":%d,"
             "\"ms_per_step\":%.4f", tp_bt_build(), counts[c], ms);
      if (peer > 0) printf(",\"peer\":\"pytorch\",\"peer_ms_per_step\":%.4f", peer);
      printf("}\n");
    } else {
      char ps[32] = "n/a", ratio[32] = "";
      if (peer > 0) {
        snprintf(ps, sizeof ps, "%.3f", peer);
        snprintf(ratio, sizeof ratio, "%.2fx", ms / peer);
      }
      printf("%-10s %-8d %-12.3f %-16s %s\n", tp_bt_build(), counts[c], ms, ps, ratio);
    }
    fflush(stdout);
  }
  if (!json && !no_peer && tp_bt_torch(1, 1, 2) < 0)
    printf("(PyTorch not measured: python3 cannot import torch — apt-get install python3-torch)\n");
  tp_bt_free(&m);
  return 0;
}

TOPOS_COMMAND("bench-train", "ms/step of the MNIST LeNet training step vs PyTorch", tp_bench_train)
