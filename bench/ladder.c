/* topos bench ladder: each acceleration rung measured in one process.
 *
 *   gemm: square f32/f64 products (512, 1024, 2048) for the naive reference
 *         loop, the default rung, simd and blas (those compiled in) at 1 and
 *         2 threads, with OpenBLAS as the peer (opened with dlopen, so any
 *         build has a peer when libopenblas.so.0 is installed).
 *   map:  tanh and exp over 2M and 8M f32 per rung, Gelem/s.
 *   bias: x[rows, cols] + bias broadcast along rows (a stride-0 view), the
 *         run walker against a naive odometer walk.
 *
 * OPENBLAS_CORETYPE (e.g. Haswell, which halves OpenBLAS on AVX-512 parts)
 * and OPENBLAS_L2_SIZE may be set machine-wide. OpenBLAS reads them when it
 * loads, which for a BLAS build is before main: so the bench re-executes
 * itself once with them removed from its own environment and says so in
 * its output (--keep-openblas-env keeps them). Tests never do this.
 *
 * --json prints one JSON object per row. Numbers are the best of several
 * runs; the machine may be shared, so read them as orders of magnitude. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "backend/platform.h"
#include "tools/cli.h"

typedef void (*tp_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                            const float *, int, float, float *, int);
typedef void (*tp_dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                            const double *, int, double, double *, int);
typedef struct tp_peer {
  tp_sgemm_fn sgemm;
  tp_dgemm_fn dgemm;
  void (*set_threads)(int);
  char *(*corename)(void);
} tp_peer;

static int tp_json;
static const char *tp_only_rung; /* --rung NAME: measure one rung */

/* splitmix64 values in [-1, 1) (the bench does not depend on base's RNG). */
static void tp_fill(void *p, int64_t count, int f64, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    double v = (double)(z >> 11) * 0x1p-53 * 2.0 - 1.0;
    if (f64)
      ((double *)p)[i] = v;
    else
      ((float *)p)[i] = (float)v;
  }
}

static void tp_set_threads(int threads) { tp_backend_set_threads(threads); }

/* ---- gemm */
typedef enum { TP_RUNG_NAIVE, TP_RUNG_DEFAULT, TP_RUNG_SIMD, TP_RUNG_BLAS, TP_RUNG_COUNT } tp_rung;
static const char *const tp_rung_names[] = {"naive", "default", "simd", "blas"};

static int tp_gemm_run(tp_rung rung, int f64, const topos_gemm_task *t) {
  const tp_kernels *k = NULL;
  switch (rung) {
    case TP_RUNG_NAIVE:
      if (f64)
        tp_reference_gemm_f64(t);
      else
        tp_reference_gemm_f32(t);
      return 1;
    case TP_RUNG_DEFAULT: k = &tp_kernels_default; break;
#ifdef TOPOS_HAVE_SIMD
    case TP_RUNG_SIMD: k = &tp_kernels_simd; break;
#endif
#ifdef TOPOS_HAVE_BLAS
    case TP_RUNG_BLAS: k = &tp_kernels_blas; break;
#endif
    default: return 0;
  }
  if (k->setup && k->setup() != TOPOS_OK) return 0;
  return (f64 ? k->gemm_f64 : k->gemm_f32)(t) == TOPOS_OK;
}

/* Best seconds of `reps` calls (at least 2, until ~0.3 s spent). */
#define TP_TIME_BEST(best, call)                                      \
  do {                                                                \
    double tp_spent_ = 0;                                             \
    best = 1e30;                                                      \
    for (int tp_rep_ = 0; tp_rep_ < 2 || (tp_spent_ < 0.3 && tp_rep_ < 50); ++tp_rep_) { \
      double tp_t0_ = tp_cli_now();                                       \
      call;                                                           \
      double tp_dt_ = tp_cli_now() - tp_t0_;                              \
      tp_spent_ += tp_dt_;                                            \
      if (tp_dt_ < best) best = tp_dt_;                               \
    }                                                                 \
  } while (0)

