/* Plan == interpreter, bitwise, over every op: one small network per row of
 * TOPOS_OP_LIST (the op between parameters, then a weighted sum), checked for
 * every node's forward value and every engine-route gradient (but the
 * scans', which have none), by
 * forward-only and backward plans in Exact and Fast compiled from the same
 * network, each run twice. A coverage check makes a new op row fail here
 * until it has a case. */
#include "plan_util.h"

typedef struct {
  const char *name;
  int n;                    /* parameters */
  int rank;
  int64_t shape[2][4];
  double lo[2], hi[2];
} op_case;

static const int order3[] = {2, 0, 1};
static const int swap01[] = {1, 0, 2};

/* The op under test applied to the parameters (and constants it needs). */
static topos_sym apply(topos_tape *tape, const char *name, const topos_sym *p) {
  static const int64_t s234[] = {2, 3, 4}, s46[] = {4, 6}, s64[] = {6, 4};
  if (!strcmp(name, "add")) return topos_tape_add(tape, p[0], p[1]);
  if (!strcmp(name, "sub")) return topos_tape_sub(tape, p[0], p[1]);
  if (!strcmp(name, "mul")) return topos_tape_mul(tape, p[0], p[1]);
  if (!strcmp(name, "div")) return topos_tape_div(tape, p[0], p[1]);
  if (!strcmp(name, "pow")) return topos_tape_pow(tape, p[0], p[1]);
  if (!strcmp(name, "maximum")) return topos_tape_maximum(tape, p[0], p[1]);
  if (!strcmp(name, "step")) return topos_tape_mul(tape, topos_tape_step(tape, p[0], p[1]), p[0]);
  if (!strcmp(name, "neg")) return topos_tape_neg(tape, p[0]);
  if (!strcmp(name, "exp")) return topos_tape_exp(tape, p[0]);
  if (!strcmp(name, "ln")) return topos_tape_ln(tape, p[0]);
  if (!strcmp(name, "sqrt")) return topos_tape_sqrt(tape, p[0]);
  if (!strcmp(name, "tanh")) return topos_tape_tanh(tape, p[0]);
  if (!strcmp(name, "relu")) return topos_tape_relu(tape, p[0]);
  if (!strcmp(name, "matmul")) return topos_tape_matmul(tape, p[0], p[1]);
  if (!strcmp(name, "transpose")) return topos_tape_exp(tape, topos_tape_transpose(tape, p[0]));
  if (!strcmp(name, "permute")) return topos_tape_permute(tape, p[0], order3);
  if (!strcmp(name, "reshape")) /* a strided operand: reshape copies (into the arena) */
    return topos_tape_reshape(tape, topos_tape_permute(tape, p[0], swap01), 2, s64);
  if (!strcmp(name, "reshape_view")) return topos_tape_reshape(tape, topos_tape_exp(tape, p[0]), 2, s46);
  if (!strcmp(name, "narrow")) return topos_tape_narrow(tape, topos_tape_tanh(tape, p[0]), 2, 1, 2);
  if (!strcmp(name, "pad")) return topos_tape_pad(tape, p[0], 1, 2, 6);
  if (!strcmp(name, "broadcast")) return topos_tape_broadcast(tape, p[0], 3, s234);
  if (!strcmp(name, "broadcast_along")) return topos_tape_broadcast_along(tape, p[0], 1, 4);
  if (!strcmp(name, "sum")) return topos_tape_sum(tape, p[0]);
  if (!strcmp(name, "sum_along")) return topos_tape_sum_along(tape, p[0], 1);
  if (!strcmp(name, "unfold")) return topos_tape_unfold(tape, p[0], 1, 2, 3, 2);
  if (!strcmp(name, "fold")) return topos_tape_fold(tape, p[0], 1, 2, 3, 2, 9);
  if (!strcmp(name, "gather")) {
    static const int32_t rows[] = {2, 0, 2, 3, 2};
    return topos_tape_gather(tape, p[0], tg_i32_constant(tape, 5, rows));
  }
  if (!strcmp(name, "scatter")) {
    static const int32_t rows[] = {1, 3, 1, 0, 1};
    return topos_tape_scatter(tape, p[0], tg_i32_constant(tape, 5, rows), 4);
  }
  if (!strcmp(name, "log_softmax")) return topos_tape_log_softmax(tape, p[0], 1);
  if (!strcmp(name, "log_sum_exp")) return topos_tape_log_sum_exp(tape, p[0], 2);
  if (!strcmp(name, "qlinear")) return topos_tape_qlinear(tape, p[0], p[1]);
  if (!strcmp(name, "top_k")) /* the positions pick each lane's largest: a batched gather */
    return topos_tape_gather(tape, p[0], topos_tape_top_k(tape, p[0], 2));
  if (!strcmp(name, "qlinear_id")) { /* x [3, 1, 4] through experts [2, 3, 4] */
    static const int32_t ids[] = {1, 0, 0, 0, 1, 1};
    static const int64_t s32[] = {3, 2};
    return topos_tape_qlinear_id(tape, p[0], p[1],
                                 topos_tape_reshape(tape, tg_i32_constant(tape, 6, ids), 2, s32));
  }
  if (!strcmp(name, "ssm_scan") || !strcmp(name, "delta_scan")) { /* of constants, added to the parameter */
    const int delta = name[0] == 'd';
    const int64_t ss[] = {2, 3, 4}, xs[] = {1, 3, delta ? 6 : 5}, bs[] = {1, 2, 1, 2};
    topos_tensor *s = tg_random(TOPOS_F32, 3, ss, 71, -1, 1), *xa = tg_random(TOPOS_F32, 3, xs, 72, 0.2, 0.9);
    topos_tensor *bc = tg_random(TOPOS_F32, 4, bs, 73, -1, 1);
    const topos_sym c[3] = {topos_tape_constant(tape, s), topos_tape_constant(tape, xa), topos_tape_constant(tape, bc)};
    topos_sym y = delta ? topos_tape_delta_scan(tape, c[0], c[1], c[2]) : topos_tape_ssm_scan(tape, c[0], c[1], c[2]);
    topos_tensor_release(s);
    topos_tensor_release(xa);
    topos_tensor_release(bc);
    return topos_tape_add(tape, p[0], y);
  }
  return TOPOS_SYM_INVALID;
}

