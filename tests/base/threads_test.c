#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/threads.h"
#include "test.h"

typedef struct {
  atomic_int *visits;
  atomic_int ranges;
  atomic_int short_ranges; /* ranges shorter than grain */
  int64_t grain;
  atomic_int outside_region; /* a range ran without tp_in_parallel_region() */
} tt_visit_ctx;

static void tt_visit(void *ctx_, int64_t begin, int64_t end) {
  tt_visit_ctx *ctx = ctx_;
  atomic_fetch_add(&ctx->ranges, 1);
  if (end - begin < ctx->grain) atomic_fetch_add(&ctx->short_ranges, 1);
  if (!tp_in_parallel_region()) atomic_fetch_add(&ctx->outside_region, 1);
  for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&ctx->visits[i], 1);
}

TEST(parallel_for_visits_every_index_once) {
  int saved = topos_threads();
  static const int thread_counts[] = {1, 2, 3, 4, 7};
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 8, 13, 64, 100, 1000, 4099};
  static const int64_t grains[] = {-3, 0, 1, 2, 3, 7, 64, 1000, 5000};
  static atomic_int visits[4099];
  for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; ++t) {
    CHECK_OK(topos_set_threads(thread_counts[t]));
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
      for (size_t g = 0; g < sizeof grains / sizeof grains[0]; ++g) {
        int64_t n = sizes[s];
        for (int64_t i = 0; i < n; ++i) atomic_store(&visits[i], 0);
        tt_visit_ctx ctx = {.visits = visits, .grain = grains[g] < 1 ? 1 : grains[g]};
        tp_parallel_for(n, grains[g], tt_visit, &ctx);
        for (int64_t i = 0; i < n; ++i)
          CHECK_MSG(atomic_load(&visits[i]) == 1, "threads %d n %lld grain %lld: index %lld seen %d",
                    thread_counts[t], (long long)n, (long long)grains[g], (long long)i,
                    atomic_load(&visits[i]));
        int expected = tp_parallel_range_count(n, grains[g], thread_counts[t]);
        CHECK_EQ_INT(atomic_load(&ctx.ranges), expected);
        CHECK(expected <= thread_counts[t]);
        if (expected > 1) {
          CHECK_EQ_INT(atomic_load(&ctx.short_ranges), 0);
          CHECK_EQ_INT(atomic_load(&ctx.outside_region), 0);
        }
      }
  }
  CHECK_OK(topos_set_threads(saved));
}

TEST(parallel_range_split_is_balanced_and_contiguous) {
  for (int64_t n = 1; n < 300; n += 7)
    for (int ranges = 1; ranges <= 9; ++ranges) {
      int64_t next = 0, shortest = n, longest = 0;
      for (int r = 0; r < ranges; ++r) {
        int64_t b, e;
        tp_parallel_range(n, ranges, r, &b, &e);
        CHECK_EQ_INT(b, next);
        next = e;
        if (e - b < shortest) shortest = e - b;
        if (e - b > longest) longest = e - b;
      }
      CHECK_EQ_INT(next, n);
      CHECK(longest - shortest <= 1);
    }
  CHECK_EQ_INT(tp_parallel_range_count(0, 1, 4), 0);
  CHECK_EQ_INT(tp_parallel_range_count(100, 30, 8), 3);
  CHECK_EQ_INT(tp_parallel_range_count(100, 51, 8), 1);
  CHECK_EQ_INT(tp_parallel_range_count(INT64_MAX, 1, 256), 256);
  int64_t b, e;
  tp_parallel_range(INT64_MAX, 256, 255, &b, &e);
  CHECK_EQ_INT(e, INT64_MAX);
}

typedef struct {
  atomic_int *visits;
  int64_t width;
  atomic_int inner_not_inline;
} tt_nested_ctx;

static void tt_nested_inner(void *ctx_, int64_t begin, int64_t end) {
  tt_nested_ctx *ctx = ctx_;
  (void)ctx;
  (void)begin;
  (void)end;
}

