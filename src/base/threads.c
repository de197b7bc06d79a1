/* The thread pool. One job at a time: the dispatching thread publishes the
 * job under a seqlock-style generation counter (odd while it writes the job
 * fields, even once they are complete), workers whose index is below the
 * range count run their range and count down `pending`, the dispatcher runs
 * range 0 itself and then waits for pending to reach zero.
 *
 * Waiting is spin-then-sleep on both sides; the sleep/wake handshake is the
 * Dekker pattern on seq_cst atomics (the sleeper announces itself, then
 * re-checks; the waker publishes, then checks for sleepers), with the final
 * check and the broadcast under one mutex so no wake-up is lost. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "base/threads.h"

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

/* Pause rounds before a waiter yields its core once, and before it sleeps.
 * About 50-100 us of spinning on current x86 cores. */
#define TP_SPIN_ROUNDS 2048
#define TP_SPIN_YIELD_EVERY 256

static inline void tp_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

typedef struct tp_pool {
  pthread_mutex_t lock;
  pthread_cond_t wake; /* workers sleep here */
  pthread_cond_t done; /* the dispatcher sleeps here */
  atomic_uint_fast64_t generation;
  atomic_int sleeping_workers;
  atomic_int dispatcher_sleeping;
  atomic_int pending; /* worker ranges not finished */
  /* the job, valid while generation is even */
  _Atomic(tp_range_fn) fn;
  _Atomic(void *) ctx;
  atomic_int_fast64_t n;
  atomic_int ranges;
  atomic_int stop;
  /* owned by whoever holds `busy` */
  pthread_t *threads;
  int workers;        /* threads running */
  int built_for;      /* topos_threads() value the pool was built for; 0 = none */
  uint64_t start_generation; /* generation when the workers were created */
  atomic_int busy;    /* 1 while a dispatch or a rebuild owns the pool */
} tp_pool;

static tp_pool tp_the_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static _Thread_local int tp_inside_region;
static atomic_int tp_requested_threads; /* 0: not set by topos_set_threads */
static pthread_once_t tp_default_once = PTHREAD_ONCE_INIT;
static int tp_default_threads = 1;
static pthread_once_t tp_atexit_once = PTHREAD_ONCE_INIT;

bool tp_in_parallel_region(void) { return tp_inside_region != 0; }

bool tp_threads_parse(const char *text, int *out) {
  if (!text) return false;
  while (isspace((unsigned char)*text)) ++text;
  if (!isdigit((unsigned char)*text)) return false;
  long value = 0;
  while (isdigit((unsigned char)*text)) {
    value = value * 10 + (*text++ - '0');
    if (value > TP_MAX_THREADS) return false;
  }
  while (isspace((unsigned char)*text)) ++text;
  if (*text || value < 1) return false;
  *out = (int)value;
  return true;
}

static int tp_online_cores(void) {
  long cores = 1;
#if defined(__linux__)
  cpu_set_t set;
  /* The affinity mask reflects taskset/cgroup cpusets; the online count does not. */
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cores = CPU_COUNT(&set);
  else
    cores = sysconf(_SC_NPROCESSORS_ONLN);
#else
  cores = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if (cores < 1) cores = 1;
  if (cores > TP_MAX_THREADS) cores = TP_MAX_THREADS;
  return (int)cores;
}

int tp_threads_default_for(const char *env_value) {
  int parsed;
  return tp_threads_parse(env_value, &parsed) ? parsed : tp_online_cores();
}

static void tp_default_init(void) { tp_default_threads = tp_threads_default_for(getenv("TOPOS_THREADS")); }

topos_status topos_set_threads(int threads) {
  if (threads < 1 || threads > TP_MAX_THREADS)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "set_threads: %d threads is outside [1, %d]",
                   threads, TP_MAX_THREADS);
  atomic_store(&tp_requested_threads, threads);
  return TOPOS_OK;
}

int topos_threads(void) {
  int requested = atomic_load_explicit(&tp_requested_threads, memory_order_relaxed);
  if (requested) return requested;
  pthread_once(&tp_default_once, tp_default_init);
  return tp_default_threads;
}