#define S23 2, {{2, 3}, {2, 3}}
#define S234 3, {{2, 3, 4}}
static const op_case cases[] = {
    {"add", 2, S23, {-2, -2}, {2, 2}},
    {"sub", 2, S23, {-2, -2}, {2, 2}},
    {"mul", 2, S23, {-2, -2}, {2, 2}},
    {"div", 2, S23, {-2, 0.5}, {2, 2}},
    {"pow", 2, S23, {0.5, -1.5}, {2, 2.5}},
    {"maximum", 2, S23, {-2, -2}, {2, 2}},
    {"step", 2, S23, {-2, -2}, {2, 2}},
    {"neg", 1, S23, {-2}, {2}},
    {"exp", 1, S23, {-2}, {2}},
    {"ln", 1, S23, {0.3}, {3}},
    {"sqrt", 1, S23, {0.3}, {3}},
    {"tanh", 1, S23, {-2}, {2}},
    {"relu", 1, S23, {-2}, {2}},
    {"matmul", 2, 2, {{3, 4}, {4, 2}}, {-1, -1}, {1, 1}},
    {"transpose", 1, S23, {-1}, {1}},
    {"permute", 1, S234, {-1}, {1}},
    {"reshape", 1, S234, {-1}, {1}},
    {"reshape_view", 1, S234, {-1}, {1}},
    {"narrow", 1, S234, {-1}, {1}},
    {"pad", 1, S23, {-1}, {1}},
    {"broadcast", 1, 2, {{1, 1}}, {-1}, {1}},
    {"broadcast_along", 1, S23, {-1}, {1}},
    {"sum", 1, S234, {-1}, {1}},
    {"sum_along", 1, S234, {-1}, {1}},
    {"unfold", 1, 3, {{2, 9, 3}}, {-1}, {1}},
    {"fold", 1, 4, {{2, 3, 2, 3}}, {-1}, {1}},
    {"gather", 1, 2, {{4, 3}}, {-1}, {1}},
    {"scatter", 1, 2, {{5, 3}}, {-1}, {1}},
    {"log_softmax", 1, S234, {-3}, {3}},
    {"log_sum_exp", 1, S234, {-3}, {3}},
    {"qlinear", 2, 2, {{3, 4}, {2, 4}}, {-1, -1}, {1, 1}}, /* x f32 only: f32 runs */
    {"top_k", 1, S234, {-1}, {1}},
    {"qlinear_id", 2, 3, {{3, 1, 4}, {2, 3, 4}}, {-1, -1}, {1, 1}}, /* f32 runs */
    {"ssm_scan", 1, 3, {{3, 3, 4}}, {-1}, {1}},                      /* f32 runs */
    {"delta_scan", 1, 3, {{3, 3, 4}}, {-1}, {1}},                    /* f32 runs */
};

