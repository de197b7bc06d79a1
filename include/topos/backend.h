/* topos — backend tier: the numerics posture, the acceleration chain and the
 * element seam.
 *
 * Backends are build options (TOPOS_SIMD, TOPOS_BLAS, TOPOS_CUDA,
 * TOPOS_ACCELERATE, TOPOS_METAL). Enabling one is the whole activation: the
 * op kernels offer each task (a matrix product, a map, an elementwise binary)
 * to the chain of its formula, greediest member first; a member may decline
 * (size under its threshold, a layout it cannot express, a posture it does
 * not meet) and the task falls through to the next member and finally to the
 * built-in path. A member that fails poisons itself: it keeps the reason for
 * topos_backend_status() and declines from then on. Slow, never wrong.
 *
 * Numerics. TOPOS_NUMERICS_EXACT computes the reference bits in every build: only
 * members whose coverage is bit-identical serve it. TOPOS_NUMERICS_FAST (the default)
 * also admits envelope members, which reorder float sums (f32 products stay
 * within NMSE 1e-6 of the reference) and are bitwise repeatable run to run
 * and at every thread count. The posture is a thread-local value; an engine
 * sets it per request with topos_numerics_enter() / topos_numerics_restore(). */
#ifndef TOPOS_BACKEND_H
#define TOPOS_BACKEND_H

#include "engine.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- numerics posture (thread-local; every new thread starts in Fast).
 * topos_numerics (TOPOS_NUMERICS_FAST, TOPOS_NUMERICS_EXACT) is the engine's
 * request field; plans enter it while they run. Eager op calls use the
 * calling thread's posture, set here. */
TOPOS_API topos_numerics topos_numerics_current(void);
/* Sets this thread's posture and returns the previous one, for
 *   topos_numerics saved = topos_numerics_enter(TOPOS_NUMERICS_EXACT); ...;
 *   topos_numerics_restore(saved); */
TOPOS_API topos_numerics topos_numerics_enter(topos_numerics numerics);
TOPOS_API void topos_numerics_restore(topos_numerics previous);
TOPOS_API const char *topos_numerics_name(topos_numerics numerics); /* "fast", "exact" */

/* ---- backends: X(ENUM, name) in chain-listing order */
#define TOPOS_BACKEND_LIST(X) \
  X(DEFAULT, "default")       \
  X(SIMD, "simd")             \
  X(BLAS, "blas")             \
  X(CUDA, "cuda")             \
  X(ACCELERATE, "accelerate") \
  X(METAL, "metal")

typedef enum topos_backend {
#define TOPOS_BACKEND_ENUM_ROW(E, name) TOPOS_BACKEND_##E,
  TOPOS_BACKEND_LIST(TOPOS_BACKEND_ENUM_ROW)
#undef TOPOS_BACKEND_ENUM_ROW
  TOPOS_BACKEND_COUNT
} topos_backend;

/* The tasks a chain serves. Maps are exp, ln, sqrt, tanh (plus neg and relu on
 * the built-in rung); binaries are add, sub, mul, div, pow, maximum, step. */
#define TOPOS_FORMULA_LIST(X)      \
  X(GEMM_F32, "gemm f32")          \
  X(GEMM_F64, "gemm f64")          \
  X(MAP_F32, "map f32")            \
  X(MAP_F64, "map f64")            \
  X(BINARY_F32, "binary f32")      \
  X(BINARY_F64, "binary f64")

typedef enum topos_formula {
#define TOPOS_FORMULA_ENUM_ROW(E, name) TOPOS_FORMULA_##E,
  TOPOS_FORMULA_LIST(TOPOS_FORMULA_ENUM_ROW)
#undef TOPOS_FORMULA_ENUM_ROW
  TOPOS_FORMULA_COUNT
} topos_formula;

/* How a backend serves a formula. Bit-identical serves both postures;
 * envelope serves Fast only. */
typedef enum topos_fidelity {
  TOPOS_FIDELITY_ABSENT = 0,
  TOPOS_FIDELITY_BIT_IDENTICAL,
  TOPOS_FIDELITY_ENVELOPE
} topos_fidelity;

typedef enum topos_backend_state {
  TOPOS_BACKEND_NOT_COMPILED, /* the build option is off */
  TOPOS_BACKEND_UNAVAILABLE,  /* compiled, but this machine cannot run it (reason given) */
  TOPOS_BACKEND_POISONED,     /* it failed once; the reason is kept, it declines from then on */
  TOPOS_BACKEND_READY
} topos_backend_state;

TOPOS_API const char *topos_backend_name(topos_backend backend);
TOPOS_API topos_status topos_backend_parse(const char *name, topos_backend *out);
TOPOS_API const char *topos_formula_name(topos_formula formula);
TOPOS_API const char *topos_fidelity_name(topos_fidelity fidelity); /* "-", "bit-identical", "envelope" */
TOPOS_API const char *topos_backend_state_name(topos_backend_state state);
/* Build fact: 1 when the backend's option was on. */
TOPOS_API int topos_backend_compiled(topos_backend backend);
/* Build-independent coverage matrix: the fidelity with which a backend serves a formula. */
TOPOS_API topos_fidelity topos_backend_coverage(topos_backend backend, topos_formula formula);
/* The members of a formula's chain, greediest first (the default rung last);
 * writes up to `capacity` entries and returns the chain length. Every build
 * has the same chains; members not compiled simply never serve. */
