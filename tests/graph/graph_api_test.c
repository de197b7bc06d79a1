/* The graph API: sticky record errors, symbols across tapes, declared
 * observability, feeds and defaults, parameters, the step helper, reopen, and
 * the rules about which edges carry gradients. Every failure must give its own
 * status and a message, and leak nothing. */
#include "graph_util.h"

static topos_tensor *f64_values(int rank, const int64_t *shape, const double *values) {
  topos_tensor *t = NULL;
  return topos_tensor_from_f64(TOPOS_F64, rank, shape, values, &t) == TOPOS_OK ? t : NULL;
}

TEST(graph_record_errors_are_sticky_and_named) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t sa[] = {2, 3}, sb[] = {4, 5};
  topos_tensor *a = tg_random(TOPOS_F64, 2, sa, 1, 0, 1), *b = tg_random(TOPOS_F64, 2, sb, 2, 0, 1);
  topos_sym x = topos_tape_constant(tape, a), y = topos_tape_parameter(tape, b, "w");
  topos_tensor_release(a);
  topos_tensor_release(b);
  CHECK(topos_sym_is_valid(x) && topos_sym_is_valid(y));
  topos_sym bad = topos_tape_matmul(tape, x, y);
  CHECK(!topos_sym_is_valid(bad));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("matmul (node 2)");
  CHECK_ERROR_HAS("[2,3]");
  CHECK_ERROR_HAS("[4,5]");
  /* later records (even valid ones) return invalid and keep the first error */
  topos_sym later = topos_tape_exp(tape, x);
  CHECK(!topos_sym_is_valid(later));
  topos_sym chained = topos_tape_tanh(tape, bad);
  CHECK(!topos_sym_is_valid(chained));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("matmul (node 2)");
  CHECK(strstr(topos_tape_error(tape), "matmul (node 2)") != NULL);
  CHECK_STATUS(topos_tape_seal(&tape, &net), TOPOS_ERR_SHAPE);
  CHECK(tape == NULL && net == NULL);
  CHECK_ERROR_HAS("matmul (node 2)");
}

/* reshape/broadcast sugar: a bad target rank reaches the shape rule as given
 * (the message names it); a missing shape is refused the same way. */
TEST(graph_shaped_sugar_names_a_bad_target_rank) {
  topos_tape *tape = NULL;
  int64_t shape[TOPOS_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_OK(topos_tape_new(&tape));
  topos_sym x = topos_tape_scalar(tape, TOPOS_F64, 1.0);
  CHECK(!topos_sym_is_valid(topos_tape_reshape(tape, x, TOPOS_MAX_RANK + 1, shape)));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  char want[64];
  snprintf(want, sizeof want, "target rank %d outside", TOPOS_MAX_RANK + 1);
  CHECK_ERROR_HAS(want);
  topos_tape_free(tape);

  CHECK_OK(topos_tape_new(&tape));
  x = topos_tape_scalar(tape, TOPOS_F64, 1.0);
  CHECK(!topos_sym_is_valid(topos_tape_broadcast(tape, x, 2, NULL)));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("target rank -1 outside");
  topos_tape_free(tape);
}

TEST(graph_dtype_mismatch_at_record) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym a = topos_tape_scalar(tape, TOPOS_F32, 1.0), b = topos_tape_scalar(tape, TOPOS_F64, 2.0);
  topos_sym c = topos_tape_add(tape, a, b);
  CHECK(!topos_sym_is_valid(c));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("add (node 2)");
  topos_tape_free(tape);
}

