/* The acceleration chain: coverage matrix, chains, thresholds, per-backend
 * state (lazy setup, poison), loud mode and the runtime switch. Compiled in
 * every build: a backend whose option is off answers "not compiled" here and
 * its kernel table is never referenced. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_internal.h"
#include "base/numerics.h"

#define E TOPOS_FIDELITY_ENVELOPE
#define B TOPOS_FIDELITY_BIT_IDENTICAL
#define N TOPOS_FIDELITY_ABSENT
/* Columns: gemm f32, gemm f64, map f32, map f64, binary f32, binary f64. */
static const topos_fidelity tp_coverage[TOPOS_BACKEND_COUNT][TOPOS_FORMULA_COUNT] = {
    [TOPOS_BACKEND_DEFAULT] = {B, B, B, B, B, B},
    [TOPOS_BACKEND_SIMD] = {E, E, E, N, N, N},
    [TOPOS_BACKEND_BLAS] = {E, E, N, N, N, N},
    [TOPOS_BACKEND_CUDA] = {E, E, N, N, N, N},
    [TOPOS_BACKEND_ACCELERATE] = {E, E, E, E, N, N},
    [TOPOS_BACKEND_METAL] = {E, N, E, N, N, N},
};
#undef E
#undef B
#undef N

/* Smallest task each member takes: flops for products, elements for maps.
 * Below these, call and setup overhead beats the kernel (cuda and metal also
 * pay copies), so the next member is faster. */
static const int64_t tp_thresholds[TOPOS_BACKEND_COUNT][TOPOS_FORMULA_COUNT] = {
    [TOPOS_BACKEND_SIMD] = {1 << 13, 1 << 13, 1 << 6, 0, 0, 0},
    [TOPOS_BACKEND_BLAS] = {1 << 13, 1 << 13, 0, 0, 0, 0},
    [TOPOS_BACKEND_CUDA] = {1 << 24, 1 << 24, 0, 0, 0, 0},
    [TOPOS_BACKEND_ACCELERATE] = {1 << 13, 1 << 13, 1 << 7, 1 << 7, 0, 0},
    [TOPOS_BACKEND_METAL] = {1 << 25, 0, 1 << 19, 0, 0, 0},
};

/* Greediest first, by measurement (see `topos bench ladder`); the default
 * rung closes every chain. */
#define TP_CHAIN_MAX 8
static const topos_backend tp_chains[TOPOS_FORMULA_COUNT][TP_CHAIN_MAX] = {
    [TOPOS_FORMULA_GEMM_F32] = {TOPOS_BACKEND_ACCELERATE, TOPOS_BACKEND_METAL, TOPOS_BACKEND_CUDA,
                                TOPOS_BACKEND_BLAS, TOPOS_BACKEND_SIMD, TOPOS_BACKEND_DEFAULT,
                                TOPOS_BACKEND_COUNT},
    [TOPOS_FORMULA_GEMM_F64] = {TOPOS_BACKEND_ACCELERATE, TOPOS_BACKEND_CUDA, TOPOS_BACKEND_BLAS,
                                TOPOS_BACKEND_SIMD, TOPOS_BACKEND_DEFAULT, TOPOS_BACKEND_COUNT},
    [TOPOS_FORMULA_MAP_F32] = {TOPOS_BACKEND_METAL, TOPOS_BACKEND_ACCELERATE, TOPOS_BACKEND_SIMD,
                               TOPOS_BACKEND_DEFAULT, TOPOS_BACKEND_COUNT},
    [TOPOS_FORMULA_MAP_F64] = {TOPOS_BACKEND_ACCELERATE, TOPOS_BACKEND_DEFAULT,
                               TOPOS_BACKEND_COUNT},
    [TOPOS_FORMULA_BINARY_F32] = {TOPOS_BACKEND_DEFAULT, TOPOS_BACKEND_COUNT},
    [TOPOS_FORMULA_BINARY_F64] = {TOPOS_BACKEND_DEFAULT, TOPOS_BACKEND_COUNT},
};

static const tp_kernels *tp_kernels_of(topos_backend backend) {
  switch (backend) {
    case TOPOS_BACKEND_DEFAULT: return &tp_kernels_default;
#ifdef TOPOS_HAVE_SIMD
    case TOPOS_BACKEND_SIMD: return &tp_kernels_simd;
#endif
#ifdef TOPOS_HAVE_BLAS
    case TOPOS_BACKEND_BLAS: return &tp_kernels_blas;
#endif
#ifdef TOPOS_HAVE_CUDA
    case TOPOS_BACKEND_CUDA: return &tp_kernels_cuda;
#endif
#ifdef TOPOS_HAVE_ACCELERATE
    case TOPOS_BACKEND_ACCELERATE: return &tp_kernels_accelerate;
#endif
#ifdef TOPOS_HAVE_METAL
    case TOPOS_BACKEND_METAL: return &tp_kernels_metal;
#endif
    default: return NULL;
  }
}

