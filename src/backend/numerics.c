/* The public face of the numerics posture. The posture itself is base's
 * thread-local value (base/numerics.h), which plans enter per request; eager
 * callers set it here. Thread-local so two requests on two threads can run
 * Exact and Fast side by side. */
#include "backend/backend_internal.h"
#include "base/numerics.h"

topos_numerics topos_numerics_current(void) {
  return tp_numerics_exact() ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST;
}

topos_numerics topos_numerics_enter(topos_numerics numerics) {
  return tp_numerics_enter(numerics == TOPOS_NUMERICS_EXACT) ? TOPOS_NUMERICS_EXACT
                                                             : TOPOS_NUMERICS_FAST;
}

void topos_numerics_restore(topos_numerics previous) {
  tp_numerics_leave(previous == TOPOS_NUMERICS_EXACT);
}

const char *topos_numerics_name(topos_numerics numerics) {
  return numerics == TOPOS_NUMERICS_EXACT ? "exact" : "fast";
}
