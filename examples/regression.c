/* Regression: 96 noisy samples of sin(x) on [-3,3] fitted by an MLP
 * [1,16,1] (tanh, xavier-free PyTorch-style init) with MSE and Adam. Prints
 * the final mean squared error against the noisy samples and against the
 * clean curve. Also `topos train regression`. */
#include "common/train_util.h"
#include "common/mlp_util.h"

#define EX_SAMPLES 96

int topos_example_regression(int argc, char **argv) {
  ex_flags flags = {.steps = 3000, .batch = EX_SAMPLES, .lr = 0.01, .seed = 5, .out = "."};
  int parsed = ex_parse_flags(argc, argv, &flags, "(no data: samples come from --seed)\n");
  if (parsed) return parsed == 1 ? 0 : 2;
  int rc = 0;
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *plan = NULL, *eval = NULL;
  topos_optimizer *opt = NULL;
  topos_tensor *xt = NULL, *yt = NULL;
  ex_curve curve = {0};
  float xs[EX_SAMPLES], ys[EX_SAMPLES];
  topos_rng data_rng = topos_rng_seed(flags.seed);
  for (int i = 0; i < EX_SAMPLES; ++i) {
    xs[i] = (float)(-3.0 + 6.0 * topos_rng_unit(&data_rng));
    ys[i] = (float)(sin(xs[i]) + 0.1 * topos_rng_normal(&data_rng));
  }
  int64_t shape[2] = {EX_SAMPLES, 1};
  EX_TRY("data", topos_tensor_from_f32(TOPOS_F32, 2, shape, xs, &xt));
  EX_TRY("data", topos_tensor_from_f32(TOPOS_F32, 2, shape, ys, &yt));
  topos_rng rng = topos_rng_seed(flags.seed + 1);
  EX_TRY("tape", topos_tape_new(&tape));
  ex_mlp mlp;
  int64_t sizes[3] = {1, 16, 1};
  ex_mlp_new(tape, sizes, 3, TOPOS_ACT_TANH, &rng, &mlp);
  topos_sym x = topos_tape_input(tape, xt, "x");
  topos_sym y = topos_tape_input(tape, yt, "y");
  topos_sym pred = ex_mlp_apply(tape, &mlp, x);
  topos_sym loss = topos_mse(tape, pred, y);
  EX_TRY("sealing", topos_tape_seal(&tape, &net));
  EX_TRY("parameters", topos_params_from_network(net, &params));
  topos_request req = {.roots = &loss, .n_roots = 1, .backward = 1};
  topos_request ereq = {.roots = &pred, .n_roots = 1};
  EX_TRY("plan", topos_plan_compile(net, &req, &plan));
  EX_TRY("plan", topos_plan_compile(net, &ereq, &eval));
  topos_optimizer_options oo = {.kind = TOPOS_OPT_ADAM, .lr = flags.lr};
  EX_TRY("optimizer", topos_optimizer_new(net, &oo, &opt));
  ex_progress progress;
  ex_progress_start(&progress, flags.steps, flags.quiet);
  double lv = NAN;
  for (long step = 0; step < flags.steps; ++step) {
    EX_TRY("step", ex_train_step(plan, params, NULL, 0, loss, opt, &lv));
    ex_curve_push(&curve, lv);
    ex_progress_step(&progress, step, lv, 600);
  }
  float p[EX_SAMPLES];
  EX_TRY("predict", ex_eval(eval, params, NULL, 0, pred, p, EX_SAMPLES));
  double clean = 0;
  for (int i = 0; i < EX_SAMPLES; ++i) clean += (p[i] - sin(xs[i])) * (p[i] - sin(xs[i]));
  printf("regression: final MSE %.5f on the noisy samples (noise variance 0.01), %.5f against "
         "sin(x)\n", lv, clean / EX_SAMPLES);
  char chart[4096];
  if (ex_curve_svg(&curve, ex_path(chart, sizeof chart, flags.out, "regression-loss.svg"),
                   "sin(x) regression: training loss") == 0)
    printf("loss curve: %s\n", chart);
cleanup:
  ex_curve_free(&curve);
  topos_tensor_release(xt);
  topos_tensor_release(yt);
  topos_optimizer_free(opt);
  topos_plan_free(plan);
  topos_plan_free(eval);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  return rc;
}

#ifndef EX_NO_MAIN
int main(int argc, char **argv) { return topos_example_regression(argc, argv); }
#endif
