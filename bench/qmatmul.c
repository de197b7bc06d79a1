/* `topos bench-qmatmul`: quantized matrix products, reference vs fast, at 1
 * and 2 threads, next to a STREAM-style read and copy bandwidth measured in
 * the same run (the ceiling for m = 1, which is memory-bound).
 *
 * Weights are random blocks with sane scale fields (the kernels' speed does
 * not depend on the values; quantizing 58M elements with the reference
 * quantizer would take longer than the whole bench). The reference path is
 * timed only on shapes of at most 2^25 multiply-adds, once per thread count.
 * Times are the best of several runs (the machine is shared).
 *
 * --against LIB: the fast path of another build of the library (its shared
 * object, opened with dlopen) timed in the same process at one thread, runs
 * alternating with this build's, and the two outputs compared bit for bit.
 * On a host whose speed drifts by 10-20 % from one run to the next (shared
 * machines), builds timed in separate processes cannot resolve a 5 %
 * change; run by run in one process, both see the same drift. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stream.h"
#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "tools/cli.h"

static uint64_t qb_state = 0x9E3779B97F4A7C15ull;
static uint64_t qb_next(void) {
  uint64_t z = (qb_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static float qb_unit(void) { return (float)((qb_next() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

typedef struct {
  const char *name;
  topos_dtype type;
  int64_t block, bytes;
  int f16_at[2]; /* offsets of f16 scale fields in a block, -1 none */
} qb_type;

static const qb_type qb_types[] = {
    {"f32", TOPOS_F32, 1, 4, {-1, -1}},       {"f16", TOPOS_F16, 1, 2, {-1, -1}},
    {"bf16", TOPOS_BF16, 1, 2, {-1, -1}},     {"q8_0", TOPOS_Q8_0, 32, 34, {0, -1}},
    {"q4_0", TOPOS_Q4_0, 32, 18, {0, -1}},    {"q4_K", TOPOS_Q4_K, 256, 144, {0, 2}},
    {"q6_K", TOPOS_Q6_K, 256, 210, {208, -1}}, {"q4_1", TOPOS_Q4_1, 32, 20, {0, 2}},
    {"q5_0", TOPOS_Q5_0, 32, 22, {0, -1}},    {"q5_1", TOPOS_Q5_1, 32, 24, {0, 2}},
    {"q2_K", TOPOS_Q2_K, 256, 84, {80, 82}},  {"q3_K", TOPOS_Q3_K, 256, 110, {108, -1}},
    {"q5_K", TOPOS_Q5_K, 256, 176, {0, 2}},   {"mxfp4", TOPOS_MXFP4, 32, 17, {-1, -1}},
};
#define QB_DEFAULT_TYPES 7

static void qb_fill_weights(const qb_type *t, uint8_t *w, int64_t elements) {
  int64_t blocks = elements / t->block;
  if (t->type == TOPOS_F32 || t->type == TOPOS_F16 || t->type == TOPOS_BF16) {
    for (int64_t i = 0; i < elements; ++i) {
      float v = qb_unit() * 0.1f;
      if (t->type == TOPOS_F32) memcpy(w + 4 * i, &v, 4);
      else {
        uint16_t h = t->type == TOPOS_F16 ? topos_f32_to_f16(v) : topos_f32_to_bf16(v);
        memcpy(w + 2 * i, &h, 2);
      }
    }
    return;
  }
  for (int64_t i = 0; i < blocks * t->bytes; i += 8) {
    uint64_t r = qb_next();
    memcpy(w + i, &r, (size_t)(blocks * t->bytes - i < 8 ? blocks * t->bytes - i : 8));
  }
  if (t->type == TOPOS_MXFP4) /* E8M0 exponents of 2^-8 .. 2^-1: no denormal or infinite scales */
    for (int64_t b = 0; b < blocks; ++b) w[b * t->bytes] = (uint8_t)(120 + qb_next() % 8);
  for (int64_t b = 0; b < blocks; ++b)
    for (int f = 0; f < 2; ++f)
      if (t->f16_at[f] >= 0) {
        uint16_t h = topos_f32_to_f16(0.001f + 0.01f * (qb_unit() + 1.0f));
        memcpy(w + b * t->bytes + t->f16_at[f], &h, 2);
      }
}

/* ---- STREAM-style copy bandwidth (the read is bench/stream.c's) */
typedef struct {
  const uint64_t *src;
  uint64_t *dst;
  int64_t words;
} qb_copy_ctx;

