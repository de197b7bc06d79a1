/* `topos backends`: the chains, the coverage matrix and each backend's
 * status in this build on this machine (status forces lazy setup, so cuda
 * opens its libraries and warms up here). */
#include <string.h>

#include "tools/cli.h"

static int tp_cmd_backends(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: topos backends\n\nPrints each backend's status, the coverage matrix and the\n"
           "chain of each formula (greediest first; the default rung closes every chain).\n");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "topos backends: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  printf("numerics posture: %s (this thread)%s\n\nbackends:\n",
         topos_numerics_name(topos_numerics_current()),
         topos_backend_loud() ? ", loud mode" : "");
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) {
    char reason[320];
    topos_backend_state state = topos_backend_state_of((topos_backend)b, reason, sizeof reason);
    printf("  %-11s %-13s %s\n", topos_backend_name((topos_backend)b),
           topos_backend_state_name(state), reason);
  }
  printf("\ncoverage (B = bit-identical, serves Exact and Fast; E = envelope, Fast only):\n  %-11s",
         "");
  for (int f = 0; f < TOPOS_FORMULA_COUNT; ++f) printf(" %-11s", topos_formula_name((topos_formula)f));
  printf("\n");
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) {
    printf("  %-11s", topos_backend_name((topos_backend)b));
    for (int f = 0; f < TOPOS_FORMULA_COUNT; ++f) {
      topos_fidelity fid = topos_backend_coverage((topos_backend)b, (topos_formula)f);
      printf(" %-11s", fid == TOPOS_FIDELITY_BIT_IDENTICAL ? "B"
                       : fid == TOPOS_FIDELITY_ENVELOPE    ? "E"
                                                           : "-");
    }
    printf("\n");
  }
  printf("\nchains (threshold: flops for gemm, elements for maps):\n");
  for (int f = 0; f < TOPOS_FORMULA_COUNT; ++f) {
    topos_backend chain[TOPOS_BACKEND_COUNT];
    int n = topos_formula_chain((topos_formula)f, chain, TOPOS_BACKEND_COUNT);
    printf("  %-11s", topos_formula_name((topos_formula)f));
    for (int i = 0; i < n; ++i) {
      int64_t t = topos_backend_threshold(chain[i], (topos_formula)f);
      char state[320];
      topos_backend_state s = topos_backend_state_of(chain[i], state, sizeof state);
      printf("%s%s", i ? " -> " : " ", topos_backend_name(chain[i]));
      if (t) printf(" (>= %lld)", (long long)t);
      if (s != TOPOS_BACKEND_READY) printf(" [%s]", topos_backend_state_name(s));
    }
    printf(" -> reference\n");
  }
  return 0;
}

TOPOS_COMMAND("backends", "acceleration chains, coverage and backend status", tp_cmd_backends)
