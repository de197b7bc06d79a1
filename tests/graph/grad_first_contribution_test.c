/* The sweep's first-contribution rule: grad = zero + c1. A clean c1 (a move
 * or sum of g) is taken as it is, shared instead of added; any other c1 still
 * goes through zero + c1, which turns -0 into +0. Both routes agree bitwise. */
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/graph_util.h"

#define P(k) (params[k])

/* loss = sum(relu(x) * -1): relu's cotangent -1 * step(x, 0) is -0 where
 * x < 0, not clean, so the gradient there must be zero + (-0) = +0. */
static topos_sym build_negated_relu(topos_tape *tape, const topos_sym *params, void *ctx) {
  (void)ctx;
  topos_sym minus_one = topos_tape_scalar(tape, TOPOS_F32, -1.0);
  int64_t shape[] = {2, 3};
  minus_one = topos_tape_broadcast(tape, minus_one, 2, shape);
  return topos_tape_sum(tape, topos_tape_mul(tape, topos_tape_relu(tape, P(0)), minus_one));
}

TEST(grad_first_contribution_turns_negative_zero_into_positive_zero) {
  static const double xs[] = {-1.5, 2.0, -0.25, 3.0, -4.0, 0.5};
  int64_t shape[] = {2, 3};
  topos_tensor *x = NULL;
  CHECK_OK(topos_tensor_from_f64(TOPOS_F32, 2, shape, xs, &x));
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  topos_tensor *engine = NULL, *recorded = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym p = topos_tape_parameter(tape, x, NULL), g;
  topos_sym loss = build_negated_relu(tape, &p, NULL);
  CHECK_OK(topos_tape_differentiate(tape, loss, 1, &p, &g));
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  CHECK_OK(topos_run_backward(run, loss, &field));
  CHECK_OK(topos_field_get(field, p, &engine));
  CHECK_OK(topos_run_read(run, g, &recorded));
  CHECK(topos_tensor_bits_equal(engine, recorded));
  float e[6];
  CHECK_OK(topos_tensor_read_f32(engine, e, 6));
  for (int i = 0; i < 6; ++i) {
    uint32_t bits;
    memcpy(&bits, &e[i], 4);
    if (xs[i] < 0) CHECK(bits == 0u); /* +0, not -0 */
    else CHECK(e[i] == -1.0f);
  }
  topos_tensor_release(engine);
  topos_tensor_release(recorded);
  topos_field_free(field);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  topos_tensor_release(x);
}

/* loss = sum(reshape(a + b)): every cotangent on the way is clean, so the
 * recorded gradients of a and b are one node, the moved seed, and no add. */
TEST(grad_clean_first_contributions_are_shared_not_added) {
  int64_t shape[] = {2, 3}, flat[] = {6};
  topos_tensor *a0 = tg_random(TOPOS_F32, 2, shape, 901, -1, 1);
  topos_tensor *b0 = tg_random(TOPOS_F32, 2, shape, 902, -1, 1);
  CHECK(a0 && b0);
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  topos_tensor *ga = NULL, *gb = NULL, *ra = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym p[2] = {topos_tape_parameter(tape, a0, NULL), topos_tape_parameter(tape, b0, NULL)};
  topos_sym loss = topos_tape_sum(tape, topos_tape_reshape(tape, topos_tape_add(tape, p[0], p[1]),
                                                           1, flat));
  uint32_t before = tape->graph->count;
  topos_sym g[2];
  CHECK_OK(topos_tape_differentiate(tape, loss, 2, p, g));
  CHECK(g[0].index == g[1].index);
  for (uint32_t i = before; i < tape->graph->count; ++i)
    CHECK(tape->graph->nodes[i].kind != TOPOS_NODE_OP || tape->graph->nodes[i].op != TOPOS_OP_ADD);
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  /* engine route: the two gradients share one tensor; each is released on its own */
  CHECK_OK(topos_run_backward(run, loss, &field));
  CHECK_OK(topos_field_get(field, p[0], &ga));
  CHECK_OK(topos_field_get(field, p[1], &gb));
  CHECK_OK(topos_run_read(run, g[0], &ra));
  CHECK(topos_tensor_bits_equal(ga, gb));
  CHECK(topos_tensor_bits_equal(ga, ra));
  float v[6] = {0};
  CHECK_OK(topos_tensor_read_f32(ga, v, 6)); /* may be a view of the broadcast seed */
  for (int i = 0; i < 6; ++i) CHECK(v[i] == 1.0f);
  topos_tensor_release(ga);
  topos_tensor_release(gb);
  topos_tensor_release(ra);
  topos_field_free(field);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  topos_tensor_release(a0);
  topos_tensor_release(b0);
}