static void qb_copy_range(void *vctx, int64_t r0, int64_t r1) {
  qb_copy_ctx *c = vctx;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t w0 = c->words * r / 64, w1 = c->words * (r + 1) / 64;
    memcpy(c->dst + w0, c->src + w0, (size_t)(w1 - w0) * 8);
  }
}

/* GB/s of read + written bytes */
static double qb_copy(int threads, uint64_t *src, uint64_t *dst, int64_t words) {
  qb_copy_ctx c = {src, dst, words};
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = tp_cli_now();
    tp_qk_parallel_for(threads, 64, 1, qb_copy_range, &c);
    double dt = tp_cli_now() - t0;
    if (dt < best) best = dt;
  }
  return (double)words * 16.0 / best * 1e-9;
}

/* Best (minimum) of the timed runs within a time budget (at least 3 runs,
 * at most 200): the machine is shared, and interference only adds time. */
static int qb_time(const float *a, int64_t m, int64_t k, const uint8_t *w, topos_dtype type,
                   int64_t n, float *out, topos_qmatmul_path path, int threads, double budget,
                   double *us) {
  double times[200];
  int runs = 0;
  double start = tp_cli_now();
  topos_status st = tp_qmatmul_threads(a, m, k, w, type, n, NULL, out, path, threads); /* warm-up */
  if (st != TOPOS_OK) return (int)st;
  while (runs < 200 && (runs < 3 || tp_cli_now() - start < budget)) {
    double t0 = tp_cli_now();
    tp_qmatmul_threads(a, m, k, w, type, n, NULL, out, path, threads);
    times[runs++] = tp_cli_now() - t0;
  }
  for (int i = 1; i < runs; ++i)
    for (int j = i; j > 0 && times[j] < times[j - 1]; --j) {
      double x = times[j];
      times[j] = times[j - 1], times[j - 1] = x;
    }
  *us = times[0] * 1e6;
  return 0;
}

/* Another build's public entry points (--against). */
typedef struct {
  topos_status (*qmatmul)(const float *, int64_t, int64_t, const void *, topos_dtype, int64_t, const float *, float *,
                          topos_qmatmul_path);
  void (*set_threads)(int);
} qb_other;

/* The library stays open to the end of the process: its pool's workers run
 * its code (they are stopped by its own exit handler). */
static int qb_other_open(const char *path, qb_other *o) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "topos bench-qmatmul: --against %s: %s\n", path, dlerror());
    return 0;
  }
  *(void **)(void *)&o->qmatmul = dlsym(h, "topos_qmatmul");
  *(void **)(void *)&o->set_threads = dlsym(h, "topos_set_threads");
  if (!o->qmatmul || !o->set_threads) {
    fprintf(stderr, "topos bench-qmatmul: --against %s: no topos_qmatmul / topos_set_threads in it\n", path);
    return 0;
  }
  return 1;
}

/* The fast path of this build and of the other, run after run in turn
 * (which goes first alternates), within the budget: best times of each in
 * us[0] (this build) and us[1]; *same: whether the outputs' bits agree. */
static int qb_time_against(const qb_other *o, const float *a, int64_t m, int64_t k, const uint8_t *w,
                           topos_dtype type, int64_t n, float *out, float *out_other, int threads, double budget,
                           double us[2], int *same) {
  o->set_threads(threads);
  topos_status st = tp_qmatmul_threads(a, m, k, w, type, n, NULL, out, TOPOS_QMATMUL_FAST, threads);
  if (st != TOPOS_OK) return (int)st;
  st = o->qmatmul(a, m, k, w, type, n, NULL, out_other, TOPOS_QMATMUL_FAST);
  if (st != TOPOS_OK) return (int)st;
  *same = memcmp(out, out_other, (size_t)(m * n) * sizeof(float)) == 0;
  us[0] = us[1] = 1e30;
  int runs = 0;
  const double start = tp_cli_now();
  while (runs < 400 && (runs < 6 || tp_cli_now() - start < 2.0 * budget)) {
    const int which = (runs & 1) ^ ((runs >> 1) & 1); /* 0 1 1 0 0 1 1 0 ... */
    const double t0 = tp_cli_now();
    if (which == 0) tp_qmatmul_threads(a, m, k, w, type, n, NULL, out, TOPOS_QMATMUL_FAST, threads);
    else o->qmatmul(a, m, k, w, type, n, NULL, out_other, TOPOS_QMATMUL_FAST);
    const double dt = (tp_cli_now() - t0) * 1e6;
    if (dt < us[which]) us[which] = dt;
    ++runs;
  }
  return 0;
}

