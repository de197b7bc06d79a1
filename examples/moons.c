/* Two moons: 200 points on two interleaved half circles with normal noise
 * (sigma 0.1), classified by an MLP [2,16,16,2] (relu) with cross-entropy and
 * Adam. Prints "classified N of 200". Also `topos train moons`. */
#include "common/train_util.h"
#include "common/mlp_util.h"

#define EX_MOONS 200

int topos_example_moons(int argc, char **argv) {
  ex_flags flags = {.steps = 1000, .batch = EX_MOONS, .lr = 0.01, .seed = 3, .out = "."};
  int parsed = ex_parse_flags(argc, argv, &flags, "(no data: points are generated from --seed)\n");
  if (parsed) return parsed == 1 ? 0 : 2;
  int rc = 0;
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *plan = NULL, *eval = NULL;
  topos_optimizer *opt = NULL;
  topos_tensor *xt = NULL, *yt = NULL;
  ex_curve curve = {0};
  float xs[2 * EX_MOONS];
  int32_t labels[EX_MOONS];
  topos_rng data_rng = topos_rng_seed(flags.seed);
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < EX_MOONS; ++i) {
    int c = i % 2;
    double a = pi * topos_rng_unit(&data_rng);
    double px = c ? 1.0 - cos(a) : cos(a), py = c ? 0.5 - sin(a) : sin(a);
    xs[2 * i] = (float)(px + 0.1 * topos_rng_normal(&data_rng));
    xs[2 * i + 1] = (float)(py + 0.1 * topos_rng_normal(&data_rng));
    labels[i] = c;
  }
  int64_t xshape[2] = {EX_MOONS, 2}, yshape[1] = {EX_MOONS};
  EX_TRY("data", topos_tensor_from_f32(TOPOS_F32, 2, xshape, xs, &xt));
  EX_TRY("data", topos_tensor_from_data(TOPOS_I32, 1, yshape, labels, sizeof labels, &yt));
  topos_rng rng = topos_rng_seed(flags.seed + 1);
  EX_TRY("tape", topos_tape_new(&tape));
  ex_mlp mlp;
  int64_t sizes[4] = {2, 16, 16, 2};
  ex_mlp_new(tape, sizes, 4, TOPOS_ACT_RELU, &rng, &mlp);
  topos_sym x = topos_tape_input(tape, xt, "x");
  topos_sym y = topos_tape_input(tape, yt, "y");
  topos_sym logits = ex_mlp_apply(tape, &mlp, x);
  topos_sym loss = topos_cross_entropy(tape, logits, y);
  EX_TRY("sealing", topos_tape_seal(&tape, &net));
  EX_TRY("parameters", topos_params_from_network(net, &params));
  topos_request req = {.roots = &loss, .n_roots = 1, .backward = 1};
  topos_request ereq = {.roots = &logits, .n_roots = 1};
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
    ex_progress_step(&progress, step, lv, 200);
  }
  float out[2 * EX_MOONS];
  EX_TRY("classify", ex_eval(eval, params, NULL, 0, logits, out, 2 * EX_MOONS));
  int correct = 0;
  for (int i = 0; i < EX_MOONS; ++i) correct += (out[2 * i + 1] > out[2 * i]) == labels[i];
  printf("moons: classified %d of %d (final loss %.4f)\n", correct, EX_MOONS, lv);
  char chart[4096];
  if (ex_curve_svg(&curve, ex_path(chart, sizeof chart, flags.out, "moons-loss.svg"),
                   "Two moons: training loss") == 0)
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
int main(int argc, char **argv) { return topos_example_moons(argc, argv); }
#endif