int tp_parallel_range_count(int64_t n, int64_t grain, int threads) {
  if (n <= 0) return 0;
  if (grain < 1) grain = 1;
  int64_t most = n / grain;
  if (threads < 1) threads = 1;
  if (most < 1) most = 1;
  return most < threads ? (int)most : threads;
}

void tp_parallel_range(int64_t n, int ranges, int index, int64_t *begin, int64_t *end) {
  int64_t base = n / ranges, extra = n % ranges;
  int64_t start = index * base + (index < extra ? index : extra);
  *begin = start;
  *end = start + base + (index < extra ? 1 : 0);
}

/* Spins, then sleeps, until the generation differs from seen; returns it. */
static uint64_t tp_worker_wait(tp_pool *pool, uint64_t seen) {
  for (int round = 1; round <= TP_SPIN_ROUNDS; ++round) {
    uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (g != seen) return g;
    tp_cpu_relax();
    if (round % TP_SPIN_YIELD_EVERY == 0) sched_yield();
  }
  pthread_mutex_lock(&pool->lock);
  atomic_fetch_add(&pool->sleeping_workers, 1);
  uint64_t g;
  while ((g = atomic_load(&pool->generation)) == seen) pthread_cond_wait(&pool->wake, &pool->lock);
  atomic_fetch_sub(&pool->sleeping_workers, 1);
  pthread_mutex_unlock(&pool->lock);
  return g;
}

static void *tp_worker_main(void *arg) {
  tp_pool *pool = &tp_the_pool;
  int index = (int)(intptr_t)arg;
  /* Not the current generation: the first job may be published before this
   * thread gets to run. pthread_create orders the write before us. */
  uint64_t seen = pool->start_generation;
  tp_inside_region = 1; /* nested parallel calls from a range run inline */
  for (;;) {
    uint64_t g = tp_worker_wait(pool, seen);
    if (g & 1u) { /* the dispatcher is writing the job */
      tp_cpu_relax();
      continue;
    }
    tp_range_fn fn = atomic_load_explicit(&pool->fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&pool->ctx, memory_order_relaxed);
    int64_t n = atomic_load_explicit(&pool->n, memory_order_relaxed);
    int ranges = atomic_load_explicit(&pool->ranges, memory_order_relaxed);
    int stop = atomic_load_explicit(&pool->stop, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&pool->generation, memory_order_relaxed) != g) continue; /* torn */
    seen = g;
    if (stop) break;
    if (index >= ranges) continue; /* not needed this time; nobody waits for us */
    int64_t begin, end;
    tp_parallel_range(n, ranges, index, &begin, &end);
    fn(ctx, begin, end);
    if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->dispatcher_sleeping)) {
      pthread_mutex_lock(&pool->lock);
      pthread_cond_broadcast(&pool->done);
      pthread_mutex_unlock(&pool->lock);
    }
  }
  return NULL;
}

/* Publishes a job; the caller holds busy. */
static void tp_publish(tp_pool *pool, tp_range_fn fn, void *ctx, int64_t n, int ranges, int stop) {
  atomic_fetch_add(&pool->generation, 1); /* odd: job fields in flux */
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&pool->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&pool->n, n, memory_order_relaxed);
  atomic_store_explicit(&pool->ranges, ranges, memory_order_relaxed);
  atomic_store_explicit(&pool->stop, stop, memory_order_relaxed);
  atomic_store_explicit(&pool->pending, ranges > 0 ? ranges - 1 : 0, memory_order_relaxed);
  atomic_fetch_add(&pool->generation, 1); /* even: published */
  if (stop || atomic_load(&pool->sleeping_workers) > 0) {
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
  }
}

static void tp_wait_pending(tp_pool *pool) {
  for (int round = 1; round <= TP_SPIN_ROUNDS; ++round) {
    if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) return;
    tp_cpu_relax();
    if (round % TP_SPIN_YIELD_EVERY == 0) sched_yield();
  }
  atomic_store(&pool->dispatcher_sleeping, 1);
  pthread_mutex_lock(&pool->lock);
  while (atomic_load(&pool->pending) != 0) pthread_cond_wait(&pool->done, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
  atomic_store(&pool->dispatcher_sleeping, 0);
}

static bool tp_pool_acquire(tp_pool *pool) {
  int expected = 0;
  return atomic_compare_exchange_strong(&pool->busy, &expected, 1);
}

