/* ssm_scan, Mamba's selective scan, and delta_scan, the gated delta rule:
 * their bits against the recurrences written out here token by token (for
 * ssm_scan per-head (Mamba-2) and per-entry (Mamba-1) decays and grouped B /
 * C; for delta_scan key heads shared by value heads, whole blocks of 16
 * columns and remainders); a sequence scanned in pieces equals one scan;
 * the bits at one and three threads; refused operands and gradients. */
#include "ops_util.h"
#include "topos/graph.h"

typedef struct scan_case {
  int64_t T, N, H, P, R, G;
} scan_case;

static float wave(int64_t i, double f, double phase) { return (float)sin(f * (double)i + phase); }

/* Operands of the case: state [N, H, P], xa [T, H, P + R] (decays in (0, 1)), bc [T, 2, G, N] */
static void scan_operands(const scan_case *c, float *s, float *xa, float *bc) {
  for (int64_t i = 0; i < c->N * c->H * c->P; ++i) s[i] = wave(i, 0.91, 0.3);
  for (int64_t t = 0; t < c->T; ++t)
    for (int64_t h = 0; h < c->H; ++h)
      for (int64_t k = 0; k < c->P + c->R; ++k) {
        const int64_t i = (t * c->H + h) * (c->P + c->R) + k;
        xa[i] = k < c->P ? wave(i, 1.37, 0.1) : (float)exp(-0.5 - 0.4 * (1.0 + wave(i, 0.53, 0.7)));
      }
  for (int64_t i = 0; i < c->T * 2 * c->G * c->N; ++i) bc[i] = wave(i, 0.77, 1.1);
}

/* The recurrence token by token, head by head, channel by channel */
static void scan_plain(const scan_case *c, const float *s0, const float *xa, const float *bc, float *out) {
  const int64_t T = c->T, N = c->N, H = c->H, P = c->P, R = c->R, G = c->G;
  float *s = out + T * H * P;
  memcpy(s, s0, (size_t)(N * H * P) * sizeof *s);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      for (int64_t p = 0; p < P; ++p) {
        const float u = xa[(t * H + h) * (P + R) + p];
        float y = 0;
        for (int64_t n = 0; n < N; ++n) {
          const float a = xa[(t * H + h) * (P + R) + P + (R == 1 ? 0 : n)];
          float *e = &s[(n * H + h) * P + p];
          *e = *e * a + bc[((t * 2 + 0) * G + g) * N + n] * u;
          const float term = bc[((t * 2 + 1) * G + g) * N + n] * *e;
          y = n == 0 ? term : y + term;
        }
        out[(t * H + h) * P + p] = y;
      }
    }
}

static topos_tensor *f32_tensor(int rank, const int64_t *shape, const float *v) {
  topos_tensor *t = NULL;
  return topos_tensor_from_f32(TOPOS_F32, rank, shape, v, &t) == TOPOS_OK ? t : NULL;
}

/* got is want bit for bit, and every value a finite nonzero (the case
 * exercises every output) */
static void check_bits(const float *want, const float *got, int64_t n, const char *what, size_t k) {
  CHECK_MSG(memcmp(want, got, (size_t)n * 4) == 0, "case %zu differs from the %s", k, what);
  int finite = 1;
  for (int64_t i = 0; i < n; ++i) finite &= isfinite(got[i]) && got[i] != 0.0f;
  CHECK(finite);
}

typedef topos_status (*scan_op)(topos_tensor *state, topos_tensor *a, topos_tensor *b, topos_tensor **out);

/* Either scan over tokens [t0, t1) from state s [N, H, P]: a [T, H, W] and
 * b [T, 2, G, N] of the whole sequence -> out [t1 - t0 + N, H, P] */
