/* Layout independence: every op gives the same bits on strided views
 * (transposed, narrowed, stride-0 broadcast, overlapping unfold windows) as
 * on forced contiguous copies of them. */
#include "ops_util.h"

enum { VIEW_TRANSPOSED, VIEW_NARROWED, VIEW_BROADCAST, VIEW_UNFOLD, VIEW_SCALAR, VIEW_KINDS };
static const char *const kViewNames[VIEW_KINDS] = {"transposed", "narrowed", "broadcast",
                                                   "unfold", "scalar-broadcast"};

/* A [4,6] view of the given kind with deterministic values. */
static topos_tensor *make_view(ot_pool *p, int kind, topos_dtype dt, uint64_t seed) {
  double v[64];
  ot_fill(v, 64, seed, 8, 0.25);
  topos_tensor *base = NULL, *view = NULL;
  switch (kind) {
    case VIEW_TRANSPOSED: {
      int64_t s[] = {6, 4};
      base = ot_make(p, dt, 2, s, v);
      if (base && topos_tensor_transpose(base, &view) != TOPOS_OK) view = NULL;
      break;
    }
    case VIEW_NARROWED: {
      int64_t s[] = {5, 9};
      topos_tensor *rows = NULL;
      base = ot_make(p, dt, 2, s, v);
      if (base && topos_tensor_narrow(base, 1, 2, 6, &rows) == TOPOS_OK) {
        ot_keep(p, rows);
        if (topos_tensor_narrow(rows, 0, 1, 4, &view) != TOPOS_OK) view = NULL;
      }
      break;
    }
    case VIEW_BROADCAST: {
      int64_t s[] = {6};
      base = ot_make(p, dt, 1, s, v);
      if (base && topos_tensor_broadcast_along(base, 0, 4, &view) != TOPOS_OK) view = NULL;
      break;
    }
    case VIEW_UNFOLD: {
      int64_t s[] = {15};
      base = ot_make(p, dt, 1, s, v);
      if (base && topos_tensor_unfold(base, 0, 6, 3, 1, &view) != TOPOS_OK) view = NULL;
      break;
    }
    case VIEW_SCALAR: {
      int64_t s[] = {4, 6};
      base = ot_make(p, dt, 0, NULL, v + 3);
      if (base && topos_tensor_broadcast(base, 2, s, &view) != TOPOS_OK) view = NULL;
      break;
    }
    default:
      break;
  }
  if (view && (topos_tensor_shape(view)[0] != 4 || topos_tensor_shape(view)[1] != 6)) {
    topos_tensor_release(view);
    return NULL;
  }
  return ot_keep(p, view);
}

static const topos_dtype kDts[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16, TOPOS_F16};
#define DTS 4

TEST(ops_strided_elementwise_match_contiguous) {
  const topos_op binary[] = {TOPOS_OP_ADD, TOPOS_OP_SUB,     TOPOS_OP_MUL, TOPOS_OP_DIV,
                             TOPOS_OP_POW, TOPOS_OP_MAXIMUM, TOPOS_OP_STEP};
  const topos_op unary[] = {TOPOS_OP_NEG,  TOPOS_OP_EXP,  TOPOS_OP_LN,
                            TOPOS_OP_SQRT, TOPOS_OP_TANH, TOPOS_OP_RELU};
  for (int d = 0; d < DTS; ++d) {
    ot_pool p = {{0}, 0};
    topos_tensor *views[VIEW_KINDS];
    for (int k = 0; k < VIEW_KINDS; ++k) {
      views[k] = make_view(&p, k, kDts[d], 10 + (uint64_t)k);
      CHECK_MSG(views[k], "view %s: %s", kViewNames[k], topos_last_error());
      CHECK(!topos_tensor_is_contiguous(views[k]));
    }
    for (int ka = 0; ka < VIEW_KINDS; ++ka) {
      for (size_t o = 0; o < sizeof unary / sizeof unary[0]; ++o)
        CHECK_MSG(ot_layout_invariant(unary[o], views[ka], NULL, NULL), "%s on %s %s",
                  topos_op_name(unary[o]), topos_dtype_name(kDts[d]), kViewNames[ka]);
      for (int kb = 0; kb < VIEW_KINDS; ++kb)
        for (size_t o = 0; o < sizeof binary / sizeof binary[0]; ++o)
          CHECK_MSG(ot_layout_invariant(binary[o], views[ka], views[kb], NULL), "%s on %s %s x %s",
                    topos_op_name(binary[o]), topos_dtype_name(kDts[d]), kViewNames[ka],
                    kViewNames[kb]);
    }
    ot_free(&p);
  }
}

