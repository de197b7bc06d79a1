/* Smoke runs of the small training examples (the programs under examples/,
 * compiled in here as `topos train` compiles them): a few steps each, exit
 * status 0, chart written. The accuracy runs are in BENCHMARKS.md. */
#include <stdio.h>
#include <sys/stat.h>

#include "test.h"

#define EX_NO_MAIN
#include "examples/makemore.c"
#include "examples/mnist.c"
#include "examples/moons.c"
#include "examples/regression.c"
#include "examples/xor.c"

static int tn_run(int (*fn)(int, char **), const char *steps, const char *chart) {
  char *argv[] = {"smoke", "--steps", (char *)steps, "--quiet", "--out", (char *)tt_tmpdir(),
                  NULL};
  fflush(stdout);
  int rc = fn(6, argv);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", tt_tmpdir(), chart);
  struct stat st;
  int written = stat(path, &st) == 0 && st.st_size > 100;
  remove(path);
  return rc == 0 && written;
}

TEST(nn_examples_smoke) {
  CHECK(tn_run(topos_example_xor, "20", "xor-loss.svg"));
  CHECK(tn_run(topos_example_moons, "20", "moons-loss.svg"));
  CHECK(tn_run(topos_example_regression, "20", "regression-loss.svg"));
  char *bad[] = {"smoke", "--steps", "x", NULL};
  CHECK(topos_example_xor(3, bad) == 2);
  char *help[] = {"smoke", "--help", NULL};
  CHECK(topos_example_moons(2, help) == 0);
}

/* Without data the programs say where they looked and exit 3 (no crash). */
TEST(nn_examples_missing_data) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/no-such-data", tt_tmpdir());
  char *mnist[] = {"smoke", "--data", dir, "--out", (char *)tt_tmpdir(), NULL};
  fflush(stdout);
  CHECK(topos_example_mnist(5, mnist) == 3);
  char *names[] = {"smoke", "--data", dir, "--out", (char *)tt_tmpdir(), NULL};
  CHECK(topos_example_makemore(5, names) == 3);
  char *bad[] = {"smoke", "--fashion", "--batch", "0", NULL};
  CHECK(topos_example_mnist(4, bad) == 2);
}
