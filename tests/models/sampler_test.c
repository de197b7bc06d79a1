/* Samplers: parameter checks, greedy ties, each truncation step, penalties,
 * seeded determinism and the drawn distribution. */
#include <stdlib.h>

#include "test.h"

static topos_sampler_params plain(float temperature) {
  topos_sampler_params p = topos_sampler_params_default();
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

/* logits whose softmax is {0.5, 0.3, 0.2} */
static void three_way(float *l) {
  l[0] = logf(0.5f), l[1] = logf(0.3f), l[2] = logf(0.2f);
}

static size_t candidates(const topos_sampler_params *p, const float *logits, int n, int32_t *ids,
                         double *probs) {
  topos_sampler *s = NULL;
  size_t count = 0;
  if (topos_sampler_new(p, 1, &s) != TOPOS_OK) return 0;
  if (topos_sampler_candidates(s, logits, n, ids, probs, 16, &count) != TOPOS_OK) count = 0;
  topos_sampler_free(s);
  return count;
}

TEST(sampler_refuses_bad_params) {
  topos_sampler *s = NULL;
  topos_sampler_params p = topos_sampler_params_default();
  p.temperature = NAN;
  CHECK_STATUS(topos_sampler_new(&p, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);
  p = topos_sampler_params_default();
  p.top_p = 1.5f;
  CHECK_STATUS(topos_sampler_new(&p, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("top_p");
  p = topos_sampler_params_default();
  p.min_p = -0.1f;
  CHECK_STATUS(topos_sampler_new(&p, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);
  p = topos_sampler_params_default();
  p.repeat_penalty = 0.0f;
  CHECK_STATUS(topos_sampler_new(&p, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);
  p = topos_sampler_params_default();
  p.penalty_last_n = -1;
  CHECK_STATUS(topos_sampler_new(&p, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK_STATUS(topos_sampler_new(NULL, 1, &s), TOPOS_ERR_INVALID_ARGUMENT);

  p = topos_sampler_params_default();
  CHECK_OK(topos_sampler_new(&p, 1, &s));
  int32_t tok;
  float bad[3] = {0.0f, NAN, 1.0f};
  CHECK_STATUS(topos_sampler_sample(s, bad, 3, &tok), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("logit 1");
  bad[1] = INFINITY;
  CHECK_STATUS(topos_sampler_sample(s, bad, 3, &tok), TOPOS_ERR_INVALID_ARGUMENT);
  float dead[2] = {-INFINITY, -INFINITY};
  CHECK_STATUS(topos_sampler_sample(s, dead, 2, &tok), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_sampler_sample(s, dead, 0, &tok), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_sampler_accept(s, -3), TOPOS_ERR_RANGE);
  topos_sampler_free(s);
}

TEST(sampler_greedy_is_argmax_lowest_id_on_ties) {
  topos_sampler_params p = plain(0.0f);
  topos_sampler *s = NULL;
  CHECK_OK(topos_sampler_new(&p, 5, &s));
  float l[5] = {1.0f, 3.0f, -INFINITY, 3.0f, 2.0f};
  int32_t tok = -1;
  CHECK_OK(topos_sampler_sample(s, l, 5, &tok));
  CHECK_EQ_INT(tok, 1);
  float neg[3] = {-5.0f, -INFINITY, -5.0f};
  CHECK_OK(topos_sampler_sample(s, neg, 3, &tok));
  CHECK_EQ_INT(tok, 0);
  topos_sampler_free(s);
}

TEST(sampler_top_k_one_is_greedy) {
  topos_sampler_params p = plain(1.5f);
  p.top_k = 1;
  topos_sampler *s = NULL, *g = NULL;
  CHECK_OK(topos_sampler_new(&p, 99, &s));
  topos_sampler_params pg = plain(0.0f);
  CHECK_OK(topos_sampler_new(&pg, 99, &g));
  topos_rng rng = topos_rng_seed(3);
  float l[50];
  for (int iter = 0; iter < 100; iter++) {
    for (int i = 0; i < 50; i++) l[i] = (float)(topos_rng_unit(&rng) * 8.0 - 4.0);
    if (iter % 10 == 0) l[7] = l[31] = 9.0f; /* ties too */
    int32_t a, b;
    CHECK_OK(topos_sampler_sample(s, l, 50, &a));
    CHECK_OK(topos_sampler_sample(g, l, 50, &b));
    CHECK_EQ_INT(a, b);
  }
  topos_sampler_free(s);
  topos_sampler_free(g);
}

TEST(sampler_truncation_steps) {
  float l[3];
  three_way(l);
  int32_t ids[16];
  double pr[16];
  topos_sampler_params p = plain(1.0f);
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 3);
  CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == 2);
  CHECK_NEAR(pr[0], 0.5, 1e-6);
  CHECK_NEAR(pr[1], 0.3, 1e-6);
  CHECK_NEAR(pr[2], 0.2, 1e-6);
  /* top-p: the shortest prefix reaching p */
  p.top_p = 0.49f;
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 1);
  CHECK_NEAR(pr[0], 1.0, 0);
  p.top_p = 0.51f;
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 2);
  CHECK_NEAR(pr[0], 0.625, 1e-6);
  CHECK_NEAR(pr[1], 0.375, 1e-6);
  p.top_p = 0.85f;
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 3);
  p.top_p = 0.0f; /* at least one token stays */
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 1);
  CHECK_EQ_INT(ids[0], 0);
  /* min-p: probability >= min_p * the highest */
  p = plain(1.0f);
  p.min_p = 0.5f; /* 0.25: keeps 0.5 and 0.3 */
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 2);
  p.min_p = 0.39f; /* 0.195: keeps all */
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 3);
  p.min_p = 0.41f; /* 0.205: drops 0.2 */
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 2);
  p.min_p = 1.0f;
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 1);
  /* top-k */
  p = plain(1.0f);
  p.top_k = 2;
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 2);
  CHECK(ids[0] == 0 && ids[1] == 1);
  /* temperature 2: p ~ sqrt(p) */
  p = plain(2.0f);
  CHECK_EQ_INT(candidates(&p, l, 3, ids, pr), 3);
  double z = sqrt(0.5) + sqrt(0.3) + sqrt(0.2);
  CHECK_NEAR(pr[0], sqrt(0.5) / z, 1e-6);
  CHECK_NEAR(pr[2], sqrt(0.2) / z, 1e-6);
  /* -inf never survives; equal logits order by id */
  float m[4] = {0.0f, -INFINITY, 0.0f, 1.0f};
  p = plain(1.0f);
  CHECK_EQ_INT(candidates(&p, m, 4, ids, pr), 3);
  CHECK(ids[0] == 3 && ids[1] == 0 && ids[2] == 2);
  /* the candidate list reports its size when it does not fit */
  topos_sampler *s = NULL;
  size_t count = 0;
  CHECK_OK(topos_sampler_new(&p, 1, &s));
  CHECK_STATUS(topos_sampler_candidates(s, m, 4, ids, pr, 2, &count), TOPOS_ERR_RANGE);
  CHECK_EQ_INT(count, 3);
  topos_sampler_free(s);
}