static void tp_bench_gemm(const tp_peer *peer, const int *sizes, int nsizes, int naive_max) {
  const char *corename = peer->corename ? peer->corename() : "-";
  if (!tp_json)
    printf("\ngemm (GFLOP/s; peer = OpenBLAS %s)\n%-5s %-4s %-8s %-3s %9s %9s\n", corename,
           "dtype", "n", "rung", "thr", "gflops", "peer");
  for (int f64 = 0; f64 <= 1; ++f64)
    for (int s = 0; s < nsizes; ++s) {
      int n = sizes[s];
      size_t elem = f64 ? 8 : 4, count = (size_t)n * (size_t)n;
      void *a = malloc(count * elem), *b = malloc(count * elem), *c = malloc(count * elem);
      if (!a || !b || !c) {
        free(a), free(b), free(c);
        continue;
      }
      tp_fill(a, (int64_t)count, f64, 1);
      tp_fill(b, (int64_t)count, f64, 2);
      topos_gemm_task t = {n, n, n, a, n, 1, b, n, 1, c, n};
      double flops = 2.0 * n * (double)n * n;
      for (int threads = 1; threads <= 2; ++threads) {
        tp_set_threads(threads);
        double peer_best = 0;
        if (peer->sgemm) {
          peer->set_threads(threads);
          if (f64)
            TP_TIME_BEST(peer_best, peer->dgemm(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n));
          else
            TP_TIME_BEST(peer_best, peer->sgemm(101, 111, 111, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n));
          usleep(20000); /* OpenBLAS workers spin for a while after a call */
        }
        for (int r = 0; r < TP_RUNG_COUNT; ++r) {
          if (r == TP_RUNG_NAIVE && (threads > 1 || n > naive_max)) continue;
          if (tp_only_rung && strcmp(tp_only_rung, tp_rung_names[r]) != 0) continue;
          if (!tp_gemm_run((tp_rung)r, f64, &t)) continue; /* not compiled / declined */
          double best;
          TP_TIME_BEST(best, tp_gemm_run((tp_rung)r, f64, &t));
          double g = flops / best * 1e-9, pg = peer_best > 0 ? flops / peer_best * 1e-9 : 0;
          if (tp_json)
            printf("{\"bench\":\"gemm\",\"rung\":\"%s\",\"dtype\":\"%s\",\"n\":%d,\"threads\":%d,"
                   "\"gflops\":%.2f,\"peer\":\"openblas\",\"peer_gflops\":%.2f,"
                   "\"peer_kernel\":\"%s\"}\n",
                   tp_rung_names[r], f64 ? "f64" : "f32", n, threads, g, pg, corename);
          else
            printf("%-5s %-4d %-8s %-3d %9.2f %9.2f\n", f64 ? "f64" : "f32", n, tp_rung_names[r],
                   threads, g, pg);
          fflush(stdout);
        }
      }
      free(a), free(b), free(c);
    }
  tp_set_threads(0);
}

/* ---- maps */
static void tp_bench_maps(void) {
  static const topos_map_op ops[] = {TOPOS_MAP_TANH, TOPOS_MAP_EXP};
  static const int64_t counts[] = {2 << 20, 8 << 20};
  if (!tp_json) printf("\nmap f32 (Gelem/s)\n%-5s %-8s %-8s %-3s %9s\n", "op", "count", "rung", "thr", "gelems");
  for (size_t o = 0; o < 2; ++o)
    for (size_t ci = 0; ci < 2; ++ci) {
      int64_t n = counts[ci];
      float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
      if (!x || !y) {
        free(x), free(y);
        continue;
      }
      tp_fill(x, n, 0, 3);
      for (int64_t i = 0; i < n; ++i) x[i] *= 4.0f;
      const char *rungs[] = {"naive", "default", "simd"};
      for (int r = 0; r < 3; ++r)
        for (int threads = 1; threads <= 2; ++threads) {
          if (r == 0 && threads > 1) continue;
          tp_set_threads(threads);
          const tp_kernels *k = r == 1 ? &tp_kernels_default : NULL;
#ifdef TOPOS_HAVE_SIMD
          if (r == 2) k = &tp_kernels_simd;
#endif
          if (r == 2 && !k) continue;
          double best;
          if (r == 0)
            TP_TIME_BEST(best, tp_reference_map_f32(ops[o], x, y, n));
          else {
            if (k->map_f32(ops[o], x, y, n) != TOPOS_OK) continue;
            TP_TIME_BEST(best, k->map_f32(ops[o], x, y, n));
          }
          double ge = (double)n / best * 1e-9;
          if (tp_json)
            printf("{\"bench\":\"map\",\"op\":\"%s\",\"rung\":\"%s\",\"dtype\":\"f32\",\"n\":%lld,"
                   "\"threads\":%d,\"gelems\":%.3f}\n",
                   topos_map_op_name(ops[o]), rungs[r], (long long)n, threads, ge);
          else
            printf("%-5s %-8lld %-8s %-3d %9.3f\n", topos_map_op_name(ops[o]), (long long)n,
                   rungs[r], threads, ge);
          fflush(stdout);
        }
      free(x), free(y);
    }
  tp_set_threads(0);
}