TEST(ops_strided_reductions_match_contiguous) {
  for (int d = 0; d < DTS; ++d) {
    ot_pool p = {{0}, 0};
    for (int k = 0; k < VIEW_KINDS; ++k) {
      topos_tensor *v = make_view(&p, k, kDts[d], 20 + (uint64_t)k);
      CHECK(v);
      CHECK_MSG(ot_layout_invariant(TOPOS_OP_SUM, v, NULL, NULL), "sum on %s", kViewNames[k]);
      for (int axis = 0; axis < 2; ++axis) {
        topos_op_attrs at = ot_attrs();
        at.axis = axis;
        CHECK_MSG(ot_layout_invariant(TOPOS_OP_SUM_ALONG, v, NULL, &at), "sum_along %d on %s",
                  axis, kViewNames[k]);
        CHECK_MSG(ot_layout_invariant(TOPOS_OP_LOG_SOFTMAX, v, NULL, &at),
                  "log_softmax %d on %s", axis, kViewNames[k]);
        CHECK_MSG(ot_layout_invariant(TOPOS_OP_LOG_SUM_EXP, v, NULL, &at),
                  "log_sum_exp %d on %s", axis, kViewNames[k]);
        at.start = 1;
        at.length = 8;
        CHECK_MSG(ot_layout_invariant(TOPOS_OP_PAD, v, NULL, &at), "pad %d on %s", axis,
                  kViewNames[k]);
      }
      /* fold over (count, size) = (4, 6): extent 9 with step 1 */
      topos_op_attrs fa = ot_attrs();
      fa.axis = 0;
      fa.size = 6;
      fa.step = 1;
      fa.dilation = 1;
      fa.length = 9;
      CHECK_MSG(ot_layout_invariant(TOPOS_OP_FOLD, v, NULL, &fa), "fold on %s", kViewNames[k]);
    }
    ot_free(&p);
  }
}

TEST(ops_strided_matmul_match_contiguous) {
  for (int d = 0; d < DTS; ++d) {
    ot_pool p = {{0}, 0};
    topos_tensor *b = NULL;
    double v[30];
    ot_fill(v, 30, 77, 8, 0.5);
    int64_t s[] = {5, 6};
    topos_tensor *b0 = ot_make(&p, kDts[d], 2, s, v);
    CHECK(b0);
    CHECK_OK(topos_tensor_transpose(b0, &b)); /* [6,5], column-major */
    ot_keep(&p, b);
    for (int k = 0; k < VIEW_KINDS; ++k) {
      topos_tensor *a = make_view(&p, k, kDts[d], 30 + (uint64_t)k);
      CHECK(a);
      CHECK_MSG(ot_layout_invariant(TOPOS_OP_MATMUL, a, b, NULL), "matmul %s x transposed",
                kViewNames[k]);
    }
    /* batched: [2,3,4] permuted from [3,2,4] times [2,4,2] broadcast along the batch */
    int64_t sa[] = {3, 2, 4}, sb[] = {4, 2};
    double w[24];
    ot_fill(w, 24, 5, 8, 0.5);
    topos_tensor *a0 = ot_make(&p, kDts[d], 3, sa, w), *a, *bb, *bs = ot_make(&p, kDts[d], 2, sb, w);
    CHECK(a0 && bs);
    const int order[3] = {1, 0, 2};
    CHECK_OK(topos_tensor_permute(a0, order, &a));
    ot_keep(&p, a);
    CHECK_OK(topos_tensor_broadcast_along(bs, 0, 2, &bb));
    ot_keep(&p, bb);
    CHECK(ot_layout_invariant(TOPOS_OP_MATMUL, a, bb, NULL));
    ot_free(&p);
  }
}

TEST(ops_strided_gather_scatter_match_contiguous) {
  for (int d = 0; d < DTS; ++d) {
    ot_pool p = {{0}, 0};
    /* indices with stride 2: [5,1] windows of an i32 [9] reshaped to [5] */
    int32_t raw[9] = {3, 9, 0, 9, 3, 9, 1, 9, 2};
    int64_t s9[] = {9}, s5[] = {5};
    topos_tensor *all, *win, *idx;
    CHECK_OK(topos_tensor_from_data(TOPOS_I32, 1, s9, raw, sizeof raw, &all));
    ot_keep(&p, all);
    CHECK_OK(topos_tensor_unfold(all, 0, 1, 2, 1, &win));
    ot_keep(&p, win);
    CHECK_OK(topos_tensor_reshape(win, 1, s5, &idx));
    ot_keep(&p, idx);
    CHECK(topos_tensor_strides(idx)[0] == 2);
    for (int k = 0; k < VIEW_KINDS; ++k) {
      topos_tensor *table = make_view(&p, k, kDts[d], 40 + (uint64_t)k);
      CHECK(table);
      CHECK_MSG(ot_layout_invariant(TOPOS_OP_GATHER, table, idx, NULL), "gather from %s",
                kViewNames[k]);
      /* scatter needs N = 5 value rows: narrow a [6,4] transposed-type view */
      topos_tensor *tt, *vals;
      CHECK_OK(topos_tensor_transpose(table, &tt));
      ot_keep(&p, tt);
      CHECK_OK(topos_tensor_narrow(tt, 0, 1, 5, &vals));
      ot_keep(&p, vals);
      topos_op_attrs at = ot_attrs();
      at.length = 4;
      CHECK_MSG(ot_layout_invariant(TOPOS_OP_SCATTER, vals, idx, &at), "scatter of %s",
                kViewNames[k]);
    }
    ot_free(&p);
  }
}
