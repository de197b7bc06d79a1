/* MNIST LeNet: conv 1->8 3x3 pad 1, relu, max-pool 2; conv 8->16 3x3 pad 1,
 * relu, max-pool 2; linear 784->10; cross-entropy, SGD, batch 64.
 * The same program trains on Fashion-MNIST (--fashion, or when MNIST is not
 * found). Prints the test accuracy, writes the loss curve (SVG) and the
 * trained parameters (GGUF checkpoint). Also `topos train mnist`. */
#include "common/train_util.h"
#include "common/checkpoint_util.h"

#define EX_IMAGE 28
#define EX_PROBE 1000 /* evaluation batch */

typedef struct ex_mnist_set {
  topos_tensor *images; /* f32 [N,28,28], normalized */
  topos_tensor *labels; /* i32 [N] */
  int64_t count;
} ex_mnist_set;

static void ex_mnist_set_free(ex_mnist_set *s) {
  topos_tensor_release(s->images);
  topos_tensor_release(s->labels);
  s->images = s->labels = NULL;
}

static topos_status ex_mnist_load(const char *dir, const char *prefix, ex_mnist_set *set) {
  char path[4096];
  const char *suffixes[2] = {".gz", ""};
  topos_status s = TOPOS_ERR_NOT_FOUND;
  for (int k = 0; k < 2 && s != TOPOS_OK; ++k) {
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, prefix, suffixes[k]);
    if (ex_exists(path)) s = topos_idx_load(path, TOPOS_F32, &set->images);
  }
  if (s != TOPOS_OK) return s;
  s = TOPOS_ERR_NOT_FOUND;
  for (int k = 0; k < 2 && s != TOPOS_OK; ++k) {
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, prefix, suffixes[k]);
    if (ex_exists(path)) s = topos_idx_load(path, TOPOS_I32, &set->labels);
  }
  if (s != TOPOS_OK) return s;
  if (topos_tensor_rank(set->images) != 3 || topos_tensor_shape(set->images)[1] != EX_IMAGE ||
      topos_tensor_shape(set->images)[2] != EX_IMAGE || topos_tensor_rank(set->labels) != 1 ||
      topos_tensor_shape(set->labels)[0] != topos_tensor_shape(set->images)[0]) {
    fprintf(stderr, "error: %s/%s: images are not [N,28,28] with N labels\n", dir, prefix);
    return TOPOS_ERR_SHAPE;
  }
  set->count = topos_tensor_shape(set->images)[0];
  /* pixels 0..255 -> (x/255 - 0.1307) / 0.3081, the usual MNIST standardization */
  float *px = topos_tensor_data_mut(set->images);
  int64_t n = topos_tensor_volume(set->images);
  for (int64_t i = 0; i < n; ++i) px[i] = (px[i] / 255.0f - 0.1307f) / 0.3081f;
  const int32_t *lb = topos_tensor_data(set->labels);
  for (int64_t i = 0; i < set->count; ++i)
    if (lb[i] < 0 || lb[i] > 9) {
      fprintf(stderr, "error: %s/%s: label %d at %lld is not a digit class\n", dir, prefix,
              (int)lb[i], (long long)i);
      return TOPOS_ERR_FORMAT;
    }
  return TOPOS_OK;
}

/* Copies rows[0..n) of set into the batch tensors x [n,1,28,28], t [n]. */
static void ex_mnist_fill(const ex_mnist_set *set, const int64_t *rows, int64_t n, topos_tensor *x,
                          topos_tensor *t) {
  const float *src = topos_tensor_data(set->images);
  const int32_t *lab = topos_tensor_data(set->labels);
  float *dx = topos_tensor_data_mut(x);
  int32_t *dt = t ? topos_tensor_data_mut(t) : NULL;
  for (int64_t i = 0; i < n; ++i) {
    memcpy(dx + i * EX_IMAGE * EX_IMAGE, src + rows[i] * EX_IMAGE * EX_IMAGE,
           sizeof(float) * EX_IMAGE * EX_IMAGE);
    if (dt) dt[i] = lab[rows[i]];
  }
}

typedef struct ex_lenet {
  topos_conv2d conv1, conv2;
  topos_linear head;
} ex_lenet;

static topos_sym ex_lenet_logits(topos_tape *tape, const ex_lenet *m, topos_sym x, int64_t batch) {
  topos_sym h = topos_tape_relu(tape, topos_conv2d_apply(tape, &m->conv1, x));
  h = topos_max_pool2d(tape, h, 2, 2);
  h = topos_tape_relu(tape, topos_conv2d_apply(tape, &m->conv2, h));
  h = topos_max_pool2d(tape, h, 2, 2);
  int64_t flat[2] = {batch, 16 * 7 * 7};
  return topos_linear_apply(tape, &m->head, topos_tape_reshape(tape, h, 2, flat));
}

