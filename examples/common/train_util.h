/* Shared helpers of the training examples (header-only so each example stays
 * one program, and `topos train NAME` can compile the same files): flags,
 * finding data, a progress line, the loss curve as an SVG chart.
 * Uses only the public API (topos.h) and libc. */
#ifndef TOPOS_EXAMPLES_TRAIN_UTIL_H
#define TOPOS_EXAMPLES_TRAIN_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "topos.h"

/* ---- flags common to every example */
typedef struct ex_flags {
  const char *data;    /* --data PATH */
  const char *out;     /* --out DIR for chart and checkpoint (default ".") */
  long steps;          /* --steps N */
  long batch;          /* --batch N */
  double lr;           /* --lr X */
  int threads;         /* --threads N (0: library default) */
  uint64_t seed;       /* --seed N */
  double max_seconds;  /* --max-seconds S: stop early when the budget is spent (0: none) */
  int quiet;           /* --quiet: no progress lines */
} ex_flags;

static inline void ex_usage(const char *name, const ex_flags *d, const char *extra) {
  printf("usage: %s [--data PATH] [--steps N] [--batch N] [--lr X] [--threads N] [--seed N]\n"
         "          [--max-seconds S] [--out DIR] [--quiet]\n"
         "defaults: steps %ld, batch %ld, lr %g, seed %llu, out '%s'\n%s",
         name, d->steps, d->batch, d->lr, (unsigned long long)d->seed, d->out ? d->out : ".",
         extra ? extra : "");
}

static inline int ex_exists(const char *path);

/* Parses argv into f (which holds the defaults). Returns 0 to run, 1 after
 * --help, 2 on a bad flag. */
static inline int ex_parse_flags(int argc, char **argv, ex_flags *f, const char *extra_help) {
  ex_flags defaults = *f;
  for (int i = 1; i < argc; i += 2) { /* a flag and its value */
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      ex_usage(argv[0], &defaults, extra_help);
      return 1;
    } else if (!strcmp(a, "--quiet")) {
      f->quiet = 1;
      --i; /* no value */
      continue;
    }
    if (!v) {
      fprintf(stderr, "%s: flag %s needs a value (see --help)\n", argv[0], a);
      return 2;
    }
    char *end = NULL;
    if (!strcmp(a, "--data")) f->data = v;
    else if (!strcmp(a, "--out")) f->out = v;
    else if (!strcmp(a, "--steps")) f->steps = strtol(v, &end, 10);
    else if (!strcmp(a, "--batch")) f->batch = strtol(v, &end, 10);
    else if (!strcmp(a, "--lr")) f->lr = strtod(v, &end);
    else if (!strcmp(a, "--threads")) f->threads = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--seed")) f->seed = strtoull(v, &end, 10);
    else if (!strcmp(a, "--max-seconds")) f->max_seconds = strtod(v, &end);
    else {
      fprintf(stderr, "%s: unknown flag %s (see --help)\n", argv[0], a);
      return 2;
    }
    if (end && *end) {
      fprintf(stderr, "%s: bad value '%s' for %s\n", argv[0], v, a);
      return 2;
    }
  }
  if (f->steps < 0 || f->batch <= 0 || f->threads < 0) {
    fprintf(stderr, "%s: steps, batch and threads must be positive\n", argv[0]);
    return 2;
  }
  if (f->out && *f->out && mkdir(f->out, 0777) != 0 && !ex_exists(f->out)) {
    fprintf(stderr, "%s: cannot create --out %s\n", argv[0], f->out);
    return 2;
  }
  if (f->threads > 0 && topos_set_threads(f->threads) != TOPOS_OK) {
    fprintf(stderr, "%s: --threads %d: %s\n", argv[0], f->threads, topos_last_error());
    return 2;
  }
  return 0;
}

static inline double ex_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int ex_exists(const char *path) {  /* 1 if path exists */
  struct stat st;
  return path && stat(path, &st) == 0;
}

/* First directory of candidates (NULL-terminated) that holds `probe`;
 * copies it into dir. Returns 0 when none does. */
static inline int ex_find_dir(const char *const *candidates, const char *probe, char *dir,
                              size_t size) {
  char path[4096];
  for (int i = 0; candidates[i]; ++i) {
    snprintf(path, sizeof path, "%s/%s", candidates[i], probe);
    if (ex_exists(path)) {
      snprintf(dir, size, "%s", candidates[i]);
      return 1;
    }
  }
  return 0;
}

/* ---- progress: a line that redraws on a terminal, plain lines otherwise */
typedef struct ex_progress {
  double start, last_print;
  int tty, quiet;
  long total;
  double budget; /* seconds; 0: none. The ETA never exceeds what is left of it */
} ex_progress;

static inline void ex_progress_start(ex_progress *p, long total, int quiet) {
  p->start = p->last_print = ex_now();
  p->tty = isatty(fileno(stdout));
  p->quiet = quiet;
  p->total = total;
  p->budget = 0;
}

/* Prints at most ~8 lines per second on a terminal and every `every` steps
 * otherwise; always prints the last step. */
