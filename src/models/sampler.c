/* Token samplers: the chain documented in include/topos/sampler.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topos/sampler.h"

#define TP_SAMPLER_MAX_WINDOW 65536

typedef struct tp_candidate {
  int32_t id;
  float logit;
} tp_candidate;

struct topos_sampler {
  topos_sampler_params p;
  topos_rng rng;
  int32_t *window; /* ring of the last penalty_last_n accepted tokens */
  size_t window_count, window_head;
  int32_t *sorted; /* scratch for counting the window */
  tp_candidate *cand;
  size_t cand_capacity;
  double *prob;
};

topos_sampler_params topos_sampler_params_default(void) {
  topos_sampler_params p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.0f;
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.0f;
  p.penalty_last_n = 64;
  return p;
}

topos_status topos_sampler_new(const topos_sampler_params *params, uint64_t seed,
                               topos_sampler **out) {
  if (!params || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler_new: params and out must be set");
  *out = NULL;
  const topos_sampler_params *p = params;
  if (isnan(p->temperature) || isnan(p->frequency_penalty) || isnan(p->presence_penalty))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "sampler_new: NaN parameter (temperature %g, frequency_penalty %g, "
                   "presence_penalty %g)",
                   (double)p->temperature, (double)p->frequency_penalty,
                   (double)p->presence_penalty);
  if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler_new: top_p %g outside [0, 1]",
                   (double)p->top_p);
  if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler_new: min_p %g outside [0, 1]",
                   (double)p->min_p);
  if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "sampler_new: repeat_penalty %g must be finite and > 0",
                   (double)p->repeat_penalty);
  if (isinf(p->frequency_penalty) || isinf(p->presence_penalty))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "sampler_new: frequency_penalty %g and presence_penalty %g must be finite",
                   (double)p->frequency_penalty, (double)p->presence_penalty);
  if (p->penalty_last_n < 0 || p->penalty_last_n > TP_SAMPLER_MAX_WINDOW)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "sampler_new: penalty_last_n %d outside 0..%d", (int)p->penalty_last_n,
                   TP_SAMPLER_MAX_WINDOW);
  topos_sampler *s = calloc(1, sizeof *s);
  if (!s) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "sampler_new: out of memory for the sampler");
  s->p = *p;
  if (p->penalty_last_n > 0) {
    s->window = malloc((size_t)p->penalty_last_n * sizeof *s->window);
    s->sorted = malloc((size_t)p->penalty_last_n * sizeof *s->sorted);
    if (!s->window || !s->sorted) {
      topos_sampler_free(s);
      return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "sampler_new: window of %d",
                     (int)p->penalty_last_n);
    }
  }
  s->rng = topos_rng_seed(seed);
  *out = s;
  return TOPOS_OK;
}

void topos_sampler_free(topos_sampler *s) {
  if (!s) return;
  free(s->window);
  free(s->sorted);
  free(s->cand);
  free(s->prob);
  free(s);
}

void topos_sampler_reset(topos_sampler *s, uint64_t seed) {
  if (!s) return;
  s->window_count = s->window_head = 0;
  s->rng = topos_rng_seed(seed);
}

topos_status topos_sampler_accept(topos_sampler *s, int32_t token) {
  if (!s) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler_accept: NULL sampler");
  if (token < 0) return tp_fail(TOPOS_ERR_RANGE, "sampler_accept: token %d < 0", (int)token);
  size_t n = (size_t)s->p.penalty_last_n;
  if (n == 0) return TOPOS_OK;
  s->window[s->window_head] = token;
  s->window_head = (s->window_head + 1) % n;
  if (s->window_count < n) s->window_count++;
  return TOPOS_OK;
}

