/* The metal member. On non-Apple systems it reports itself not available;
 * on macOS its GPU kernels are not written yet, so it says that instead of
 * pretending: both are status answers, never build failures. */
#include "backend/backend_internal.h"

static topos_status tp_metal_setup(void) {
#if defined(__APPLE__)
  return tp_fail(TOPOS_ERR_BACKEND, "not implemented: this build has no Metal kernels yet");
#else
  return tp_fail(TOPOS_ERR_BACKEND, "platform unsupported: Metal exists only on macOS");
#endif
}

static const char *tp_metal_describe(void) { return "metal"; }

const tp_kernels tp_kernels_metal = {tp_metal_setup, NULL, NULL, NULL, NULL, tp_metal_describe};
