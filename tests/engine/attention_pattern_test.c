/* The attention pattern (patterns_attention.c): masked softmax attention,
 * without and with a cached key segment, as one step. Exact: the
 * interpreter's bits at 1, 2 and 3 threads, with causal masks, a fully
 * visible mask, holes in the mask, a row that sees nothing (NaN) and a NaN
 * query; and with gemma2's soft-capped scores (cap tanh(s / cap) between
 * the products and the masks). Fast: the same bits at every thread count,
 * and within a stated bound of Exact — the skipped keys included. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/platform.h"
#include "engine/attention_gemm.h"
#include "fusion_util.h"

/* m = T query rows (a causal chunk); the cached segment is 70 keys, or 2100
 * (then the blocks shrink to 8 rows: at_block_rows) */
enum { AP_B = 2, AP_M = 150, AP_D = 8, AP_T = 150, AP_DV = 5 };

typedef struct ap_case {
  int cached;
  int64_t S;
  int mask_kind; /* 0 causal, 1 all visible, 2 causal with holes and special rows */
  float cap;     /* if > 0, scores soft-capped as gemma2's: cap tanh(s / cap) */
} ap_case;

/* cap tanh(s / cap), recorded as llama_graph.c's tp_softcap does */
static topos_sym ap_softcap(topos_tape *tape, topos_sym s, float cap) {
  if (cap <= 0) return s;
  topos_sym y = topos_tape_tanh(tape, topos_tape_mul(tape, s, topos_tape_fill_like(tape, s, 1.0f / cap)));
  return topos_tape_mul(tape, y, topos_tape_fill_like(tape, y, cap));
}

static uint32_t ap_state = 2024u;
static float ap_uniform(void) {
  ap_state = ap_state * 1664525u + 1013904223u;
  return (float)(ap_state >> 8) / 16777216.0f - 0.5f;
}