/* ---- bias-add over a broadcast view, through the op API */
/* The naive walk: an index vector and a stride dot product per element. */
static void tp_odometer_add(const topos_tensor *x, const topos_tensor *b, float *dst) {
  const float *px = topos_tensor_data(x), *pb = topos_tensor_data(b);
  const int64_t *sx = topos_tensor_strides(x), *sb = topos_tensor_strides(b);
  const int64_t *shape = topos_tensor_shape(x);
  int64_t index[2] = {0, 0}, volume = shape[0] * shape[1];
  for (int64_t e = 0; e < volume; ++e) {
    dst[e] = px[index[0] * sx[0] + index[1] * sx[1]] + pb[index[0] * sb[0] + index[1] * sb[1]];
    if (++index[1] == shape[1]) index[1] = 0, ++index[0];
  }
}

static int tp_bench_bias(void) {
  const int64_t rows = 2048, cols = 1024;
  int64_t shape[2] = {rows, cols};
  topos_tensor *x = NULL, *bias = NULL, *spread = NULL, *y = NULL;
  topos_status s = topos_tensor_full(TOPOS_F32, 2, shape, 0.5, &x);
  if (s == TOPOS_OK) s = topos_tensor_full(TOPOS_F32, 1, &cols, 0.25, &bias);
  if (s == TOPOS_OK) s = topos_tensor_broadcast_along(bias, 0, rows, &spread);
  if (s != TOPOS_OK) {
    topos_tensor_release(x), topos_tensor_release(bias);
    return tp_cli_fail("bench ladder", s, "bias-add setup");
  }
  if (!tp_json) printf("\nbias-add f32 [%lld,%lld] + broadcast row (Gelem/s)\n", (long long)rows, (long long)cols);
  /* odometer: the naive walk, an index vector and a stride dot product per
   * element; reference: the op's reference kernel (default rung switched
   * off); runs: the default rung's run walker. */
  const char *walks[] = {"odometer", "reference", "runs"};
  float *dst = malloc((size_t)(rows * cols) * sizeof(float));
  for (int w = 0; w < 3 && dst; ++w)
    for (int threads = 1; threads <= 2; ++threads) {
      if (w == 0 && threads > 1) continue;
      tp_set_threads(threads);
      topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, w == 2);
      double best;
      if (w == 0) {
        TP_TIME_BEST(best, tp_odometer_add(x, spread, dst));
      } else {
        TP_TIME_BEST(best, (topos_add(x, spread, &y), topos_tensor_release(y)));
      }
      double ge = (double)(rows * cols) / best * 1e-9;
      if (tp_json)
        printf("{\"bench\":\"bias_add\",\"walk\":\"%s\",\"dtype\":\"f32\",\"n\":%lld,\"threads\":%d,"
               "\"gelems\":%.3f}\n", walks[w], (long long)(rows * cols), threads, ge);
      else
        printf("%-10s threads %d %9.3f\n", walks[w], threads, ge);
    }
  free(dst);
  topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, 1);
  tp_set_threads(0);
  topos_tensor_release(spread), topos_tensor_release(bias), topos_tensor_release(x);
  return 0;
}

