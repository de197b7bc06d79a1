/* tp_qk_parallel_for: every index runs exactly once, for any size, grain
 * and share count, nested or not; and a thread done with its share takes
 * over part of a share whose owner is held up. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "base/threads.h"
#include "quant/qk_shim.h"
#include "test.h"

typedef struct {
  atomic_int *visits;
  atomic_int calls;
  atomic_int bad_range; /* empty or reversed ranges */
} qs_ctx;

static void qs_visit(void *vctx, int64_t begin, int64_t end) {
  qs_ctx *x = vctx;
  atomic_fetch_add(&x->calls, 1);
  if (end <= begin) atomic_fetch_add(&x->bad_range, 1);
  for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&x->visits[i], 1);
}

static atomic_int qs_visits[5000];

static int qs_once(int threads_arg, int64_t n, int64_t grain) {
  for (int64_t i = 0; i < n; ++i) atomic_store(&qs_visits[i], 0);
  qs_ctx x = {qs_visits, 0, 0};
  tp_qk_parallel_for(threads_arg, n, grain, qs_visit, &x);
  int ok = atomic_load(&x.bad_range) == 0;
  for (int64_t i = 0; i < n; ++i) ok &= atomic_load(&qs_visits[i]) == 1;
  return ok;
}

TEST(qk_parallel_for_runs_every_index_once) {
  const int saved = topos_threads();
  static const int pool[] = {1, 2, 3, 4};
  static const int shares[] = {0, 1, 2, 3, 5, 8};
  static const int64_t sizes[] = {0, 1, 2, 3, 7, 16, 64, 100, 1000, 4099};
  static const int64_t grains[] = {1, 3, 64};
  for (size_t p = 0; p < sizeof pool / sizeof pool[0]; ++p) {
    CHECK_OK(topos_set_threads(pool[p]));
    for (size_t s = 0; s < sizeof shares / sizeof shares[0]; ++s)
      for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z)
        for (size_t g = 0; g < sizeof grains / sizeof grains[0]; ++g)
          CHECK_MSG(qs_once(shares[s], sizes[z], grains[g]), "pool %d shares %d n %lld grain %lld", pool[p],
                    shares[s], (long long)sizes[z], (long long)grains[g]);
  }
  CHECK_OK(topos_set_threads(saved));
}

/* from inside a parallel region the call runs inline, still whole */
static void qs_nested(void *vctx, int64_t begin, int64_t end) {
  atomic_int *ok = vctx;
  for (int64_t i = begin; i < end; ++i)
    if (!qs_once(3, 97, 1)) atomic_store(ok, 0);
}

TEST(qk_parallel_for_nested_inside_a_region) {
  const int saved = topos_threads();
  CHECK_OK(topos_set_threads(2));
  atomic_int ok = 1;
  tp_parallel_for(1, 1, qs_nested, &ok); /* one range: runs on this thread */
  CHECK(atomic_load(&ok));
  CHECK_OK(topos_set_threads(saved));
}

/* Share 0's owner (whoever runs index 0) does not go on until another
 * thread has run an index of share 0: only a thread that took part of that
 * share can release it. */
typedef struct {
  int64_t half;
  atomic_int stolen;   /* an index of share 0 ran on a thread other than index 0's */
  atomic_int timed_out;
  pthread_t owner;
  atomic_int owner_set;
  atomic_int *visits;
} qs_steal_ctx;

static double qs_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void qs_steal_visit(void *vctx, int64_t begin, int64_t end) {
  qs_steal_ctx *x = vctx;
  for (int64_t i = begin; i < end; ++i) {
    atomic_fetch_add(&x->visits[i], 1);
    if (i == 0) {
      x->owner = pthread_self();
      atomic_store(&x->owner_set, 1);
      const double until = qs_now() + 60.0; /* a generous bound: the other thread needs a core once */
      while (!atomic_load(&x->stolen)) {
        if (qs_now() > until) {
          atomic_store(&x->timed_out, 1);
          break;
        }
        sched_yield();
      }
    } else if (i < x->half) {
      while (!atomic_load(&x->owner_set)) sched_yield(); /* index 0 is claimed first in its share */
      if (!pthread_equal(pthread_self(), x->owner)) atomic_store(&x->stolen, 1);
    }
  }
}

TEST(qk_parallel_for_a_free_thread_takes_over_a_held_share) {
  const int saved = topos_threads();
  CHECK_OK(topos_set_threads(2));
  if (tp_threads_pool_workers() == 0) {
    qs_once(2, 64, 1); /* builds the pool */
  }
  if (tp_threads_pool_workers() < 1) {
    CHECK_OK(topos_set_threads(saved));
    SKIP("no worker thread could be started");
  }
  const int64_t n = 256;
  for (int64_t i = 0; i < n; ++i) atomic_store(&qs_visits[i], 0);
  qs_steal_ctx x = {.half = n / 2, .visits = qs_visits};
  atomic_init(&x.stolen, 0);
  atomic_init(&x.timed_out, 0);
  atomic_init(&x.owner_set, 0);
  tp_qk_parallel_for(2, n, 1, qs_steal_visit, &x);
  CHECK_MSG(!atomic_load(&x.timed_out), "nobody took over part of the held share in 60 s");
  CHECK(atomic_load(&x.stolen));
  for (int64_t i = 0; i < n; ++i) CHECK_EQ_INT(atomic_load(&qs_visits[i]), 1);
  CHECK_OK(topos_set_threads(saved));
}