static const char *const tp_option_names[TOPOS_BACKEND_COUNT] = {
    "", "TOPOS_SIMD", "TOPOS_BLAS", "TOPOS_CUDA", "TOPOS_ACCELERATE", "TOPOS_METAL"};

/* ---- per-backend state */
enum { TP_STATE_UNSET = -1 };
typedef struct tp_slot {
  pthread_mutex_t lock;
  atomic_int state; /* topos_backend_state, or TP_STATE_UNSET before setup */
  atomic_int inject_failure;
  atomic_int disabled;
  char reason[320];
} tp_slot;

static tp_slot tp_slots[TOPOS_BACKEND_COUNT] = {
#define TP_SLOT_ROW(E, name) {PTHREAD_MUTEX_INITIALIZER, TP_STATE_UNSET, 0, 0, ""},
    TOPOS_BACKEND_LIST(TP_SLOT_ROW)
#undef TP_SLOT_ROW
};

static atomic_int tp_loud = -1; /* -1: read TOPOS_BACKEND_LOUD once */
static _Thread_local topos_backend tp_last_served = TOPOS_BACKEND_COUNT;

static int tp_backend_valid(topos_backend b) { return (unsigned)b < TOPOS_BACKEND_COUNT; }
static int tp_formula_valid(topos_formula f) { return (unsigned)f < TOPOS_FORMULA_COUNT; }

/* Runs the lazy setup once; returns the state. */
static topos_backend_state tp_ensure(topos_backend backend) {
  tp_slot *slot = &tp_slots[backend];
  int state = atomic_load_explicit(&slot->state, memory_order_acquire);
  if (state != TP_STATE_UNSET) return (topos_backend_state)state;
  pthread_mutex_lock(&slot->lock);
  state = atomic_load_explicit(&slot->state, memory_order_relaxed);
  if (state == TP_STATE_UNSET) {
    const tp_kernels *k = tp_kernels_of(backend);
    if (!k) {
      snprintf(slot->reason, sizeof slot->reason, "not compiled (build with %s=ON)",
               (unsigned)backend < TOPOS_BACKEND_COUNT ? tp_option_names[backend] : "?");
      state = TOPOS_BACKEND_NOT_COMPILED;
    } else if (k->setup && k->setup() != TOPOS_OK) {
      snprintf(slot->reason, sizeof slot->reason, "%s", topos_last_error());
      state = TOPOS_BACKEND_UNAVAILABLE;
    } else {
      slot->reason[0] = '\0';
      state = TOPOS_BACKEND_READY;
    }
    atomic_store_explicit(&slot->state, state, memory_order_release);
  }
  pthread_mutex_unlock(&slot->lock);
  return (topos_backend_state)state;
}

void tp_backend_poison(topos_backend backend, const char *reason) {
  if (!tp_backend_valid(backend)) return;
  tp_slot *slot = &tp_slots[backend];
  pthread_mutex_lock(&slot->lock);
  snprintf(slot->reason, sizeof slot->reason, "%s", reason);
  atomic_store_explicit(&slot->state, TOPOS_BACKEND_POISONED, memory_order_release);
  pthread_mutex_unlock(&slot->lock);
}

void tp_backend_inject_failure(topos_backend backend) {
  if (tp_backend_valid(backend)) atomic_store(&tp_slots[backend].inject_failure, 1);
}

void tp_backend_reset(topos_backend backend) {
  if (!tp_backend_valid(backend)) return;
  tp_slot *slot = &tp_slots[backend];
  pthread_mutex_lock(&slot->lock);
  slot->reason[0] = '\0';
  atomic_store(&slot->inject_failure, 0);
  atomic_store_explicit(&slot->state, TP_STATE_UNSET, memory_order_release);
  pthread_mutex_unlock(&slot->lock);
}

topos_backend tp_backend_last_served(void) { return tp_last_served; }

/* Copies the reason under the lock (poison may rewrite it concurrently). */
static void tp_reason_copy(topos_backend backend, char *out, size_t size) {
  if (!out || size == 0) return;
  tp_slot *slot = &tp_slots[backend];
  pthread_mutex_lock(&slot->lock);
  snprintf(out, size, "%s", slot->reason);
  pthread_mutex_unlock(&slot->lock);
}