static void tp_pool_release(tp_pool *pool) { atomic_store(&pool->busy, 0); }

static void tp_pool_stop_workers(tp_pool *pool) {
  if (pool->workers > 0) {
    tp_publish(pool, NULL, NULL, 0, 0, 1);
    for (int i = 0; i < pool->workers; ++i) pthread_join(pool->threads[i], NULL);
  }
  tp_free_aligned(pool->threads);
  pool->threads = NULL;
  pool->workers = 0;
  pool->built_for = 0;
  atomic_store(&pool->stop, 0);
}

/* At exit, join the workers so leak checkers see a clean process, unless a
 * dispatch is still in flight (exit called from a range): then leave them. */
static void tp_threads_at_exit(void) {
  tp_pool *pool = &tp_the_pool;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (tp_pool_acquire(pool)) {
      tp_pool_stop_workers(pool);
      tp_pool_release(pool);
      return;
    }
    sched_yield();
  }
}

/* A forked child has only the forking thread: forget the parent's workers
 * (their memory is the child's copy) and start from a fresh pool. */
static void tp_threads_after_fork_child(void) {
  tp_pool *pool = &tp_the_pool;
  tp_free_aligned(pool->threads);
  pool->threads = NULL;
  pool->workers = 0;
  pool->built_for = 0;
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  atomic_store(&pool->sleeping_workers, 0);
  atomic_store(&pool->dispatcher_sleeping, 0);
  atomic_store(&pool->pending, 0);
  atomic_store(&pool->stop, 0);
  atomic_store(&pool->busy, 0);
  tp_inside_region = 0;
}

static void tp_atexit_register(void) {
  atexit(tp_threads_at_exit);
  pthread_atfork(NULL, NULL, tp_threads_after_fork_child);
}

/* (Re)builds the pool for `threads`; keeps whatever workers could be started. */
static void tp_pool_build(tp_pool *pool, int threads) {
  tp_pool_stop_workers(pool);
  pool->built_for = threads; /* even if creation fails: do not retry on every call */
  if (threads <= 1) return;
  pthread_once(&tp_atexit_once, tp_atexit_register);
  void *memory = NULL;
  if (tp_alloc_array((size_t)(threads - 1), sizeof(pthread_t), 0, &memory) != TOPOS_OK) {
    topos_clear_error(); /* a smaller pool is slower, never wrong */
    return;
  }
  pool->threads = memory;
  pool->start_generation = atomic_load(&pool->generation);
  for (int i = 0; i < threads - 1; ++i) {
    if (pthread_create(&pool->threads[i], NULL, tp_worker_main, (void *)(intptr_t)(i + 1)) != 0)
      break;
    pool->workers = i + 1;
  }
}

void tp_parallel_for(int64_t n, int64_t grain, tp_range_fn fn, void *ctx) {
  if (n <= 0) return;
  int threads = topos_threads();
  int ranges = tp_parallel_range_count(n, grain, threads);
  tp_pool *pool = &tp_the_pool;
  if (ranges <= 1 || tp_inside_region || !tp_pool_acquire(pool)) {
    fn(ctx, 0, n);
    return;
  }
  if (pool->built_for != threads) tp_pool_build(pool, threads);
  if (ranges > pool->workers + 1) ranges = pool->workers + 1;
  if (ranges <= 1) {
    tp_pool_release(pool);
    fn(ctx, 0, n);
    return;
  }
  tp_publish(pool, fn, ctx, n, ranges, 0);
  int64_t begin, end;
  tp_parallel_range(n, ranges, 0, &begin, &end);
  tp_inside_region = 1;
  fn(ctx, begin, end);
  tp_inside_region = 0;
  tp_wait_pending(pool);
  tp_pool_release(pool);
}

int tp_threads_pool_workers(void) {
  tp_pool *pool = &tp_the_pool;
  if (!tp_pool_acquire(pool)) return -1;
  int workers = pool->workers;
  tp_pool_release(pool);
  return workers;
}

void tp_threads_shutdown(void) {
  tp_pool *pool = &tp_the_pool;
  while (!tp_pool_acquire(pool)) sched_yield(); /* a dispatch in flight finishes first */
  tp_pool_stop_workers(pool);
  tp_pool_release(pool);
}