static topos_status op_range(scan_op op, const int64_t *ss, int64_t W, int64_t G, const float *s, const float *a,
                             const float *b, int64_t t0, int64_t t1, float *out) {
  const int64_t N = ss[0], H = ss[1], P = ss[2], T = t1 - t0;
  const int64_t as[3] = {T, H, W}, bs[4] = {T, 2, G, N};
  topos_tensor *ts = f32_tensor(3, ss, s), *ta = f32_tensor(3, as, a + t0 * H * W);
  topos_tensor *tb = f32_tensor(4, bs, b + t0 * 2 * G * N), *y = NULL;
  topos_status st = ts && ta && tb ? op(ts, ta, tb, &y) : TOPOS_ERR_OUT_OF_MEMORY;
  if (st == TOPOS_OK) st = topos_tensor_read_f32(y, out, (T + N) * H * P);
  topos_tensor *all[] = {ts, ta, tb, y};
  for (int i = 0; i < 4; ++i) topos_tensor_release(all[i]);
  return st;
}

static topos_status scan_range(const scan_case *c, const float *s, const float *xa, const float *bc, int64_t t0,
                               int64_t t1, float *out) {
  const int64_t ss[3] = {c->N, c->H, c->P};
  return op_range(topos_ssm_scan, ss, c->P + c->R, c->G, s, xa, bc, t0, t1, out);
}

/* Tokens in pieces of 1, 2, 3 ..., each piece from the last one's state:
 * every output row and the final state are the whole scan's bits; and the
 * whole scan's bits at three threads are its bits at one. */
static void check_pieces(scan_op op, const int64_t *ss, int64_t W, int64_t G, int64_t T, const float *s,
                         const float *a, const float *b) {
  const int before = topos_threads();
  const int64_t HP = ss[1] * ss[2], sv = ss[0] * HP, ov = (T + ss[0]) * HP;
  float *whole = malloc((size_t)ov * 4), *piece = malloc((size_t)ov * 4), *joined = malloc((size_t)ov * 4);
  float *state = malloc((size_t)sv * 4);
  CHECK(whole && piece && joined && state);
  CHECK_OK(topos_set_threads(1));
  CHECK_OK(op_range(op, ss, W, G, s, a, b, 0, T, whole));
  memcpy(state, s, (size_t)sv * 4);
  for (int64_t t0 = 0, len = 1; t0 < T; t0 += len, ++len) {
    const int64_t t1 = t0 + len < T ? t0 + len : T;
    CHECK_OK(op_range(op, ss, W, G, state, a, b, t0, t1, piece));
    memcpy(joined + t0 * HP, piece, (size_t)((t1 - t0) * HP) * 4);
    memcpy(state, piece + (t1 - t0) * HP, (size_t)sv * 4);
  }
  memcpy(joined + T * HP, state, (size_t)sv * 4);
  CHECK(memcmp(whole, joined, (size_t)ov * 4) == 0);
  CHECK_OK(topos_set_threads(3));
  CHECK_OK(op_range(op, ss, W, G, s, a, b, 0, T, piece));
  CHECK(memcmp(whole, piece, (size_t)ov * 4) == 0);
  CHECK_OK(topos_set_threads(before));
  free(whole), free(piece), free(joined), free(state);
}

static const scan_case cases[] = {
    {5, 4, 6, 3, 1, 2},  /* Mamba-2: a decay per head, 2 groups of 3 heads */
    {4, 3, 4, 1, 3, 1},  /* Mamba-1: a decay per state entry, channels as heads */
    {1, 8, 4, 16, 1, 4}, /* one token (decoding), a group per head */
    {7, 2, 1, 5, 1, 1},
};