TEST(graph_foreign_symbols_are_refused) {
  topos_tape *one = NULL, *two = NULL;
  CHECK_OK(topos_tape_new(&one));
  CHECK_OK(topos_tape_new(&two));
  topos_sym a = topos_tape_scalar(one, TOPOS_F64, 1.0);
  topos_sym b = topos_tape_scalar(two, TOPOS_F64, 2.0);
  topos_sym out;
  topos_sym in[2] = {a, b};
  CHECK_STATUS(topos_tape_record(two, TOPOS_OP_ADD, in, NULL, &out), TOPOS_ERR_FOREIGN);
  CHECK(!topos_sym_is_valid(out));
  CHECK_ERROR_HAS("another tape");
  /* an index past the end of the same origin is foreign too */
  topos_tensor_desc d;
  topos_sym past = {a.origin, 99};
  CHECK_STATUS(topos_tape_describe(one, past, &d), TOPOS_ERR_FOREIGN);
  /* a network refuses symbols of another tape when reading */
  topos_network *net = NULL;
  topos_run *run = NULL;
  topos_tensor *t = NULL;
  CHECK_OK(topos_tape_seal(&one, &net));
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &run));
  CHECK_STATUS(topos_run_read(run, b, &t), TOPOS_ERR_FOREIGN);
  CHECK(t == NULL);
  CHECK_OK(topos_run_read(run, a, &t));
  topos_tensor_release(t);
  topos_run_free(run);
  topos_network_free(net);
  topos_tape_free(two);
}

/* loss = sum((x W)^2), x an input [2,3] without default, W [3,2] */
typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym x, w, y, loss, hidden;
} small_model;

static void small_model_free(small_model *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
}

static topos_status small_model_new(small_model *m, int with_default) {
  memset(m, 0, sizeof *m);
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  int64_t xs[] = {2, 3}, ws[] = {3, 2};
  topos_tensor *w = tg_random(TOPOS_F64, 2, ws, 5, -1, 1);
  topos_tensor *xd = with_default ? tg_random(TOPOS_F64, 2, xs, 6, -1, 1) : NULL;
  topos_tensor_desc desc = {TOPOS_F64, 2, {2, 3}};
  m->x = with_default ? topos_tape_input(tape, xd, "x") : topos_tape_input_desc(tape, &desc, "x");
  m->w = topos_tape_parameter(tape, w, "w");
  topos_tensor_release(w);
  topos_tensor_release(xd);
  m->hidden = topos_tape_matmul(tape, m->x, m->w);
  m->y = topos_tape_mul(tape, m->hidden, m->hidden);
  m->loss = topos_tape_sum(tape, m->y);
  s = topos_tape_seal(&tape, &m->net);
  if (s == TOPOS_OK) s = topos_params_from_network(m->net, &m->params);
  return s;
}

TEST(graph_feeds_defaults_and_missing) {
  small_model m;
  CHECK_OK(small_model_new(&m, 0));
  topos_run *run = NULL;
  CHECK_STATUS(topos_network_forward(m.net, m.params, NULL, 0, NULL, &run), TOPOS_ERR_MISSING_FEED);
  CHECK_ERROR_HAS("input x");
  CHECK(run == NULL);
  int64_t good[] = {2, 3}, wrong[] = {3, 2};
  topos_tensor *ok = tg_random(TOPOS_F64, 2, good, 7, -1, 1);
  topos_tensor *shape = tg_random(TOPOS_F64, 2, wrong, 8, -1, 1);
  topos_tensor *dtype = tg_random(TOPOS_F32, 2, good, 9, -1, 1);
  topos_feed feed = {m.x, shape};
  CHECK_STATUS(topos_network_forward(m.net, m.params, &feed, 1, NULL, &run), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("input x");
  CHECK_ERROR_HAS("[3,2]");
  feed.value = dtype;
  CHECK_STATUS(topos_network_forward(m.net, m.params, &feed, 1, NULL, &run), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("input x");
  feed.input = m.w; /* not an input */
  feed.value = ok;
  CHECK_STATUS(topos_network_forward(m.net, m.params, &feed, 1, NULL, &run), TOPOS_ERR_INVALID_ARGUMENT);
  topos_feed twice[2] = {{m.x, ok}, {m.x, ok}};
  CHECK_STATUS(topos_network_forward(m.net, m.params, twice, 2, NULL, &run), TOPOS_ERR_DUPLICATE);
  CHECK_OK(topos_network_forward(m.net, m.params, twice, 1, NULL, &run));
  double loss;
  CHECK(tg_read_scalar(run, m.loss, &loss));
  topos_run_free(run);
  /* a forward that does not need x does not need its feed */
  topos_forward_options only_w = {&m.w, 1, NULL, 0, 0};
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, &only_w, &run));
  topos_run_free(run);
  topos_tensor_release(ok);
  topos_tensor_release(shape);
  topos_tensor_release(dtype);
  small_model_free(&m);

  /* with a default, an unfed input reads its default */
  CHECK_OK(small_model_new(&m, 1));
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, NULL, &run));
  topos_tensor *x = NULL, *expect = tg_random(TOPOS_F64, 2, good, 6, -1, 1);
  CHECK_OK(topos_run_read(run, m.x, &x));
  CHECK_TENSOR_BITS(x, expect);
  topos_tensor_release(x);
  topos_tensor_release(expect);
  topos_run_free(run);
  small_model_free(&m);
}

