/* engine/vec4.h's lane-wise maximum against the library's maximum
 * (TP_MAXIMUM, ops/kernel.h) over every pair of special values, in every
 * lane: the bits must agree (signed zeros, NaN payloads and their order,
 * infinities, ties). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/vec4.h"
#include "ops/kernel.h"
#include "test.h"

static uint32_t tv_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

TEST(engine_vec4_max_matches_maximum_bits) {
  float nan2;
  uint32_t payload = 0x7fc01234u;
  memcpy(&nan2, &payload, sizeof nan2);
  const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -2.5f, INFINITY, -INFINITY, NAN, -NAN, nan2,
                     1e-45f, -1e-45f, 3.4e38f};
  const int n = (int)(sizeof v / sizeof v[0]);
  int bad = 0;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int lane = 0; lane < 4; ++lane) {
        tp_vf4 a = TP_VF4_SPLAT(1.0f), b = TP_VF4_SPLAT(-3.0f);
        a[lane] = v[i];
        b[lane] = v[k];
        tp_vf4 r = tp_vf4_max(a, b);
        if (tv_bits(r[lane]) != tv_bits(TP_MAXIMUM(v[i], v[k]))) ++bad;
        if (tv_bits(r[lane]) != tv_bits(TP_MAXIMUM_MASKED(v[i], v[k]))) ++bad;
      }
  CHECK_MSG(bad == 0, "%d lanes differ from maximum", bad);
}
