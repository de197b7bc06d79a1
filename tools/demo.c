/* `topos demo`: the main job. Trains the MNIST LeNet (examples/mnist.c, the
 * same code as `topos train mnist`) on 2 threads for a bounded time — MNIST
 * when it is found, else Fashion-MNIST — then prints the test accuracy,
 * ms/step and where the loss chart and the GGUF checkpoint were written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"

int topos_example_mnist(int argc, char **argv); /* examples/mnist.c, compiled in tools/train.c */

static int tp_cmd_demo(int argc, char **argv) {
  const char *out = "topos-demo", *seconds = "100", *threads = "2", *steps = "2000";
  const char *data = NULL;
  for (int i = 1; i < argc; i += 2) { /* every flag takes a value */
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: topos demo [--out DIR] [--seconds S] [--threads N] [--steps N] [--data DIR]\n"
             "Trains the MNIST LeNet (Fashion-MNIST when MNIST is absent) for at most S seconds\n"
             "of training (default 100) on N threads (default 2), then reports test accuracy,\n"
             "ms/step, the loss chart (SVG) and the checkpoint (GGUF) in DIR (default "
             "topos-demo).\n");
      return 0;
    }
    if (!v) {
      fprintf(stderr, "topos demo: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--out")) out = v;
    else if (!strcmp(argv[i], "--seconds")) seconds = v;
    else if (!strcmp(argv[i], "--threads")) threads = v;
    else if (!strcmp(argv[i], "--steps")) steps = v;
    else if (!strcmp(argv[i], "--data")) data = v;
    else {
      fprintf(stderr, "topos demo: unknown flag %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "topos demo: cannot create %s: %s\n", out, strerror(errno));
    return 1;
  }
  printf("topos demo: training the MNIST LeNet (conv 1->8, pool, conv 8->16, pool, linear "
         "784->10)\n            for up to %s s on %s threads; results go to %s/\n",
         seconds, threads, out);
  char *args[16];
  int n = 0;
  args[n++] = "topos demo";
  args[n++] = "--threads", args[n++] = (char *)threads;
  args[n++] = "--steps", args[n++] = (char *)steps;
  args[n++] = "--max-seconds", args[n++] = (char *)seconds;
  args[n++] = "--out", args[n++] = (char *)out;
  if (data) args[n++] = "--data", args[n++] = (char *)data;
  args[n] = NULL;
  return topos_example_mnist(n, args);
}

TOPOS_COMMAND("demo", "train the MNIST LeNet for about two minutes and report accuracy",
              tp_cmd_demo)