TEST(graph_declared_observability_and_backward_posture) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  topos_run *run = NULL;
  topos_tensor *t = NULL;
  topos_field *field = NULL;
  topos_forward_options forward_only = {&m.loss, 1, &m.hidden, 1, 0};
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, &forward_only, &run));
  CHECK_OK(topos_run_read(run, m.loss, &t));
  topos_tensor_release(t);
  CHECK_OK(topos_run_read(run, m.hidden, &t));
  topos_tensor_release(t);
  t = NULL;
  CHECK_STATUS(topos_run_read(run, m.y, &t), TOPOS_ERR_NOT_READABLE); /* computed, not declared */
  CHECK(t == NULL);
  CHECK_STATUS(topos_run_backward(run, m.loss, &field), TOPOS_ERR_STATE);
  CHECK(field == NULL);
  topos_run_free(run);

  /* a training run answers backward; its gradients equal a complete run's */
  topos_forward_options training = {&m.loss, 1, NULL, 0, 1};
  topos_field *complete = NULL;
  topos_tensor *gw = NULL, *gc = NULL;
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, &training, &run));
  CHECK_STATUS(topos_run_read(run, m.y, &t), TOPOS_ERR_NOT_READABLE);
  CHECK_OK(topos_run_backward(run, m.loss, &field));
  topos_run_free(run);
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, NULL, &run));
  CHECK_OK(topos_run_backward(run, m.loss, &complete));
  topos_field *refused = NULL;
  CHECK_STATUS(topos_run_backward(run, m.y, &refused), TOPOS_ERR_SHAPE); /* not rank 0 */
  CHECK(refused == NULL);
  CHECK_OK(topos_field_get(field, m.w, &gw));
  CHECK_OK(topos_field_get(complete, m.w, &gc));
  CHECK_TENSOR_BITS(gw, gc);
  topos_tensor_release(gw);
  topos_tensor_release(gc);
  topos_field_free(complete);
  topos_field_free(field);
  topos_run_free(run);
  small_model_free(&m);
}

static topos_status sgd_half(void *user, topos_sym param, topos_tensor *value,
                             topos_tensor *gradient, topos_tensor **out) {
  (void)user, (void)param;
  topos_tensor *half = NULL, *scaled = NULL, *spread = NULL;
  topos_status s = topos_tensor_scalar(topos_tensor_dtype(value), 0.5, &half);
  if (s == TOPOS_OK)
    s = topos_tensor_broadcast(half, topos_tensor_rank(value), topos_tensor_shape(value), &spread);
  if (s == TOPOS_OK) s = topos_mul(gradient, spread, &scaled);
  if (s == TOPOS_OK) s = topos_sub(value, scaled, out);
  topos_tensor_release(half);
  topos_tensor_release(spread);
  topos_tensor_release(scaled);
  return s;
}