int topos_example_mnist(int argc, char **argv) {
  ex_flags flags = {.steps = 2000, .batch = 64, .lr = 0.05, .seed = 1, .out = "."};
  int fashion = 0;
  const char *load = NULL;
  for (int i = 1; i < argc; ++i) {
    int drop = 0;
    if (!strcmp(argv[i], "--fashion")) {
      fashion = 1;
      drop = 1;
    } else if (!strcmp(argv[i], "--load") && i + 1 < argc) {
      load = argv[i + 1];
      drop = 2;
    }
    if (!drop) continue;
    for (int k = i; k + drop < argc; ++k) argv[k] = argv[k + drop];
    argc -= drop;
    i -= 1;
  }
  int parsed = ex_parse_flags(argc, argv, &flags,
                              "  --fashion   train and test on Fashion-MNIST\n"
                              "  --load FILE start from a GGUF checkpoint (--steps 0: evaluate it)\n"
                              "data: --data DIR, else ../shared/data/mnist, "
                              "/usr/share/datasets/mnist; Fashion-MNIST in "
                              "/usr/share/datasets/fashion-mnist\n");
  if (parsed) return parsed == 1 ? 0 : 2;
  int rc = 0;
  ex_mnist_set train = {0}, test = {0};
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *step_plan = NULL, *eval_plan = NULL;
  topos_optimizer *opt = NULL;
  topos_tensor *bx = NULL, *bt = NULL, *ex = NULL;
  int64_t *order = NULL;
  ex_curve curve = {0};

  /* ---- data */
  char dir[4096];
  const char *mnist_dirs[] = {flags.data, "../shared/data/mnist", "../../shared/data/mnist",
                              "/usr/share/datasets/mnist", NULL};
  const char *fashion_dirs[] = {flags.data, "/usr/share/datasets/fashion-mnist",
                                "../shared/data/fashion-mnist", NULL};
  /* --data DIR is the only place looked at when given; else the standard ones */
  const char *given[2] = {flags.data, NULL};
  const char *const *dirs = flags.data ? given : (fashion ? fashion_dirs : mnist_dirs) + 1;
  int found = ex_find_dir(dirs, "train-images-idx3-ubyte.gz", dir, sizeof dir) ||
              ex_find_dir(dirs, "train-images-idx3-ubyte", dir, sizeof dir);
  if (!found && !fashion && !flags.data) { /* fall back to Fashion-MNIST */
    if (ex_find_dir(fashion_dirs + 1, "train-images-idx3-ubyte.gz", dir, sizeof dir) ||
        ex_find_dir(fashion_dirs + 1, "train-images-idx3-ubyte", dir, sizeof dir)) {
      printf("MNIST not found; using Fashion-MNIST in %s\n", dir);
      fashion = found = 1;
    }
  }
  if (!found) {
    fprintf(stderr,
            "error: no %s data found. Looked for train-images-idx3-ubyte[.gz] in:\n",
            fashion ? "Fashion-MNIST" : "MNIST");
    for (int i = 0; dirs[i]; ++i) fprintf(stderr, "  %s\n", dirs[i]);
    if (!fashion && !flags.data)
      for (int i = 1; fashion_dirs[i]; ++i)
        fprintf(stderr, "  %s (Fashion-MNIST)\n", fashion_dirs[i]);
    fprintf(stderr,
            "Get it with: sudo apt-get install dataset-fashion-mnist   (Debian/Ubuntu)\n"
            "or download the four MNIST IDX .gz files into a directory and pass --data DIR.\n");
    return 3;
  }
  const char *set_name = fashion ? "Fashion-MNIST" : "MNIST";
  EX_TRY("loading training set", ex_mnist_load(dir, "train", &train));
  EX_TRY("loading test set", ex_mnist_load(dir, "t10k", &test));
  printf("%s: %lld training and %lld test images from %s\n", set_name, (long long)train.count,
         (long long)test.count, dir);

  /* ---- model: a training expression and an evaluation twin over the same parameters */
  int64_t B = flags.batch;
  topos_rng rng = topos_rng_seed(flags.seed);
  ex_lenet model;
  EX_TRY("tape", topos_tape_new(&tape));
  topos_conv2d_new(tape, "conv1", 1, 8, 3, 1, 1, 1, TOPOS_F32, &rng, &model.conv1);
  topos_conv2d_new(tape, "conv2", 8, 16, 3, 1, 1, 1, TOPOS_F32, &rng, &model.conv2);
  topos_linear_new(tape, "head", 16 * 7 * 7, 10, 1, TOPOS_F32, &rng, &model.head);
  topos_tensor_desc xdesc = {TOPOS_F32, 4, {B, 1, EX_IMAGE, EX_IMAGE}};
  topos_tensor_desc tdesc = {TOPOS_I32, 1, {B}};
  topos_tensor_desc edesc = {TOPOS_F32, 4, {EX_PROBE, 1, EX_IMAGE, EX_IMAGE}};
  topos_sym x = topos_tape_input_desc(tape, &xdesc, "images");
  topos_sym t = topos_tape_input_desc(tape, &tdesc, "labels");
  topos_sym loss = topos_cross_entropy(tape, ex_lenet_logits(tape, &model, x, B), t);
  topos_sym probe = topos_tape_input_desc(tape, &edesc, "probe");
  topos_sym probe_logits = ex_lenet_logits(tape, &model, probe, EX_PROBE);
  /* gradients recorded on the tape: the sweep differentiates only toward the
   * parameters (not the images), and one forward plan computes loss and
   * gradients with the engine route's bits */
  uint32_t model_nodes = topos_tape_length(tape);
  topos_sym wrt[6] = {model.conv1.weight, model.conv1.bias, model.conv2.weight,
                      model.conv2.bias,   model.head.weight,  model.head.bias};
  topos_sym step_roots[7] = {loss};
  EX_TRY("differentiating", topos_tape_differentiate(tape, loss, 6, wrt, step_roots + 1));
  EX_TRY("recording the model", topos_tape_status(tape));
  uint32_t nodes = topos_tape_length(tape);
  EX_TRY("sealing", topos_tape_seal(&tape, &net));
  EX_TRY("parameters", topos_params_from_network(net, &params));
  topos_request step_req = {.roots = step_roots, .n_roots = 7};
  topos_request eval_req = {.roots = &probe_logits, .n_roots = 1};
  EX_TRY("compiling the training plan", topos_plan_compile(net, &step_req, &step_plan));
  EX_TRY("compiling the evaluation plan", topos_plan_compile(net, &eval_req, &eval_plan));
  topos_optimizer_options oo = {.kind = TOPOS_OPT_SGD, .lr = flags.lr, .momentum = 0.9};
  EX_TRY("optimizer", topos_optimizer_new(net, &oo, &opt));
  if (load) {
    EX_TRY("loading the checkpoint", topos_checkpoint_load(params, load));
    printf("parameters loaded from %s\n", load);
  }
  printf("LeNet: %u nodes (%u with the recorded gradients), %zu parameter tensors, batch %lld, "
         "SGD lr %g momentum 0.9, %d threads\n", model_nodes, nodes, topos_params_count(params),
         (long long)B, flags.lr, topos_threads());

  /* ---- training */
  EX_TRY("batch", topos_tensor_zeros(TOPOS_F32, 4, xdesc.shape, &bx));
  EX_TRY("batch", topos_tensor_zeros(TOPOS_I32, 1, tdesc.shape, &bt));
  order = malloc((size_t)train.count * sizeof *order);
  if (!order) EX_TRY("order", TOPOS_ERR_OUT_OF_MEMORY);
  for (int64_t i = 0; i < train.count; ++i) order[i] = i;
  topos_rng data_rng = topos_rng_seed(flags.seed ^ UINT64_C(0x5eed));
  int64_t cursor = train.count;
  ex_progress progress;
  ex_progress_start(&progress, flags.steps, flags.quiet);
  progress.budget = flags.max_seconds;
  long step = 0;
  int lr_dropped = 0;
  double train_start = ex_now();
  for (; step < flags.steps; ++step) {
    double elapsed = ex_now() - train_start;
    if (flags.max_seconds > 0 && elapsed > flags.max_seconds) break;
    /* the last quarter at lr/10: of the steps, or of the time budget when that ends first */
    if (!lr_dropped && (step >= flags.steps * 3 / 4 ||
                        (flags.max_seconds > 0 && elapsed > 0.75 * flags.max_seconds))) {
      topos_optimizer_set_lr(opt, flags.lr * 0.1);
      lr_dropped = 1;
    }
    if (cursor + B > train.count) {
      ex_shuffle(order, train.count, &data_rng);
      cursor = 0;
    }
    ex_mnist_fill(&train, order + cursor, B, bx, bt);
    cursor += B;
    topos_feed feeds[2] = {{x, bx}, {t, bt}};
    topos_run *run = NULL;
    topos_field *grads = NULL;
    topos_tensor *lv = NULL;
    double lossv = NAN;
    topos_status s = topos_plan_forward(step_plan, params, feeds, 2, &run);
    if (s == TOPOS_OK) s = topos_run_read(run, loss, &lv);
    if (s == TOPOS_OK) s = topos_tensor_get(lv, NULL, &lossv);
    if (s == TOPOS_OK) s = topos_run_recorded_gradients(run, 6, wrt, step_roots + 1, &grads);
    if (s == TOPOS_OK) s = topos_optimizer_step(opt, params, grads);
    topos_tensor_release(lv);
    topos_field_free(grads);
    topos_run_free(run);
    EX_TRY("training step", s);
    ex_curve_push(&curve, lossv);
    ex_progress_step(&progress, step, lossv, 100);
  }
  if (step < flags.steps) {
    ex_progress_end(&progress);
    printf("stopped after %ld steps (--max-seconds %g)\n", step, flags.max_seconds);
  }
  double train_seconds = ex_now() - train_start;
  double ms_per_step = step ? 1e3 * train_seconds / (double)step : 0;

  /* ---- test accuracy over the whole test set, EX_PROBE images at a time */
  EX_TRY("probe", topos_tensor_zeros(TOPOS_F32, 4, edesc.shape, &ex));
  int64_t correct = 0, seen = 0;
  int64_t rows[EX_PROBE];
  const int32_t *labels = topos_tensor_data(test.labels);
  for (int64_t start = 0; start + EX_PROBE <= test.count; start += EX_PROBE) {
    for (int64_t i = 0; i < EX_PROBE; ++i) rows[i] = start + i;
    ex_mnist_fill(&test, rows, EX_PROBE, ex, NULL);
    topos_feed feed = {probe, ex};
    topos_run *run = NULL;
    topos_tensor *logits = NULL;
    topos_status s = topos_plan_forward(eval_plan, params, &feed, 1, &run);
    if (s == TOPOS_OK) s = topos_run_read(run, probe_logits, &logits);
    if (s == TOPOS_OK) {
      float out[EX_PROBE * 10];
      s = topos_tensor_read_f32(logits, out, EX_PROBE * 10);
      for (int64_t i = 0; s == TOPOS_OK && i < EX_PROBE; ++i) {
        int best = 0;
        for (int c = 1; c < 10; ++c)
          if (out[i * 10 + c] > out[i * 10 + best]) best = c;
        correct += best == labels[start + i];
        ++seen;
      }
    }
    topos_tensor_release(logits);
    topos_run_free(run);
    EX_TRY("evaluation", s);
  }
  double accuracy = seen ? 100.0 * (double)correct / (double)seen : 0;
  printf("%s test accuracy: %.2f%% (%lld of %lld)\n", set_name, accuracy, (long long)correct,
         (long long)seen);
  if (step > 0)
    printf("training: %ld steps in %.1f s, %.2f ms/step, final loss (mean of last 100) %.4f\n",
           step, train_seconds, ms_per_step, ex_curve_tail_mean(&curve, 100));

  /* ---- artifacts */
  char chart[4096], ckpt[4096];
  ex_path(chart, sizeof chart, flags.out, fashion ? "fashion-mnist-loss.svg" : "mnist-loss.svg");
  ex_path(ckpt, sizeof ckpt, flags.out, fashion ? "fashion-mnist-lenet.gguf" : "mnist-lenet.gguf");
  if (step > 0) {
    if (ex_curve_svg(&curve, chart, fashion ? "Fashion-MNIST LeNet: training loss"
                                            : "MNIST LeNet: training loss") == 0)
      printf("loss curve: %s\n", chart);
    else
      fprintf(stderr, "warning: could not write %s\n", chart);
  }
  ex_hparam hp[] = {{"topos.model", 0, "mnist-lenet"},
                    {"topos.dataset", 0, set_name},
                    {"topos.train.steps", (double)step, NULL},
                    {"topos.train.batch", (double)B, NULL},
                    {"topos.train.lr", flags.lr, NULL},
                    {"topos.train.seed", (double)flags.seed, NULL},
                    {"topos.test.accuracy", accuracy, NULL}};
  topos_status cs = ex_checkpoint_save(ckpt, params, hp, sizeof hp / sizeof hp[0]);
  if (cs == TOPOS_OK) printf("checkpoint: %s\n", ckpt);
  else fprintf(stderr, "warning: checkpoint %s not written: %s\n", ckpt, topos_last_error());

cleanup:
  ex_curve_free(&curve);
  free(order);
  topos_tensor_release(bx);
  topos_tensor_release(bt);
  topos_tensor_release(ex);
  topos_optimizer_free(opt);
  topos_plan_free(step_plan);
  topos_plan_free(eval_plan);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  ex_mnist_set_free(&train);
  ex_mnist_set_free(&test);
  return rc;
}

#ifndef EX_NO_MAIN
int main(int argc, char **argv) { return topos_example_mnist(argc, argv); }
#endif