TEST(ops_ssm_scan_is_the_recurrence_bit_for_bit) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const scan_case *c = &cases[k];
    const int64_t sv = c->N * c->H * c->P, xv = c->T * c->H * (c->P + c->R), bv = c->T * 2 * c->G * c->N;
    const int64_t ov = (c->T + c->N) * c->H * c->P;
    float *s = malloc((size_t)sv * 4), *xa = malloc((size_t)xv * 4), *bc = malloc((size_t)bv * 4);
    float *want = malloc((size_t)ov * 4), *got = malloc((size_t)ov * 4);
    CHECK(s && xa && bc && want && got);
    scan_operands(c, s, xa, bc);
    scan_plain(c, s, xa, bc, want);
    CHECK_OK(scan_range(c, s, xa, bc, 0, c->T, got));
    check_bits(want, got, ov, "recurrence", k);
    free(s), free(xa), free(bc), free(want), free(got);
  }
}

TEST(ops_ssm_scan_in_pieces_and_threads_gives_the_same_bits) {
  const scan_case c = {40, 16, 12, 64, 1, 3}; /* a head is 40 * 16 * 64 terms: 6 ranges at 3 threads */
  const int64_t ss[3] = {c.N, c.H, c.P};
  float *s = malloc((size_t)(c.N * c.H * c.P) * 4), *xa = malloc((size_t)(c.T * c.H * (c.P + 1)) * 4);
  float *bc = malloc((size_t)(c.T * 2 * c.G * c.N) * 4);
  CHECK(s && xa && bc);
  scan_operands(&c, s, xa, bc);
  check_pieces(topos_ssm_scan, ss, c.P + 1, c.G, c.T, s, xa, bc);
  free(s), free(xa), free(bc);
}

TEST(ops_ssm_scan_refuses_bad_operands_and_gradients) {
  const float v[256] = {0}; /* the largest operand: 5 x 4 x 6 */
  const int64_t s[3] = {2, 4, 3}, x[3] = {5, 4, 4}, xbad[3] = {5, 4, 6}, b[4] = {5, 2, 2, 2}, b3[4] = {5, 2, 3, 2};
  const int64_t bshort[4] = {4, 2, 2, 2};
  topos_tensor *ts = f32_tensor(3, s, v), *tx = f32_tensor(3, x, v), *txb = f32_tensor(3, xbad, v);
  topos_tensor *tb = f32_tensor(4, b, v), *tb3 = f32_tensor(4, b3, v), *tbs = f32_tensor(4, bshort, v), *y = NULL;
  topos_tensor *h16 = NULL;
  CHECK_OK(topos_tensor_zeros(TOPOS_F16, 3, s, &h16));
  CHECK_OK(topos_ssm_scan(ts, tx, tb, &y)); /* [5 + 2, 4, 3] */
  CHECK(topos_tensor_rank(y) == 3 && topos_tensor_shape(y)[0] == 7 && topos_tensor_shape(y)[2] == 3);
  topos_tensor_release(y);
  y = NULL;
  CHECK_STATUS(topos_ssm_scan(ts, txb, tb, &y), TOPOS_ERR_SHAPE); /* R = 3: neither 1 nor N */
  CHECK_STATUS(topos_ssm_scan(ts, tx, tb3, &y), TOPOS_ERR_SHAPE); /* 4 heads in 3 groups */
  CHECK(strstr(topos_last_error(), "groups") != NULL);
  CHECK_STATUS(topos_ssm_scan(ts, tx, tbs, &y), TOPOS_ERR_SHAPE); /* 4 tokens of B / C for 5 */
  CHECK_STATUS(topos_ssm_scan(h16, tx, tb, &y), TOPOS_ERR_DTYPE);
  CHECK(y == NULL);
  /* the gradient through it is refused with a message, not wrong numbers */
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym p = topos_tape_parameter(tape, tx, NULL), g;
  topos_sym out = topos_tape_ssm_scan(tape, topos_tape_constant(tape, ts), p, topos_tape_constant(tape, tb));
  CHECK_STATUS(topos_tape_differentiate(tape, topos_tape_sum(tape, out), 1, &p, &g), TOPOS_UNSUPPORTED);
  CHECK(strstr(topos_last_error(), "ssm_scan") != NULL);
  topos_tape_free(tape);
  topos_tensor *all[] = {ts, tx, txb, tb, tb3, tbs, h16};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
}