static topos_status failing_step(void *user, topos_sym param, topos_tensor *value,
                                 topos_tensor *gradient, topos_tensor **out) {
  (void)user, (void)param, (void)value, (void)gradient, (void)out;
  *out = NULL;
  return TOPOS_ERR_RANGE;
}

TEST(graph_names_params_and_step) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  topos_sym found;
  CHECK_OK(topos_network_find(m.net, "w", &found));
  CHECK(topos_sym_equal(found, m.w));
  CHECK_STATUS(topos_network_find(m.net, "nope", &found), TOPOS_ERR_NOT_FOUND);
  CHECK(strcmp(topos_network_name(m.net, m.x), "x") == 0);
  CHECK_EQ_INT(topos_params_count(m.params), 1);
  CHECK(topos_sym_equal(topos_params_symbol(m.params, 0), m.w));
  CHECK(strcmp(topos_params_name(m.params, m.w), "w") == 0);
  topos_tensor *t = NULL;
  CHECK_STATUS(topos_params_get(m.params, m.x, &t), TOPOS_ERR_NOT_FOUND);
  /* wrong shape / dtype refused, value unchanged */
  int64_t ws[] = {2, 3};
  topos_tensor *bad = tg_random(TOPOS_F64, 2, ws, 1, 0, 1);
  CHECK_STATUS(topos_params_set(m.params, m.w, bad), TOPOS_ERR_SHAPE);
  topos_tensor_release(bad);

  /* the step helper: w - 0.5 g, applied to a deep copy; the original stays */
  topos_params *copy = NULL;
  CHECK_OK(topos_params_copy(m.params, &copy));
  topos_run *run = NULL;
  topos_field *grads = NULL;
  CHECK_OK(topos_network_forward(m.net, copy, NULL, 0, NULL, &run));
  CHECK_OK(topos_run_backward(run, m.loss, &grads));
  topos_tensor *before = NULL, *after = NULL, *g = NULL;
  CHECK_OK(topos_params_get(copy, m.w, &before));
  CHECK_OK(topos_params_step(copy, grads, sgd_half, NULL));
  CHECK_OK(topos_params_get(copy, m.w, &after));
  CHECK_OK(topos_field_get(grads, m.w, &g));
  double b[6], a[6], gv[6];
  CHECK_OK(topos_tensor_read_f64(before, b, 6));
  CHECK_OK(topos_tensor_read_f64(after, a, 6));
  CHECK_OK(topos_tensor_read_f64(g, gv, 6));
  for (int i = 0; i < 6; ++i) CHECK_BITS_F64(a[i], b[i] - 0.5 * gv[i]);
  topos_tensor *orig = NULL;
  CHECK_OK(topos_params_get(m.params, m.w, &orig));
  CHECK_TENSOR_BITS(orig, before);
  /* a failing step changes nothing */
  CHECK_STATUS(topos_params_step(copy, grads, failing_step, NULL), TOPOS_ERR_RANGE);
  topos_tensor *still = NULL;
  CHECK_OK(topos_params_get(copy, m.w, &still));
  CHECK_TENSOR_BITS(still, after);
  topos_tensor_release(still);
  topos_tensor_release(orig);
  topos_tensor_release(before);
  topos_tensor_release(after);
  topos_tensor_release(g);
  topos_field_free(grads);
  topos_run_free(run);
  topos_params_free(copy);
  small_model_free(&m);
}

TEST(graph_duplicate_names_and_bad_sources) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_tensor *a = NULL;
  CHECK_OK(topos_tensor_scalar(TOPOS_F64, 1.0, &a));
  CHECK(topos_sym_is_valid(topos_tape_parameter(tape, a, "same")));
  CHECK(!topos_sym_is_valid(topos_tape_input(tape, a, "same")));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_DUPLICATE);
  CHECK_ERROR_HAS("same");
  topos_tape_free(tape);
  /* integer parameters cannot carry gradients */
  CHECK_OK(topos_tape_new(&tape));
  int32_t v = 3;
  int64_t one[] = {1};
  topos_tensor *i = NULL;
  CHECK_OK(topos_tensor_from_data(TOPOS_I32, 1, one, &v, 4, &i));
  CHECK(!topos_sym_is_valid(topos_tape_parameter(tape, i, "index")));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_DTYPE);
  topos_tape_free(tape);
  topos_tensor_release(i);
  topos_tensor_release(a);
}