int topos_backend_loud(void) {
  int loud = atomic_load(&tp_loud);
  if (loud < 0) {
    const char *env = getenv("TOPOS_BACKEND_LOUD");
    loud = env && *env && strcmp(env, "0") != 0;
    atomic_store(&tp_loud, loud);
  }
  return loud;
}

void topos_backend_set_loud(int loud) { atomic_store(&tp_loud, loud ? 1 : 0); }

void topos_backend_set_enabled(topos_backend backend, int enabled) {
  if (tp_backend_valid(backend)) atomic_store(&tp_slots[backend].disabled, enabled ? 0 : 1);
}

int topos_backend_enabled(topos_backend backend) {
  return tp_backend_valid(backend) && !atomic_load(&tp_slots[backend].disabled);
}

/* ---- running a task */
typedef struct tp_task_ref {
  topos_formula formula;
  const topos_gemm_task *gemm;
  topos_map_op op;
  const void *in;
  void *out;
  int64_t count;
} tp_task_ref;

static int64_t tp_task_work(const tp_task_ref *t) {
  if (!t->gemm) return t->count;
  /* 2mnk saturating: only compared against thresholds. */
  double flops = 2.0 * (double)t->gemm->m * (double)t->gemm->n * (double)t->gemm->k;
  return flops > 9e18 ? INT64_MAX : (int64_t)flops;
}

static topos_status tp_run_kernel(const tp_kernels *k, const tp_task_ref *t) {
  switch (t->formula) {
    case TOPOS_FORMULA_GEMM_F32: return k->gemm_f32 ? k->gemm_f32(t->gemm) : TOPOS_UNSUPPORTED;
    case TOPOS_FORMULA_GEMM_F64: return k->gemm_f64 ? k->gemm_f64(t->gemm) : TOPOS_UNSUPPORTED;
    case TOPOS_FORMULA_MAP_F32:
      return k->map_f32 ? k->map_f32(t->op, t->in, t->out, t->count) : TOPOS_UNSUPPORTED;
    case TOPOS_FORMULA_MAP_F64:
      return k->map_f64 ? k->map_f64(t->op, t->in, t->out, t->count) : TOPOS_UNSUPPORTED;
    default: return TOPOS_UNSUPPORTED;
  }
}

static topos_status tp_chain_run(const tp_task_ref *t) {
  tp_last_served = TOPOS_BACKEND_COUNT;
  int exact = tp_numerics_exact();
  int64_t work = tp_task_work(t);
  const char *formula = topos_formula_name(t->formula);
  for (int i = 0; i < TP_CHAIN_MAX; ++i) {
    topos_backend member = tp_chains[t->formula][i];
    if (member == TOPOS_BACKEND_COUNT) break;
    topos_fidelity fidelity = tp_coverage[member][t->formula];
    if (fidelity == TOPOS_FIDELITY_ABSENT) continue;
    if (fidelity == TOPOS_FIDELITY_ENVELOPE && exact) continue;
    if (!topos_backend_enabled(member)) continue;
    if (work < tp_thresholds[member][t->formula]) continue;
    const tp_kernels *k = tp_kernels_of(member);
    if (!k) continue; /* not compiled: never a fallback */
    topos_backend_state state = tp_ensure(member);
    if (state != TOPOS_BACKEND_READY) {
      if (topos_backend_loud()) {
        char reason[320];
        tp_reason_copy(member, reason, sizeof reason);
        return tp_fail(TOPOS_ERR_BACKEND, "%s: backend %s is %s (%s); loud mode refuses the fallback",
                       formula, topos_backend_name(member), topos_backend_state_name(state),
                       reason);
      }
      continue;
    }
    topos_status s;
    if (atomic_exchange(&tp_slots[member].inject_failure, 0))
      s = tp_fail(TOPOS_ERR_BACKEND, "injected failure (test)");
    else
      s = tp_run_kernel(k, t);
    if (s == TOPOS_OK) {
      tp_last_served = member;
      return TOPOS_OK;
    }
    if (s == TOPOS_UNSUPPORTED) continue; /* a decline */
    char reason[320];
    snprintf(reason, sizeof reason, "failed on %s: %s (%s)", formula, topos_last_error(),
             topos_status_name(s));
    tp_backend_poison(member, reason);
    if (topos_backend_loud())
      return tp_fail(TOPOS_ERR_BACKEND, "%s: backend %s %s; loud mode refuses the fallback",
                     formula, topos_backend_name(member), reason);
  }
  topos_clear_error();
  return TOPOS_UNSUPPORTED;
}