/* ---- delta_scan, the gated delta rule */

typedef struct delta_case {
  int64_t T, K, H, V, G;
  int per_entry; /* a decay per key entry (Kimi Delta Attention's), else one per head */
} delta_case;

/* vab's width: the values, the decays, beta */
static int64_t delta_width(const delta_case *c) { return c->V + (c->per_entry ? c->K : 1) + 1; }

/* state [K, H, V], vab [T, H, V + R + 1] (decays in (0, 1), beta in (0, 1)), qk [T, 2, G, K] */
static void delta_operands(const delta_case *c, float *s, float *vab, float *qk) {
  const int64_t W = delta_width(c);
  for (int64_t i = 0; i < c->K * c->H * c->V; ++i) s[i] = 0.5f * wave(i, 0.83, 0.2);
  for (int64_t i = 0; i < c->T * c->H * W; ++i) {
    const int64_t k = i % W;
    vab[i] = k < c->V ? wave(i, 1.21, 0.4) : (float)(0.55 + 0.4 * wave(i, 0.37, 0.9 + (double)k));
  }
  for (int64_t i = 0; i < c->T * 2 * c->G * c->K; ++i) qk[i] = 0.4f * wave(i, 0.67, 1.3);
}

/* The rule token by token, head by head, column by column */
static void delta_plain(const delta_case *c, const float *s0, const float *vab, const float *qk, float *out) {
  const int64_t T = c->T, K = c->K, H = c->H, V = c->V, G = c->G, W = delta_width(c);
  float *S = out + T * H * V;
  memcpy(S, s0, (size_t)(K * H * V) * sizeof *S);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      const float *v = vab + (t * H + h) * W, *q = qk + (t * 2 * G + g) * K, *k = q + G * K;
      for (int64_t j = 0; j < V; ++j) {
        float kv = 0;
        for (int64_t i = 0; i < K; ++i) {
          float *e = &S[(i * H + h) * V + j];
          *e = *e * v[V + (c->per_entry ? i : 0)];
          kv = i == 0 ? k[i] * *e : kv + k[i] * *e;
        }
        const float d = (v[j] - kv) * v[W - 1];
        float y = 0;
        for (int64_t i = 0; i < K; ++i) {
          float *e = &S[(i * H + h) * V + j];
          *e = *e + k[i] * d;
          y = i == 0 ? q[i] * *e : y + q[i] * *e;
        }
        out[(t * H + h) * V + j] = y;
      }
    }
}

static topos_status delta_range(const delta_case *c, const float *s, const float *vab, const float *qk, int64_t t0,
                                int64_t t1, float *out) {
  const int64_t ss[3] = {c->K, c->H, c->V};
  return op_range(topos_delta_scan, ss, delta_width(c), c->G, s, vab, qk, t0, t1, out);
}

TEST(ops_delta_scan_is_the_rule_bit_for_bit) {
  /* columns in whole blocks of 16 and a remainder; key heads shared by 2 value heads; one token;
   * a decay per key entry */
  const delta_case cases[] = {{5, 8, 4, 20, 2, 0},  {3, 16, 2, 16, 2, 0}, {1, 4, 6, 5, 3, 0}, {6, 32, 2, 48, 1, 0},
                              {5, 8, 4, 20, 4, 1},  {4, 16, 2, 32, 2, 1}, {1, 6, 3, 5, 3, 1}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; ++n) {
    const delta_case *c = &cases[n];
    const int64_t sv = c->K * c->H * c->V, ov = (c->T + c->K) * c->H * c->V;
    float *s = malloc((size_t)sv * 4), *vab = malloc((size_t)(c->T * c->H * delta_width(c)) * 4);
    float *qk = malloc((size_t)(c->T * 2 * c->G * c->K) * 4), *want = malloc((size_t)ov * 4);
    float *got = malloc((size_t)ov * 4);
    CHECK(s && vab && qk && want && got);
    delta_operands(c, s, vab, qk);
    delta_plain(c, s, vab, qk, want);
    CHECK_OK(delta_range(c, s, vab, qk, 0, c->T, got));
    check_bits(want, got, ov, "rule", n);
    free(s), free(vab), free(qk), free(want), free(got);
  }
}

