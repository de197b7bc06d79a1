/* The mixture-of-experts ops: top_k's order (ties, NaN, signed zeros, both
 * selection routes), gather and scatter with batch axes, and qlinear_id
 * against qlinear row by row — in both postures, for float and quantized
 * experts — with its gradients against sums written out here. */
#include "ops_util.h"
#include "topos/backend.h"
#include "topos/graph.h"
#include "topos/quant.h"

static topos_tensor *i32_tensor(int rank, const int64_t *shape, const int32_t *v) {
  topos_tensor *t = NULL;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  if (topos_tensor_from_data(TOPOS_I32, rank, shape, v, (size_t)n * 4, &t) != TOPOS_OK) return NULL;
  return t;
}

static int read_i32(const topos_tensor *t, int32_t *out, int64_t n) {
  if (topos_tensor_dtype(t) != TOPOS_I32 || topos_tensor_volume(t) != n) return 0;
  memcpy(out, topos_tensor_data(t), (size_t)n * 4);
  return 1;
}

TEST(ops_top_k_orders_largest_first_ties_by_position) {
  /* lane 0: a tie (3 at 1 and 4), -0 / +0 tie, NaN last; lane 1: all equal */
  const float v[12] = {1, 3, -0.0f, NAN, 3, 0.0f, 2, 2, 2, 2, 2, 2};
  int64_t s[2] = {2, 6};
  topos_tensor *a = NULL, *r = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, s, v, &a));
  for (int64_t k = 1; k <= 6; ++k) {
    CHECK_OK(topos_top_k(a, k, &r));
    int32_t got[12];
    CHECK(read_i32(r, got, 2 * k));
    const int32_t want0[6] = {1, 4, 0, 2, 5, 3}, want1[6] = {0, 1, 2, 3, 4, 5};
    for (int64_t j = 0; j < k; ++j) {
      CHECK_EQ_INT(got[j], want0[j]);
      CHECK_EQ_INT(got[k + j], want1[j]);
    }
    topos_tensor_release(r);
    r = NULL;
  }
  CHECK_STATUS(topos_top_k(a, 0, &r), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("top_k: k = 0 outside 1..6");
  CHECK_STATUS(topos_top_k(a, 7, &r), TOPOS_ERR_SHAPE);
  topos_tensor_release(a);
}

/* k <= 16 keeps a sorted list, larger k sorts the lane: the same order */
TEST(ops_top_k_routes_agree_and_strided_lanes) {
  enum { N = 40 };
  float v[3 * N];
  for (int i = 0; i < 3 * N; ++i) v[i] = (float)((i * 37) % 11) - 5.0f; /* many ties */
  v[7] = NAN;
  int64_t s[2] = {3, N};
  topos_tensor *a = NULL, *t = NULL, *small = NULL, *large = NULL, *bt = NULL, *bs = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, s, v, &a));
  CHECK_OK(topos_top_k(a, 16, &small));
  CHECK_OK(topos_top_k(a, 17, &large));
  int32_t p16[3 * 16], p17[3 * 17];
  CHECK(read_i32(small, p16, 3 * 16));
  CHECK(read_i32(large, p17, 3 * 17));
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 16; ++j) CHECK_EQ_INT(p16[r * 16 + j], p17[r * 17 + j]);
  /* every kept value ranks: non-increasing, equal values by position */
  for (int r = 0; r < 3; ++r)
    for (int j = 1; j < 17; ++j) {
      float x = v[r * N + p17[r * 17 + j - 1]], y = v[r * N + p17[r * 17 + j]];
      CHECK(!isnan(x) && !isnan(y));
      CHECK(x > y || (x == y && p17[r * 17 + j - 1] < p17[r * 17 + j]));
    }
  /* a transposed view's lanes are read through strides; bf16 widens exactly */
  CHECK_OK(topos_tensor_transpose(a, &t));
  topos_tensor *tt = NULL, *r1 = NULL, *r2 = NULL;
  CHECK_OK(topos_tensor_contiguous(t, 1, &tt));
  CHECK_OK(topos_top_k(t, 2, &r1));
  CHECK_OK(topos_top_k(tt, 2, &r2));
  CHECK(topos_tensor_bits_equal(r1, r2));
  CHECK_OK(topos_tensor_convert(a, TOPOS_BF16, &bt));
  CHECK_OK(topos_top_k(bt, 16, &bs));
  CHECK(topos_tensor_bits_equal(bs, small)); /* small integers: exact in bf16 */
  topos_tensor *rs[] = {a, t, small, large, bt, bs, tt, r1, r2};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
}