/* One row of the --against table (or its JSON object): one thread, since
 * each build has its own pool, whose workers spin ~100 us after a product;
 * at two threads one build's spinning worker took the other's core (this
 * build against itself read 0.6-1.25x on small products). */
static void qb_row_against(const qb_other *other, const qb_type *t, const float *a, int64_t m, int64_t k,
                           const uint8_t *w, int64_t n, float *out, float *out_other, double budget, int json) {
  const int th = 1;
  double us[2];
  int same = 0;
  topos_set_threads(th);
  int st = qb_time_against(other, a, m, k, w, t->type, n, out, out_other, th, budget, us, &same);
  if (st)
    printf("%-5s %5lld %6lld %6lld %3d   %s\n", t->name, (long long)m, (long long)k, (long long)n, th,
           topos_status_name((topos_status)st));
  else if (json)
    printf("{\"bench\":\"qmatmul_against\",\"type\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
           "\"threads\":%d,\"us\":%.1f,\"other_us\":%.1f,\"same_bits\":%s}\n",
           t->name, (long long)m, (long long)n, (long long)k, th, us[0], us[1], same ? "true" : "false");
  else
    printf("%-5s %5lld %6lld %6lld %3d %11.1f %11.1f %9.3fx %5s\n", t->name, (long long)m, (long long)k,
           (long long)n, th, us[0], us[1], us[1] / us[0], same ? "same" : "DIFF");
  fflush(stdout);
}