TEST(graph_shape_only_edges_carry_no_gradient) {
  /* loss = sum(step(ln(x), t) * y): ln(x) is NaN for x < 0 but sits behind
   * step's shape-only edge, so x gets no gradient at all (not NaN) */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {3};
  const double xv[] = {-1, 2, -3}, yv[] = {1, 2, 3};
  topos_tensor *xt = f64_values(1, s, xv), *yt = f64_values(1, s, yv);
  topos_sym x = topos_tape_parameter(tape, xt, "x"), y = topos_tape_parameter(tape, yt, "y");
  topos_tensor_release(xt);
  topos_tensor_release(yt);
  topos_sym t = topos_tape_fill_like(tape, x, 0.0);
  topos_sym loss = topos_tape_sum(tape, topos_tape_mul(tape, topos_tape_step(tape, topos_tape_ln(tape, x), t), y));
  topos_sym wrt[2] = {x, y}, g[2];
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, wrt, g));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_params *params = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  CHECK_OK(topos_run_backward(run, loss, &field));
  CHECK(!topos_field_has(field, x));
  CHECK(topos_field_has(field, y));
  topos_tensor *gx = NULL, *rx = NULL;
  CHECK_OK(topos_field_get(field, x, &gx));
  CHECK_OK(topos_run_read(run, g[0], &rx));
  double e[3], r[3];
  CHECK_OK(topos_tensor_read_f64(gx, e, 3));
  CHECK_OK(topos_tensor_read_f64(rx, r, 3));
  for (int i = 0; i < 3; ++i) {
    CHECK_BITS_F64(e[i], 0.0);
    CHECK_BITS_F64(r[i], 0.0);
  }
  topos_tensor_release(gx);
  topos_tensor_release(rx);
  topos_field_free(field);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(graph_tie_rules) {
  /* maximum(a, a): the whole gradient goes left; relu at 0 passes it */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {3};
  const double av[] = {0, 1.5, -2};
  topos_tensor *at = f64_values(1, s, av), *bt = f64_values(1, s, av);
  topos_sym a = topos_tape_parameter(tape, at, "a"), b = topos_tape_parameter(tape, bt, "b");
  topos_tensor_release(at);
  topos_tensor_release(bt);
  topos_sym loss = topos_tape_add(tape, topos_tape_sum(tape, topos_tape_maximum(tape, a, b)),
                                  topos_tape_sum(tape, topos_tape_relu(tape, topos_tape_sub(tape, a, b))));
  topos_sym wrt[2] = {a, b}, g[2];
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, wrt, g));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_params *params = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  topos_tensor *ga = NULL, *gb = NULL;
  CHECK_OK(topos_run_read(run, g[0], &ga));
  CHECK_OK(topos_run_read(run, g[1], &gb));
  double da[3], db[3];
  CHECK_OK(topos_tensor_read_f64(ga, da, 3));
  CHECK_OK(topos_tensor_read_f64(gb, db, 3));
  for (int i = 0; i < 3; ++i) {
    CHECK_BITS_F64(da[i], 2.0); /* 1 from maximum (left on ties) + 1 from relu'(0) = 1 */
    CHECK_BITS_F64(db[i], -1.0); /* 0 from maximum, -1 through relu(a - b) */
  }
  topos_tensor_release(ga);
  topos_tensor_release(gb);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(graph_differentiate_edges) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {2};
  const double v[] = {1, 2};
  topos_tensor *t = f64_values(1, s, v);
  topos_sym a = topos_tape_parameter(tape, t, "a"), unused = topos_tape_parameter(tape, t, "unused");
  topos_tensor_release(t);
  topos_sym vec = topos_tape_exp(tape, a), loss = topos_tape_sum(tape, vec), g[2];
  topos_sym wrt[2] = {a, unused};
  /* a non-scalar loss is refused without poisoning the tape */
  CHECK_STATUS(topos_tape_differentiate(tape, vec, 2, wrt, g), TOPOS_ERR_SHAPE);
  CHECK(!topos_sym_is_valid(g[0]));
  CHECK_OK(topos_tape_status(tape));
  topos_tape *other = NULL;
  CHECK_OK(topos_tape_new(&other));
  topos_sym foreign = topos_tape_scalar(other, TOPOS_F64, 1.0);
  topos_sym bad[1] = {foreign};
  CHECK_STATUS(topos_tape_differentiate(tape, loss, 1, bad, g), TOPOS_ERR_FOREIGN);
  topos_tape_free(other);
  /* a wrt node the loss does not depend on gets a recorded zero */
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, wrt, g));
  topos_network *net = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_params *params = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  topos_tensor *z = NULL;
  double zv[2];
  CHECK_OK(topos_run_read(run, g[1], &z));
  CHECK_OK(topos_tensor_read_f64(z, zv, 2));
  CHECK_BITS_F64(zv[0], 0.0);
  CHECK_BITS_F64(zv[1], 0.0);
  topos_tensor_release(z);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(graph_reopen_keeps_symbols) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  topos_run *run = NULL;
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, NULL, &run)); /* holds the graph */
  topos_tape *tape = NULL;
  CHECK_OK(topos_network_reopen(&m.net, &tape));
  CHECK(m.net == NULL);
  topos_sym doubled = topos_tape_add(tape, m.loss, m.loss); /* old symbols still name their nodes */
  CHECK(topos_sym_is_valid(doubled));
  CHECK_OK(topos_tape_seal(&tape, &m.net));
  topos_run *again = NULL;
  CHECK_OK(topos_network_forward(m.net, m.params, NULL, 0, NULL, &again));
  double l, d;
  CHECK(tg_read_scalar(run, m.loss, &l));
  CHECK(tg_read_scalar(again, doubled, &d));
  CHECK_BITS_F64(d, l + l);
  /* the old run still reads its own nodes and refuses the new one */
  topos_tensor *t = NULL;
  CHECK_STATUS(topos_run_read(run, doubled, &t), TOPOS_ERR_FOREIGN);
  topos_run_free(again);
  topos_run_free(run);
  /* params from another network are foreign */
  topos_tape *other_tape = NULL;
  topos_network *other = NULL;
  CHECK_OK(topos_tape_new(&other_tape));
  topos_tensor *w = NULL;
  CHECK_OK(topos_tensor_scalar(TOPOS_F64, 1.0, &w));
  topos_tape_parameter(other_tape, w, "w");
  topos_tensor_release(w);
  CHECK_OK(topos_tape_seal(&other_tape, &other));
  CHECK_STATUS(topos_network_forward(other, m.params, NULL, 0, NULL, &run), TOPOS_ERR_FOREIGN);
  topos_network_free(other);
  small_model_free(&m);
}

