/* A new element type through the seam: double-double numbers (an unevaluated
 * sum hi + lo of two doubles, ~106 significant bits).
 *
 * The element supplies scalar multiply/add (what the built-in path uses, in
 * the reference order: first product, then k ascending) and a gemm hook: its
 * own kernel, which keeps the same order but runs without a function call
 * per element. topos_element_gemm picks the hook; a hook that declines would
 * fall back to the built-in path. Nothing above the seam knows the type.
 *
 * The program multiplies a 60x60 Hilbert-like matrix by a vector three ways
 * (built-in path, own kernel, plain f64) and prints the error of each
 * against the double-double result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topos.h"

typedef struct dd {
  double hi, lo;
} dd;

/* Error-free transforms: a + b = s + e exactly; a * b = p + e exactly (FMA). */
static dd dd_two_sum(double a, double b) {
  double s = a + b, bb = s - a;
  return (dd){s, (a - (s - bb)) + (b - bb)};
}
static dd dd_add_dd(dd x, dd y) {
  dd s = dd_two_sum(x.hi, y.hi);
  s.lo += x.lo + y.lo;
  return dd_two_sum(s.hi, s.lo);
}
static dd dd_mul_dd(dd x, dd y) {
  double p = x.hi * y.hi, e = fma(x.hi, y.hi, -p);
  e += x.hi * y.lo + x.lo * y.hi;
  return dd_two_sum(p, e);
}

static void dd_multiply(const void *a, const void *b, void *out) {
  dd x, y, r;
  memcpy(&x, a, sizeof x), memcpy(&y, b, sizeof y);
  r = dd_mul_dd(x, y);
  memcpy(out, &r, sizeof r);
}
static void dd_add(const void *a, const void *b, void *out) {
  dd x, y, r;
  memcpy(&x, a, sizeof x), memcpy(&y, b, sizeof y);
  r = dd_add_dd(x, y);
  memcpy(out, &r, sizeof r);
}

static int own_kernel_calls;
/* The element's own product kernel: same order as the built-in path. */
static topos_status dd_gemm(const topos_element *self, const topos_gemm_task *t) {
  (void)self;
  ++own_kernel_calls;
  const dd *a = t->a, *b = t->b;
  dd *c = t->c;
  for (int64_t i = 0; i < t->m; ++i)
    for (int64_t j = 0; j < t->n; ++j) {
      dd acc = dd_mul_dd(a[i * t->a_row_stride], b[j * t->b_col_stride]);
      for (int64_t p = 1; p < t->k; ++p)
        acc = dd_add_dd(acc, dd_mul_dd(a[i * t->a_row_stride + p * t->a_col_stride],
                                       b[p * t->b_row_stride + j * t->b_col_stride]));
      c[i * t->c_row_stride + j] = acc;
    }
  return TOPOS_OK;
}

int main(void) {
  enum { N = 60 };
  dd *a = malloc(N * N * sizeof(dd)), x[N], y_builtin[N], y_own[N];
  double *af = malloc(N * N * sizeof(double)), xf[N], yf[N];
  if (!a || !af) return 1;
  for (int i = 0; i < N; ++i) {
    x[i] = (dd){i % 2 ? 1.0 : -1.0, 0};
    xf[i] = x[i].hi;
    for (int j = 0; j < N; ++j) {
      /* 1/(i+j+1) as a double-double: hi = rounded, lo = the remainder */
      double h = 1.0 / (i + j + 1), r = fma(-h, (double)(i + j + 1), 1.0) / (i + j + 1);
      a[i * N + j] = (dd){h, r};
      af[i * N + j] = h;
    }
  }
  topos_element element = {"double-double", sizeof(dd), NULL, NULL, dd_multiply, dd_add, NULL, NULL};
  topos_gemm_task task = {N, 1, N, a, N, 1, x, 1, 1, y_builtin, 1};
  if (topos_element_gemm(&element, &task) != TOPOS_OK) return 1; /* built-in path */
  element.gemm = dd_gemm;
  task.c = y_own;
  if (topos_element_gemm(&element, &task) != TOPOS_OK) return 1; /* own kernel */
  /* plain f64 through the same seam (f32/f64 hooks go to the chain) */
  topos_gemm_task tf = {N, 1, N, af, N, 1, xf, 1, 1, yf, 1};
  if (topos_element_gemm(topos_element_of(TOPOS_F64), &tf) != TOPOS_OK) return 1;
  double worst_f64 = 0;
  int same = memcmp(y_builtin, y_own, sizeof y_own) == 0;
  for (int i = 0; i < N; ++i) {
    double err = fabs((yf[i] - y_own[i].hi) - y_own[i].lo) / fabs(y_own[i].hi);
    if (err > worst_f64) worst_f64 = err;
  }
  printf("double-double product through the element seam (%dx%d)\n", N, N);
  printf("  own kernel ran %d time(s); built-in path and own kernel agree bit for bit: %s\n",
         own_kernel_calls, same ? "yes" : "NO");
  printf("  y[0] = %.17g + %.3g\n", y_own[0].hi, y_own[0].lo);
  printf("  worst relative error of the f64 product against double-double: %.3g\n", worst_f64);
  free(a), free(af);
  return same ? 0 : 1;
}
