/* topos — engine tier: requests and compiled plans.
 *
 * A request names what a caller wants from a network: roots (the results),
 * observed nodes (extra readable values), whether the run will be
 * differentiated (backward) and the numerics posture. Compiling it gives a
 * plan: only ancestors of roots and observe are evaluated (pruning); in a
 * forward-only plan each value that is not readable is released right after
 * its last consumer (liveness); a backward plan keeps every evaluated value
 * for the reverse sweep. A plan "changes what is stored, never what is
 * computed": its runs perform exactly the interpreter's kernel calls, so they
 * give the interpreter's bits (under Exact always; under Fast as long as no
 * envelope kernel engages — none does yet).
 *
 * Runs made by a plan are ordinary topos_run objects: topos_run_read answers
 * roots and observed nodes only, topos_run_backward works on backward plans
 * and gives TOPOS_ERR_STATE on forward-only ones.
 *
 * Plans are immutable and may be run from many threads at once; a plan keeps
 * what it needs from the network (freeing the network first is fine). */
#ifndef TOPOS_ENGINE_H
#define TOPOS_ENGINE_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum topos_numerics {
  TOPOS_NUMERICS_FAST = 0, /* default: backends may reorder within a stated envelope */
  TOPOS_NUMERICS_EXACT = 1 /* the reference bits, in every build and on every backend */
} topos_numerics;

typedef struct topos_request {
  const topos_sym *roots; /* at least one */
  size_t n_roots;
  const topos_sym *observe;
  size_t n_observe;
  int backward;           /* keep values for topos_run_backward */
  topos_numerics numerics;
} topos_request;

typedef struct topos_plan topos_plan;

/* What a plan evaluates and stores; element counts, not bytes. */
typedef struct topos_plan_stats {
  uint32_t nodes;           /* nodes in the network */
  uint32_t evaluated;       /* after pruning */
  uint32_t readable;        /* roots and observed nodes */
  int64_t retain_all;       /* elements if every evaluated value were kept */
  int64_t peak;             /* forward plans: peak live elements; backward: the release floor */
  uint32_t peak_node;       /* node at which the peak is reached */
  int64_t arena_bytes;      /* static buffer plan: one arena holding every fresh result */
  int64_t unshared_bytes;   /* the same results without buffer reuse */
} topos_plan_stats;

TOPOS_API topos_status topos_plan_compile(const topos_network *net, const topos_request *request,
                                          topos_plan **out);
TOPOS_API void topos_plan_free(topos_plan *plan);
/* Runs the plan; feeds and errors as topos_network_forward. */
TOPOS_API topos_status topos_plan_forward(const topos_plan *plan, const topos_params *params,
                                          const topos_feed *feeds, size_t n_feeds,
                                          topos_run **out);
TOPOS_API topos_numerics topos_plan_numerics(const topos_plan *plan);
TOPOS_API topos_status topos_plan_stats_get(const topos_plan *plan, topos_plan_stats *out);
/* Writes the plan as text into buf (always NUL-terminated when size > 0) and
 * returns the length it needed, like snprintf. One line per evaluated node:
 *   "  %4u  %-16s %-20s %s" index, op (or source kind), dtype+shape, liveness
 * with liveness one of "kept" (readable), "freed after N" (forward plans),
 * "retained" (read by a backward rule) or "releasable after N" (backward
 * plans), then the summary lines
 *   "plan: forward|retain; E of N nodes evaluated, R readable; numerics exact|fast"
 *   "live volume: peak P elements at node I, retain-all T"           (forward)
 *   "live volume: retain-all T, release floor F at node I"           (backward)
 *   "arena: A bytes for B buffers, U without reuse"
 * The arena line is the static buffer plan: results that are never live at
 * the same time share bytes (views keep their source alive; nothing is written
 * in place). */
TOPOS_API size_t topos_plan_describe(const topos_plan *plan, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