TEST(graph_params_carry_after_reopen) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  int64_t ws[] = {3, 2};
  topos_tensor *trained = tg_random(TOPOS_F64, 2, ws, 42, -1, 1);
  CHECK_OK(topos_params_set(m.params, m.w, trained));
  topos_tape *tape = NULL;
  CHECK_OK(topos_network_reopen(&m.net, &tape));
  topos_tensor *bias0 = NULL;
  CHECK_OK(topos_tensor_scalar(TOPOS_F64, 0.25, &bias0));
  topos_sym bias = topos_tape_parameter(tape, bias0, "bias");
  topos_tensor_release(bias0);
  topos_sym shifted = topos_tape_add(tape, m.loss, bias);
  CHECK_OK(topos_tape_seal(&tape, &m.net));
  topos_run *run = NULL;
  CHECK_STATUS(topos_network_forward(m.net, m.params, NULL, 0, NULL, &run), TOPOS_ERR_STATE);
  topos_params *carried = NULL;
  CHECK_OK(topos_params_carry(m.params, m.net, &carried));
  CHECK_EQ_INT(topos_params_count(carried), 2);
  topos_tensor *w = NULL, *b = NULL;
  CHECK_OK(topos_params_get(carried, m.w, &w));
  CHECK_TENSOR_BITS(w, trained);
  CHECK_OK(topos_params_get(carried, bias, &b));
  double bv;
  CHECK_OK(topos_tensor_read_f64(b, &bv, 1));
  CHECK_BITS_F64(bv, 0.25);
  CHECK_OK(topos_network_forward(m.net, carried, NULL, 0, NULL, &run));
  double l, s;
  CHECK(tg_read_scalar(run, m.loss, &l));
  CHECK(tg_read_scalar(run, shifted, &s));
  CHECK_BITS_F64(s, l + 0.25);
  topos_run_free(run);
  topos_tensor_release(w);
  topos_tensor_release(b);
  topos_tensor_release(trained);
  topos_params_free(carried);
  small_model_free(&m);
}

