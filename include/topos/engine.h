/* topos — engine tier: requests and compiled plans.
 *
 * A request names what a caller wants from a network: roots (the results),
 * observed nodes (extra readable values), whether the run will be
 * differentiated (backward) and the numerics posture. Compiling it gives a
 * plan:
 *   - pruning: only ancestors of roots and observe are evaluated;
 *   - kept values: roots and observed nodes, and in a backward plan the values
 *     a backward rule reads (the operands of mul, the output of exp, ...);
 *     every other value is dropped right after its last reader;
 *   - one arena per run, laid out by liveness: each fresh result (not a view)
 *     gets a byte range, reused by later results once every reader of the
 *     buffer (views included) has run; kernels write straight into it; an
 *     elementwise fused step that is the last reader of an input may write
 *     its result over that input (swiglu over its gate);
 *   - patterns may replace a group of nodes by one fused step (matmul with
 *     bias, rmsnorm, rope, softmax, attention, swiglu, convolutions, ...).
 * A plan "changes where values live, never what is computed": its runs make
 * the interpreter's kernel calls on the same operands in the same order, so
 * they give the interpreter's bits — under Exact always; under Fast as long
 * as no envelope kernel engages (the acceleration tier states its envelope).
 * Plans of both postures may be compiled from one network and used together.
 *
 * Sinks. A forward plan may have sinks (topos_plan_compile_sinks): values
 * its runs hand to a callback (topos_plan_forward_sink) the moment they are
 * computed, and
 * then treats as any other intermediate: dropped after their last reader,
 * their bytes reused. A value a caller only copies out (a llama chunk's new
 * keys and values, bound for the cache) need not hold its arena range to the
 * end of the run. A sink is evaluated as a root is (its ancestors too) but
 * is not readable unless it is also a root or observed, and no fused step
 * hides it. Bits are unchanged: the same kernels run on the same operands.
 *
 * Runs made by a plan are ordinary topos_run objects: topos_run_read answers
 * roots and observed nodes only, topos_run_backward works on backward plans
 * (the loss must be a root or observed) and gives TOPOS_ERR_STATE on
 * forward-only ones.
 *
 * Memory. A run owns its arena. Tensors read from it (topos_run_read, the
 * gradients of topos_run_backward) are refcounted views of run memory and
 * stay valid for as long as the caller holds them, even after the run is
 * freed. A plan keeps its run contexts (arena, scratch for kernel temporaries
 * and the backward sweep, tensor headers, the gradient field) and gives them
 * to later runs: once the first runs have sized them, a forward + backward
 * step performs no heap allocation, provided the caller releases what it
 * read and frees the field and the run before the next step (a tensor still
 * held only makes the next run take fresh memory; it is never overwritten).
 *
 * Threads. Plans are immutable apart from their pool of run contexts (which
 * is locked) and may be run from many threads at once; each run and the field
 * made from it are used by one thread at a time. A plan keeps what it needs
 * from the network (freeing the network first is fine), and runs and fields
 * keep their plan alive (freeing the plan first is fine). */
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

/* Called once per sink and run, in evaluation order, with the sink's index in
 * request->sinks and its value: a view of run memory, valid during the call
 * only. A status other than TOPOS_OK stops the run and is returned by
 * topos_plan_forward_sink. */
typedef topos_status (*topos_sink_fn)(void *user, size_t sink, const topos_tensor *value);

typedef struct topos_plan topos_plan;

/* What a plan evaluates and stores; element counts, not bytes. */
typedef struct topos_plan_stats {
  uint32_t nodes;           /* nodes in the network */
  uint32_t evaluated;       /* after pruning (a fused group counts once) */
  uint32_t readable;        /* roots and observed nodes */
  int64_t retain_all;       /* elements if every evaluated value were kept (counts saturate at INT64_MAX) */
  int64_t peak;             /* forward plans: peak live elements; backward: the release floor */
  uint32_t peak_node;       /* node at which the peak is reached */
  int64_t arena_bytes;      /* static buffer plan: one arena holding every fresh result */
  int64_t unshared_bytes;   /* the same results without buffer reuse */
  uint32_t steps;           /* kernel calls and fused steps a run performs */
  uint32_t fused;           /* steps that replace a group of nodes (patterns) */
} topos_plan_stats;

