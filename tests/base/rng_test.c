#include <float.h>

#include "test.h"

/* Values computed with an independent Python implementation of splitmix64. */
TEST(rng_matches_published_splitmix64_outputs) {
  static const struct {
    uint64_t seed;
    uint64_t out[5];
  } golden[] = {
      {0, {0xe220a8397b1dcdafu, 0x6e789e6aa1b965f4u, 0x06c45d188009454fu, 0xf88bb8a8724c81ecu,
           0x1b39896a51a8749bu}},
      {42, {0xbdd732262feb6e95u, 0x28efe333b266f103u, 0x47526757130f9f52u, 0x581ce1ff0e4ae394u,
            0x09bc585a244823f2u}},
      {0xdeadbeef, {0x4adfb90f68c9eb9bu, 0xde586a3141a10922u, 0x021fbc2f8e1cfc1du,
                    0x7466ce737be16790u, 0x3bfa8764f685bd1cu}},
  };
  for (size_t g = 0; g < sizeof golden / sizeof golden[0]; ++g) {
    topos_rng rng = topos_rng_seed(golden[g].seed);
    for (int i = 0; i < 5; ++i) CHECK_EQ_INT(topos_rng_next(&rng), golden[g].out[i]);
  }
}

/* A second formulation: the k-th state is seed + k * golden (mod 2^64), then
 * the three-step finaliser. */
static uint64_t tt_splitmix_at(uint64_t seed, uint64_t k) {
  uint64_t x = seed + k * 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

TEST(rng_next_unit_and_normal_follow_their_formulas) {
  for (uint64_t seed = 1; seed < 50000; seed += 997) {
    topos_rng rng = topos_rng_seed(seed);
    for (uint64_t k = 1; k <= 8; ++k) CHECK_EQ_INT(topos_rng_next(&rng), tt_splitmix_at(seed, k));
    rng = topos_rng_seed(seed);
    for (uint64_t k = 1; k <= 8; ++k) {
      double u = topos_rng_unit(&rng);
      CHECK_BITS_F64(u, ldexp((double)(tt_splitmix_at(seed, k) >> 11), -53));
      CHECK(u >= 0.0 && u < 1.0);
    }
    rng = topos_rng_seed(seed);
    for (uint64_t k = 1; k <= 8; k += 2) {
      double u1 = ldexp((double)(tt_splitmix_at(seed, k) >> 11), -53);
      double u2 = ldexp((double)(tt_splitmix_at(seed, k + 1) >> 11), -53);
      CHECK_BITS_F64(topos_rng_normal(&rng), sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
  }
}

TEST(rng_normal_golden_values) {
  /* Python: sqrt(-2 log u1) * cos(2 pi u2) over seed 0 and seed 42 */
  static const double seed0[3] = {-0.4527577402174582, 2.6506058120796703, -0.988604124624327};
  static const double seed42[3] = {0.4147197504315306, -0.8918862136277563, 1.7295930879374024};
  topos_rng a = topos_rng_seed(0), b = topos_rng_seed(42);
  for (int i = 0; i < 3; ++i) {
    CHECK_NEAR(topos_rng_normal(&a), seed0[i], 4e-16 * fabs(seed0[i]) + 1e-300);
    CHECK_NEAR(topos_rng_normal(&b), seed42[i], 4e-16 * fabs(seed42[i]) + 1e-300);
  }
  topos_rng c = topos_rng_seed(0);
  CHECK_BITS_F64(topos_rng_unit(&c), 0x1.c4415072f63b9p-1);
}

TEST(rng_normal_guards_log_of_zero) {
  /* The finaliser maps 0 to 0: a state that becomes 0 yields u1 == 0 exactly. */
  topos_rng rng = topos_rng_seed(0 - 0x9E3779B97F4A7C15u);
  topos_rng probe = rng;
  CHECK_EQ_INT(topos_rng_next(&probe), 0);
  double z = topos_rng_normal(&rng);
  CHECK(isfinite(z));
  double u2 = ldexp((double)(0xe220a8397b1dcdafu >> 11), -53);
  CHECK_BITS_F64(z, sqrt(-2.0 * log(DBL_MIN)) * cos(2.0 * M_PI * u2));
}

TEST(rng_normal_moments_are_plausible) {
  topos_rng rng = topos_rng_seed(12345);
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double z = topos_rng_normal(&rng);
    sum += z;
    sum_sq += z * z;
  }
  double mean = sum / n, variance = sum_sq / n - mean * mean;
  CHECK_NEAR(mean, 0.0, 0.05);     /* 7 standard errors */
  CHECK_NEAR(variance, 1.0, 0.07); /* ~7 standard errors */
}
