/* Plan sinks (engine.h, "Sinks"): each sink reaches the callback once per
 * run, in evaluation order, with the interpreter's bits; its arena range is
 * reused afterwards (a chain whose every link is a sink needs the arena of
 * one whose links are dropped, not of one that keeps them); a sink is
 * readable only when it is also a root; a fused group never hides one; a
 * view can be a sink; misuse and a failing callback give clear statuses and
 * leave the plan usable. */
#include "plan_util.h"

/* x [16,16] -> 12 x tanh -> sum; link[i] is the (i+1)-th tanh; side =
 * exp(link[2]) and view, a reshape of link[11], are read by nothing. */
typedef struct {
  topos_network *net;
  topos_sym x, link[12], side, view, out;
} sink_chain;

static topos_status sink_chain_new(sink_chain *c) {
  memset(c, 0, sizeof *c);
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  int64_t shape[] = {16, 16}, flat[] = {256};
  topos_tensor *t = tg_random(TOPOS_F32, 2, shape, 91, -1, 1);
  c->x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym y = c->x;
  for (int i = 0; i < 12; ++i) {
    c->link[i] = y = topos_tape_tanh(tape, y);
    if (i == 2) c->side = topos_tape_exp(tape, y);
  }
  c->view = topos_tape_reshape(tape, y, 1, flat);
  c->out = topos_tape_sum(tape, y);
  return topos_tape_seal(&tape, &c->net);
}

/* What the callback saw: copies of the values, in call order. */
typedef struct {
  size_t calls, order[16];
  topos_tensor *seen[16];
  int fail_at; /* index whose call fails (-1: none) */
} sink_log;

static topos_status sink_record(void *user, size_t k, const topos_tensor *value) {
  sink_log *log = user;
  if ((int)k == log->fail_at) return tp_fail(TOPOS_ERR_RANGE, "test sink refuses %zu", k);
  if (log->calls >= 16) return tp_fail(TOPOS_ERR_INTERNAL, "test sink: too many calls");
  log->order[log->calls++] = k;
  return topos_tensor_convert(value, topos_tensor_dtype(value), &log->seen[k]); /* a copy */
}

static void sink_log_clear(sink_log *log) {
  for (int i = 0; i < 16; ++i) topos_tensor_release(log->seen[i]);
  memset(log, 0, sizeof *log);
  log->fail_at = -1;
}

