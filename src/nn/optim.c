/* Optimizers: SGD (momentum), Adam, AdamW. State is a pair of fields owned by
 * the optimizer object the caller holds; updates use the eager reference ops
 * in each parameter's dtype, so an update is as deterministic as the ops. */
#include <stdlib.h>

#include "base/error.h"
#include "topos/nn.h"

struct topos_optimizer {
  topos_optimizer_options options;
  topos_field *first;  /* SGD velocity, Adam m */
  topos_field *second; /* Adam v */
  int64_t steps;
  double beta1_power, beta2_power; /* b^t as a running product */
  /* new state of the step in progress, installed only when the step succeeds */
  struct tp_pending {
    topos_sym sym;
    topos_tensor *first, *second;
  } *pending;
  size_t n_pending, cap_pending;
};

topos_status topos_optimizer_new(const topos_network *net, const topos_optimizer_options *options,
                                 topos_optimizer **out) {
  if (out) *out = NULL;
  if (!net || !options || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "optimizer: needs a network, options and output");
  if (options->kind != TOPOS_OPT_SGD && options->kind != TOPOS_OPT_ADAM &&
      options->kind != TOPOS_OPT_ADAMW)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "optimizer: unknown kind %d", (int)options->kind);
  topos_optimizer *o = calloc(1, sizeof *o);
  if (!o) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "optimizer: state");
  o->options = *options;
  if (o->options.beta1 == 0) o->options.beta1 = 0.9;
  if (o->options.beta2 == 0) o->options.beta2 = 0.999;
  if (o->options.eps == 0) o->options.eps = 1e-8;
  o->beta1_power = o->beta2_power = 1.0;
  topos_status s = topos_field_new(net, &o->first);
  if (s == TOPOS_OK) s = topos_field_new(net, &o->second);
  if (s != TOPOS_OK) {
    topos_optimizer_free(o);
    return s;
  }
  *out = o;
  return TOPOS_OK;
}

static void tp_pending_clear(topos_optimizer *o) {
  for (size_t i = 0; i < o->n_pending; ++i) {
    topos_tensor_release(o->pending[i].first);
    topos_tensor_release(o->pending[i].second);
  }
  o->n_pending = 0;
}

void topos_optimizer_free(topos_optimizer *o) {
  if (!o) return;
  tp_pending_clear(o);
  free(o->pending);
  topos_field_free(o->first);
  topos_field_free(o->second);
  free(o);
}

void topos_optimizer_set_lr(topos_optimizer *o, double lr) {
  if (o) o->options.lr = lr;
}

int64_t topos_optimizer_steps(const topos_optimizer *o) { return o ? o->steps : 0; }

/* ---- eager arithmetic with scalar operands spread to the tensor's shape */
static topos_status tp_scaled(topos_tensor *t, double value, topos_tensor **out) {
  topos_tensor *s = NULL, *b = NULL;
  *out = NULL;
  TP_TRY(topos_tensor_scalar(topos_tensor_dtype(t), value, &s));
  int rank = topos_tensor_rank(t);
  topos_status st = rank == 0 ? (b = topos_tensor_retain(s), TOPOS_OK)
                              : topos_tensor_broadcast(s, rank, topos_tensor_shape(t), &b);
  if (st == TOPOS_OK) st = topos_mul(t, b, out);
  topos_tensor_release(s);
  topos_tensor_release(b);
  return st;
}

static topos_status tp_plus_scalar(topos_tensor *t, double value, topos_tensor **out) {
  topos_tensor *s = NULL, *b = NULL;
  *out = NULL;
  TP_TRY(topos_tensor_scalar(topos_tensor_dtype(t), value, &s));
  int rank = topos_tensor_rank(t);
  topos_status st = rank == 0 ? (b = topos_tensor_retain(s), TOPOS_OK)
                              : topos_tensor_broadcast(s, rank, topos_tensor_shape(t), &b);
  if (st == TOPOS_OK) st = topos_add(t, b, out);
  topos_tensor_release(s);
  topos_tensor_release(b);
  return st;
}

/* Temporaries of one update, released together. */
typedef struct {
  topos_tensor *t[32]; /* Adam keeps about 20 */
  int n;
} tp_scratch;

static topos_tensor *tp_keep(tp_scratch *k, topos_tensor *t) {
  if (k->n < 32) k->t[k->n++] = t;
  return t;
}

static void tp_scratch_free(tp_scratch *k) {
  for (int i = 0; i < k->n; ++i) topos_tensor_release(k->t[i]);
  k->n = 0;
}

#define TP_STEP(call)                    \
  do {                                   \
    topos_tensor *r_ = NULL;             \
    s = (call);                          \
    tp_keep(&k, r_);                     \
    if (s != TOPOS_OK) goto done;        \
    last = r_;                           \
  } while (0)