static inline void ex_progress_step(ex_progress *p, long step, double loss, long every) {
  if (p->quiet) return;
  double now = ex_now();
  long done = step + 1;
  int last = done == p->total;
  if (p->tty ? (now - p->last_print < 0.125 && !last) : (done % every != 0 && !last)) return;
  p->last_print = now;
  double per_step = (now - p->start) / (double)done;
  double eta = per_step * (double)(p->total - done);
  if (p->budget > 0 && eta > p->budget - (now - p->start)) eta = p->budget - (now - p->start);
  if (eta < 0) eta = 0;
  if (p->tty) {
    printf("\r  step %6ld/%ld  loss %.4f  %7.2f ms/step  ETA %5.0f s ", done, p->total, loss,
           1e3 * per_step, eta);
    if (last) printf("\n");
  } else {
    printf("  step %6ld/%ld  loss %.4f  %7.2f ms/step  ETA %5.0f s\n", done, p->total, loss,
           1e3 * per_step, eta);
  }
  fflush(stdout);
}

/* Ends a redrawing line early (a stop before the last step). */
static inline void ex_progress_end(ex_progress *p) {
  if (p->tty && !p->quiet) printf("\n");
}

/* ---- loss curve: the raw losses, drawn smoothed (window mean) as an SVG */
typedef struct ex_curve {
  double *values;
  long count, cap;
} ex_curve;

static inline void ex_curve_push(ex_curve *c, double v) {
  if (c->count == c->cap) {
    long cap = c->cap ? 2 * c->cap : 1024;
    double *grown = realloc(c->values, (size_t)cap * sizeof *grown);
    if (!grown) return;
    c->values = grown;
    c->cap = cap;
  }
  c->values[c->count++] = v;
}

static inline void ex_curve_free(ex_curve *c) {
  free(c->values);
  c->values = NULL;
  c->count = c->cap = 0;
}

/* Mean of the last `window` values (all when fewer). */
static inline double ex_curve_tail_mean(const ex_curve *c, long window) {
  if (c->count == 0) return NAN;
  long from = c->count > window ? c->count - window : 0;
  double s = 0;
  for (long i = from; i < c->count; ++i) s += c->values[i];
  return s / (double)(c->count - from);
}

/* Writes the curve as a standalone SVG line chart. Returns 0 on success. */
static inline int ex_curve_svg(const ex_curve *c, const char *path, const char *title) {
  if (c->count == 0) return -1;
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  const double W = 720, H = 360, L = 60, R = 20, T = 40, B = 40;
  long window = c->count / 100 > 1 ? c->count / 100 : 1;
  long points = (c->count + window - 1) / window;
  double lo = INFINITY, hi = -INFINITY;
  double *smooth = malloc((size_t)points * sizeof *smooth);
  if (!smooth) {
    fclose(f);
    return -1;
  }
  for (long p = 0; p < points; ++p) {
    double s = 0;
    long n = 0;
    for (long i = p * window; i < c->count && i < (p + 1) * window; ++i, ++n) s += c->values[i];
    smooth[p] = s / (double)n;
    if (isfinite(smooth[p])) {
      if (smooth[p] < lo) lo = smooth[p];
      if (smooth[p] > hi) hi = smooth[p];
    }
  }
  if (!(hi > lo)) {
    hi = lo + 1;
    if (!isfinite(lo)) lo = 0, hi = 1;
  }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s</text>\n", L, title);
  fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B,
          W - R, H - B);
  fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L,
          H - B);
  for (int k = 0; k <= 4; ++k) {
    double v = lo + (hi - lo) * k / 4.0, y = H - B - (H - T - B) * k / 4.0;
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", L - 6, y + 4, v);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y,
            W - R, y);
  }
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">step %ld</text>\n", W - R, H - 12,
          c->count);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">loss (mean of %ld steps per point)</text>\n", L, H - 12,
          window);
  fprintf(f, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
  for (long p = 0; p < points; ++p) {
    if (!isfinite(smooth[p])) continue;
    double x = L + (W - L - R) * (points > 1 ? (double)p / (double)(points - 1) : 0.0);
    double y = H - B - (H - T - B) * (smooth[p] - lo) / (hi - lo);
    fprintf(f, "%.1f,%.1f ", x, y);
  }
  fprintf(f, "\"/>\n</svg>\n");
  free(smooth);
  return fclose(f) == 0 ? 0 : -1;
}

/* Fisher-Yates with splitmix64. */
static inline void ex_shuffle(int64_t *order, int64_t n, topos_rng *rng) {
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)(topos_rng_next(rng) % (uint64_t)(i + 1));
    int64_t tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
}

/* Joins dir and name into buf. */
static inline const char *ex_path(char *buf, size_t size, const char *dir, const char *name) {
  snprintf(buf, size, "%s/%s", dir && *dir ? dir : ".", name);
  return buf;
}

/* Prints the library error of a failed call and returns 1 (for main). */
static inline int ex_fail(const char *what, topos_status s) {
  fprintf(stderr, "error: %s: %s (%s)\n", what, topos_last_error(), topos_status_name(s));
  return 1;
}

#define EX_TRY(what, expr)                       \
  do {                                           \
    topos_status ex_s_ = (expr);                 \
    if (ex_s_ != TOPOS_OK) {                     \
      rc = ex_fail(what, ex_s_);                 \
      goto cleanup;                              \
    }                                            \
  } while (0)

#endif
