/* topos bench-gemm: the SIMD backend's packed GEMM against OpenBLAS, measured
 * in the same process. OpenBLAS is optional: it is opened with dlopen at run
 * time ("peer: not available" when absent), so topos never links it here.
 *
 * OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE may be set machine-wide (forcing an
 * older core, e.g. Haswell, halves OpenBLAS on AVX-512 machines). To compare
 * against OpenBLAS's best kernel the bench unsets them in its own process
 * before dlopen, says so, and prints the core OpenBLAS then picked
 * (--keep-openblas-env leaves them alone). */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

#if defined(TOPOS_HAVE_SIMD)
#include "backend/simd/gemm.h"

typedef void (*tp_peer_sgemm_fn)(int order, int transa, int transb, int m, int n, int k, float alpha,
                                 const float *a, int lda, const float *b, int ldb, float beta,
                                 float *c, int ldc);
typedef void (*tp_peer_dgemm_fn)(int order, int transa, int transb, int m, int n, int k,
                                 double alpha, const double *a, int lda, const double *b, int ldb,
                                 double beta, double *c, int ldc);
enum { TP_CBLAS_ROW_MAJOR = 101, TP_CBLAS_NO_TRANS = 111 };

typedef struct {
  void *handle;
  tp_peer_sgemm_fn sgemm;
  tp_peer_dgemm_fn dgemm;
  char *(*corename)(void);
  void (*set_threads)(int);
} tp_peer;

static void tp_bench_open_peer(tp_peer *peer, int keep_env) {
  memset(peer, 0, sizeof *peer);
  static const char *vars[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
    const char *value = getenv(vars[i]);
    if (!value) continue;
    if (keep_env) {
      printf("peer: %s=%s kept (--keep-openblas-env)\n", vars[i], value);
    } else {
      printf("peer: unset %s=%s in this process before loading OpenBLAS\n", vars[i], value);
      unsetenv(vars[i]);
    }
  }
  peer->handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!peer->handle) return;
  *(void **)&peer->sgemm = dlsym(peer->handle, "cblas_sgemm");
  *(void **)&peer->dgemm = dlsym(peer->handle, "cblas_dgemm");
  *(void **)&peer->corename = dlsym(peer->handle, "openblas_get_corename");
  *(void **)&peer->set_threads = dlsym(peer->handle, "openblas_set_num_threads");
  if (!peer->sgemm || !peer->dgemm || !peer->set_threads) {
    dlclose(peer->handle);
    memset(peer, 0, sizeof *peer);
  }
}

static void tp_bench_sleep(double seconds) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
}

