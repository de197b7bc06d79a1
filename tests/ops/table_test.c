/* The op table: names, arity, parse, view flags, and every shape/dtype rule
 * error with its message. */
#include "ops_util.h"

TEST(ops_table_names_parse_and_arity) {
  for (int op = 0; op < TOPOS_OP_COUNT; ++op) {
    const char *name = topos_op_name((topos_op)op);
    CHECK(name && name[0]);
    topos_op back;
    CHECK_OK(topos_op_parse(name, &back));
    CHECK_EQ_INT(back, op);
    CHECK(topos_op_arity((topos_op)op) >= 1 && topos_op_arity((topos_op)op) <= 3);
    for (int other = 0; other < op; ++other)
      CHECK(strcmp(name, topos_op_name((topos_op)other)) != 0);
  }
  CHECK(strcmp(topos_op_name(TOPOS_OP_LOG_SUM_EXP), "log_sum_exp") == 0);
  CHECK_EQ_INT(topos_op_arity(TOPOS_OP_MATMUL), 2);
  CHECK_EQ_INT(topos_op_arity(TOPOS_OP_SCATTER), 2);
  CHECK_EQ_INT(topos_op_arity(TOPOS_OP_RELU), 1);
  CHECK_EQ_INT(topos_op_arity(TOPOS_OP_QLINEAR_ID), 3);
  CHECK(strcmp(topos_op_name(TOPOS_OP_TOP_K), "top_k") == 0);
  topos_op op;
  CHECK_STATUS(topos_op_parse("softmax", &op), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("softmax");
  CHECK(strcmp(topos_op_name((topos_op)999), "unknown") == 0);
  CHECK_EQ_INT(topos_op_arity((topos_op)-1), 0);
}

TEST(ops_table_view_flags) {
  const topos_op views[] = {TOPOS_OP_TRANSPOSE, TOPOS_OP_PERMUTE,   TOPOS_OP_RESHAPE,
                            TOPOS_OP_NARROW,    TOPOS_OP_BROADCAST, TOPOS_OP_BROADCAST_ALONG,
                            TOPOS_OP_UNFOLD};
  int count = 0;
  for (int op = 0; op < TOPOS_OP_COUNT; ++op) count += topos_op_is_view((topos_op)op);
  CHECK_EQ_INT(count, 7);
  for (size_t i = 0; i < sizeof views / sizeof views[0]; ++i) CHECK(topos_op_is_view(views[i]));
  CHECK(!topos_op_is_view(TOPOS_OP_PAD));
  CHECK(!topos_op_is_view(TOPOS_OP_FOLD));
}

static topos_tensor_desc desc(topos_dtype dtype, int rank, int64_t d0, int64_t d1, int64_t d2) {
  topos_tensor_desc d;
  memset(&d, 0, sizeof d);
  d.dtype = dtype;
  d.rank = rank;
  d.shape[0] = d0;
  d.shape[1] = d1;
  d.shape[2] = d2;
  return d;
}

/* Runs the rule and expects a failure whose message has both fragments. */
#define CHECK_RULE_FAILS(op, attrs, status, frag1, frag2)          \
  do {                                                             \
    topos_tensor_desc out_;                                        \
    CHECK_STATUS(topos_op_infer((op), in, (attrs), &out_), status); \
    CHECK_ERROR_HAS(frag1);                                        \
    CHECK_ERROR_HAS(frag2);                                        \
  } while (0)

TEST(ops_rules_binary_shapes_and_dtypes) {
  topos_tensor_desc in[2] = {desc(TOPOS_F32, 2, 2, 3, 0), desc(TOPOS_F32, 2, 3, 2, 0)};
  CHECK_RULE_FAILS(TOPOS_OP_ADD, NULL, TOPOS_ERR_SHAPE, "add: shapes [2,3] and [3,2] differ", "");
  CHECK_RULE_FAILS(TOPOS_OP_STEP, NULL, TOPOS_ERR_SHAPE, "step: shapes [2,3] and [3,2]", "");
  in[1] = desc(TOPOS_F32, 3, 1, 2, 3);
  CHECK_RULE_FAILS(TOPOS_OP_MUL, NULL, TOPOS_ERR_SHAPE, "mul: shapes [2,3] and [1,2,3]", "");
  in[1] = desc(TOPOS_F64, 2, 2, 3, 0);
  CHECK_RULE_FAILS(TOPOS_OP_SUB, NULL, TOPOS_ERR_DTYPE, "sub: dtypes f32 and f64 differ", "[2,3]");
  in[0] = desc(TOPOS_I32, 2, 2, 3, 0);
  in[1] = in[0];
  CHECK_RULE_FAILS(TOPOS_OP_ADD, NULL, TOPOS_ERR_DTYPE, "add:", "i32");
  CHECK_RULE_FAILS(TOPOS_OP_EXP, NULL, TOPOS_ERR_DTYPE, "exp:", "integer");
  in[0] = desc(TOPOS_Q8_0, 2, 2, 32, 0);
  CHECK_RULE_FAILS(TOPOS_OP_RELU, NULL, TOPOS_ERR_DTYPE, "relu:", "quantized");
  CHECK_RULE_FAILS(TOPOS_OP_SUM, NULL, TOPOS_ERR_DTYPE, "sum:", "dequantize");
  /* well-formed: same shape and dtype */
  in[0] = desc(TOPOS_BF16, 2, 2, 3, 0);
  in[1] = in[0];
  topos_tensor_desc out;
  CHECK_OK(topos_op_infer(TOPOS_OP_POW, in, NULL, &out));
  CHECK(out.dtype == TOPOS_BF16 && out.rank == 2 && out.shape[0] == 2 && out.shape[1] == 3);
  /* malformed descriptors */
  in[0].shape[1] = 0;
  CHECK_RULE_FAILS(TOPOS_OP_ADD, NULL, TOPOS_ERR_SHAPE, "add:", "[2,0]");
  in[0] = desc((topos_dtype)77, 1, 2, 0, 0);
  CHECK_RULE_FAILS(TOPOS_OP_NEG, NULL, TOPOS_ERR_DTYPE, "neg:", "unknown dtype");
  in[0] = desc(TOPOS_F32, 9, 2, 0, 0);
  CHECK_RULE_FAILS(TOPOS_OP_NEG, NULL, TOPOS_ERR_SHAPE, "neg:", "rank 9");
}

TEST(ops_rules_matmul) {
  topos_tensor_desc in[2] = {desc(TOPOS_F32, 2, 2, 3, 0), desc(TOPOS_F32, 2, 4, 5, 0)};
  CHECK_RULE_FAILS(TOPOS_OP_MATMUL, NULL, TOPOS_ERR_SHAPE,
                   "matmul: inner extents differ: [2,3] x [4,5]", "");
  in[0] = desc(TOPOS_F32, 1, 3, 0, 0);
  in[1] = desc(TOPOS_F32, 2, 3, 4, 0);
  CHECK_RULE_FAILS(TOPOS_OP_MATMUL, NULL, TOPOS_ERR_SHAPE, "matmul:", "[3] x [3,4]");
  in[0] = desc(TOPOS_F32, 3, 2, 2, 3);
  CHECK_RULE_FAILS(TOPOS_OP_MATMUL, NULL, TOPOS_ERR_SHAPE, "matmul: ranks differ",
                   "[2,2,3] x [3,4]");
  in[1] = desc(TOPOS_F32, 3, 3, 3, 4);
  CHECK_RULE_FAILS(TOPOS_OP_MATMUL, NULL, TOPOS_ERR_SHAPE, "matmul: batch axes differ",
                   "[2,2,3] x [3,3,4]");
  in[1] = desc(TOPOS_F64, 3, 2, 3, 4);
  CHECK_RULE_FAILS(TOPOS_OP_MATMUL, NULL, TOPOS_ERR_DTYPE, "matmul: dtypes f32 and f64", "");
  in[1] = desc(TOPOS_F32, 3, 2, 3, 4);
  topos_tensor_desc out;
  CHECK_OK(topos_op_infer(TOPOS_OP_MATMUL, in, NULL, &out));
  CHECK(out.rank == 3 && out.shape[0] == 2 && out.shape[1] == 2 && out.shape[2] == 4);
}

TEST(ops_rules_layout_ops) {
  topos_tensor_desc in[2] = {desc(TOPOS_F32, 2, 4, 6, 0), desc(TOPOS_F32, 0, 0, 0, 0)};
  topos_op_attrs at = ot_attrs();
  topos_tensor_desc out;
  at.rank = 2;
  at.order[0] = 1;
  at.order[1] = 1;
  CHECK_RULE_FAILS(TOPOS_OP_PERMUTE, &at, TOPOS_ERR_SHAPE, "permute:", "[4,6]");
  at.rank = 3;
  CHECK_RULE_FAILS(TOPOS_OP_PERMUTE, &at, TOPOS_ERR_SHAPE, "permute: order has 3 axes", "[4,6]");
  at.rank = 2;
  at.shape[0] = 5;
  at.shape[1] = 5;
  CHECK_RULE_FAILS(TOPOS_OP_RESHAPE, &at, TOPOS_ERR_SHAPE, "reshape: volumes differ", "[4,6] to [5,5]");
  at.shape[0] = -1;
  CHECK_RULE_FAILS(TOPOS_OP_RESHAPE, &at, TOPOS_ERR_SHAPE, "reshape:", "[4,6]");
  at.shape[1] = 8;
  CHECK_OK(topos_op_infer(TOPOS_OP_RESHAPE, in, &at, &out));
  CHECK(out.rank == 2 && out.shape[0] == 3 && out.shape[1] == 8);
  at = ot_attrs();
  at.axis = 1;
  at.start = 4;
  at.length = 3;
  CHECK_RULE_FAILS(TOPOS_OP_NARROW, &at, TOPOS_ERR_RANGE, "narrow:", "[4,6]");
  at.axis = 2;
  CHECK_RULE_FAILS(TOPOS_OP_NARROW, &at, TOPOS_ERR_SHAPE, "narrow: axis 2", "[4,6]");
  at.axis = 1;
  at.start = 1;
  at.length = 6;
  CHECK_RULE_FAILS(TOPOS_OP_PAD, &at, TOPOS_ERR_RANGE, "pad:", "[4,6]");
  at.length = 7;
  CHECK_OK(topos_op_infer(TOPOS_OP_PAD, in, &at, &out));
  CHECK(out.shape[1] == 7);
  at = ot_attrs();
  at.rank = 2;
  at.shape[0] = 3;
  at.shape[1] = 3;
  CHECK_RULE_FAILS(TOPOS_OP_BROADCAST, &at, TOPOS_ERR_SHAPE, "broadcast:", "[4,6]");
  at.axis = 3;
  at.length = 2;
  CHECK_RULE_FAILS(TOPOS_OP_BROADCAST_ALONG, &at, TOPOS_ERR_SHAPE, "broadcast_along:", "[4,6]");
  at.axis = 2;
  CHECK_OK(topos_op_infer(TOPOS_OP_BROADCAST_ALONG, in, &at, &out));
  CHECK(out.rank == 3 && out.shape[2] == 2);
  at.axis = -1;
  CHECK_RULE_FAILS(TOPOS_OP_SUM_ALONG, &at, TOPOS_ERR_SHAPE, "sum_along: axis -1", "[4,6]");
  CHECK_RULE_FAILS(TOPOS_OP_LOG_SOFTMAX, &at, TOPOS_ERR_SHAPE, "log_softmax:", "[4,6]");
  CHECK_RULE_FAILS(TOPOS_OP_LOG_SUM_EXP, &at, TOPOS_ERR_SHAPE, "log_sum_exp:", "[4,6]");
  at = ot_attrs();
  at.axis = 1;
  at.size = 4;
  at.step = 1;
  at.dilation = 2;
  CHECK_RULE_FAILS(TOPOS_OP_UNFOLD, &at, TOPOS_ERR_RANGE, "unfold:", "[4,6]");
  at.dilation = 0;
  CHECK_RULE_FAILS(TOPOS_OP_UNFOLD, &at, TOPOS_ERR_SHAPE, "unfold:", "[4,6]");
  at.size = 3;
  at.step = 2;
  at.dilation = 1;
  CHECK_OK(topos_op_infer(TOPOS_OP_UNFOLD, in, &at, &out));
  CHECK(out.rank == 3 && out.shape[1] == 2 && out.shape[2] == 3);
  /* fold: operand (4, 6) at axes (0, 1) does not match extent 9, size 6, step 1 -> (4, 6) OK;
   * extent 10 needs 5 windows */
  at = ot_attrs();
  at.axis = 0;
  at.size = 6;
  at.step = 1;
  at.dilation = 1;
  at.length = 9;
  CHECK_OK(topos_op_infer(TOPOS_OP_FOLD, in, &at, &out));
  CHECK(out.rank == 1 && out.shape[0] == 9);
  at.length = 10;
  CHECK_RULE_FAILS(TOPOS_OP_FOLD, &at, TOPOS_ERR_SHAPE, "fold:", "[4,6]");
  at.axis = 1;
  CHECK_RULE_FAILS(TOPOS_OP_FOLD, &at, TOPOS_ERR_SHAPE, "fold: axes (1, 2)", "[4,6]");
}

TEST(ops_rules_gather_scatter) {
  topos_tensor_desc in[2] = {desc(TOPOS_F32, 2, 5, 3, 0), desc(TOPOS_F32, 1, 4, 0, 0)};
  topos_op_attrs at = ot_attrs();
  topos_tensor_desc out;
  CHECK_RULE_FAILS(TOPOS_OP_GATHER, NULL, TOPOS_ERR_DTYPE, "gather: indices [4]", "need i32");
  in[1] = desc(TOPOS_I32, 2, 4, 1, 0);
  CHECK_RULE_FAILS(TOPOS_OP_GATHER, NULL, TOPOS_ERR_SHAPE, "gather: indices [4,1]", "[5,3]");
  in[1] = desc(TOPOS_I32, 1, 4, 0, 0);
  CHECK_OK(topos_op_infer(TOPOS_OP_GATHER, in, NULL, &out));
  CHECK(out.rank == 2 && out.shape[0] == 4 && out.shape[1] == 3);
  at.length = 7;
  CHECK_RULE_FAILS(TOPOS_OP_SCATTER, &at, TOPOS_ERR_SHAPE, "scatter: 4 indices [4]", "[5,3]");
  in[0] = desc(TOPOS_F32, 2, 4, 3, 0);
  CHECK_OK(topos_op_infer(TOPOS_OP_SCATTER, in, &at, &out));
  CHECK(out.rank == 2 && out.shape[0] == 7 && out.shape[1] == 3);
  at.length = 0;
  CHECK_RULE_FAILS(TOPOS_OP_SCATTER, &at, TOPOS_ERR_SHAPE, "scatter: rows 0", "[4,3]");
  in[0] = desc(TOPOS_I32, 2, 4, 3, 0);
  at.length = 2;
  CHECK_RULE_FAILS(TOPOS_OP_SCATTER, &at, TOPOS_ERR_DTYPE, "scatter:", "integer");
  CHECK_OK(topos_op_infer(TOPOS_OP_GATHER, in, NULL, &out)); /* integer tables gather */
}

TEST(ops_rules_quantized_views_outer_axes_only) {
  topos_tensor_desc in[1] = {desc(TOPOS_Q4_0, 2, 4, 64, 0)};
  topos_op_attrs at = ot_attrs();
  topos_tensor_desc out;
  at.axis = 0;
  at.start = 1;
  at.length = 2;
  CHECK_OK(topos_op_infer(TOPOS_OP_NARROW, in, &at, &out));
  CHECK(out.dtype == TOPOS_Q4_0 && out.shape[0] == 2 && out.shape[1] == 64);
  at.axis = 1;
  at.start = 0;
  at.length = 32;
  CHECK_RULE_FAILS(TOPOS_OP_NARROW, &at, TOPOS_ERR_DTYPE, "narrow:", "dequantize");
  CHECK_RULE_FAILS(TOPOS_OP_TRANSPOSE, &at, TOPOS_ERR_DTYPE, "transpose:", "q4_0");
  at.axis = 0;
  at.start = 0;
  at.length = 6;
  CHECK_RULE_FAILS(TOPOS_OP_PAD, &at, TOPOS_ERR_DTYPE, "pad:", "quantized");
  at = ot_attrs();
  at.axis = 0;
  at.length = 3;
  CHECK_OK(topos_op_infer(TOPOS_OP_BROADCAST_ALONG, in, &at, &out));
  at.axis = 2;
  CHECK_RULE_FAILS(TOPOS_OP_BROADCAST_ALONG, &at, TOPOS_ERR_DTYPE, "broadcast_along:", "q4_0");
  at = ot_attrs();
  at.rank = 3;
  at.shape[0] = 2;
  at.shape[1] = 2;
  at.shape[2] = 64;
  CHECK_OK(topos_op_infer(TOPOS_OP_RESHAPE, in, &at, &out));
  at.rank = 2;
  at.shape[0] = 8;
  at.shape[1] = 32;
  CHECK_RULE_FAILS(TOPOS_OP_RESHAPE, &at, TOPOS_ERR_DTYPE, "reshape:", "q4_0");
  topos_tensor_desc two[2] = {in[0], desc(TOPOS_I32, 1, 2, 0, 0)};
  CHECK_STATUS(topos_op_infer(TOPOS_OP_GATHER, two, NULL, &out), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("gather:");
}

TEST(ops_forward_checks_before_running) {
  ot_pool p = {{0}, 0};
  int64_t s23[] = {2, 3}, s32[] = {3, 2};
  double v[6] = {1, 2, 3, 4, 5, 6};
  topos_tensor *a = ot_make(&p, TOPOS_F32, 2, s23, v), *b = ot_make(&p, TOPOS_F32, 2, s32, v);
  CHECK(a && b);
  topos_tensor *out = (topos_tensor *)&p; /* must be cleared on failure */
  CHECK_STATUS(topos_add(a, b, &out), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("add: shapes [2,3] and [3,2] differ");
  CHECK(out == NULL);
  CHECK_STATUS(topos_matmul(a, a, &out), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("matmul: inner extents differ: [2,3] x [2,3]");
  CHECK_STATUS(topos_add(a, NULL, &out), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_op_forward((topos_op)TOPOS_OP_COUNT, &a, NULL, &out),
               TOPOS_ERR_INVALID_ARGUMENT);
  int32_t idx[2] = {0, 1};
  topos_tensor *i = ot_i32(&p, 2, idx);
  CHECK(i);
  CHECK_STATUS(topos_exp(i, &out), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("exp:");
  topos_tensor_desc d = topos_tensor_describe(a);
  CHECK(d.dtype == TOPOS_F32 && d.rank == 2 && d.shape[0] == 2 && d.shape[1] == 3);
  ot_free(&p);
}

TEST(ops_forward_quantized_outer_views_only) {
  int64_t s[] = {2, 64};
  topos_tensor *q = NULL, *r = NULL;
  CHECK_OK(topos_tensor_zeros(TOPOS_Q8_0, 2, s, &q));
  topos_op_attrs at;
  memset(&at, 0, sizeof at);
  at.axis = 0;
  at.start = 1;
  at.length = 1;
  CHECK_OK(topos_op_forward(TOPOS_OP_NARROW, &q, &at, &r));
  CHECK(topos_tensor_dtype(r) == TOPOS_Q8_0 && topos_tensor_shape(r)[0] == 1);
  CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(q));
  topos_tensor_release(r);
  r = NULL;
  CHECK_STATUS(topos_exp(q, &r), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("exp: operand [2,64] of dtype q8_0 is block-quantized");
  CHECK_STATUS(topos_op_forward(TOPOS_OP_TRANSPOSE, &q, &at, &r), TOPOS_ERR_DTYPE);
  CHECK(r == NULL);
  topos_tensor_release(q);
}

/* Every row of the table runs through topos_op_forward on a sample and
 * produces what topos_op_infer promised. A new op without a sample fails
 * here, so no row goes untested. */
static int sample(ot_pool *p, topos_op op, topos_tensor **in, topos_op_attrs *at) {
  int64_t s23[] = {2, 3}, s32[] = {3, 2}, s213[] = {2, 1, 3}, s223[] = {2, 2, 3};
  const double v[12] = {0.5, 1, 2, 3, 4, 5, -1, -2, 6, 7, 0, 1};
  int32_t idx[2] = {1, 0};
  *at = ot_attrs();
  in[0] = ot_make(p, TOPOS_F32, 2, s23, v);
  in[1] = ot_make(p, TOPOS_F32, 2, s23, v);
  in[2] = NULL;
  switch (op) {
    case TOPOS_OP_ADD: case TOPOS_OP_SUB: case TOPOS_OP_MUL: case TOPOS_OP_DIV:
    case TOPOS_OP_NEG: case TOPOS_OP_EXP: case TOPOS_OP_LN: case TOPOS_OP_SQRT:
    case TOPOS_OP_TANH: case TOPOS_OP_POW: case TOPOS_OP_MAXIMUM: case TOPOS_OP_RELU:
    case TOPOS_OP_STEP: case TOPOS_OP_TRANSPOSE: case TOPOS_OP_SUM:
      return 1;
    case TOPOS_OP_MATMUL:
      in[1] = ot_make(p, TOPOS_F32, 2, s32, v);
      return 1;
    case TOPOS_OP_QLINEAR: /* x [2,3] . w [2,3]^T */
      return 1;
    case TOPOS_OP_PERMUTE:
      at->rank = 2;
      at->order[0] = 1;
      return 1;
    case TOPOS_OP_RESHAPE:
      at->rank = 1;
      at->shape[0] = -1;
      return 1;
    case TOPOS_OP_NARROW: case TOPOS_OP_PAD:
      at->axis = 1;
      at->start = 1;
      at->length = op == TOPOS_OP_PAD ? 5 : 2;
      return 1;
    case TOPOS_OP_BROADCAST:
      in[0] = ot_make(p, TOPOS_F32, 0, NULL, v);
      at->rank = 2;
      at->shape[0] = 3;
      at->shape[1] = 4;
      return 1;
    case TOPOS_OP_BROADCAST_ALONG:
      at->axis = 2;
      at->length = 3;
      return 1;
    case TOPOS_OP_SUM_ALONG: case TOPOS_OP_LOG_SOFTMAX: case TOPOS_OP_LOG_SUM_EXP:
      at->axis = 1;
      return 1;
    case TOPOS_OP_UNFOLD:
      at->axis = 1;
      at->size = 2;
      at->step = 1;
      at->dilation = 1;
      return 1;
    case TOPOS_OP_FOLD:
      at->axis = 0;
      at->size = 3;
      at->step = 1;
      at->dilation = 1;
      at->length = 4; /* fold: (2, 3) windows over extent 4 */
      return 1;
    case TOPOS_OP_GATHER:
      in[1] = ot_i32(p, 2, idx);
      return 1;
    case TOPOS_OP_SCATTER:
      in[1] = ot_i32(p, 2, idx);
      at->length = 4;
      return 1;
    case TOPOS_OP_TOP_K:
      at->length = 2;
      return 1;
    case TOPOS_OP_QLINEAR_ID: /* x [2,1,3] through experts [2,2,3] by ids [2,1] */
      in[0] = ot_make(p, TOPOS_F32, 3, s213, v);
      in[1] = ot_make(p, TOPOS_F32, 3, s223, v);
      in[2] = ot_i32(p, 2, idx);
      {
        int64_t s21[] = {2, 1};
        topos_tensor *r = NULL;
        if (topos_tensor_reshape(in[2], 2, s21, &r) != TOPOS_OK) return 0;
        in[2] = ot_keep(p, r);
      }
      return 1;
    case TOPOS_OP_SSM_SCAN: /* state [1,2,3], xa [1,2,4], bc [1,2,1,1]: at most v's 12 values */
      {
        int64_t ss[] = {1, 2, 3}, xs[] = {1, 2, 4}, bs[] = {1, 2, 1, 1};
        in[0] = ot_make(p, TOPOS_F32, 3, ss, v);
        in[1] = ot_make(p, TOPOS_F32, 3, xs, v);
        in[2] = ot_make(p, TOPOS_F32, 4, bs, v);
      }
      return 1;
    case TOPOS_OP_DELTA_SCAN: /* state [1,2,3], vab [1,2,5], qk [1,2,1,1]: at most v's 12 values */
      {
        int64_t ss[] = {1, 2, 3}, vs[] = {1, 2, 5}, qs[] = {1, 2, 1, 1};
        in[0] = ot_make(p, TOPOS_F32, 3, ss, v);
        in[1] = ot_make(p, TOPOS_F32, 3, vs, v);
        in[2] = ot_make(p, TOPOS_F32, 4, qs, v);
      }
      return 1;
    default:
      return 0;
  }
}

TEST(ops_every_row_runs_and_matches_its_rule) {
  ot_pool p = {{0}, 0};
  for (int op = 0; op < TOPOS_OP_COUNT; ++op) {
    topos_tensor *in[3];
    topos_op_attrs at;
    CHECK_MSG(sample(&p, (topos_op)op, in, &at), "no sample for op %s", topos_op_name((topos_op)op));
    topos_tensor_desc d[3] = {topos_tensor_describe(in[0]), topos_tensor_describe(in[1])}, want;
    if (in[2]) d[2] = topos_tensor_describe(in[2]);
    CHECK_OK(topos_op_infer((topos_op)op, d, &at, &want));
    topos_tensor *out = NULL;
    if (topos_op_forward((topos_op)op, in, &at, &out) == TOPOS_OK) ot_keep(&p, out);
    else out = NULL;
    CHECK_MSG(out, "%s: %s", topos_op_name((topos_op)op), topos_last_error());
    topos_tensor_desc got = topos_tensor_describe(out);
    CHECK(memcmp(&got, &want, sizeof got) == 0);
    CHECK_EQ_INT(topos_op_is_view((topos_op)op),
                 topos_tensor_storage_id(out) == topos_tensor_storage_id(in[0]));
  }
  ot_free(&p);
}