TEST(plan_sinks_deliver_interpreter_bits_in_order_and_free_their_buffers) {
  sink_chain c;
  CHECK_OK(sink_chain_new(&c));
  topos_request req = {&c.out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL, *kept = NULL, *plain = NULL;
  CHECK_OK(topos_plan_compile_sinks(c.net, &req, c.link, 12, &plan));
  /* the same links as roots: kept to the end of the run */
  topos_sym roots[13];
  memcpy(roots, c.link, sizeof c.link);
  roots[12] = c.out;
  topos_request keep = {roots, 13, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_OK(topos_plan_compile(c.net, &keep, &kept));
  CHECK_OK(topos_plan_compile(c.net, &req, &plain));
  topos_plan_stats with_sinks, with_roots, without;
  CHECK_OK(topos_plan_stats_get(plan, &with_sinks));
  CHECK_OK(topos_plan_stats_get(kept, &with_roots));
  CHECK_OK(topos_plan_stats_get(plain, &without));
  CHECK_EQ_INT(with_roots.arena_bytes, 12 * 1024 + 64);
  CHECK_EQ_INT(with_sinks.arena_bytes, without.arena_bytes);
  CHECK(with_sinks.arena_bytes <= 2 * 1024 + 64);
  CHECK_EQ_INT(with_sinks.readable, 1);
  topos_run *oracle = NULL;
  CHECK_OK(tp_oracle_run(c.net, NULL, NULL, 0, 1, &oracle));
  sink_log log = {0};
  sink_log_clear(&log);
  for (int r = 0; r < 2; ++r) { /* a plan and its arena are reused */
    topos_run *run = NULL;
    CHECK_OK(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run));
    CHECK_EQ_INT(log.calls, 12);
    for (size_t k = 0; k < 12; ++k) {
      CHECK_EQ_INT(log.order[k], k);
      topos_tensor *want = NULL;
      CHECK_OK(topos_run_read(oracle, c.link[k], &want));
      CHECK_TENSOR_BITS(log.seen[k], want);
      topos_tensor_release(want);
    }
    topos_tensor *value = NULL, *want = NULL;
    CHECK_STATUS(topos_run_read(run, c.link[3], &value), TOPOS_ERR_NOT_READABLE);
    CHECK_OK(topos_run_read(run, c.out, &value));
    CHECK_OK(topos_run_read(oracle, c.out, &want));
    CHECK_TENSOR_BITS(value, want);
    topos_tensor_release(value);
    topos_tensor_release(want);
    topos_run_free(run);
    sink_log_clear(&log);
  }
  /* the describe line names them */
  char text[8192];
  topos_plan_describe(plan, text, sizeof text);
  CHECK(strstr(text, "sink, freed after") != NULL);
  topos_run_free(oracle);
  topos_plan_free(plan);
  topos_plan_free(kept);
  topos_plan_free(plain);
  topos_network_free(c.net);
}

TEST(plan_sinks_may_be_roots_views_or_the_only_request) {
  sink_chain c;
  CHECK_OK(sink_chain_new(&c));
  topos_run *oracle = NULL;
  CHECK_OK(tp_oracle_run(c.net, NULL, NULL, 0, 1, &oracle));
  sink_log log = {0};
  sink_log_clear(&log);
  /* no root: the view of the last link, link 5 and side (nothing reads the
   * view nor side: each is dropped right after its call, side's range is
   * free again for link 3 on) */
  topos_request none = {NULL, 0, NULL, 0, 0, TOPOS_NUMERICS_EXACT}; /* the oracle's bits */
  topos_sym sinks[3] = {c.view, c.link[5], c.side};
  topos_plan *plan = NULL, *without_side = NULL;
  CHECK_OK(topos_plan_compile_sinks(c.net, &none, sinks, 3, &plan));
  CHECK_OK(topos_plan_compile_sinks(c.net, &none, sinks, 2, &without_side));
  topos_plan_stats st, st2;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_OK(topos_plan_stats_get(without_side, &st2));
  CHECK_EQ_INT(st.arena_bytes, st2.arena_bytes);
  CHECK_EQ_INT(st.readable, 0);
  topos_plan_free(without_side);
  topos_run *run = NULL;
  CHECK_OK(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run));
  CHECK_EQ_INT(log.calls, 3);
  CHECK_EQ_INT(log.order[0], 2); /* evaluation order: side, link 5, the view */
  CHECK_EQ_INT(log.order[1], 1);
  CHECK_EQ_INT(log.order[2], 0);
  topos_tensor *want = NULL;
  for (int k = 0; k < 3; ++k) {
    CHECK_OK(topos_run_read(oracle, sinks[k], &want));
    CHECK_TENSOR_BITS(log.seen[k], want);
    topos_tensor_release(want);
  }
  topos_run_free(run);
  topos_plan_free(plan);
  sink_log_clear(&log);
  /* a root that is also a sink: delivered and readable */
  topos_request req = {&c.link[7], 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_OK(topos_plan_compile_sinks(c.net, &req, &c.link[7], 1, &plan));
  CHECK_OK(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run));
  CHECK_EQ_INT(log.calls, 1);
  topos_tensor *value = NULL;
  CHECK_OK(topos_run_read(run, c.link[7], &value));
  CHECK_TENSOR_BITS(value, log.seen[0]);
  topos_tensor_release(value);
  topos_run_free(run);
  topos_plan_free(plan);
  sink_log_clear(&log);
  topos_run_free(oracle);
  topos_network_free(c.net);
}

/* y = silu(x) * u fuses (swiglu); with silu(x) a sink it must not vanish
 * into the group: delivered, with the interpreter's bits, and y still right. */