static uint64_t tp_bench_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Best time of each of two calls, measured in blocks of three that
 * alternate, and swap which goes first every round (the machine is shared:
 * both meet the same background load, and neither always runs right after
 * the other's threads). Each block starts after a 0.3 s pause: OpenBLAS's
 * workers keep spinning (yielding) for a while after each call and would
 * otherwise compete with the next block's threads. At least 2 rounds, and
 * until `seconds` have passed. */
#define TP_BENCH_BLOCK(best, call)                   \
  do {                                               \
    tp_bench_sleep(0.3);                             \
    for (int rep_ = 0; rep_ < 3; ++rep_) {           \
      double t0_ = tp_cli_now();                   \
      call;                                          \
      double t1_ = tp_cli_now();                   \
      if (t1_ - t0_ < (best)) (best) = t1_ - t0_;    \
    }                                                \
  } while (0)

#define TP_BENCH_PAIR(best_a, call_a, best_b, call_b, seconds)                     \
  do {                                                                             \
    double start_all_ = tp_cli_now();                                            \
    (best_a) = (best_b) = 1e30;                                                    \
    for (int round_ = 0; round_ < 2 || (tp_cli_now() - start_all_ < (seconds) && round_ < 100); \
         ++round_) {                                                               \
      if (round_ % 2 == 0) {                                                       \
        TP_BENCH_BLOCK(best_a, call_a);                                            \
        TP_BENCH_BLOCK(best_b, call_b);                                            \
      } else {                                                                     \
        TP_BENCH_BLOCK(best_b, call_b);                                            \
        TP_BENCH_BLOCK(best_a, call_a);                                            \
      }                                                                            \
    }                                                                              \
  } while (0)

#define TP_BENCH_DEFINE(T, S, PEERFN)                                                            \
  static int tp_bench_run_##S(int64_t n, int threads, const tp_peer *peer, double seconds) {    \
    size_t count = (size_t)(n * n);                                                              \
    T *a = malloc(count * sizeof(T)), *b = malloc(count * sizeof(T));                            \
    T *c = malloc(count * sizeof(T)), *c_peer = malloc(count * sizeof(T));                       \
    if (!a || !b || !c || !c_peer) {                                                             \
      free(a), free(b), free(c), free(c_peer);                                                   \
      fprintf(stderr, "bench-gemm: out of memory at n=%lld\n", (long long)n);                    \
      return 1;                                                                                  \
    }                                                                                            \
    uint64_t state = 42;                                                                         \
    for (size_t i = 0; i < count; ++i) {                                                         \
      a[i] = (T)((double)(tp_bench_next(&state) >> 11) * 0x1p-53 * 2.0 - 1.0);                   \
      b[i] = (T)((double)(tp_bench_next(&state) >> 11) * 0x1p-53 * 2.0 - 1.0);                   \
    }                                                                                            \
    double flops = 2.0 * (double)n * (double)n * (double)n, ours, theirs = 0;                    \
    topos_status st = TOPOS_OK;                                                                  \
    int saved_threads = topos_threads();                                                         \
    topos_set_threads(threads);                                                                  \
    if (peer->handle) {                                                                          \
      peer->set_threads(threads);                                                                \
      TP_BENCH_PAIR(ours, st = tp_simd_gemm_##S(n, n, n, a, n, 1, b, n, 1, c, n), theirs,        \
                    peer->PEERFN(TP_CBLAS_ROW_MAJOR, TP_CBLAS_NO_TRANS, TP_CBLAS_NO_TRANS,       \
                                 (int)n, (int)n, (int)n, 1, a, (int)n, b, (int)n, 0, c_peer,     \
                                 (int)n),                                                        \
                    seconds);                                                                    \
    } else {                                                                                     \
      TP_BENCH_PAIR(ours, st = tp_simd_gemm_##S(n, n, n, a, n, 1, b, n, 1, c, n), theirs,        \
                    (void)0, seconds);                                                           \
    }                                                                                            \
    topos_set_threads(saved_threads);                                                            \
    if (st != TOPOS_OK) {                                                                        \
      free(a), free(b), free(c), free(c_peer);                                                   \
      return tp_cli_fail("bench-gemm", st, "tp_simd_gemm_" #S);                                  \
    }                                                                                            \
    printf("%6lld  %-5s %7d  %9.1f", (long long)n, #S, threads, flops / ours * 1e-9);           \
    if (peer->handle) {                                                                          \
      double diff = 0, scale = 0;                                                                \
      for (size_t i = 0; i < count; ++i) {                                                       \
        diff = fmax(diff, fabs((double)c[i] - (double)c_peer[i]));                               \
        scale = fmax(scale, fabs((double)c_peer[i]));                                            \
      }                                                                                          \
      printf("  %9.1f  %5.3f  %9.1e  %s\n", flops / theirs * 1e-9, theirs / ours,                \
             scale > 0 ? diff / scale : diff, peer->corename ? peer->corename() : "?");         \
    } else {                                                                                     \
      printf("  %9s  %5s  %9s  %s\n", "-", "-", "-", "-");                                      \
    }                                                                                            \
    fflush(stdout);                                                                              \
    free(a), free(b), free(c), free(c_peer);                                                     \
    return 0;                                                                                    \
  }
TP_BENCH_DEFINE(float, f32, sgemm)
TP_BENCH_DEFINE(double, f64, dgemm)

/* "a,b,c" of positive integers (at most 16) into out: the count, 0 if bad. */
static int tp_bench_parse_list(const char *text, int64_t *out) {
  long v[16];
  const int count = tp_cli_long_list(text, 1, LONG_MAX, v, 16);
  for (int k = 0; k < count; ++k) out[k] = v[k];
  return count;
}

static int tp_bench_gemm_main(int argc, char **argv) {
  int64_t sizes[16] = {512, 1024, 2048}, threads[16] = {1, 2};
  int nsizes = 3, nthreads = 2, keep_env = 0, no_peer = 0, tuned = 0, do32 = 1, do64 = 1;
  double seconds = 1.0;
  tp_simd_gemm_tuning tuning = {0, 0, 0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      nsizes = tp_bench_parse_list(argv[++i], sizes);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      nthreads = tp_bench_parse_list(argv[++i], threads);
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      float s;
      if (!tp_cli_float(argv[++i], 0.001f, 3600.0f, &s))
        return tp_cli_bad_value("bench gemm", "--seconds", argv[i], "seconds in 0.001..3600");
      seconds = s;
    } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
      ++i;
      do32 = strcmp(argv[i], "f64") != 0;
      do64 = strcmp(argv[i], "f32") != 0;
    } else if (strcmp(argv[i], "--blocking") == 0 && i + 1 < argc) {
      /* mc,kc,nc override (0 keeps the table's value), for tuning. */
      if (sscanf(argv[++i], "%" SCNd64 ",%" SCNd64 ",%" SCNd64, &tuning.mc, &tuning.kc, &tuning.nc) != 3) {
        fprintf(stderr, "bench-gemm: --blocking wants MC,KC,NC\n");
        return 2;
      }
      tuned = 1;
    } else if (strcmp(argv[i], "--shared-b") == 0 && i + 1 < argc) {
      /* A/B switch for tuning: auto, never, always share B packing. */
      ++i;
      tuning.shared_b = strcmp(argv[i], "never") == 0 ? 1 : strcmp(argv[i], "always") == 0 ? 2 : 0;
      tuned = 1;
    } else if (strcmp(argv[i], "--no-peer") == 0) {
      no_peer = 1;
    } else if (strcmp(argv[i], "--keep-openblas-env") == 0) {
      keep_env = 1;
    } else {
      printf("usage: topos bench-gemm [--sizes 512,1024,2048] [--threads 1,2] [--dtype f32|f64|both]\n"
             "                        [--seconds S (per measurement, default 1)] [--keep-openblas-env] [--no-peer]\n"
             "                        [--blocking MC,KC,NC (override, 0 = table value)] [--shared-b auto|never|always]\n"
             "Square C = A.B, GFLOP/s (best of repeats) of topos's SIMD GEMM and of OpenBLAS\n"
             "(dlopen libopenblas.so.0) in the same run; ratio = ours / OpenBLAS.\n");
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
    if (nsizes == 0 || nthreads == 0) {
      fprintf(stderr, "bench-gemm: bad list in %s\n", argv[i]);
      return 2;
    }
  }
  if (tuned) tp_simd_gemm_set_tuning(&tuning);
  tp_peer peer;
  memset(&peer, 0, sizeof peer);
  if (!no_peer) tp_bench_open_peer(&peer, keep_env);
  if (no_peer)
    printf("peer: not measured (--no-peer)\n");
  else if (peer.handle)
    printf("peer: OpenBLAS, core %s\n", peer.corename ? peer.corename() : "(unknown)");
  else
    printf("peer: not available (libopenblas.so.0: %s)\n", dlerror());
  printf("ours: %s | %s\n", tp_simd_gemm_describe(32), tp_simd_gemm_describe(64));
  printf("%6s  %-5s %7s  %9s  %9s  %5s  %9s  %s\n", "n", "dtype", "threads", "ours GF/s",
         "peer GF/s", "ratio", "max rdiff", "peer kernel");
  int rc = 0;
  for (int s = 0; s < nsizes && !rc; ++s)
    for (int d = 0; d < 2 && !rc; ++d)
      for (int t = 0; t < nthreads && !rc; ++t) {
        if (d == 0 && do32) rc = tp_bench_run_f32(sizes[s], (int)threads[t], &peer, seconds);
        if (d == 1 && do64) rc = tp_bench_run_f64(sizes[s], (int)threads[t], &peer, seconds);
      }
  if (peer.handle) dlclose(peer.handle);
  return rc;
}
#else
static int tp_bench_gemm_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("bench-gemm: this build has no SIMD backend (configure with -DTOPOS_SIMD=ON)\n");
  return 0;
}
#endif

TOPOS_COMMAND("bench-gemm", "SIMD packed GEMM vs OpenBLAS (GFLOP/s table)", tp_bench_gemm_main)