typedef struct {
  tt_nested_ctx *outer;
  int64_t row;
  atomic_int calls;
} tt_row_ctx;

static void tt_row_range(void *ctx_, int64_t begin, int64_t end) {
  tt_row_ctx *ctx = ctx_;
  atomic_fetch_add(&ctx->calls, 1);
  for (int64_t i = begin; i < end; ++i)
    atomic_fetch_add(&ctx->outer->visits[ctx->row * ctx->outer->width + i], 1);
}

static void tt_nested_outer(void *ctx_, int64_t begin, int64_t end) {
  tt_nested_ctx *ctx = ctx_;
  for (int64_t row = begin; row < end; ++row) {
    tt_row_ctx row_ctx = {.outer = ctx, .row = row};
    tp_parallel_for(ctx->width, 1, tt_row_range, &row_ctx);
    /* nested: one inline call over the whole row */
    if (atomic_load(&row_ctx.calls) != 1) atomic_fetch_add(&ctx->inner_not_inline, 1);
    tp_parallel_for(0, 1, tt_nested_inner, ctx);
  }
}

TEST(parallel_for_nested_calls_run_inline) {
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(3));
  static atomic_int visits[12 * 50];
  for (int i = 0; i < 12 * 50; ++i) atomic_store(&visits[i], 0);
  tt_nested_ctx ctx = {.visits = visits, .width = 50};
  tp_parallel_for(12, 1, tt_nested_outer, &ctx);
  for (int i = 0; i < 12 * 50; ++i) CHECK_EQ_INT(atomic_load(&visits[i]), 1);
  CHECK_EQ_INT(atomic_load(&ctx.inner_not_inline), 0);
  CHECK(!tp_in_parallel_region());
  CHECK_OK(topos_set_threads(saved));
}

/* A per-output computation (the contract of the header): bits equal at every
 * thread count. */
typedef struct {
  const float *in;
  float *out;
  int64_t width;
} tt_rowsum_ctx;

static void tt_rowsum(void *ctx_, int64_t begin, int64_t end) {
  tt_rowsum_ctx *ctx = ctx_;
  for (int64_t r = begin; r < end; ++r) {
    float acc = 0.0f;
    for (int64_t c = 0; c < ctx->width; ++c) acc += ctx->in[r * ctx->width + c];
    ctx->out[r] = acc;
  }
}

TEST(parallel_for_result_bits_do_not_depend_on_thread_count) {
  int saved = topos_threads();
  enum { ROWS = 97, WIDTH = 33 };
  static float in[ROWS * WIDTH], reference[ROWS], out[ROWS];
  topos_rng rng = topos_rng_seed(3);
  for (int i = 0; i < ROWS * WIDTH; ++i) in[i] = (float)topos_rng_normal(&rng);
  CHECK_OK(topos_set_threads(1));
  tt_rowsum_ctx ctx = {in, reference, WIDTH};
  tp_parallel_for(ROWS, 1, tt_rowsum, &ctx);
  for (int threads = 2; threads <= 5; ++threads) {
    CHECK_OK(topos_set_threads(threads));
    ctx.out = out;
    memset(out, 0, sizeof out);
    tp_parallel_for(ROWS, 4, tt_rowsum, &ctx);
    for (int r = 0; r < ROWS; ++r) CHECK_BITS_F32(out[r], reference[r]);
  }
  CHECK_OK(topos_set_threads(saved));
}

