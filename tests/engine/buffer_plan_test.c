/* The static buffer plan: ranges of values alive at the same time never
 * overlap, views keep their source's bytes alive, nothing is written in
 * place but by a step that declares it may (swiglu over its gate, when it is
 * the gate's last reader), and a long forward chain needs only a few
 * buffers. */
#include "../graph/graph_util.h"
#include "engine/buffer_plan.h"

/* Lifetime of node i's buffer: [i, until]. */
static int overlaps(const tp_buffer_plan *bp, uint32_t i, uint32_t j) {
  uint32_t end_i = bp->until[i] == UINT32_MAX ? UINT32_MAX : (bp->until[i] > i ? bp->until[i] : i);
  if (j > end_i) return 0; /* j starts after i's readers are done (j > i) */
  int64_t a0 = bp->offset[i], a1 = a0 + bp->bytes[i], b0 = bp->offset[j], b1 = b0 + bp->bytes[j];
  return a0 < b1 && b0 < a1;
}

/* A step written in place shares its host's range, and so does a chain of
 * them (hosts point to the chain's first buffer). */
static int same_host(const tp_buffer_plan *bp, uint32_t i, uint32_t j) {
  uint32_t hi = bp->host[i] != UINT32_MAX ? bp->host[i] : i, hj = bp->host[j] != UINT32_MAX ? bp->host[j] : j;
  return hi == hj;
}

static int check_disjoint(const tp_buffer_plan *bp) {
  for (uint32_t i = 0; i < bp->count; ++i) {
    if (bp->offset[i] == TP_NOT_IN_ARENA) continue;
    for (uint32_t j = i + 1; j < bp->count; ++j)
      if (bp->offset[j] != TP_NOT_IN_ARENA && !same_host(bp, i, j) && overlaps(bp, i, j)) return 0;
  }
  return 1;
}

/* Seals the tape and compiles a plan of the roots (backward or not, in
 * `numerics`), whose buffers must not overlap while live; *plan stays NULL
 * when sealing or compiling fails (the failure is recorded). */
static void bp_compile(topos_tape **tape, const topos_sym *roots, size_t n_roots, int backward,
                       topos_numerics numerics, topos_network **net, topos_plan **plan) {
  *plan = NULL;
  CHECK_OK(topos_tape_seal(tape, net));
  topos_request req = {roots, n_roots, NULL, 0, backward, numerics};
  CHECK_OK(topos_plan_compile(*net, &req, plan));
  CHECK(check_disjoint(tp_plan_buffers(*plan)));
}

/* The plan's roots equal the network's, bit for bit, over `runs` runs (the
 * later ones reuse the first one's arena). */
static void bp_check_plan_bits(const topos_network *net, const topos_plan *plan, const topos_sym *roots,
                               size_t n_roots, int runs) {
  topos_run *ref = NULL, *run = NULL;
  topos_numerics saved = topos_numerics_enter(TOPOS_NUMERICS_EXACT); /* the plan's posture */
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &ref));
  topos_numerics_restore(saved);
  for (int rep = 0; rep < runs; ++rep) {
    CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run));
    for (size_t r = 0; r < n_roots; ++r) {
      topos_tensor *a = NULL, *b = NULL;
      CHECK_OK(topos_run_read(ref, roots[r], &a));
      CHECK_OK(topos_run_read(run, roots[r], &b));
      CHECK(topos_tensor_bits_equal(a, b));
      topos_tensor_release(a);
      topos_tensor_release(b);
    }
    topos_run_free(run);
  }
  topos_run_free(ref);
}

