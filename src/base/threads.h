/* Internal: the persistent thread pool behind tp_parallel_for.
 *
 * CONTRACT FOR CALLERS: split work over OUTPUTS. Each index of [0, n) must
 * produce its own outputs from read-only inputs, with a fixed summation order
 * inside the index, so the result never depends on how [0, n) was cut into
 * ranges, i.e. never on the thread count (ARCHITECTURE promise 3). Never
 * accumulate into shared state across ranges; a reduction that must be split
 * uses a fixed tree whose shape does not depend on the thread count.
 *
 * The pool has topos_threads() - 1 workers, created at the first parallel
 * call, rebuilt when topos_set_threads changes the size, joined at exit.
 * Workers spin briefly on a generation counter after each job (so the
 * back-to-back calls of a decode step are cheap), then sleep on a condition
 * variable. */
#ifndef TP_BASE_THREADS_H
#define TP_BASE_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "topos/base.h"

#define TP_MAX_THREADS 256

typedef void (*tp_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn(ctx, begin, end) over contiguous ranges covering [0, n) exactly
 * once each, at most one range per thread and each range at least grain
 * long (grain < 1 counts as 1; one range when n < 2 * grain), on the pool
 * plus the calling thread; returns when every range is done. n <= 0 calls
 * nothing. fn may run on any thread, concurrently with other ranges.
 * Runs inline (one call over [0, n)) when called from inside a range (nested
 * parallelism), when only one range is possible, or when another thread of
 * the process is using the pool at that moment. */
void tp_parallel_for(int64_t n, int64_t grain, tp_range_fn fn, void *ctx);

/* How many ranges tp_parallel_for(n, grain, ...) uses for `threads` threads
 * (min(threads, n / grain), at least 1; 0 when n <= 0). */
int tp_parallel_range_count(int64_t n, int64_t grain, int threads);
/* Range `index` of `ranges` over [0, n): sizes differ by at most one, the
 * longer ones first. */
void tp_parallel_range(int64_t n, int ranges, int index, int64_t *begin, int64_t *end);

/* True on a pool worker or while the caller runs its own range. */
bool tp_in_parallel_region(void);

/* Parses a TOPOS_THREADS value: decimal 1..256, spaces around allowed.
 * Returns false (and leaves *out alone) for anything else. */
bool tp_threads_parse(const char *text, int *out);

/* The pool size used when topos_set_threads was never called, for a given
 * TOPOS_THREADS value (NULL or invalid: the cores this process may run on). */
int tp_threads_default_for(const char *env_value);

/* Joins the workers and frees the pool (a later call creates it again).
 * Registered with atexit; tests may call it. Must not be called from inside
 * a parallel region. */
void tp_threads_shutdown(void);

/* Workers currently running (pool size - 1); 0 before the first parallel call. */
int tp_threads_pool_workers(void);

#endif