TEST(plan_sinks_are_never_fused_away) {
  int64_t shape[] = {4, 24};
  topos_tensor *x = tg_random(TOPOS_F32, 2, shape, 5, -3, 3), *u = tg_random(TOPOS_F32, 2, shape, 6, -3, 3);
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym xs = topos_tape_input(tape, x, "x"), us = topos_tape_input(tape, u, "u");
  topos_sym gate = topos_tape_silu(tape, xs), y = topos_tape_mul(tape, gate, us);
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {&y, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *fused = NULL, *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &fused));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(fused, &st));
  CHECK_EQ_INT(st.fused, 1); /* the group exists without the sink */
  CHECK_OK(topos_plan_compile_sinks(net, &req, &gate, 1, &plan));
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.fused, 0);
  topos_run *oracle = NULL, *run = NULL;
  CHECK_OK(tp_oracle_run(net, NULL, NULL, 0, 1, &oracle));
  sink_log log = {0};
  sink_log_clear(&log);
  CHECK_OK(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run));
  CHECK_EQ_INT(log.calls, 1);
  topos_tensor *want = NULL, *value = NULL;
  CHECK_OK(topos_run_read(oracle, gate, &want));
  CHECK_TENSOR_BITS(log.seen[0], want);
  topos_tensor_release(want);
  CHECK_OK(topos_run_read(oracle, y, &want));
  CHECK_OK(topos_run_read(run, y, &value));
  CHECK_TENSOR_BITS(value, want);
  topos_tensor_release(want);
  topos_tensor_release(value);
  sink_log_clear(&log);
  topos_run_free(run);
  topos_run_free(oracle);
  topos_plan_free(plan);
  topos_plan_free(fused);
  topos_network_free(net);
  topos_tensor_release(x);
  topos_tensor_release(u);
}

TEST(plan_sink_misuse_gives_clear_statuses) {
  sink_chain c, other;
  CHECK_OK(sink_chain_new(&c));
  CHECK_OK(sink_chain_new(&other));
  topos_plan *plan = NULL;
  topos_request none = {NULL, 0, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_STATUS(topos_plan_compile_sinks(c.net, &none, NULL, 0, &plan), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_plan_compile_sinks(c.net, &none, NULL, 3, &plan), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_plan_compile_sinks(c.net, &none, &other.link[2], 1, &plan), TOPOS_ERR_FOREIGN);
  topos_request train = {&c.out, 1, NULL, 0, 1, TOPOS_NUMERICS_EXACT};
  CHECK_STATUS(topos_plan_compile_sinks(c.net, &train, c.link, 2, &plan), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  topos_request req = {&c.out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  CHECK_OK(topos_plan_compile_sinks(c.net, &req, c.link, 4, &plan));
  topos_run *run = NULL;
  CHECK_STATUS(topos_plan_forward(plan, NULL, NULL, 0, &run), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_plan_forward_sink(plan, NULL, NULL, 0, NULL, NULL, &run), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK(run == NULL);
  /* a failing callback stops the run with its status and a message naming the sink */
  sink_log log = {0};
  sink_log_clear(&log);
  log.fail_at = 2;
  CHECK_STATUS(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run), TOPOS_ERR_RANGE);
  CHECK(run == NULL);
  CHECK_EQ_INT(log.calls, 2);
  CHECK(strstr(topos_last_error(), "sink 2") != NULL);
  CHECK(strstr(topos_last_error(), "test sink refuses 2") != NULL);
  sink_log_clear(&log);
  /* the plan still runs; a plan without sinks accepts the sink entry point */
  CHECK_OK(topos_plan_forward_sink(plan, NULL, NULL, 0, sink_record, &log, &run));
  CHECK_EQ_INT(log.calls, 4);
  topos_run_free(run);
  sink_log_clear(&log);
  topos_plan *plain = NULL;
  CHECK_OK(topos_plan_compile(c.net, &req, &plain));
  CHECK_OK(topos_plan_forward_sink(plain, NULL, NULL, 0, NULL, NULL, &run));
  topos_run_free(run);
  topos_plan_free(plain);
  topos_plan_free(plan);
  topos_network_free(c.net);
  topos_network_free(other.net);
}
