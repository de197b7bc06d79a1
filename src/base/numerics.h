/* Internal: the numerics posture of the current thread.
 *
 * Exact admits only kernels that reproduce the reference bits; Fast (the
 * default) also admits envelope kernels. A plan sets the posture of its
 * request while it runs (and a run's backward sweep re-enters it), so kernels
 * and backends deep in the call tree can ask without it being threaded
 * through every signature. Saved and restored around each entry: scopes nest. */
#ifndef TP_BASE_NUMERICS_H
#define TP_BASE_NUMERICS_H

/* 1 when the current thread runs under Exact, 0 under Fast. */
int tp_numerics_exact(void);
/* Sets the posture (exact != 0 => Exact) and returns the previous one. */
int tp_numerics_enter(int exact);
/* Restores a posture returned by tp_numerics_enter. */
void tp_numerics_leave(int previous);

#endif