/* Records the case in dtype; marks the ops its network holds in `seen`. */
static topos_status build_case(const op_case *c, topos_dtype dtype, uint64_t seed,
                               topos_network **net, topos_params **params, topos_sym *loss,
                               uint8_t *seen) {
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  topos_sym p[2];
  for (int k = 0; k < c->n; ++k) {
    topos_tensor *t = tg_random(dtype, c->rank, c->shape[k], seed + (uint64_t)k, c->lo[k], c->hi[k]);
    p[k] = topos_tape_parameter(tape, t, NULL);
    topos_tensor_release(t);
  }
  *loss = tg_weighted_sum(tape, apply(tape, c->name, p), seed + 7);
  s = topos_tape_seal(&tape, net);
  if (s != TOPOS_OK) return s;
  for (uint32_t i = 0; i < topos_network_length(*net); ++i) {
    topos_node_kind kind;
    topos_op op = TOPOS_OP_COUNT;
    if (topos_network_node(*net, topos_network_symbol(*net, i), &kind, &op) == TOPOS_OK &&
        kind == TOPOS_NODE_OP)
      seen[op] = 1;
  }
  return topos_params_from_network(*net, params);
}

static void run_cases(topos_dtype dtype, uint8_t *seen, int *failed) {
  *failed = 1;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    if (dtype != TOPOS_F32 && (!strncmp(cases[k].name, "qlinear", 7) || strstr(cases[k].name, "_scan")))
      continue; /* f32 operands only */
    topos_network *net = NULL;
    topos_params *params = NULL;
    topos_sym loss;
    topos_status s = build_case(&cases[k], dtype, 900 + 10 * k, &net, &params, &loss, seen);
    if (s != TOPOS_OK) {
      tt_fail_at(__FILE__, __LINE__, "case %s: %s", cases[k].name, topos_last_error());
      topos_params_free(params);
      topos_network_free(net);
      return;
    }
    /* the scan has no gradient: its plans are checked forward only */
    const int differentiate = strstr(cases[k].name, "_scan") == NULL;
    int ok = tp_check_plans(__FILE__, __LINE__, net, params, NULL, 0, loss, differentiate);
    topos_params_free(params);
    topos_network_free(net);
    if (!ok) {
      tt_fail_at(__FILE__, __LINE__, "in case %s (%s)", cases[k].name, topos_dtype_name(dtype));
      return;
    }
  }
  *failed = 0;
}

TEST(plan_equals_interpreter_for_every_op_f32) {
  uint8_t seen[TOPOS_OP_COUNT] = {0};
  int failed;
  run_cases(TOPOS_F32, seen, &failed);
  if (failed) return;
  for (int op = 0; op < TOPOS_OP_COUNT; ++op)
    CHECK_MSG(seen[op], "op %s has no plan case", topos_op_name((topos_op)op));
}

TEST(plan_equals_interpreter_for_every_op_bf16_and_f64) {
  uint8_t seen[TOPOS_OP_COUNT] = {0};
  int failed;
  run_cases(TOPOS_BF16, seen, &failed);
  if (failed) return;
  run_cases(TOPOS_F64, seen, &failed);
}