TEST(buffer_plan_reuses_along_a_chain_and_respects_views) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {4, 16};
  topos_tensor *t = tg_random(TOPOS_F32, 2, s, 1, -1, 1);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym y = topos_tape_exp(tape, x), early = TOPOS_SYM_INVALID;
  for (int i = 0; i < 12; ++i) {
    y = topos_tape_tanh(tape, y);
    if (i == 2) early = topos_tape_transpose(tape, y); /* a view used at the very end */
  }
  topos_sym tail = topos_tape_transpose(tape, y);
  topos_sym out = topos_tape_sum(tape, topos_tape_add(tape, tail, early));
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {&out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK(bp != NULL);
  CHECK(check_disjoint(bp));
  /* 14 fresh [4,16] f32 results (256 bytes) and the rank-0 sum (64 aligned);
   * reuse keeps the arena to a handful */
  CHECK_EQ_INT(bp->buffers, 15);
  CHECK_EQ_INT(bp->unshared_bytes, 14 * 256 + 64);
  CHECK(bp->arena_bytes <= 4 * 256);
  /* the tanh viewed by `early` keeps its bytes until the add reads the view */
  uint32_t viewed = early.index - 1, add = out.index - 1;
  CHECK(bp->until[viewed] >= add);
  CHECK(bp->offset[early.index] == TP_NOT_IN_ARENA); /* views take no bytes */
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK_EQ_INT(st.arena_bytes, bp->arena_bytes);
  topos_plan_free(plan);
  /* a backward plan keeps what the rules read: every tanh output here (its
   * rule reads it), so nothing is shared */
  req.backward = 1;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  bp = tp_plan_buffers(plan);
  CHECK(check_disjoint(bp));
  CHECK_EQ_INT(bp->arena_bytes, bp->unshared_bytes);
  topos_plan_free(plan);
  topos_network_free(net);
}