TEST(graph_field_new_and_set) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  topos_field *field = NULL;
  CHECK_OK(topos_field_new(m.net, &field));
  CHECK(!topos_field_has(field, m.w));
  topos_tensor *z = NULL;
  CHECK_OK(topos_field_get(field, m.w, &z));
  CHECK_EQ_INT(topos_tensor_volume(z), 6);
  topos_tensor_release(z);
  int64_t ws[] = {3, 2}, bad[] = {2, 3};
  topos_tensor *v = tg_random(TOPOS_F64, 2, ws, 43, -1, 1), *wrong = tg_random(TOPOS_F64, 2, bad, 44, -1, 1);
  topos_tensor *narrow = tg_random(TOPOS_F32, 2, ws, 45, -1, 1);
  CHECK_STATUS(topos_field_set(field, m.w, wrong), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_field_set(field, m.w, narrow), TOPOS_ERR_DTYPE);
  CHECK_OK(topos_field_set(field, m.w, v));
  CHECK(topos_field_has(field, m.w));
  topos_tensor *back = NULL;
  CHECK_OK(topos_field_get(field, m.w, &back));
  CHECK(back == v);
  topos_tensor_release(back);
  topos_tensor_release(v);
  topos_tensor_release(wrong);
  topos_tensor_release(narrow);
  topos_field_free(field);
  small_model_free(&m);
}

#include <pthread.h>

typedef struct {
  const small_model *m;
  double loss;
  topos_status status;
} runner;

static void *run_once(void *arg) {
  runner *r = arg;
  topos_run *run = NULL;
  topos_field *grads = NULL;
  r->status = topos_network_forward(r->m->net, r->m->params, NULL, 0, NULL, &run);
  if (r->status == TOPOS_OK) r->status = topos_run_backward(run, r->m->loss, &grads);
  if (r->status == TOPOS_OK && !tg_read_scalar(run, r->m->loss, &r->loss)) r->status = TOPOS_ERR_INTERNAL;
  topos_field_free(grads);
  topos_run_free(run);
  return NULL;
}

TEST(graph_network_runs_concurrently) {
  small_model m;
  CHECK_OK(small_model_new(&m, 1));
  runner r[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = (runner){&m, 0, TOPOS_ERR_INTERNAL};
    CHECK(pthread_create(&threads[i], NULL, run_once, &r[i]) == 0);
  }
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(r[i].status);
    CHECK_BITS_F64(r[i].loss, r[0].loss);
  }
  small_model_free(&m);
}