static int tp_int_order(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* candidates ordered by logit (descending), then id (ascending) */
static int tp_candidate_order(const void *a, const void *b) {
  const tp_candidate *x = a, *y = b;
  if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* Moves the k best candidates (in tp_candidate_order) to the front, in
 * order: a heap of the k best seen so far whose root is the worst of them,
 * O(n log k) instead of sorting all n. The set is the one a full sort would
 * keep, because the order is total (ties broken by id). */
static int tp_worse(const tp_candidate *a, const tp_candidate *b) {
  return tp_candidate_order(a, b) > 0;
}

static void tp_sift_down(tp_candidate *h, size_t k, size_t i) {
  for (;;) {
    size_t worst = i, l = 2 * i + 1, r = l + 1;
    if (l < k && tp_worse(&h[l], &h[worst])) worst = l;
    if (r < k && tp_worse(&h[r], &h[worst])) worst = r;
    if (worst == i) return;
    tp_candidate t = h[i];
    h[i] = h[worst];
    h[worst] = t;
    i = worst;
  }
}

static void tp_select_top_k(tp_candidate *c, size_t n, size_t k) {
  for (size_t i = k / 2; i-- > 0;) tp_sift_down(c, k, i);
  for (size_t i = k; i < n; i++) {
    if (tp_worse(&c[0], &c[i])) {
      c[0] = c[i];
      tp_sift_down(c, k, 0);
    }
  }
  qsort(c, k, sizeof *c, tp_candidate_order);
}

static void tp_apply_penalties(topos_sampler *s, int n_vocab) {
  const topos_sampler_params *p = &s->p;
  if (!s->window_count ||
      (p->repeat_penalty == 1.0f && p->frequency_penalty == 0.0f && p->presence_penalty == 0.0f))
    return;
  memcpy(s->sorted, s->window, s->window_count * sizeof *s->sorted);
  qsort(s->sorted, s->window_count, sizeof *s->sorted, tp_int_order);
  for (size_t i = 0; i < s->window_count;) {
    size_t j = i;
    while (j < s->window_count && s->sorted[j] == s->sorted[i]) j++;
    int32_t id = s->sorted[i];
    if (id < n_vocab) { /* candidates are still indexed by id here */
      float *l = &s->cand[id].logit;
      if (*l > 0.0f)
        *l /= p->repeat_penalty;
      else
        *l *= p->repeat_penalty;
      *l -= (float)(j - i) * p->frequency_penalty + p->presence_penalty;
    }
    i = j;
  }
}

/* Runs the chain; leaves the candidates in s->cand[0..*n) with their final
 * probabilities in s->prob. */
static topos_status tp_chain(topos_sampler *s, const float *logits, int n_vocab, size_t *n_out) {
  if (!logits || n_vocab <= 0)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler: %d logits", n_vocab);
  size_t n = (size_t)n_vocab;
  if (n > s->cand_capacity) {
    tp_candidate *c = realloc(s->cand, n * sizeof *c);
    if (c) s->cand = c;
    double *pr = realloc(s->prob, n * sizeof *pr);
    if (pr) s->prob = pr;
    if (!c || !pr) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "sampler: %zu candidates", n);
    s->cand_capacity = n;
  }
  for (size_t i = 0; i < n; i++) {
    float l = logits[i];
    if (isnan(l) || (isinf(l) && l > 0))
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler: logit %zu is %g", i, (double)l);
    s->cand[i].id = (int32_t)i;
    s->cand[i].logit = l;
  }
  tp_apply_penalties(s, n_vocab);

  const topos_sampler_params *p = &s->p;
  if (!(p->temperature > 0.0f)) { /* greedy: first maximum = lowest id on ties */
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
      if (s->cand[i].logit > s->cand[best].logit) best = i;
    if (isinf(s->cand[best].logit))
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler: every logit is -inf");
    s->cand[0] = s->cand[best];
    s->prob[0] = 1.0;
    *n_out = 1;
    return TOPOS_OK;
  }
  if (p->top_k > 0 && (size_t)p->top_k < n) {
    tp_select_top_k(s->cand, n, (size_t)p->top_k);
    n = (size_t)p->top_k;
  } else {
    qsort(s->cand, n, sizeof *s->cand, tp_candidate_order);
  }
  while (n > 0 && isinf(s->cand[n - 1].logit)) n--; /* -inf: probability 0 */
  if (n == 0) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler: every logit is -inf");

  double max = s->cand[0].logit, sum = 0.0;
  if (p->top_p < 1.0f || p->min_p > 0.0f) {
    for (size_t i = 0; i < n; i++) sum += (s->prob[i] = exp((double)s->cand[i].logit - max));
    if (p->top_p < 1.0f) {
      double cum = 0.0;
      for (size_t i = 0; i < n; i++) {
        cum += s->prob[i] / sum;
        if (cum >= (double)p->top_p) {
          n = i + 1;
          break;
        }
      }
    }
    if (p->min_p > 0.0f) { /* prob[i] / prob[0] = exp(l_i - max) >= min_p */
      size_t keep = 1;
      while (keep < n && s->prob[keep] >= (double)p->min_p) keep++;
      n = keep;
    }
  }
  double inv_t = 1.0 / (double)p->temperature;
  sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += (s->prob[i] = exp(((double)s->cand[i].logit - max) * inv_t));
  for (size_t i = 0; i < n; i++) s->prob[i] /= sum;
  *n_out = n;
  return TOPOS_OK;
}

topos_status topos_sampler_sample(topos_sampler *s, const float *logits, int n_vocab,
                                  int32_t *token) {
  if (!s || !token)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "sampler_sample: sampler and token must be set");
  size_t n;
  TP_TRY(tp_chain(s, logits, n_vocab, &n));
  if (n == 1) {
    *token = s->cand[0].id;
    return TOPOS_OK;
  }
  double u = topos_rng_unit(&s->rng), cum = 0.0;
  for (size_t i = 0; i < n; i++) {
    cum += s->prob[i];
    if (u < cum) {
      *token = s->cand[i].id;
      return TOPOS_OK;
    }
  }
  *token = s->cand[n - 1].id; /* rounding left the sum just under u */
  return TOPOS_OK;
}

topos_status topos_sampler_candidates(topos_sampler *s, const float *logits, int n_vocab,
                                      int32_t *ids, double *probs, size_t capacity,
                                      size_t *count) {
  if (count) *count = 0;
  if (!s || !count || (capacity && (!ids || !probs)))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "sampler_candidates: sampler, count, ids and probs must be set");
  size_t n;
  TP_TRY(tp_chain(s, logits, n_vocab, &n));
  *count = n;
  for (size_t i = 0; i < n && i < capacity; i++) {
    ids[i] = s->cand[i].id;
    probs[i] = s->prob[i];
  }
  if (n > capacity)
    return tp_fail(TOPOS_ERR_RANGE, "sampler_candidates: %zu candidates, capacity %zu", n,
                   capacity);
  return TOPOS_OK;
}