TEST(sampler_penalties) {
  topos_sampler_params p = plain(0.0f);
  p.repeat_penalty = 2.0f;
  p.penalty_last_n = 2;
  topos_sampler *s = NULL;
  CHECK_OK(topos_sampler_new(&p, 1, &s));
  float l[2] = {2.0f, 1.5f};
  int32_t tok;
  CHECK_OK(topos_sampler_sample(s, l, 2, &tok));
  CHECK_EQ_INT(tok, 0);
  CHECK_OK(topos_sampler_accept(s, 0)); /* 2.0 / 2 = 1.0 < 1.5 */
  CHECK_OK(topos_sampler_sample(s, l, 2, &tok));
  CHECK_EQ_INT(tok, 1);
  CHECK_OK(topos_sampler_accept(s, 1)); /* both penalised: 1.0 vs 0.75 */
  CHECK_OK(topos_sampler_sample(s, l, 2, &tok));
  CHECK_EQ_INT(tok, 0);
  CHECK_OK(topos_sampler_accept(s, 1));
  CHECK_OK(topos_sampler_accept(s, 1)); /* window {1, 1}: 0 is free again */
  float w[2] = {1.0f, 1.9f};             /* 1.0 vs 0.95 (0.5 vs 0.95 if 0 were still in) */
  CHECK_OK(topos_sampler_sample(s, w, 2, &tok));
  CHECK_EQ_INT(tok, 0);
  CHECK_OK(topos_sampler_accept(s, 99)); /* ids past the vocabulary are ignored */
  CHECK_OK(topos_sampler_sample(s, l, 2, &tok));
  topos_sampler_free(s);

  /* negative logits are multiplied; frequency and presence subtract */
  p = plain(1.0f);
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.5f;
  p.penalty_last_n = 8;
  CHECK_OK(topos_sampler_new(&p, 1, &s));
  CHECK_OK(topos_sampler_accept(s, 1));
  CHECK_OK(topos_sampler_accept(s, 1));
  CHECK_OK(topos_sampler_accept(s, 2));
  float m[3] = {0.0f, -1.0f, 3.0f};
  /* expected logits: 0, -1*2 - 2*0.25 - 0.5 = -3, 3/2 - 0.25 - 0.5 = 0.75 */
  int32_t ids[3];
  double pr[3];
  size_t count;
  CHECK_OK(topos_sampler_candidates(s, m, 3, ids, pr, 3, &count));
  CHECK_EQ_INT(count, 3);
  CHECK(ids[0] == 2 && ids[1] == 0 && ids[2] == 1);
  double z = exp(0.75) + exp(0.0) + exp(-3.0);
  CHECK_NEAR(pr[0], exp(0.75) / z, 1e-12);
  CHECK_NEAR(pr[2], exp(-3.0) / z, 1e-12);
  /* reset forgets the window */
  topos_sampler_reset(s, 1);
  CHECK_OK(topos_sampler_candidates(s, m, 3, ids, pr, 3, &count));
  z = exp(3.0) + exp(0.0) + exp(-1.0);
  CHECK_NEAR(pr[0], exp(3.0) / z, 1e-12);
  topos_sampler_free(s);
}

