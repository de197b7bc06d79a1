/* XOR: the four-row truth table learned by an MLP [2,8,1] with tanh and MSE
 * (targets -1/+1), Adam. Prints the predictions and the final loss.
 * Also `topos train xor`. */
#include "common/train_util.h"
#include "common/mlp_util.h"

int topos_example_xor(int argc, char **argv) {
  ex_flags flags = {.steps = 500, .batch = 4, .lr = 0.05, .seed = 7, .out = "."};
  int parsed = ex_parse_flags(argc, argv, &flags, "(no data: the truth table)\n");
  if (parsed) return parsed == 1 ? 0 : 2;
  int rc = 0;
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *plan = NULL, *eval = NULL;
  topos_optimizer *opt = NULL;
  topos_tensor *xt = NULL, *yt = NULL;
  ex_curve curve = {0};
  static const float xs[8] = {0, 0, 0, 1, 1, 0, 1, 1}, ys[4] = {-1, 1, 1, -1};
  int64_t xshape[2] = {4, 2}, yshape[2] = {4, 1};
  EX_TRY("data", topos_tensor_from_f32(TOPOS_F32, 2, xshape, xs, &xt));
  EX_TRY("data", topos_tensor_from_f32(TOPOS_F32, 2, yshape, ys, &yt));
  topos_rng rng = topos_rng_seed(flags.seed);
  EX_TRY("tape", topos_tape_new(&tape));
  ex_mlp mlp;
  int64_t sizes[3] = {2, 8, 1};
  ex_mlp_new(tape, sizes, 3, TOPOS_ACT_TANH, &rng, &mlp);
  topos_sym x = topos_tape_input(tape, xt, "x");
  topos_sym y = topos_tape_input(tape, yt, "y");
  topos_sym pred = topos_tape_tanh(tape, ex_mlp_apply(tape, &mlp, x));
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
    ex_progress_step(&progress, step, lv, 100);
  }
  float p[4];
  EX_TRY("predict", ex_eval(eval, params, NULL, 0, pred, p, 4));
  for (int i = 0; i < 4; ++i)
    printf("  %g xor %g -> %+.3f (target %+g)\n", xs[2 * i], xs[2 * i + 1], p[i], ys[i]);
  printf("xor final loss: %.6f after %ld steps\n", lv, flags.steps);
  char chart[4096];
  if (ex_curve_svg(&curve, ex_path(chart, sizeof chart, flags.out, "xor-loss.svg"),
                   "XOR: training loss") == 0)
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
int main(int argc, char **argv) { return topos_example_xor(argc, argv); }
#endif