TEST(ops_gather_scatter_with_batch_axes) {
  /* table [2, 3, 2]: out[b, i, :] = table[b, idx[b, i], :] */
  float tv[12];
  for (int i = 0; i < 12; ++i) tv[i] = (float)i;
  int64_t ts[3] = {2, 3, 2}, is[2] = {2, 4};
  const int32_t iv[8] = {2, 0, 2, 1, 1, 1, 0, 2};
  topos_tensor *table = NULL, *idx = i32_tensor(2, is, iv), *g = NULL, *sc = NULL;
  CHECK(idx != NULL);
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, ts, tv, &table));
  CHECK_OK(topos_gather(table, idx, &g));
  CHECK(topos_tensor_rank(g) == 3 && topos_tensor_shape(g)[1] == 4 && topos_tensor_shape(g)[2] == 2);
  float gv[16];
  CHECK_OK(topos_tensor_read_f32(g, gv, 16));
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 2; ++c) CHECK_EQ_INT((int)gv[(b * 4 + i) * 2 + c], (b * 3 + iv[b * 4 + i]) * 2 + c);
  /* scatter is gather's adjoint: repeats accumulate in their batch */
  CHECK_OK(topos_scatter(g, idx, 3, &sc));
  float sv[12];
  CHECK_OK(topos_tensor_read_f32(sc, sv, 12));
  for (int b = 0; b < 2; ++b)
    for (int v = 0; v < 3; ++v) {
      int count = 0;
      for (int i = 0; i < 4; ++i) count += iv[b * 4 + i] == v;
      for (int c = 0; c < 2; ++c) CHECK_EQ_INT((int)sv[(b * 3 + v) * 2 + c], count * ((b * 3 + v) * 2 + c));
    }
  /* the index axis last: each element its own index (a router's weights) */
  int64_t ps[2] = {2, 3}, ks[2] = {2, 2};
  const int32_t kv[4] = {2, 0, 1, 1};
  topos_tensor *probs = NULL, *ki = i32_tensor(2, ks, kv), *picked = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, ps, tv, &probs));
  CHECK_OK(topos_gather(probs, ki, &picked));
  float pv[4];
  CHECK_OK(topos_tensor_read_f32(picked, pv, 4));
  CHECK(pv[0] == 2 && pv[1] == 0 && pv[2] == 4 && pv[3] == 4);
  /* errors: a batch extent that differs, an index out of its batch's range */
  int64_t bad_s[2] = {3, 4};
  int32_t bad_v[12] = {0};
  topos_tensor *bad = i32_tensor(2, bad_s, bad_v), *z = NULL;
  CHECK_STATUS(topos_gather(table, bad, &z), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("differ at batch axis 0");
  const int32_t far[4] = {2, 0, 3, 1};
  topos_tensor *farx = i32_tensor(2, ks, far);
  CHECK_STATUS(topos_gather(probs, farx, &z), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("index 3 at position [1,0] outside [0, 3)");
  topos_tensor *rs[] = {table, idx, g, sc, probs, ki, picked, bad, farx};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
}

/* qlinear_id's rows are qlinear's rows, bit for bit, on the posture's path */
static void check_id_rows(topos_dtype wtype, int shared_x, topos_numerics numerics, int T) {
  enum { TMAX = 5, K = 3, E = 4, N = 8, KD = 256 };
  int S = shared_x ? 1 : K;
  static float xv[TMAX * K * KD], wv[E * N * KD];
  for (int i = 0; i < T * S * KD; ++i) xv[i] = (float)sin(0.37 * i + 0.1);
  for (int i = 0; i < E * N * KD; ++i) wv[i] = (float)cos(0.11 * i) * 0.5f;
  const int32_t iv[TMAX * K] = {3, 0, 1, 2, 2, 0, 3, 1, 0, 1, 0, 2, 2, 3, 1};
  int64_t xs[3] = {T, S, KD}, ws[3] = {E, N, KD}, is[2] = {T, K};
  topos_tensor *x = NULL, *wf = NULL, *w = NULL, *ids = i32_tensor(2, is, iv), *y = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, xs, xv, &x));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, ws, wv, &wf));
  if (wtype == TOPOS_F32) w = topos_tensor_retain(wf);
  else if (topos_dtype_is_quantized(wtype)) CHECK_OK(topos_quantize(wf, wtype, &w));
  else CHECK_OK(topos_tensor_convert(wf, wtype, &w));
  topos_numerics saved = topos_numerics_enter(numerics);
  CHECK_OK(topos_qlinear_id(x, w, ids, &y));
  static float yv[TMAX * K * N];
  CHECK_OK(topos_tensor_read_f32(y, yv, T * K * N));
  size_t eb = 0;
  CHECK_OK(topos_dtype_bytes(wtype, (int64_t)N * KD, &eb));
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j) {
      int64_t rs[2] = {1, KD}, es[2] = {N, KD};
      topos_tensor *xr = NULL, *we = NULL, *yr = NULL;
      CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, rs, xv + (t * S + (shared_x ? 0 : j)) * KD, &xr));
      CHECK_OK(topos_tensor_from_data(wtype, 2, es, (const char *)topos_tensor_data(w) + (size_t)iv[t * K + j] * eb,
                                      eb, &we));
      CHECK_OK(topos_qlinear(xr, we, &yr));
      float want[N];
      CHECK_OK(topos_tensor_read_f32(yr, want, N));
      for (int c = 0; c < N; ++c) CHECK_BITS_F32(yv[(t * K + j) * N + c], want[c]);
      topos_tensor_release(xr);
      topos_tensor_release(we);
      topos_tensor_release(yr);
    }
  topos_numerics_restore(saved);
  topos_tensor *rs[] = {x, wf, w, ids, y};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
}