TEST(sampler_same_seed_same_tokens) {
  topos_sampler_params p = topos_sampler_params_default();
  p.repeat_penalty = 1.1f;
  topos_sampler *a = NULL, *b = NULL, *c = NULL;
  CHECK_OK(topos_sampler_new(&p, 1234, &a));
  CHECK_OK(topos_sampler_new(&p, 1234, &b));
  CHECK_OK(topos_sampler_new(&p, 1235, &c));
  topos_rng rng = topos_rng_seed(11);
  float l[64];
  int differ = 0;
  int32_t first[200];
  for (int iter = 0; iter < 200; iter++) {
    for (int i = 0; i < 64; i++) l[i] = (float)(topos_rng_normal(&rng) * 1.5);
    int32_t x, y, z;
    CHECK_OK(topos_sampler_sample(a, l, 64, &x));
    CHECK_OK(topos_sampler_sample(b, l, 64, &y));
    CHECK_OK(topos_sampler_sample(c, l, 64, &z));
    CHECK_EQ_INT(x, y);
    differ += x != z;
    first[iter] = x;
    CHECK_OK(topos_sampler_accept(a, x));
    CHECK_OK(topos_sampler_accept(b, y));
    CHECK_OK(topos_sampler_accept(c, z));
  }
  CHECK(differ > 20); /* another seed draws otherwise */
  /* reset with the seed replays the sequence */
  topos_sampler_reset(a, 1234);
  rng = topos_rng_seed(11);
  for (int iter = 0; iter < 200; iter++) {
    for (int i = 0; i < 64; i++) l[i] = (float)(topos_rng_normal(&rng) * 1.5);
    int32_t x;
    CHECK_OK(topos_sampler_sample(a, l, 64, &x));
    CHECK_EQ_INT(x, first[iter]);
    CHECK_OK(topos_sampler_accept(a, x));
  }
  topos_sampler_free(a);
  topos_sampler_free(b);
  topos_sampler_free(c);
}

/* 30000 draws from {0.5, 0.3, 0.2}: Pearson's chi-square with 2 degrees of
 * freedom stays under 13.8 (p = 0.001); the seed is fixed, so the test is
 * deterministic, and a biased draw (e.g. u <= cum, or an off-by-one in the
 * walk) would move it far past the bound. */
TEST(sampler_draw_distribution) {
  float l[3];
  three_way(l);
  topos_sampler_params p = plain(1.0f);
  topos_sampler *s = NULL;
  CHECK_OK(topos_sampler_new(&p, 2024, &s));
  long hits[3] = {0, 0, 0};
  const int draws = 30000;
  for (int i = 0; i < draws; i++) {
    int32_t tok;
    CHECK_OK(topos_sampler_sample(s, l, 3, &tok));
    CHECK(tok >= 0 && tok < 3);
    hits[tok]++;
  }
  topos_sampler_free(s);
  const double expect[3] = {0.5 * draws, 0.3 * draws, 0.2 * draws};
  double chi2 = 0.0;
  for (int i = 0; i < 3; i++) chi2 += (hits[i] - expect[i]) * (hits[i] - expect[i]) / expect[i];
  CHECK_MSG(chi2 < 13.8, "chi-square %.3f for counts %ld %ld %ld", chi2, hits[0], hits[1], hits[2]);
}

/* top-k picks by partial selection; the kept ids must be the first k of the
 * full order (logit descending, id ascending), ties included. */
TEST(sampler_top_k_matches_full_order) {
  topos_rng rng = topos_rng_seed(5);
  float l[300];
  int32_t all[300], some[300];
  double pa[300], ps[300];
  for (int iter = 0; iter < 20; iter++) {
    for (int i = 0; i < 300; i++) l[i] = (float)(topos_rng_next(&rng) % 23) - 11.0f; /* ties */
    if (iter % 4 == 0) l[iter] = -INFINITY;
    topos_sampler_params p = plain(1.0f);
    topos_sampler *s = NULL;
    size_t n_all, n_some;
    CHECK_OK(topos_sampler_new(&p, 1, &s));
    CHECK_OK(topos_sampler_candidates(s, l, 300, all, pa, 300, &n_all));
    topos_sampler_free(s);
    p.top_k = 1 + iter * 7;
    CHECK_OK(topos_sampler_new(&p, 1, &s));
    CHECK_OK(topos_sampler_candidates(s, l, 300, some, ps, 300, &n_some));
    topos_sampler_free(s);
    CHECK_EQ_INT(n_some, (size_t)p.top_k);
    for (size_t i = 0; i < n_some; i++) CHECK_EQ_INT(some[i], all[i]);
    for (size_t i = 1; i < n_all; i++)
      CHECK(l[all[i - 1]] > l[all[i]] || (l[all[i - 1]] == l[all[i]] && all[i - 1] < all[i]));
  }
}