static void tp_open_peer(tp_peer *peer) {
  memset(peer, 0, sizeof *peer);
  void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  *(void **)&peer->sgemm = dlsym(h, "cblas_sgemm");
  *(void **)&peer->dgemm = dlsym(h, "cblas_dgemm");
  *(void **)&peer->set_threads = dlsym(h, "openblas_set_num_threads");
  *(void **)&peer->corename = dlsym(h, "openblas_get_corename");
  if (!peer->sgemm || !peer->dgemm || !peer->set_threads) memset(peer, 0, sizeof *peer);
}

static int tp_bench_ladder(int argc, char **argv) {
  int keep_env = 0, do_gemm = 1, do_map = 1, do_bias = 1, naive_max = 1024;
  int sizes[8] = {512, 1024, 2048}, nsizes = 3;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) tp_json = 1;
    else if (strcmp(argv[i], "--keep-openblas-env") == 0) keep_env = 1;
    else if (strcmp(argv[i], "--gemm") == 0) do_map = do_bias = 0;
    else if (strcmp(argv[i], "--maps") == 0) do_gemm = do_bias = 0;
    else if (strcmp(argv[i], "--bias") == 0) do_gemm = do_map = 0;
    else if (strcmp(argv[i], "--naive-max") == 0 && i + 1 < argc) {
      long v;
      if (!tp_cli_long(argv[++i], 0, 1L << 16, &v))
        return tp_cli_bad_value("bench ladder", "--naive-max", argv[i], "a size in 0..65536");
      naive_max = (int)v;
    }
    else if (strcmp(argv[i], "--rung") == 0 && i + 1 < argc) tp_only_rung = argv[++i];
    else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      long v[8];
      nsizes = tp_cli_long_list(argv[++i], 1, 1L << 14, v, 8);
      if (nsizes == 0)
        return tp_cli_bad_value("bench ladder", "--sizes", argv[i], "up to 8 sizes in 1..16384, comma-separated");
      for (int k = 0; k < nsizes; ++k) sizes[k] = (int)v[k];
    } else {
      fprintf(stderr, "usage: topos bench ladder [--json] [--gemm|--maps|--bias] [--sizes 512,1024,2048]\n"
                      "       [--naive-max N] [--rung naive|default|simd|blas] [--keep-openblas-env]\n");
      return 2;
    }
  }
  /* OpenBLAS reads these at load time: re-execute once without them. */
  const char *restarted = getenv("TOPOS_BENCH_OPENBLAS_ENV");
  if (!keep_env && !restarted && (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE"))) {
    char note[256];
    snprintf(note, sizeof note, "OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s",
             getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
             getenv("OPENBLAS_L2_SIZE") ? getenv("OPENBLAS_L2_SIZE") : "(unset)");
    setenv("TOPOS_BENCH_OPENBLAS_ENV", note, 1);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (args) {
      args[0] = "topos";
      args[1] = "bench";
      for (int i = 0; i < argc; ++i) args[i + 2] = argv[i];
      args[0 + 2] = "ladder";
      execv("/proc/self/exe", args);
      free(args);
    }
  }
  if (restarted)
    printf("%sthis bench removed %s from its own environment for the OpenBLAS peer and the blas rung%s\n",
           tp_json ? "{\"note\":\"" : "note: ", restarted, tp_json ? "\"}" : "");
  tp_peer peer;
  tp_open_peer(&peer);
  if (!tp_json) {
    char cpu[256] = "";
    printf("default rung: %s\n", tp_default_describe());
    (void)cpu;
  }
  if (do_gemm) tp_bench_gemm(&peer, sizes, nsizes, naive_max);
  if (do_map) tp_bench_maps();
  if (do_bias) return tp_bench_bias();
  return 0;
}

TOPOS_COMMAND("bench-ladder", "each acceleration rung (gemm, maps, bias-add) against OpenBLAS",
              tp_bench_ladder)