TEST(set_threads_validates_and_pool_follows) {
  int saved = topos_threads();
  CHECK_STATUS(topos_set_threads(0), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("0 threads");
  CHECK_STATUS(topos_set_threads(-1), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_set_threads(257), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(topos_threads(), saved); /* failures change nothing */
  CHECK_OK(topos_set_threads(256));
  CHECK_EQ_INT(topos_threads(), 256);
  CHECK_OK(topos_set_threads(3));
  CHECK_EQ_INT(topos_threads(), 3);
  static atomic_int visits[64];
  tt_visit_ctx ctx = {.visits = visits, .grain = 1};
  tp_parallel_for(64, 1, tt_visit, &ctx);
  CHECK_EQ_INT(tp_threads_pool_workers(), 2);
  tp_threads_shutdown();
  CHECK_EQ_INT(tp_threads_pool_workers(), 0);
  tp_parallel_for(64, 1, tt_visit, &ctx); /* rebuilt on demand */
  CHECK_EQ_INT(tp_threads_pool_workers(), 2);
  for (int i = 0; i < 64; ++i) CHECK_EQ_INT(atomic_load(&visits[i]), 2);
  CHECK_OK(topos_set_threads(saved));
}

TEST(threads_env_value_parsing) {
  int v = -7;
  CHECK(tp_threads_parse("4", &v) && v == 4);
  CHECK(tp_threads_parse(" 16\n", &v) && v == 16);
  CHECK(tp_threads_parse("256", &v) && v == 256);
  CHECK(tp_threads_parse("1", &v) && v == 1);
  CHECK(tp_threads_parse("007", &v) && v == 7);
  v = -7;
  CHECK(!tp_threads_parse("0", &v));
  CHECK(!tp_threads_parse("257", &v));
  CHECK(!tp_threads_parse("99999999999999999999", &v));
  CHECK(!tp_threads_parse("-2", &v));
  CHECK(!tp_threads_parse("+2", &v));
  CHECK(!tp_threads_parse("4x", &v));
  CHECK(!tp_threads_parse("4 4", &v));
  CHECK(!tp_threads_parse("", &v));
  CHECK(!tp_threads_parse("  ", &v));
  CHECK(!tp_threads_parse(NULL, &v));
  CHECK_EQ_INT(v, -7);
}

/* Back-to-back jobs of different shapes: workers must neither miss a job nor
 * run one twice (the generation handshake). */
TEST(parallel_for_many_back_to_back_jobs) {
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(3));
  static atomic_int visits[40];
  for (int job = 0; job < 600; ++job) {
    int64_t n = 1 + job % 40;
    for (int64_t i = 0; i < n; ++i) atomic_store(&visits[i], 0);
    tt_visit_ctx ctx = {.visits = visits, .grain = 1 + job % 3};
    tp_parallel_for(n, ctx.grain, tt_visit, &ctx);
    for (int64_t i = 0; i < n; ++i) CHECK_EQ_INT(atomic_load(&visits[i]), 1);
  }
  CHECK_OK(topos_set_threads(saved));
}

/* Ranges are claimed at run time: the dispatcher returns only when every
 * range is done, and a worker that wakes late for a job finds its ranges
 * taken and runs nothing of it afterwards. Every job gets its own context,
 * marked dead when tp_parallel_for returns (the contexts stay allocated, so
 * a late run is counted, not undefined). A join that does not wait for a
 * worker's range fails here within a few thousand jobs; a late worker
 * claiming from the next job (what the job tag in the claim word prevents)
 * needs a much narrower window and is not reliably provoked. */
typedef struct {
  atomic_int live;
  atomic_int late_runs;
  atomic_int ranges;
  atomic_llong sum;
} tt_tagged_ctx;

static void tt_tagged_range(void *ctx_, int64_t begin, int64_t end) {
  tt_tagged_ctx *ctx = ctx_;
  if (!atomic_load(&ctx->live)) atomic_fetch_add(&ctx->late_runs, 1);
  atomic_fetch_add(&ctx->ranges, 1);
  long long sum = 0; /* a little work so claims interleave */
  for (int64_t i = begin; i < end; ++i) sum += i * i;
  atomic_fetch_add(&ctx->sum, sum);
}

TEST(parallel_for_late_workers_run_nothing_stale) {
  int saved = topos_threads();
  enum { JOBS = 3000 };
  tt_tagged_ctx *ctxs = calloc(JOBS, sizeof *ctxs);
  CHECK(ctxs != NULL);
  if (!ctxs) return;
  int wrong_ranges = 0;
  for (int job = 0; job < JOBS; ++job) {
    int threads = 2 + job % 3;
    if (job % 500 == 0) CHECK_OK(topos_set_threads(threads));
    int64_t n = 1 + job % 200;
    atomic_store(&ctxs[job].live, 1);
    tp_parallel_for(n, 16, tt_tagged_range, &ctxs[job]);
    atomic_store(&ctxs[job].live, 0);
    if (atomic_load(&ctxs[job].ranges) != tp_parallel_range_count(n, 16, topos_threads()))
      ++wrong_ranges;
  }
  int late = 0;
  for (int job = 0; job < JOBS; ++job) late += atomic_load(&ctxs[job].late_runs);
  CHECK_EQ_INT(late, 0);
  CHECK_EQ_INT(wrong_ranges, 0);
  free(ctxs);
  CHECK_OK(topos_set_threads(saved));
}

/* Two application threads dispatching at once: one may run inline, both
 * must be complete and correct. */
typedef struct {
  atomic_int visits[500];
  int ok;
} tt_racer;

static void *tt_race(void *arg) {
  tt_racer *racer = arg;
  racer->ok = 1;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 500; ++i) atomic_store(&racer->visits[i], 0);
    tt_visit_ctx ctx = {.visits = racer->visits, .grain = 1};
    tp_parallel_for(500, 1, tt_visit, &ctx);
    for (int i = 0; i < 500; ++i)
      if (atomic_load(&racer->visits[i]) != 1) racer->ok = 0;
  }
  return NULL;
}