TEST(buffer_plan_never_writes_over_an_operand) {
  /* z = a * b with a's last use at the same node: z must not take a's bytes */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {16};
  topos_tensor *t = tg_random(TOPOS_F32, 1, s, 2, -1, 1);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym a = topos_tape_exp(tape, x), b = topos_tape_tanh(tape, x);
  topos_sym z = topos_tape_mul(tape, a, b), out = topos_tape_sum(tape, z);
  topos_plan *plan = NULL;
  bp_compile(&tape, &out, 1, 0, TOPOS_NUMERICS_FAST, &net, &plan);
  CHECK(plan != NULL);
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK(bp->offset[z.index] != bp->offset[a.index]);
  CHECK(bp->offset[z.index] != bp->offset[b.index]);
  CHECK(bp->offset[out.index] == bp->offset[a.index] || bp->offset[out.index] == bp->offset[b.index]);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* y = silu(g) * u with g = exp(a) (a buffer of the plan's own): the fused
 * swiglu step writes y over g when it is g's last reader — the same range,
 * the interpreter's bits — and not when g is read again after it. */
TEST(buffer_plan_swiglu_writes_over_its_gate_when_it_reads_it_last) {
  for (int reread = 0; reread < 2; ++reread) {
    topos_tape *tape = NULL;
    topos_network *net = NULL;
    CHECK_OK(topos_tape_new(&tape));
    int64_t s[] = {8, 700};
    topos_tensor *ta = tg_random(TOPOS_F32, 2, s, 11, -4, 4), *tb = tg_random(TOPOS_F32, 2, s, 12, -2, 2);
    topos_sym a = topos_tape_input(tape, ta, "a"), b = topos_tape_input(tape, tb, "b");
    topos_tensor_release(ta);
    topos_tensor_release(tb);
    topos_sym g = topos_tape_exp(tape, a), u = topos_tape_tanh(tape, b);
    topos_sym y = topos_tape_mul(tape, topos_tape_silu(tape, g), u);
    topos_sym out = reread ? topos_tape_add(tape, y, g) : y;
    topos_plan *plan = NULL;
    bp_compile(&tape, &out, 1, 0, TOPOS_NUMERICS_EXACT, &net, &plan);
    CHECK(plan != NULL);
    topos_plan_stats st;
    CHECK_OK(topos_plan_stats_get(plan, &st));
    CHECK_EQ_INT(st.fused, 1);
    const tp_buffer_plan *bp = tp_plan_buffers(plan);
    CHECK_EQ_INT(bp->in_place, reread ? 0 : 1);
    if (reread) {
      CHECK(bp->offset[y.index] != bp->offset[g.index]);
      CHECK(bp->host[y.index] == UINT32_MAX);
    } else {
      CHECK(bp->offset[y.index] == bp->offset[g.index]);
      CHECK(bp->host[y.index] == g.index);
      CHECK(bp->offset[u.index] != bp->offset[g.index]);
    }
    bp_check_plan_bits(net, plan, &out, 1, 2);
    topos_plan_free(plan);
    topos_network_free(net);
  }
}

TEST(buffer_plan_backward_drops_what_no_rule_reads) {
  /* neg's rule reads nothing: in a chain of negs only the neighbours live */
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {64};
  topos_tensor *t = tg_random(TOPOS_F32, 1, s, 3, -1, 1);
  topos_sym x = topos_tape_parameter(tape, t, "x");
  topos_tensor_release(t);
  topos_sym y = x;
  for (int i = 0; i < 8; ++i) y = topos_tape_neg(tape, y);
  topos_sym out = topos_tape_sum(tape, y);
  topos_plan *plan = NULL;
  bp_compile(&tape, &out, 1, 1, TOPOS_NUMERICS_EXACT, &net, &plan);
  CHECK(plan != NULL);
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK_EQ_INT(bp->unshared_bytes, 8 * 256 + 64);
  CHECK(bp->arena_bytes <= 2 * 256 + 64);
  /* and the engine route still differentiates it */
  topos_params *params = NULL;
  topos_run *run = NULL;
  topos_field *field = NULL;
  topos_tensor *g = NULL;
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_plan_forward(plan, params, NULL, 0, &run));
  CHECK_OK(topos_run_backward(run, out, &field));
  CHECK_OK(topos_field_get(field, x, &g));
  double first;
  int64_t zero = 0;
  CHECK_OK(topos_tensor_get(g, &zero, &first));
  CHECK(first == 1.0); /* eight negations */
  topos_tensor_release(g);
  topos_field_free(field);
  topos_run_free(run);
  topos_params_free(params);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* A graph may describe results no arena can hold (desc-only inputs allocate
 * nothing at record time): compiling refuses them, naming the node, rather
 * than planning a wrapped size. */
TEST(buffer_plan_refuses_results_whose_bytes_overflow) {
  /* [2^31, 2^31] f32: 2^62 elements, 2^64 bytes; [2^30, 2^30] f64: 2^63 bytes,
   * beyond int64 arena offsets once aligned; two [2^29, 2^30] f64 results
   * (2^62 bytes each) fit one by one but not side by side */
  struct {
    int64_t rows, cols;
    topos_dtype dtype;
    int two;
  } cases[] = {{INT64_C(1) << 31, INT64_C(1) << 31, TOPOS_F32, 0},
               {INT64_C(1) << 30, INT64_C(1) << 30, TOPOS_F64, 0},
               {INT64_C(1) << 29, INT64_C(1) << 30, TOPOS_F64, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    topos_tape *tape = NULL;
    topos_network *net = NULL;
    CHECK_OK(topos_tape_new(&tape));
    topos_tensor_desc desc = {cases[c].dtype, 2, {cases[c].rows, cases[c].cols}};
    topos_sym x = topos_tape_input_desc(tape, &desc, "x");
    topos_sym y = topos_tape_exp(tape, x);
    if (cases[c].two) y = topos_tape_add(tape, y, topos_tape_tanh(tape, x));
    topos_sym out = topos_tape_sum(tape, y);
    CHECK_OK(topos_tape_seal(&tape, &net));
    topos_request req = {&out, 1, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
    topos_plan *plan = NULL;
    topos_status s = topos_plan_compile(net, &req, &plan);
    CHECK_MSG(s == TOPOS_ERR_OVERFLOW, "case %zu: %s", c, topos_status_name(s));
    CHECK(plan == NULL);
    CHECK_ERROR_HAS("plan_compile: ");
    CHECK_ERROR_HAS("(node ");
    topos_plan_free(plan);
    topos_network_free(net);
  }
}

/* Views of a huge desc-only input take no arena bytes, so such a plan
 * compiles; its live-volume statistics saturate instead of wrapping. */
TEST(plan_stats_saturate_on_huge_views) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_tensor_desc desc = {TOPOS_F32, 2, {INT64_C(1) << 31, INT64_C(1) << 31}};
  topos_sym roots[4];
  roots[0] = topos_tape_input_desc(tape, &desc, "x");
  for (int i = 1; i < 4; ++i) roots[i] = topos_tape_transpose(tape, roots[i - 1]);
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request req = {roots, 4, NULL, 0, 0, TOPOS_NUMERICS_EXACT};
  topos_plan *plan = NULL;
  CHECK_OK(topos_plan_compile(net, &req, &plan));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK(st.retain_all == INT64_MAX && st.peak == INT64_MAX);
  CHECK_EQ_INT(st.arena_bytes, 0);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* A tangle of values of many sizes with lifetimes that cross (each new value
 * reads two earlier ones of its class at random; a few are kept): ranges
 * live together never overlap, the arena is at most the unshared bytes and
 * at least the bytes live at any one step, and the plan's bits equal the
 * interpreter's, so no buffer was reused while a reader still needed it. */
TEST(buffer_plan_packs_crossing_lifetimes_without_overlap) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  enum { CLASSES = 5, NODES = 240 };
  static const int64_t widths[CLASSES] = {3, 17, 64, 250, 1000};
  topos_sym vals[CLASSES][NODES];
  int count[CLASSES] = {0};
  for (int c = 0; c < CLASSES; ++c)
    for (int k = 0; k < 2; ++k) {
      int64_t shape[2] = {2, widths[c]};
      topos_tensor *t = tg_random(TOPOS_F32, 2, shape, 10 + 2 * c + k, -1, 1);
      vals[c][count[c]++] = topos_tape_input(tape, t, NULL);
      topos_tensor_release(t);
    }
  uint64_t rng = 99;
  topos_sym roots[8];
  size_t n_roots = 0;
  for (int i = 0; i < NODES; ++i) {
    int c = (int)(tg_next(&rng) % CLASSES);
    topos_sym a = vals[c][tg_next(&rng) % (uint64_t)count[c]];
    topos_sym b = vals[c][count[c] - 1 - (int)(tg_next(&rng) % (uint64_t)(count[c] < 4 ? count[c] : 4))];
    topos_sym v = i % 3 == 0 ? topos_tape_mul(tape, a, b)
                  : i % 3 == 1 ? topos_tape_add(tape, a, b)
                               : topos_tape_tanh(tape, topos_tape_sub(tape, a, b));
    vals[c][count[c]++] = v;
    if (i % 40 == 39 && n_roots < 8) roots[n_roots++] = v;
  }
  for (int c = 0; c < CLASSES && n_roots < 8; ++c) roots[n_roots++] = vals[c][count[c] - 1];
  topos_plan *plan = NULL;
  bp_compile(&tape, roots, n_roots, 0, TOPOS_NUMERICS_EXACT, &net, &plan);
  CHECK(plan != NULL);
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK(bp->arena_bytes <= bp->unshared_bytes);
  int64_t peak = 0;
  for (uint32_t s = 0; s < bp->count; ++s) {
    int64_t live = 0;
    for (uint32_t i = 0; i <= s; ++i)
      if (bp->offset[i] != TP_NOT_IN_ARENA && (bp->until[i] == UINT32_MAX || bp->until[i] >= s))
        live += bp->bytes[i];
    if (live > peak) peak = live;
  }
  CHECK(bp->arena_bytes >= peak);
  CHECK(bp->arena_bytes < bp->unshared_bytes / 2); /* reuse happened */
  bp_check_plan_bits(net, plan, roots, n_roots, 1);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* A reshape of a value the plan computes into its arena is a view of that
 * buffer: no range of its own, its operand kept alive as long as it is (to
 * the end when it is read after the run). A reshape of a transposed view may
 * need a copy and keeps a range. Results equal the network's. */
TEST(buffer_plan_reshape_of_a_buffer_is_a_view) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t s[] = {6, 8};
  topos_tensor *t = tg_random(TOPOS_F32, 2, s, 31, -1, 1);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  int64_t flat[] = {48}, split[] = {4, 12};
  topos_sym e = topos_tape_exp(tape, x);
  topos_sym kept = topos_tape_reshape(tape, e, 1, flat);          /* read after the run */
  topos_sym again = topos_tape_reshape(tape, kept, 2, split);     /* a view of a view of e */
  topos_sym strided = topos_tape_reshape(tape, topos_tape_transpose(tape, e), 1, flat);
  topos_sym late = topos_tape_tanh(tape, e);
  for (int i = 0; i < 4; ++i) late = topos_tape_tanh(tape, late); /* buffers that could reuse e's */
  topos_sym total = topos_tape_add(tape, topos_tape_add(tape, strided, topos_tape_reshape(tape, late, 1, flat)),
                                   topos_tape_reshape(tape, again, 1, flat));
  topos_sym roots[] = {kept, total};
  topos_plan *plan = NULL;
  bp_compile(&tape, roots, 2, 0, TOPOS_NUMERICS_EXACT, &net, &plan);
  CHECK(plan != NULL);
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK(bp->offset[e.index] != TP_NOT_IN_ARENA);
  CHECK(bp->offset[kept.index] == TP_NOT_IN_ARENA);
  CHECK(bp->offset[again.index] == TP_NOT_IN_ARENA);
  CHECK(bp->offset[strided.index] != TP_NOT_IN_ARENA);
  CHECK(bp->until[e.index] == UINT32_MAX); /* kept through its reshape */
  bp_check_plan_bits(net, plan, roots, 2, 2);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* A narrow that cuts one dense run out of a buffer (the outermost non-unit
 * axis, as a decoding step's [1, n] product row cut into q, k and v) is
 * dense too: a reshape of it is a view. A narrow of an inner axis of a
 * [2, n] buffer is strided, and its reshape keeps a range. Results equal
 * the network's. */
TEST(buffer_plan_reshape_of_a_dense_narrow_is_a_view) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  CHECK_OK(topos_tape_new(&tape));
  int64_t row[] = {1, 24}, two[] = {2, 24};
  topos_tensor *a = tg_random(TOPOS_F32, 2, row, 32, -1, 1), *b = tg_random(TOPOS_F32, 2, two, 33, -1, 1);
  topos_sym x = topos_tape_exp(tape, topos_tape_input(tape, a, "a"));
  topos_sym y = topos_tape_exp(tape, topos_tape_input(tape, b, "b"));
  topos_tensor_release(a);
  topos_tensor_release(b);
  int64_t split[] = {2, 4}, split2[] = {4, 4};
  topos_sym cut = topos_tape_narrow(tape, x, 1, 8, 8);
  topos_sym dense = topos_tape_reshape(tape, cut, 2, split);
  topos_sym strided = topos_tape_reshape(tape, topos_tape_narrow(tape, y, 1, 8, 8), 2, split2);
  topos_sym roots[] = {topos_tape_tanh(tape, dense), topos_tape_tanh(tape, strided)};
  topos_plan *plan = NULL;
  bp_compile(&tape, roots, 2, 0, TOPOS_NUMERICS_EXACT, &net, &plan);
  CHECK(plan != NULL);
  const tp_buffer_plan *bp = tp_plan_buffers(plan);
  CHECK(bp->offset[x.index] != TP_NOT_IN_ARENA);
  CHECK(bp->offset[dense.index] == TP_NOT_IN_ARENA);
  CHECK(bp->offset[strided.index] != TP_NOT_IN_ARENA);
  CHECK(bp->until[x.index] >= roots[0].index); /* kept alive through the views */
  bp_check_plan_bits(net, plan, roots, 2, 2);
  topos_plan_free(plan);
  topos_network_free(net);
}
