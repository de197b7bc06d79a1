/* topos — models tier: token samplers.
 *
 * One chain, in llama.cpp's default order (common/sampling: penalties, top-k,
 * top-p, min-p, temperature, then a seeded draw; its DRY, typical-p, XTC and
 * top-n-sigma stages are not implemented):
 *   1. penalties over the last penalty_last_n accepted tokens, each distinct
 *      token once: a logit > 0 is divided by repeat_penalty, otherwise
 *      multiplied; then logit -= count * frequency_penalty
 *      + presence_penalty (llama.cpp's penalties sampler);
 *   2. temperature <= 0: greedy, the highest logit (ties: the lowest id);
 *   3. top-k: keep the k highest logits (k <= 0: all);
 *   4. top-p: softmax, keep the shortest prefix (highest first) whose
 *      probability sum reaches top_p (at least one token; top_p >= 1: off);
 *   5. min-p: keep tokens whose probability is >= min_p times the highest
 *      (min_p <= 0: off);
 *   6. divide the logits by temperature, softmax, and draw: u uniform in
 *      [0,1) from topos_rng (splitmix64), the first candidate whose running
 *      probability sum exceeds u.
 * Candidates are ordered by logit (descending), ties by id (ascending); all
 * probability sums are in double. So the same seed, the same logits and the
 * same accepted tokens give the same token on every machine and build.
 * Logits may be -inf (never chosen); NaN or +inf is refused. */
#ifndef TOPOS_SAMPLER_H
#define TOPOS_SAMPLER_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct topos_sampler_params {
  float temperature;       /* <= 0: greedy */
  int32_t top_k;           /* <= 0: off */
  float top_p;             /* in [0, 1]; 1: off */
  float min_p;             /* in [0, 1]; 0: off */
  float repeat_penalty;    /* > 0; 1: off */
  float frequency_penalty; /* 0: off */
  float presence_penalty;  /* 0: off */
  int32_t penalty_last_n;  /* window of accepted tokens, 0..65536; 0: no penalties */
} topos_sampler_params;

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
 * repeat_penalty 1 (off), frequency/presence 0, penalty_last_n 64. */
TOPOS_API topos_sampler_params topos_sampler_params_default(void);

typedef struct topos_sampler topos_sampler;

/* Validates params (NaN anywhere, top_p or min_p outside [0,1],
 * repeat_penalty <= 0, a window outside 0..65536: TOPOS_ERR_INVALID_ARGUMENT)
 * and seeds the generator. *out is owned by the caller: topos_sampler_free(). */
TOPOS_API topos_status topos_sampler_new(const topos_sampler_params *params, uint64_t seed,
                                         topos_sampler **out);
/* NULL is fine. */
TOPOS_API void topos_sampler_free(topos_sampler *s);
/* Forgets the accepted tokens and reseeds. */
TOPOS_API void topos_sampler_reset(topos_sampler *s, uint64_t seed);

/* Picks a token from n_vocab logits (not modified). Draws one number from the
 * generator unless the chain is greedy or one candidate is left. */
TOPOS_API topos_status topos_sampler_sample(topos_sampler *s, const float *logits, int n_vocab,
                                            int32_t *token);
/* Records a token in the penalty window (ids < 0 are refused). */
TOPOS_API topos_status topos_sampler_accept(topos_sampler *s, int32_t token);

/* The candidates the chain would draw from (steps 1-6 without the draw):
 * ids and final probabilities, highest first. Writes at most capacity of each
 * and sets *count to the number of candidates (TOPOS_ERR_RANGE if they do not
 * fit). Greedy chains give the one token with probability 1. */
TOPOS_API topos_status topos_sampler_candidates(topos_sampler *s, const float *logits, int n_vocab,
                                                int32_t *ids, double *probs, size_t capacity,
                                                size_t *count);

#ifdef __cplusplus
}
#endif
#endif