/* Compiles request against net (see the top of this file). *out belongs to
 * the caller (topos_plan_free). Errors: TOPOS_ERR_INVALID_ARGUMENT (no root,
 * unknown numerics, an invalid symbol), TOPOS_ERR_FOREIGN (a root or
 * observed symbol from another network) and
 * TOPOS_ERR_OUT_OF_MEMORY; *out is NULL then. */
TOPOS_API topos_status topos_plan_compile(const topos_network *net, const topos_request *request,
                                          topos_plan **out);
/* topos_plan_compile with sinks[0 .. n_sinks - 1] (see Sinks): request may
 * then have no root. Further errors: TOPOS_ERR_INVALID_ARGUMENT for sinks in
 * a backward request or an invalid sink symbol, TOPOS_ERR_FOREIGN for one
 * from another network. */
TOPOS_API topos_status topos_plan_compile_sinks(const topos_network *net, const topos_request *request,
                                                const topos_sym *sinks, size_t n_sinks,
                                                topos_plan **out);
/* Drops the caller's reference; runs and fields still alive keep the plan
 * until they are freed. NULL is fine. */
TOPOS_API void topos_plan_free(topos_plan *plan);
/* Runs the plan; feeds and errors as topos_network_forward. *out belongs to
 * the caller (topos_run_free); see "Memory" above. */
TOPOS_API topos_status topos_plan_forward(const topos_plan *plan, const topos_params *params,
                                          const topos_feed *feeds, size_t n_feeds,
                                          topos_run **out);
/* topos_plan_forward for a plan with sinks: sink(user, k, value) as each is
 * computed. topos_plan_forward refuses such a plan (TOPOS_ERR_INVALID_ARGUMENT),
 * and this one a NULL sink for it; a plan without sinks never calls it. */
TOPOS_API topos_status topos_plan_forward_sink(const topos_plan *plan, const topos_params *params,
                                               const topos_feed *feeds, size_t n_feeds,
                                               topos_sink_fn sink, void *user, topos_run **out);
/* Releases what the plan keeps between runs for the next one (idle run
 * contexts: their arena, scratch and recycled headers); the next run
 * allocates them afresh. For a caller that alternates between many plans and
 * wants the memory of one, not of all (the llama context trims the plan it
 * leaves). Runs still alive are untouched. NULL is fine. */
TOPOS_API void topos_plan_trim(topos_plan *plan);
TOPOS_API topos_numerics topos_plan_numerics(const topos_plan *plan);
TOPOS_API topos_status topos_plan_stats_get(const topos_plan *plan, topos_plan_stats *out);
/* Writes the plan as text into buf (always NUL-terminated when size > 0) and
 * returns the length it needed, like snprintf. One line per evaluated node:
 *   "  %4u  %-16s %-20s %-16s %s" index, op (source kind, or "fused:NAME" for
 * the root of a fused group), dtype+shape, liveness, buffer
 * with liveness one of "kept" (readable), "retained" (read by a backward
 * rule), "freed after N" (dropped after node N reads it), "sink, freed
 * after N" (handed to the sink, then as freed after N) or "fused into N"
 * (computed inside node N's fused step), and buffer one of "source" (the
 * caller's tensor), "view" (no bytes of its own), "arena [A,B)" (its byte
 * range in the run's arena) or "-" (fused away); then the summary lines
 *   "plan: forward|retain; E of N nodes evaluated, R readable; numerics exact|fast"
 *   "steps: S (F fused)"   (kernel calls and fused steps per run)
 *   "live volume: peak P elements at node I, retain-all T"           (forward)
 *   "live volume: retain-all T, release floor F at node I"           (backward)
 *   "arena: A bytes for B buffers, U without reuse"
 * where the arena line is the peak of the run's arena against the sum of all
 * fresh results (a step written over its input shows the input's range). */
TOPOS_API size_t topos_plan_describe(const topos_plan *plan, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