TEST(parallel_for_from_two_threads_at_once) {
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(2));
  static tt_racer racers[2];
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) CHECK(pthread_create(&threads[i], NULL, tt_race, &racers[i]) == 0);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  CHECK(racers[0].ok && racers[1].ok);
  CHECK_OK(topos_set_threads(saved));
}

TEST(threads_default_comes_from_env_else_cores) {
  CHECK_EQ_INT(tp_threads_default_for("3"), 3);
  CHECK_EQ_INT(tp_threads_default_for(" 256 "), 256);
  int cores = tp_threads_default_for(NULL);
  CHECK(cores >= 1 && cores <= 256);
  CHECK_EQ_INT(tp_threads_default_for("zero"), cores);
  CHECK_EQ_INT(tp_threads_default_for("0"), cores);
  CHECK_EQ_INT(tp_threads_default_for("1000"), cores);
}

#include <sys/wait.h>
#include <unistd.h>

TEST(parallel_for_works_in_a_forked_child) {
  /* qemu-user 7.2's TCG asserts (cpu == current_cpu) in a forked child of a
   * threaded process: an emulator's limit, not the pool's */
  if (getenv("TOPOS_TEST_EMULATOR")) SKIP("under an emulator (TOPOS_TEST_EMULATOR): qemu-user cannot run a threaded process's forked child");
  int saved = topos_threads();
  CHECK_OK(topos_set_threads(3));
  static atomic_int visits[90];
  tt_visit_ctx ctx = {.visits = visits, .grain = 1};
  tp_parallel_for(90, 1, tt_visit, &ctx); /* the parent's pool exists */
  fflush(NULL);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    alarm(60); /* a child stuck waiting on the parent's workers dies instead of hanging */
    for (int i = 0; i < 90; ++i) atomic_store(&visits[i], 0);
    tt_visit_ctx child_ctx = {.visits = visits, .grain = 1};
    tp_parallel_for(90, 1, tt_visit, &child_ctx);
    int ok = atomic_load(&child_ctx.ranges) == 3;
    for (int i = 0; i < 90; ++i) ok = ok && atomic_load(&visits[i]) == 1;
    tp_threads_shutdown(); /* join the child's own workers: leak checkers follow children */
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
  CHECK_OK(topos_set_threads(saved));
}