static topos_tensor *ap_tensor(int64_t a, int64_t b, int64_t c, float scale) {
  int64_t shape[3] = {a, b, c}, n = a * b * c;
  float *v = malloc((size_t)n * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; ++i) v[i] = ap_uniform() * scale;
  topos_tensor *t = NULL;
  if (topos_tensor_from_f32(TOPOS_F32, 3, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* [m, keys] mask: causal over the chunk (query row i sees chunk keys <= i),
 * cached keys [0, pos) visible; kind 2 adds holes and, in its last row,
 * nothing visible */
static topos_tensor *ap_mask(int64_t m, int64_t keys, int chunk, int kind, int64_t pos) {
  int64_t shape[2] = {m, keys};
  float *v = malloc((size_t)(m * keys) * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      int visible = chunk ? (kind == 1 || j <= i) : j < pos;
      if (kind == 2 && (i + 3 * j) % 7 == 0 && j != i) visible = 0;
      if (kind == 2 && i == m - 1) visible = 0;
      v[i * keys + j] = visible ? (kind == 2 ? 0.25f * (float)(j % 3) : 0.0f) : -INFINITY;
    }
  topos_tensor *t = NULL;
  if (topos_tensor_from_f32(TOPOS_F32, 2, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* Records the llama graph's attention (models/llama_graph.c, f32 cache) over
 * fresh random operands; runs the plan, and the interpreter under Exact. */
static topos_status ap_run(const ap_case *c, topos_numerics num, int *fused, topos_tensor **out,
                           topos_tensor **ref) {
  ap_state = 2024u + (uint32_t)(c->cached * 10 + c->mask_kind + c->S) + (c->cap > 0 ? 77u : 0u);
  topos_tensor *q = ap_tensor(AP_B, AP_M, AP_D, 3.0f), *kn = ap_tensor(AP_B, AP_D, AP_T, 3.0f);
  topos_tensor *vn = ap_tensor(AP_B, AP_T, AP_DV, 2.0f), *kc = ap_tensor(AP_B, AP_D, c->S, 3.0f);
  topos_tensor *vc = ap_tensor(AP_B, c->S, AP_DV, 2.0f);
  topos_tensor *mn = ap_mask(AP_M, AP_T, 1, c->mask_kind, 0);
  topos_tensor *mc = ap_mask(AP_M, c->S, 0, c->mask_kind, c->S - 9); /* 9 unwritten slots */
  topos_status st = q && kn && vn && kc && vc && mn && mc ? TOPOS_OK : TOPOS_ERR_OUT_OF_MEMORY;
  if (st == TOPOS_OK && c->mask_kind == 2) { /* a NaN query element */
    float *qd = topos_tensor_data_mut(q);
    qd[5 * AP_D + 2] = NAN;
  }
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  if (st == TOPOS_OK) st = topos_tape_new(&tape);
  topos_sym root = TOPOS_SYM_INVALID;
  if (st == TOPOS_OK) {
    topos_sym sq = topos_tape_input(tape, q, "q"), skn = topos_tape_input(tape, kn, "kn");
    topos_sym svn = topos_tape_input(tape, vn, "vn");
    topos_sym smn = topos_tape_broadcast_along(tape, topos_tape_input(tape, mn, "mn"), 0, AP_B);
    topos_sym s_n = topos_tape_add(tape, ap_softcap(tape, topos_tape_matmul(tape, sq, skn), c->cap), smn);
    if (!c->cached) {
      root = topos_tape_matmul(tape, topos_tape_exp(tape, topos_tape_log_softmax(tape, s_n, 2)), svn);
    } else {
      topos_sym skc = topos_tape_input(tape, kc, "kc"), svc = topos_tape_input(tape, vc, "vc");
      topos_sym smc = topos_tape_broadcast_along(tape, topos_tape_input(tape, mc, "mc"), 0, AP_B);
      topos_sym s_c = topos_tape_add(tape, ap_softcap(tape, topos_tape_matmul(tape, sq, skc), c->cap), smc);
      topos_sym parts[2] = {s_c, s_n};
      topos_sym p =
          topos_tape_exp(tape, topos_tape_log_softmax(tape, topos_tape_concat(tape, 2, parts, 2), 2));
      topos_sym p_c = topos_tape_narrow(tape, p, 2, 0, c->S), p_n = topos_tape_narrow(tape, p, 2, c->S, AP_T);
      root = topos_tape_add(tape, topos_tape_matmul(tape, p_c, svc), topos_tape_matmul(tape, p_n, svn));
    }
    st = topos_tape_seal(&tape, &net);
  }
  if (st == TOPOS_OK)
    st = fu_plan_and_reference(net, &root, 1, num, TOPOS_NUMERICS_EXACT, "attention", fused, out, ref);
  topos_network_free(net);
  if (tape) topos_tape_free(tape);
  topos_tensor *all[] = {q, kn, vn, kc, vc, mn, mc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  return st;
}

static const ap_case ap_cases[] = {{0, 70, 0, 0},    {0, 70, 1, 0},     {0, 70, 2, 0},   {1, 70, 0, 0},
                                   {1, 70, 1, 0},    {1, 70, 2, 0},     {1, 2100, 0, 0}, {1, 2100, 2, 0},
                                   {0, 70, 2, 1.5f}, {1, 70, 2, 1.5f}, {1, 2100, 0, 1.5f}};

TEST(plan_attention_fuses_with_the_interpreter_bits_at_every_thread_count) {
  int saved = topos_threads();
  for (size_t i = 0; i < sizeof ap_cases / sizeof ap_cases[0]; ++i) {
    topos_tensor *first = NULL;
    for (int threads = 1; threads <= 3; ++threads) {
      CHECK_OK(topos_set_threads(threads));
      topos_tensor *y = NULL, *ref = NULL;
      int fused = 0;
      /* the interpreter once, at 1 thread; the plan at 2 and 3 against the
       * plan at 1 (the interpreter's libm exp per score was most of this
       * test's instructions under valgrind) */
      CHECK_OK(ap_run(&ap_cases[i], TOPOS_NUMERICS_EXACT, &fused, &y, threads == 1 ? &ref : NULL));
      CHECK_EQ_INT(fused, 1); /* else the interpreter was compared with itself */
      if (threads == 1) CHECK_MSG(y && ref && topos_tensor_bits_equal(y, ref), "case %zu: not the interpreter's bits", i);
      if (y && first) CHECK_MSG(topos_tensor_bits_equal(y, first), "case %zu threads %d", i, threads);
      if (!first) first = topos_tensor_retain(y);
      topos_tensor_release(y);
      topos_tensor_release(ref);
    }
    topos_tensor_release(first);
  }
  CHECK_OK(topos_set_threads(saved));
}

/* Fast: the chain's Fast products and softmax, keys no row of a block sees
 * skipped. Bound against Exact: |fast - exact| <= 2^-16 (max |v|) per
 * output (the probabilities' envelope, a few ulp each, and the products'
 * reassociation, over at most S + T = 2250 terms of a convex combination);
 * NaN outputs where Exact has them; the same bits at 1, 2 and 3 threads. */
TEST(plan_attention_fast_within_its_bound_at_every_thread_count) {
  int saved = topos_threads();
  for (size_t i = 0; i < sizeof ap_cases / sizeof ap_cases[0]; ++i) {
    topos_tensor *first = NULL, *exact = NULL;
    int fused = 0;
    CHECK_OK(ap_run(&ap_cases[i], TOPOS_NUMERICS_EXACT, &fused, &exact, NULL));
    for (int threads = 1; threads <= 3; ++threads) {
      CHECK_OK(topos_set_threads(threads));
      topos_tensor *y = NULL;
      CHECK_OK(ap_run(&ap_cases[i], TOPOS_NUMERICS_FAST, &fused, &y, NULL));
      CHECK_EQ_INT(fused, 1);
      if (y && first) CHECK_MSG(topos_tensor_bits_equal(y, first), "case %zu threads %d", i, threads);
      if (!first) first = topos_tensor_retain(y);
      topos_tensor_release(y);
    }
    enum { N = AP_B * AP_M * AP_DV };
    float a[N], b[N];
    if (first && exact) {
      CHECK_OK(topos_tensor_read_f32(first, a, N));
      CHECK_OK(topos_tensor_read_f32(exact, b, N));
      int64_t bad = 0, nans = 0;
      for (int64_t e = 0; e < N; ++e) {
        if (isnan(b[e])) {
          bad += !isnan(a[e]);
          ++nans;
          continue;
        }
        bad += !(fabsf(a[e] - b[e]) <= ldexpf(1.0f, -16)); /* |v| < 1 */
      }
      CHECK_MSG(bad == 0, "case %zu: %lld outputs off", i, (long long)bad);
      if (ap_cases[i].mask_kind == 2) CHECK(nans > 0); /* the NaN query and the blind row */
    }
    topos_tensor_release(first);
    topos_tensor_release(exact);
  }
  CHECK_OK(topos_set_threads(saved));
}

/* The Fast products without packing (attention_gemm_template.h): every
 * element is the documented chain, bit for bit — c = 0, then c = fma(a, b,
 * c) for t ascending — whatever tile computed it (4 x 2 blocks, the 3-, 2-
 * and 1-row tiles of 2, 4 and 8 vectors and their narrower tails, the rows
 * left taken whole over blocks of B's rows), so AVX2 and AVX-512 give the
 * same bits; and within k * 2^-22 relative to sum |a b| of a double
 * product. Every row count 1..9 and column count 16..208 (past two 8-vector
 * tiles of AVX-512), k 37 and 300 (B's rows in several blocks). */
TEST(attention_fast_products_are_one_fma_chain_per_element) {
#if defined(__x86_64__)
  if (tp_vector_isa_best() < TP_VECTOR_AVX2) SKIP("no AVX2 here (or masked)");
  const int both = tp_vector_isa_best() == TP_VECTOR_AVX512;
  enum { M = 9, N = 208, KMAX = 300, LDB = 211, LDC = 213 };
  static float a[M * KMAX], b[KMAX * LDB], c1[M * LDC], c2[M * LDC];
  ap_state = 77u;
  for (int i = 0; i < M * KMAX; ++i) a[i] = ap_uniform();
  for (int i = 0; i < KMAX * LDB; ++i) b[i] = ap_uniform();
  int64_t bad = 0, not_chain = 0, cases = 0;
  const int64_t ks[2] = {37, KMAX};
  for (int ki = 0; ki < 2; ++ki)
    for (int64_t m = 1; m <= M; ++m)
      for (int64_t n = 16; n <= N; n += 16) {
        const int64_t K = ks[ki];
        memset(c1, 0, sizeof c1);
        memset(c2, 0, sizeof c2);
        /* a read as [m x K] with strides (1, m): the transposed access */
        tp_attn_gemm_avx2(m, n, K, a, 1, m, b, LDB, c1, LDC);
        if (both) {
          tp_attn_gemm_avx512(m, n, K, a, 1, m, b, LDB, c2, LDC);
          bad += memcmp(c1, c2, sizeof c1) != 0;
        }
        for (int64_t r = 0; r < m; ++r)
          for (int64_t col = 0; col < n; ++col) {
            double want = 0.0, mag = 0.0;
            float chain = 0.0f;
            for (int64_t t = 0; t < K; ++t) {
              want += (double)a[r + t * m] * b[t * LDB + col];
              mag += fabs((double)a[r + t * m] * b[t * LDB + col]);
              chain = fmaf(a[r + t * m], b[t * LDB + col], chain);
            }
            const float got = c1[r * LDC + col];
            bad += !(fabs(got - want) <= mag * (double)K * ldexp(1.0, -22));
            not_chain += memcmp(&got, &chain, sizeof got) != 0;
          }
        ++cases;
      }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(not_chain, 0);
  CHECK_EQ_INT(cases, 234);
#else
  SKIP("x86-64 only");
#endif
}

/* The 16-bit cache's form: per kv head, qlinear products with the keys
 * [keys, d] and values [dv, keys] as weight rows, the cached segment f16 or
 * bf16 (models/llama_graph.c). */
static topos_status ap_run_linear(int cached, int mask_kind, topos_dtype cache_type, int64_t S, float cap,
                                  topos_numerics num, int *fused, topos_tensor **out,
                                  topos_tensor **ref) {
  ap_state = 4048u + (uint32_t)(cached * 10 + mask_kind + S);
  int64_t qs[2] = {AP_M, AP_D}, ks[2] = {AP_T, AP_D}, vs[2] = {AP_T, AP_DV}, kcs[2] = {S, AP_D},
          vcs[2] = {AP_DV, S};
  topos_tensor *q3 = ap_tensor(1, AP_M, AP_D, 3.0f), *k3 = ap_tensor(1, AP_T, AP_D, 3.0f);
  topos_tensor *v3 = ap_tensor(1, AP_T, AP_DV, 2.0f), *kc3 = ap_tensor(1, S, AP_D, 3.0f);
  topos_tensor *vc3 = ap_tensor(1, AP_DV, S, 2.0f);
  topos_tensor *q = NULL, *kn = NULL, *vn = NULL, *kc = NULL, *vc = NULL;
  topos_tensor *mn = ap_mask(AP_M, AP_T, 1, mask_kind, 0), *mc = ap_mask(AP_M, S, 0, mask_kind, S - 9);
  topos_status st = q3 && k3 && v3 && kc3 && vc3 && mn && mc ? TOPOS_OK : TOPOS_ERR_OUT_OF_MEMORY;
  if (st == TOPOS_OK) st = topos_tensor_reshape(q3, 2, qs, &q);
  if (st == TOPOS_OK) st = topos_tensor_reshape(k3, 2, ks, &kn);
  if (st == TOPOS_OK) st = topos_tensor_reshape(v3, 2, vs, &vn);
  if (st == TOPOS_OK) st = topos_tensor_from_f32(cache_type, 2, kcs, topos_tensor_data(kc3), &kc);
  if (st == TOPOS_OK) st = topos_tensor_from_f32(cache_type, 2, vcs, topos_tensor_data(vc3), &vc);
  if (st == TOPOS_OK && mask_kind == 2) ((float *)topos_tensor_data_mut(q))[5 * AP_D + 2] = NAN;
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  if (st == TOPOS_OK) st = topos_tape_new(&tape);
  topos_sym root = TOPOS_SYM_INVALID;
  if (st == TOPOS_OK) {
    topos_sym sq = topos_tape_input(tape, q, "q"), skn = topos_tape_input(tape, kn, "kn");
    topos_sym svn = topos_tape_transpose(tape, topos_tape_input(tape, vn, "vn"));
    topos_sym s_n =
        topos_tape_add(tape, ap_softcap(tape, topos_tape_qlinear(tape, sq, skn), cap), topos_tape_input(tape, mn, "mn"));
    if (!cached) {
      root = topos_tape_qlinear(tape, topos_tape_exp(tape, topos_tape_log_softmax(tape, s_n, 1)), svn);
    } else {
      topos_sym skc = topos_tape_constant(tape, kc), svc = topos_tape_constant(tape, vc);
      topos_sym s_c = topos_tape_add(tape, ap_softcap(tape, topos_tape_qlinear(tape, sq, skc), cap),
                                     topos_tape_input(tape, mc, "mc"));
      topos_sym parts[2] = {s_c, s_n};
      topos_sym p =
          topos_tape_exp(tape, topos_tape_log_softmax(tape, topos_tape_concat(tape, 2, parts, 1), 1));
      topos_sym p_c = topos_tape_narrow(tape, p, 1, 0, S), p_n = topos_tape_narrow(tape, p, 1, S, AP_T);
      root = topos_tape_add(tape, topos_tape_qlinear(tape, p_c, svc), topos_tape_qlinear(tape, p_n, svn));
    }
    st = topos_tape_seal(&tape, &net);
  }
  if (st == TOPOS_OK)
    st = fu_plan_and_reference(net, &root, 1, num, TOPOS_NUMERICS_EXACT, "attention", fused, out, ref);
  topos_network_free(net);
  if (tape) topos_tape_free(tape);
  topos_tensor *all[] = {q3, k3, v3, kc3, vc3, q, kn, vn, kc, vc, mn, mc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) topos_tensor_release(all[i]);
  return st;
}

TEST(plan_attention_16bit_cache_form_interpreter_bits_and_fast_bound) {
  static const struct { int cached, mask_kind; topos_dtype type; int64_t S; float cap; } cases[] = {
      {0, 0, TOPOS_F16, 70, 0},  {0, 2, TOPOS_F16, 70, 0}, {1, 0, TOPOS_F16, 70, 0},
      {1, 1, TOPOS_BF16, 70, 0}, {1, 2, TOPOS_F16, 70, 0}, {1, 0, TOPOS_F16, 2100, 0},
      {0, 2, TOPOS_F16, 70, 1.5f}, {1, 2, TOPOS_F16, 70, 1.5f}};
  int saved = topos_threads();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    topos_tensor *first = NULL, *exact = NULL;
    for (int threads = 1; threads <= 3; ++threads) {
      CHECK_OK(topos_set_threads(threads));
      topos_tensor *y = NULL, *ref = NULL;
      int fused = 0;
      /* the interpreter once (1 thread), the Exact plan at each count against it */
      CHECK_OK(ap_run_linear(cases[i].cached, cases[i].mask_kind, cases[i].type, cases[i].S, cases[i].cap,
                             TOPOS_NUMERICS_EXACT, &fused, &y, exact ? NULL : &ref));
      CHECK_EQ_INT(fused, 1);
      if (!exact) exact = topos_tensor_retain(ref);
      CHECK_MSG(y && exact && topos_tensor_bits_equal(y, exact), "case %zu threads %d", i, threads);
      topos_tensor_release(y);
      topos_tensor_release(ref);
      CHECK_OK(ap_run_linear(cases[i].cached, cases[i].mask_kind, cases[i].type, cases[i].S, cases[i].cap,
                             TOPOS_NUMERICS_FAST, &fused, &y, NULL));
      CHECK_EQ_INT(fused, 1);
      if (y && first) CHECK_MSG(topos_tensor_bits_equal(y, first), "fast, case %zu threads %d", i, threads);
      if (!first) first = topos_tensor_retain(y);
      topos_tensor_release(y);
    }
    enum { N = AP_M * AP_DV };
    float a[N], b[N];
    if (first && exact) {
      CHECK_OK(topos_tensor_read_f32(first, a, N));
      CHECK_OK(topos_tensor_read_f32(exact, b, N));
      int64_t bad = 0;
      for (int64_t e = 0; e < N; ++e)
        bad += isnan(b[e]) ? !isnan(a[e]) : !(fabsf(a[e] - b[e]) <= ldexpf(1.0f, -16));
      CHECK_MSG(bad == 0, "fast, case %zu: %lld outputs off", i, (long long)bad);
    }
    topos_tensor_release(first);
    topos_tensor_release(exact);
  }
  CHECK_OK(topos_set_threads(saved));
}
