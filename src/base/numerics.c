/* The per-thread numerics posture (see numerics.h). */
#include "base/numerics.h"

static _Thread_local int tp_exact;

int tp_numerics_exact(void) { return tp_exact; }

int tp_numerics_enter(int exact) {
  int previous = tp_exact;
  tp_exact = exact != 0;
  return previous;
}

void tp_numerics_leave(int previous) { tp_exact = previous; }