topos_status tp_chain_gemm(topos_formula formula, const topos_gemm_task *task) {
  tp_task_ref t = {formula, task, TOPOS_MAP_EXP, NULL, NULL, 0};
  return tp_chain_run(&t);
}

topos_status tp_chain_map(topos_formula formula, topos_map_op op, const void *in, void *out,
                          int64_t count) {
  tp_task_ref t = {formula, NULL, op, in, out, count};
  return tp_chain_run(&t);
}

/* ---- public vocabulary */
static const char *const tp_backend_names[] = {
#define TP_NAME_ROW(E, name) name,
    TOPOS_BACKEND_LIST(TP_NAME_ROW)
#undef TP_NAME_ROW
};
static const char *const tp_formula_names[] = {
#define TP_NAME_ROW(E, name) name,
    TOPOS_FORMULA_LIST(TP_NAME_ROW)
#undef TP_NAME_ROW
};

const char *topos_backend_name(topos_backend backend) {
  return tp_backend_valid(backend) ? tp_backend_names[backend] : "unknown";
}

topos_status topos_backend_parse(const char *name, topos_backend *out) {
  for (int b = 0; name && b < TOPOS_BACKEND_COUNT; ++b)
    if (strcasecmp(name, tp_backend_names[b]) == 0) {
      if (out) *out = (topos_backend)b;
      return TOPOS_OK;
    }
  return tp_fail(TOPOS_ERR_NOT_FOUND, "backend: no backend named '%s'", name ? name : "(null)");
}

const char *topos_formula_name(topos_formula formula) {
  return tp_formula_valid(formula) ? tp_formula_names[formula] : "unknown";
}

const char *topos_fidelity_name(topos_fidelity fidelity) {
  switch (fidelity) {
    case TOPOS_FIDELITY_BIT_IDENTICAL: return "bit-identical";
    case TOPOS_FIDELITY_ENVELOPE: return "envelope";
    default: return "-";
  }
}

const char *topos_backend_state_name(topos_backend_state state) {
  switch (state) {
    case TOPOS_BACKEND_NOT_COMPILED: return "not compiled";
    case TOPOS_BACKEND_UNAVAILABLE: return "unavailable";
    case TOPOS_BACKEND_POISONED: return "poisoned";
    case TOPOS_BACKEND_READY: return "ready";
  }
  return "unknown";
}

int topos_backend_compiled(topos_backend backend) {
  return tp_backend_valid(backend) && tp_kernels_of(backend) != NULL;
}

topos_fidelity topos_backend_coverage(topos_backend backend, topos_formula formula) {
  if (!tp_backend_valid(backend) || !tp_formula_valid(formula)) return TOPOS_FIDELITY_ABSENT;
  return tp_coverage[backend][formula];
}

int topos_formula_chain(topos_formula formula, topos_backend *out, int capacity) {
  if (!tp_formula_valid(formula)) return 0;
  int n = 0;
  while (n < TP_CHAIN_MAX && tp_chains[formula][n] != TOPOS_BACKEND_COUNT) {
    if (out && n < capacity) out[n] = tp_chains[formula][n];
    ++n;
  }
  return n;
}

int64_t topos_backend_threshold(topos_backend backend, topos_formula formula) {
  if (!tp_backend_valid(backend) || !tp_formula_valid(formula)) return 0;
  return tp_thresholds[backend][formula];
}

topos_backend_state topos_backend_state_of(topos_backend backend, char *reason, size_t size) {
  if (reason && size) reason[0] = '\0';
  if (!tp_backend_valid(backend)) {
    if (reason && size) snprintf(reason, size, "no such backend");
    return TOPOS_BACKEND_NOT_COMPILED;
  }
  topos_backend_state state = tp_ensure(backend);
  if (state == TOPOS_BACKEND_READY) {
    const tp_kernels *k = tp_kernels_of(backend);
    if (reason && size) snprintf(reason, size, "%s", k && k->describe ? k->describe() : "");
  } else {
    tp_reason_copy(backend, reason, size);
  }
  return state;
}

topos_status topos_backend_status(topos_backend backend) {
  char reason[320];
  topos_backend_state state = topos_backend_state_of(backend, reason, sizeof reason);
  if (state == TOPOS_BACKEND_READY) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_BACKEND, "%s: %s: %s", topos_backend_name(backend),
                 topos_backend_state_name(state), reason);
}
