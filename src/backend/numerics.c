/* The numerics posture: a thread-local value an engine sets per request.
 * Thread-local (not global) so two requests on two threads can run Exact and
 * Fast side by side. */
#include "backend/backend_internal.h"

static _Thread_local topos_numerics tp_posture = TOPOS_FAST;

topos_numerics tp_numerics_current(void) { return tp_posture; }

topos_numerics tp_numerics_enter(topos_numerics numerics) {
  topos_numerics previous = tp_posture;
  tp_posture = numerics == TOPOS_EXACT ? TOPOS_EXACT : TOPOS_FAST;
  return previous;
}

void tp_numerics_restore(topos_numerics previous) { tp_numerics_enter(previous); }

topos_numerics topos_numerics_current(void) { return tp_numerics_current(); }
topos_numerics topos_numerics_enter(topos_numerics numerics) { return tp_numerics_enter(numerics); }
void topos_numerics_restore(topos_numerics previous) { tp_numerics_restore(previous); }

const char *topos_numerics_name(topos_numerics numerics) {
  return numerics == TOPOS_EXACT ? "exact" : "fast";
}
