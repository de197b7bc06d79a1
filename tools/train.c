/* `topos train NAME [FLAGS]`: the training examples as subcommands. The
 * programs under examples/ are compiled in here unchanged (EX_NO_MAIN), so
 * `topos train mnist` and `example_mnist` are the same code. */
#include <string.h>

#include "tools/cli.h"

#define EX_NO_MAIN
#include "examples/makemore.c"
#include "examples/mnist.c"
#include "examples/moons.c"
#include "examples/regression.c"
#include "examples/xor.c"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} tp_trainer;

static const tp_trainer tp_trainers[] = {
    {"mnist", topos_example_mnist, "LeNet on MNIST (--fashion: Fashion-MNIST), SGD, test accuracy"},
    {"makemore", topos_example_makemore,
     "character MLP on names.txt (--transformer: one-block transformer), Adam, samples"},
    {"moons", topos_example_moons, "two half-moons, MLP [2,16,16,2], classified count"},
    {"xor", topos_example_xor, "XOR truth table, MLP [2,8,1], final loss"},
    {"regression", topos_example_regression, "noisy sin(x), MLP [1,16,1], final MSE"},
};

static int tp_cmd_train(int argc, char **argv) {
  size_t n = sizeof tp_trainers / sizeof tp_trainers[0];
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    FILE *out = argc < 2 ? stderr : stdout;
    fprintf(out, "usage: topos train NAME [--data PATH] [--steps N] [--batch N] [--lr X]\n"
                 "                  [--threads N] [--seed N] [--max-seconds S] [--out DIR]\n\n"
                 "models:\n");
    for (size_t i = 0; i < n; ++i)
      fprintf(out, "  %-12s %s\n", tp_trainers[i].name, tp_trainers[i].summary);
    fprintf(out, "\n'topos train NAME --help' lists a model's defaults.\n");
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < n; ++i)
    if (!strcmp(argv[1], tp_trainers[i].name)) {
      char label[64];
      snprintf(label, sizeof label, "topos train %s", tp_trainers[i].name);
      argv[1] = label;
      return tp_trainers[i].run(argc - 1, argv + 1);
    }
  fprintf(stderr, "topos train: no model named '%s' (see topos train --help)\n", argv[1]);
  return 2;
}

TOPOS_COMMAND("train", "train an example model: topos train NAME (list: topos train --help)",
              tp_cmd_train)
