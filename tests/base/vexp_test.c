/* base/vexp.h: the shared vector exp of the Fast kernels (fused softmax rows,
 * swiglu) in the default build — within 1 ulp of the correctly rounded exp
 * over a dense sweep of its range, the special values of C's exp, and the
 * same bits on AVX-512 and AVX2, at any length (tails) and alignment. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/vexp.h"
#include "test.h"

/* ulps between f and the double-precision value want (f's own spacing) */
static double vx_ulps(float f, double want) {
  if (f == (float)want) return 0.0;
  int e;
  frexp(want, &e);
  double ulp = ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
  return fabs((double)f - want) / ulp;
}

TEST(vexp_within_one_ulp_same_bits_on_both_isas) {
  float probe = 0.0f;
  if (!tp_vexp_f32(&probe, &probe, 1)) SKIP("no AVX2 here (or masked): the vector exp declines");
  enum { N = 200003 }; /* odd: a tail on both ISAs */
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
  CHECK(x && y && z);
  if (!x || !y || !z) goto done;
  for (int i = 0; i < N; ++i) x[i] = -103.9f + (float)i * (192.5f / N); /* [-103.9, 88.6] */
  CHECK(tp_vexp_f32(x, y, N));
  double worst = 0.0;
  for (int i = 0; i < N; ++i) {
    double u = vx_ulps(y[i], exp((double)x[i]));
    worst = u > worst ? u : worst;
  }
  CHECK_MSG(worst <= 1.0, "worst %.3f ulp", worst);
#if defined(__x86_64__)
  if (tp_cpu_has_avx512_set()) { /* AVX2 on the same inputs, shifted by one element */
    memset(z, 0, N * sizeof *z);
    tp_vexp_f32_avx2(x + 1, z + 1, N - 1);
    CHECK(memcmp(y + 1, z + 1, (N - 1) * sizeof *y) == 0);
  }
#endif
  float sx[6] = {-INFINITY, INFINITY, NAN, 0.0f, -200.0f, 100.0f}, sy[6];
  CHECK(tp_vexp_f32(sx, sy, 6));
  CHECK(sy[0] == 0.0f && sy[1] == INFINITY && isnan(sy[2]) && sy[3] == 1.0f && sy[4] == 0.0f &&
        sy[5] == INFINITY);
done:
  free(x);
  free(y);
  free(z);
}