TEST(ops_qlinear_id_rows_are_qlinear_rows) {
  const topos_dtype types[] = {TOPOS_F32, TOPOS_F16, TOPOS_Q8_0, TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_MXFP4};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i)
    for (int shared = 0; shared < 2; ++shared) {
      for (int T = 1; T <= 5; T += 4) { /* one token (decoding: one dispatch when shared), five */
        check_id_rows(types[i], shared, TOPOS_NUMERICS_EXACT, T);
        check_id_rows(types[i], shared, TOPOS_NUMERICS_FAST, T);
      }
    }
}

TEST(ops_qlinear_id_refuses_bad_operands) {
  int64_t xs[3] = {2, 1, 32}, ws[3] = {3, 4, 32}, is[2] = {2, 2}, x2[3] = {2, 3, 32};
  float zero[3 * 4 * 32] = {0};
  const int32_t iv[4] = {0, 2, 1, 3};
  topos_tensor *x = NULL, *w = NULL, *xbad = NULL, *ids = i32_tensor(2, is, iv), *y = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, xs, zero, &x));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, ws, zero, &w));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, x2, zero, &xbad));
  CHECK_STATUS(topos_qlinear_id(x, w, ids, &y), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("expert 3 at ids[1, 1] outside [0, 3)");
  CHECK_STATUS(topos_qlinear_id(xbad, w, ids, &y), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("x must be [T, 1 or K, k]");
  CHECK_STATUS(topos_qlinear_id(x, w, x, &y), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("ids must be i32");
  CHECK(y == NULL);
  topos_tensor *rs[] = {x, w, xbad, ids};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
}

/* loss = sum(qlinear_id(x, w, ids) * C): dx and dw written out as sums */
TEST(ops_qlinear_id_gradients_are_the_slot_sums) {
  enum { T = 3, K = 2, E = 3, N = 4, KD = 5 };
  for (int shared = 0; shared < 2; ++shared) {
    int S = shared ? 1 : K;
    float xv[T * K * KD], wv[E * N * KD], cv[T * K * N];
    for (int i = 0; i < T * S * KD; ++i) xv[i] = (float)sin(1.3 * i);
    for (int i = 0; i < E * N * KD; ++i) wv[i] = (float)cos(0.7 * i);
    for (int i = 0; i < T * K * N; ++i) cv[i] = (float)sin(0.3 * i + 1);
    const int32_t iv[T * K] = {2, 0, 0, 2, 1, 2}; /* expert 0 twice, 2 three times */
    int64_t xs[3] = {T, S, KD}, ws[3] = {E, N, KD}, is[2] = {T, K}, cs[3] = {T, K, N};
    topos_tensor *x0 = NULL, *w0 = NULL, *c0 = NULL, *ids = i32_tensor(2, is, iv);
    CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, xs, xv, &x0));
    CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, ws, wv, &w0));
    CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 3, cs, cv, &c0));
    topos_tape *tape = NULL;
    CHECK_OK(topos_tape_new(&tape));
    topos_sym p[2] = {topos_tape_parameter(tape, x0, NULL), topos_tape_parameter(tape, w0, NULL)}, g[2];
    topos_sym y = topos_tape_qlinear_id(tape, p[0], p[1], topos_tape_constant(tape, ids));
    topos_sym loss = topos_tape_sum(tape, topos_tape_mul(tape, y, topos_tape_constant(tape, c0)));
    CHECK_OK(topos_tape_differentiate(tape, loss, 2, p, g));
    topos_network *net = NULL;
    topos_params *params = NULL;
    topos_run *run = NULL;
    topos_field *field = NULL;
    CHECK_OK(topos_tape_seal(&tape, &net));
    CHECK_OK(topos_params_from_network(net, &params));
    CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
    CHECK_OK(topos_run_backward(run, loss, &field));
    topos_tensor *dx = NULL, *dw = NULL, *rx = NULL, *rw = NULL;
    CHECK_OK(topos_field_get(field, p[0], &dx));
    CHECK_OK(topos_field_get(field, p[1], &dw));
    CHECK_OK(topos_run_read(run, g[0], &rx)); /* the recorded route: the same bits */
    CHECK_OK(topos_run_read(run, g[1], &rw));
    CHECK(topos_tensor_bits_equal(dx, rx) && topos_tensor_bits_equal(dw, rw));
    float gx[T * K * KD], gw[E * N * KD];
    CHECK_OK(topos_tensor_read_f32(dx, gx, T * S * KD));
    CHECK_OK(topos_tensor_read_f32(dw, gw, E * N * KD));
    for (int t = 0; t < T; ++t)
      for (int s = 0; s < S; ++s)
        for (int q = 0; q < KD; ++q) {
          double want = 0;
          for (int j = 0; j < K; ++j) {
            if (!shared && j != s) continue;
            for (int c = 0; c < N; ++c) want += (double)cv[(t * K + j) * N + c] * wv[(iv[t * K + j] * N + c) * KD + q];
          }
          CHECK_NEAR(gx[(t * S + s) * KD + q], want, 1e-5 * (1 + fabs(want)));
        }
    for (int e = 0; e < E; ++e)
      for (int c = 0; c < N; ++c)
        for (int q = 0; q < KD; ++q) {
          double want = 0;
          for (int t = 0; t < T; ++t)
            for (int j = 0; j < K; ++j)
              if (iv[t * K + j] == e) want += (double)cv[(t * K + j) * N + c] * xv[(t * S + (shared ? 0 : j)) * KD + q];
          CHECK_NEAR(gw[(e * N + c) * KD + q], want, 1e-5 * (1 + fabs(want)));
        }
    topos_tensor *rs[] = {x0, w0, c0, ids, dx, dw, rx, rw};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
    topos_field_free(field);
    topos_run_free(run);
    topos_params_free(params);
    topos_network_free(net);
  }
}