TOPOS_API int topos_formula_chain(topos_formula formula, topos_backend *out, int capacity);
/* Smallest task a member accepts for a formula: flops (2mnk) for gemm,
 * elements for maps and binaries. 0 when there is no size threshold. */
TOPOS_API int64_t topos_backend_threshold(topos_backend backend, topos_formula formula);

/* The backend's state, forcing its lazy setup (for cuda: opening the
 * libraries, finding a device, creating the handle and warming it up).
 * Writes the reason (NOT_COMPILED, UNAVAILABLE, POISONED) or a description of
 * the kernels (READY) into reason when size > 0. Answers in every build. */
TOPOS_API topos_backend_state topos_backend_state_of(topos_backend backend, char *reason,
                                                     size_t size);
/* TOPOS_OK when the backend is ready; otherwise TOPOS_ERR_BACKEND with a
 * message "cuda: unavailable: no CUDA device (...)" (loud use: check at
 * start-up and stop rather than run slow). Forces the lazy setup. */
TOPOS_API topos_status topos_backend_status(topos_backend backend);

/* Loud mode (process-wide; also TOPOS_BACKEND_LOUD=1 in the environment):
 * when a task reaches a compiled member that is unavailable, poisoned or
 * fails, the op returns TOPOS_ERR_BACKEND instead of falling back. Declines
 * by size, layout or posture are never errors. */
TOPOS_API void topos_backend_set_loud(int loud);
TOPOS_API int topos_backend_loud(void);
/* Runtime switch (process-wide, default on): a disabled backend never
 * serves. The default rung can be disabled too, leaving the reference loops
 * (the bench uses this to measure each rung). */
TOPOS_API void topos_backend_set_enabled(topos_backend backend, int enabled);
TOPOS_API int topos_backend_enabled(topos_backend backend);

/* ---- the element seam
 *
 * Acceleration enters through two hooks on each element type's descriptor:
 * gemm (a matrix product task whose operands are spans with per-axis strides,
 * so views pass through unmaterialized) and map (an elementwise operation over
 * a contiguous buffer). Hooks answer TOPOS_UNSUPPORTED to decline: the task
 * then runs on the built-in path. f32 and f64 forward their hooks to the
 * chain; a user element supplies its own (see examples/double_double.c). */

/* C = A x B with A m x k, B k x n: a[i*a_row_stride + p*a_col_stride],
 * b[p*b_row_stride + j*b_col_stride] (any strides, 0 = broadcast, negative =
 * reversed), c[i*c_row_stride + j] (overwritten, must not overlap A or B).
 * Element counts, not bytes. m, n, k >= 1. The built-in order: each C element
 * is seeded with the first product a[i,0]*b[0,j] and accumulates k
 * ascending, one rounding per multiply and per add. */
typedef struct topos_gemm_task {
  int64_t m, n, k;
  const void *a;
  int64_t a_row_stride, a_col_stride;
  const void *b;
  int64_t b_row_stride, b_col_stride;
  void *c;
  int64_t c_row_stride;
} topos_gemm_task;

typedef enum topos_map_op {
  TOPOS_MAP_EXP,
  TOPOS_MAP_LN,
  TOPOS_MAP_SQRT,
  TOPOS_MAP_TANH,
  TOPOS_MAP_NEG,
  TOPOS_MAP_RELU,
  TOPOS_MAP_COUNT
} topos_map_op;
TOPOS_API const char *topos_map_op_name(topos_map_op op); /* "exp", ... */

typedef struct topos_element topos_element;
struct topos_element {
  const char *name;
  size_t size; /* bytes per element */
  /* Hooks (NULL = always the built-in path). */
  topos_status (*gemm)(const topos_element *self, const topos_gemm_task *task);
  topos_status (*map)(const topos_element *self, topos_map_op op, const void *in, void *out,
                      int64_t count);
  /* Scalar arithmetic the built-in paths of a user element use: out = a*b,
   * out = a+b, out = op(in). Unused (may be NULL) for the built-in types. */
  void (*multiply)(const void *a, const void *b, void *out);
  void (*add)(const void *a, const void *b, void *out);
  topos_status (*apply)(topos_map_op op, const void *in, void *out);
  void *context; /* for the hooks; topos never reads it */
};

/* The descriptor of a float dtype (f32 and f64 forward to the chain; bf16
 * and f16 have no hooks); NULL for other dtypes. Static storage. */
TOPOS_API const topos_element *topos_element_of(topos_dtype dtype);
/* Replaces the hooks of f32 or f64 (element->gemm / ->map; NULL hooks mean
 * the built-in path, other fields are ignored); NULL restores the chain.
 * The descriptor must outlive its use. Process-wide; not for use while other
 * threads run ops. */
TOPOS_API topos_status topos_element_override(topos_dtype dtype, const topos_element *element);
/* Runs a product through the element's gemm hook; when it declines, on the
 * built-in path (the reference order through multiply/add for user elements,
 * the built-in kernels for f32/f64). */
TOPOS_API topos_status topos_element_gemm(const topos_element *element,
                                          const topos_gemm_task *task);
/* Runs a map over count contiguous elements (in and out may be equal):
 * the hook, then the built-in path (apply per element for user elements). */
TOPOS_API topos_status topos_element_map(const topos_element *element, topos_map_op op,
                                         const void *in, void *out, int64_t count);

#ifdef __cplusplus
}
#endif
#endif
