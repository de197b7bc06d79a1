/* `topos cpu`: the CPU features topos detected, and which ones
 * TOPOS_DISABLE_ISA masked off. */
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "tools/cli.h"

static int tp_cpu_command(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: topos cpu\n\nLists the CPU features topos uses (CPU and OS support both\n"
           "required). TOPOS_DISABLE_ISA=avx512,avx2,avx,vnni,amx,neon,all or single\n"
           "feature names masks features off.\n");
    return 0;
  }
  char line[512];
  topos_cpu_describe(line, sizeof line);
  printf("features: %s\n", line[0] ? line : "(none)");
  const char *spec = getenv("TOPOS_DISABLE_ISA");
  int unknown = 0;
  tp_cpu_disable_mask(spec, &unknown);
  if (spec && spec[0]) printf("TOPOS_DISABLE_ISA=%s\n", spec);
  if (unknown) fprintf(stderr, "topos cpu: %d unknown name(s) in TOPOS_DISABLE_ISA ignored\n", unknown);
  uint32_t unmasked = tp_cpu_features_unmasked();
  printf("\n%-12s %s\n", "feature", "state");
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f) {
    int present = topos_cpu_has((topos_cpu_feature)f);
    int detected = (unmasked >> f) & 1u;
    printf("%-12s %s\n", topos_cpu_feature_name((topos_cpu_feature)f),
           present ? "yes" : detected ? "masked" : "no");
  }
  printf("\nthreads: %d\n", topos_threads());
  return 0;
}

TOPOS_COMMAND("cpu", "list detected CPU features", tp_cpu_command)
