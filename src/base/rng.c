/* splitmix64 (Steele, Lea, Flood 2014): the one generator of topos, so a seed
 * means the same numbers everywhere (initializers, dropout masks, samplers). */
#include <float.h>
#include <math.h>

#include "topos/base.h"

topos_rng topos_rng_seed(uint64_t seed) {
  topos_rng rng = {seed};
  return rng;
}

uint64_t topos_rng_next(topos_rng *rng) {
  uint64_t z = (rng->state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

double topos_rng_unit(topos_rng *rng) {
  return (double)(topos_rng_next(rng) >> 11) * 0x1p-53;
}

/* Box-Muller, cosine half: two uniforms per sample, the sine half is dropped
 * so every sample consumes exactly two draws. u1 == 0 (probability 2^-53)
 * would give log(0) = -inf; it is clamped to the smallest normal double,
 * which keeps the result finite (about 37.6 sigma at most). */
double topos_rng_normal(topos_rng *rng) {
  double u1 = topos_rng_unit(rng);
  double u2 = topos_rng_unit(rng);
  if (u1 < DBL_MIN) u1 = DBL_MIN;
  const double two_pi = 6.283185307179586476925286766559;
  return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}