TEST(ops_delta_scan_in_pieces_and_threads_gives_the_same_bits) {
  for (int per_entry = 0; per_entry < 2; ++per_entry) {
    const delta_case c = {24, 64, 8, 64, 4, per_entry}; /* a head's block: 24 * 64 * 16 terms, 32 items */
    const int64_t ss[3] = {c.K, c.H, c.V};
    float *s = malloc((size_t)(c.K * c.H * c.V) * 4), *vab = malloc((size_t)(c.T * c.H * delta_width(&c)) * 4);
    float *qk = malloc((size_t)(c.T * 2 * c.G * c.K) * 4);
    CHECK(s && vab && qk);
    delta_operands(&c, s, vab, qk);
    check_pieces(topos_delta_scan, ss, delta_width(&c), c.G, c.T, s, vab, qk);
    free(s), free(vab), free(qk);
  }
}

TEST(ops_delta_scan_refuses_bad_operands_and_gradients) {
  const float v[256] = {0}; /* the largest operand: 3 x 4 x 7 */
  const int64_t s[3] = {2, 4, 5}, x[3] = {3, 4, 7}, xbad[3] = {3, 4, 6}, q[4] = {3, 2, 2, 2}, q3[4] = {3, 2, 3, 2};
  topos_tensor *ts = f32_tensor(3, s, v), *tx = f32_tensor(3, x, v), *txb = f32_tensor(3, xbad, v);
  topos_tensor *tq = f32_tensor(4, q, v), *tq3 = f32_tensor(4, q3, v), *y = NULL;
  CHECK_OK(topos_delta_scan(ts, tx, tq, &y)); /* [3 + 2, 4, 5] */
  CHECK(topos_tensor_rank(y) == 3 && topos_tensor_shape(y)[0] == 5 && topos_tensor_shape(y)[2] == 5);
  topos_tensor_release(y);
  y = NULL;
  CHECK_STATUS(topos_delta_scan(ts, txb, tq, &y), TOPOS_ERR_SHAPE); /* V + 1 */
  const int64_t xk[3] = {3, 4, 8}, xk2[3] = {3, 4, 9};
  topos_tensor *txk = f32_tensor(3, xk, v), *txk2 = f32_tensor(3, xk2, v);
  CHECK_OK(topos_delta_scan(ts, txk, tq, &y)); /* V + K + 1: a decay per key entry */
  topos_tensor_release(y);
  y = NULL;
  CHECK_STATUS(topos_delta_scan(ts, txk2, tq, &y), TOPOS_ERR_SHAPE); /* V + K + 2 */
  topos_tensor_release(txk), topos_tensor_release(txk2);
  CHECK_STATUS(topos_delta_scan(ts, tx, tq3, &y), TOPOS_ERR_SHAPE); /* 4 heads in 3 groups */
  CHECK(strstr(topos_last_error(), "groups") != NULL);
  CHECK(y == NULL);
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym p = topos_tape_parameter(tape, tx, NULL), g;
  topos_sym out = topos_tape_delta_scan(tape, topos_tape_constant(tape, ts), p, topos_tape_constant(tape, tq));
  CHECK_STATUS(topos_tape_differentiate(tape, topos_tape_sum(tape, out), 1, &p, &g), TOPOS_UNSUPPORTED);
  CHECK(strstr(topos_last_error(), "delta_scan") != NULL);
  topos_tape_free(tape);
  topos_tensor *all[] = {ts, tx, txb, tq, tq3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
}