static int qb_command(int argc, char **argv) {
  int json = 0, all_types = 0, no_stream = 0, fast_only = 0;
  const char *only_type = NULL, *against = NULL;
  long long only_m = 0, only_k = 0, only_n = 0;
  double budget = 0.15;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) only_type = argv[++i], all_types = 1;
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%lldx%lldx%lld", &only_m, &only_k, &only_n) != 3) return 2;
    } else if (strcmp(argv[i], "--no-stream") == 0) no_stream = 1;
    else if (strcmp(argv[i], "--fast-only") == 0) fast_only = 1;
    else if (strcmp(argv[i], "--all-types") == 0) all_types = 1;
    else if (strcmp(argv[i], "--quick") == 0) budget = 0.03;
    else if (strcmp(argv[i], "--against") == 0 && i + 1 < argc) against = argv[++i];
    else {
      printf("usage: topos bench-qmatmul [--json] [--all-types] [--quick] [--type T] [--shape MxKxN]\n"
             "                           [--no-stream] [--fast-only] [--against LIB]\n\n"
             "Quantized matrix products (reference vs fast, 1 and 2 threads) and STREAM-style\n"
             "read/copy bandwidth. Reference timed only up to 2^25 multiply-adds.\n"
             "--against LIB: the fast path of another build (its libtopos.so) alternating with\n"
             "this one's in the same process, one thread: times, ratio and whether the bits agree.\n");
      return strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ? 0 : 2;
    }
  }
  static const int64_t shapes[][3] = {{1, 256, 256},   {1, 1024, 1024}, {1, 2048, 2048},
                                      {1, 4096, 4096}, {8, 1024, 1024}, {32, 1024, 1024},
                                      {1, 4096, 14336}}; /* m, k, n */
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  const int ntypes = all_types ? (int)(sizeof qb_types / sizeof qb_types[0]) : QB_DEFAULT_TYPES;
  qb_other other = {0};
  if (against && !qb_other_open(against, &other)) return 1;

  /* bandwidth first: 256 MiB source, well beyond the caches */
  const int64_t words = no_stream ? 8 : (int64_t)32 << 20;
  uint64_t *src = malloc((size_t)words * 8), *dst = malloc((size_t)words * 8);
  if (!src || !dst) {
    free(src), free(dst);
    fprintf(stderr, "topos bench-qmatmul: out of memory\n");
    return 1;
  }
  for (int64_t i = 0; i < words; ++i) src[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull, dst[i] = 0;
  double read_bw[3] = {0}, copy_bw[3] = {0};
  for (int th = 1; th <= 2 && !no_stream; ++th) {
    topos_set_threads(th);
    read_bw[th] = tp_bench_stream_read(th) * 1e-9;
    copy_bw[th] = qb_copy(th, src, dst, words);
    if (json) {
      printf("{\"bench\":\"stream\",\"kind\":\"read\",\"threads\":%d,\"gbps\":%.2f}\n", th, read_bw[th]);
      printf("{\"bench\":\"stream\",\"kind\":\"copy\",\"threads\":%d,\"gbps\":%.2f}\n", th, copy_bw[th]);
    } else {
      printf("stream read  %d thread%s: %7.2f GB/s   copy (read+write bytes): %7.2f GB/s\n", th,
             th > 1 ? "s" : " ", read_bw[th], copy_bw[th]);
    }
  }
  free(src), free(dst);
  if (!json && against) {
    printf("fast ISA: %s; against %s, alternating run by run\n\n",
           topos_qmatmul_fast_isa(TOPOS_Q4_K) ? topos_qmatmul_fast_isa(TOPOS_Q4_K) : "none", against);
    printf("%-5s %5s %6s %6s %3s %11s %11s %7s %5s\n", "type", "m", "k", "n", "th", "this us", "other us",
           "other/this", "bits");
  } else if (!json) {
    printf("fast ISA: %s\n\n", topos_qmatmul_fast_isa(TOPOS_Q4_K) ? topos_qmatmul_fast_isa(TOPOS_Q4_K) : "none");
    printf("%-5s %5s %6s %6s %3s %-9s %11s %9s %8s %8s\n", "type", "m", "k", "n", "th", "path",
           "us", "GFLOP/s", "GB/s", "%read");
  }

  int rc = 0;
  for (int ti = 0; ti < ntypes && rc == 0; ++ti) {
    const qb_type *t = &qb_types[ti];
    if (only_type && strcmp(only_type, t->name) != 0) continue;
    for (int si = 0; si < nshapes && rc == 0; ++si) {
      int64_t m = shapes[si][0], k = shapes[si][1], n = shapes[si][2];
      if (only_m && si > 0) continue;
      if (only_m) m = only_m, k = only_k, n = only_n; /* --shape: that shape alone */
      const size_t wbytes = (size_t)(n * (k / t->block) * t->bytes);
      uint8_t *w = malloc(wbytes);
      float *a = malloc((size_t)(m * k) * sizeof(float)), *out = malloc((size_t)(m * n) * sizeof(float));
      float *out_other = against ? malloc((size_t)(m * n) * sizeof(float)) : NULL;
      if (!w || !a || !out || (against && !out_other)) {
        fprintf(stderr, "topos bench-qmatmul: out of memory\n");
        rc = 1;
      } else {
        qb_fill_weights(t, w, n * k);
        for (int64_t i = 0; i < m * k; ++i) a[i] = qb_unit();
        if (against) qb_row_against(&other, t, a, m, k, w, n, out, out_other, budget, json);
        else {
          for (int p = 0; p < 2 && rc == 0; ++p) {
            topos_qmatmul_path path = p == 0 ? TOPOS_QMATMUL_FAST : TOPOS_QMATMUL_REFERENCE;
            if (path == TOPOS_QMATMUL_REFERENCE && (fast_only || m * n * k > ((int64_t)1 << 25))) continue;
            for (int th = 1; th <= 2; ++th) {
              double us = 0;
              topos_set_threads(th);
              int st = qb_time(a, m, k, w, t->type, n, out, path, th, path == TOPOS_QMATMUL_FAST ? budget : budget / 3, &us);
              if (st) {
                if (!json)
                  printf("%-5s %5lld %6lld %6lld %3d %-9s   %s\n", t->name, (long long)m, (long long)k,
                         (long long)n, th, p ? "reference" : "fast", topos_status_name((topos_status)st));
                continue;
              }
              double gflops = 2.0 * (double)m * (double)n * (double)k / us * 1e-3;
              double gbps = (double)wbytes / us * 1e-3;
              const char *isa = p ? "c" : topos_qmatmul_fast_isa(t->type);
              if (json)
                printf("{\"bench\":\"qmatmul\",\"type\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                       "\"threads\":%d,\"path\":\"%s\",\"isa\":\"%s\",\"us\":%.1f,\"gflops\":%.2f,"
                       "\"gbps\":%.2f}\n",
                       t->name, (long long)m, (long long)n, (long long)k, th, p ? "reference" : "fast",
                       isa ? isa : "none", us, gflops, gbps);
              else
                printf("%-5s %5lld %6lld %6lld %3d %-9s %11.1f %9.2f %8.2f %7.0f%%\n", t->name,
                       (long long)m, (long long)k, (long long)n, th, p ? "reference" : "fast", us,
                       gflops, gbps, read_bw[th] > 0 ? 100.0 * gbps / read_bw[th] : 0.0);
              fflush(stdout);
            }
          }
        }
      }
      free(w), free(a), free(out), free(out_other);
    }
  }
  return rc;
}

TOPOS_COMMAND("bench-qmatmul", "quantized matrix products: reference vs fast, bandwidth",
              qb_command)