static topos_status tp_update(void *user, topos_sym param, topos_tensor *p, topos_tensor *g,
                              topos_tensor **out) {
  topos_optimizer *o = user;
  const topos_optimizer_options *opt = &o->options;
  tp_scratch k = {0};
  topos_status s = TOPOS_OK;
  topos_tensor *last = NULL, *m_old = NULL, *v_old = NULL, *m_new = NULL, *v_new = NULL;
  *out = NULL;
  if (o->n_pending == o->cap_pending) {
    size_t cap = o->cap_pending ? 2 * o->cap_pending : 16;
    void *grown = realloc(o->pending, cap * sizeof *o->pending);
    if (!grown) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "optimizer: pending state");
    o->pending = grown;
    o->cap_pending = cap;
  }
  if (opt->kind == TOPOS_OPT_SGD) {
    topos_tensor *direction = g;
    if (opt->momentum != 0) {
      TP_TRY(topos_field_get(o->first, param, &m_old));
      tp_keep(&k, m_old);
      TP_STEP(tp_scaled(m_old, opt->momentum, &r_));
      TP_STEP(topos_add(last, g, &r_));
      m_new = direction = last;
    }
    TP_STEP(tp_scaled(direction, opt->lr, &r_));
    TP_STEP(topos_sub(p, last, &r_));
  } else {
    double b1 = opt->beta1, b2 = opt->beta2;
    double b1t = o->beta1_power * b1, b2t = o->beta2_power * b2;
    s = topos_field_get(o->first, param, &m_old);
    tp_keep(&k, m_old);
    if (s == TOPOS_OK) s = topos_field_get(o->second, param, &v_old);
    tp_keep(&k, v_old);
    if (s != TOPOS_OK) goto done;
    topos_tensor *a, *b;
    TP_STEP(tp_scaled(m_old, b1, &r_));
    a = last;
    TP_STEP(tp_scaled(g, 1.0 - b1, &r_));
    TP_STEP(topos_add(a, last, &r_));
    m_new = last;
    TP_STEP(tp_scaled(v_old, b2, &r_));
    a = last;
    TP_STEP(topos_mul(g, g, &r_));
    TP_STEP(tp_scaled(last, 1.0 - b2, &r_));
    TP_STEP(topos_add(a, last, &r_));
    v_new = last;
    /* the division by (1 - b^t) is a multiply-free divide, as the formula reads */
    topos_tensor *den1 = NULL, *den2 = NULL;
    TP_STEP(topos_tensor_full(topos_tensor_dtype(p), topos_tensor_rank(p), topos_tensor_shape(p),
                              1.0 - b1t, &r_));
    den1 = last;
    TP_STEP(topos_tensor_full(topos_tensor_dtype(p), topos_tensor_rank(p), topos_tensor_shape(p),
                              1.0 - b2t, &r_));
    den2 = last;
    TP_STEP(topos_div(m_new, den1, &r_));
    a = last;
    TP_STEP(topos_div(v_new, den2, &r_));
    TP_STEP(topos_sqrt(last, &r_));
    TP_STEP(tp_plus_scalar(last, opt->eps, &r_));
    TP_STEP(topos_div(a, last, &r_));
    TP_STEP(tp_scaled(last, opt->lr, &r_));
    TP_STEP(topos_sub(p, last, &r_));
    if (opt->kind == TOPOS_OPT_ADAMW && topos_tensor_rank(p) >= 2 && opt->weight_decay != 0) {
      b = last;
      TP_STEP(tp_scaled(p, opt->weight_decay * opt->lr, &r_));
      TP_STEP(topos_sub(b, last, &r_));
    }
  }
  o->pending[o->n_pending].sym = param;
  o->pending[o->n_pending].first = m_new ? topos_tensor_retain(m_new) : NULL;
  o->pending[o->n_pending].second = v_new ? topos_tensor_retain(v_new) : NULL;
  o->n_pending++;
  *out = topos_tensor_retain(last);
done:
  tp_scratch_free(&k);
  return s;
}

topos_status topos_optimizer_step(topos_optimizer *o, topos_params *params,
                                  const topos_field *gradients) {
  if (!o || !params || !gradients)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "optimizer_step: needs state, params, gradients");
  tp_pending_clear(o);
  topos_status s = topos_params_step(params, gradients, tp_update, o);
  for (size_t i = 0; s == TOPOS_OK && i < o->n_pending; ++i) {
    if (o->pending[i].first) s = topos_field_set(o->first, o->pending[i].sym, o->pending[i].first);
    if (s == TOPOS_OK && o->pending[i].second)
      s = topos_field_set(o->second, o->pending[i].sym, o->pending[i].second);
  }
  tp_pending_clear(o);
  if (s != TOPOS_OK) return s;
  o->steps++;
  o->beta1_power *= o->options.beta1;
  o->beta2_power *= o->options.beta2;
  return TOPOS_OK;
}
