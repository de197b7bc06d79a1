/* topos_qmatmul_multi: several weight matrices against one activation matrix.
 * Every part's output has the bits of topos_qmatmul on that part alone, on
 * each path, at every thread count — whether the parts ran as one dispatch
 * (decoding, AVX-512 VNNI or AVX2 matrix-vector kernels for every part) or one by
 * one (prompts, other types, more than 8 parts). */
#include <stdlib.h>
#include <string.h>

#include "quant/qk_internal.h"
#include "quant_test_util.h"
#include "test.h"

typedef struct {
  topos_dtype type;
  int64_t n;
} mq_shape;

/* Random weights of each part, quantized with the reference quantizer. */
static uint8_t *mq_weights(topos_dtype t, int64_t n, int64_t k, uint64_t seed) {
  const size_t rb = qt_row_bytes(t, k);
  uint8_t *w = malloc(rb * (size_t)n);
  float *row = malloc((size_t)k * sizeof(float));
  int ok = w && row;
  for (int64_t j = 0; ok && j < n; ++j) {
    qt_fill_uniform(row, k, seed + (uint64_t)j, 1.0f + (float)(j % 3));
    ok = topos_quantize_row(t, row, w + (size_t)j * rb, k) == TOPOS_OK;
  }
  free(row);
  if (!ok) free(w);
  return ok ? w : NULL;
}

/* The parts of one case against the parts run alone: same bits. own: every
 * other part reads activations of its own (the part's `a`). */
static void mq_case_inputs(const mq_shape *shapes, int count, int64_t m, int64_t k, int own) {
  topos_qmatmul_part parts[12];
  float *alone[12];
  float *a = malloc((size_t)(m * k) * sizeof(float) * 13);
  CHECK(a && count <= 12);
  if (!a) return;
  qt_fill_uniform(a, m * k * 13, 99, 1.0f);
  for (int i = 0; i < count; ++i) {
    parts[i] = (topos_qmatmul_part){mq_weights(shapes[i].type, shapes[i].n, k, 1000 * (uint64_t)i), shapes[i].type,
                                    shapes[i].n, NULL, malloc((size_t)(m * shapes[i].n) * sizeof(float)),
                                    own && i % 2 ? a + (i + 1) * m * k : NULL};
    alone[i] = malloc((size_t)(m * shapes[i].n) * sizeof(float));
    CHECK(parts[i].w && parts[i].out && alone[i]);
  }
  float bias[64];
  for (int i = 0; i < 64; ++i) bias[i] = 0.25f * (float)i - 3.0f;
  if (shapes[0].n <= 64) parts[0].bias = bias; /* a bias is added per part */
  const topos_qmatmul_path paths[3] = {TOPOS_QMATMUL_AUTO, TOPOS_QMATMUL_FAST, TOPOS_QMATMUL_REFERENCE};
  for (int pi = 0; pi < 3; ++pi) {
    if (paths[pi] == TOPOS_QMATMUL_FAST && !topos_qmatmul_fast_isa(TOPOS_Q8_0)) continue;
    int fast_ok = 1;
    for (int i = 0; i < count; ++i) {
      topos_status st = tp_qmatmul_threads(parts[i].a ? parts[i].a : a, m, k, parts[i].w, parts[i].wtype,
                                           parts[i].n, parts[i].bias, alone[i], paths[pi], 1);
      if (st == TOPOS_UNSUPPORTED && paths[pi] == TOPOS_QMATMUL_FAST) fast_ok = 0;
      else CHECK_OK(st);
    }
    if (!fast_ok) {
      CHECK(tp_qmatmul_multi(a, m, k, parts, (size_t)count, paths[pi], 2) == TOPOS_UNSUPPORTED);
      continue;
    }
    for (int threads = 1; threads <= 3; ++threads) {
      for (int i = 0; i < count; ++i) memset(parts[i].out, 0xFF, (size_t)(m * parts[i].n) * sizeof(float));
      CHECK_OK(tp_qmatmul_multi(a, m, k, parts, (size_t)count, paths[pi], threads));
      for (int i = 0; i < count; ++i)
        CHECK_MSG(memcmp(parts[i].out, alone[i], (size_t)(m * parts[i].n) * sizeof(float)) == 0,
                  "part %d (%s, n %lld) of %d, m %lld, k %lld, path %d, %d threads: not the bits of the "
                  "part alone", i, topos_dtype_name(parts[i].wtype), (long long)parts[i].n, count, (long long)m,
                  (long long)k, (int)paths[pi], threads);
    }
  }
  for (int i = 0; i < count; ++i) free((void *)parts[i].w), free(parts[i].out), free(alone[i]);
  free(a);
}

static void mq_case(const mq_shape *shapes, int count, int64_t m, int64_t k) {
  mq_case_inputs(shapes, count, m, k, 0);
  mq_case_inputs(shapes, count, m, k, 1);
}

TEST(qmatmul_multi_parts_have_their_own_bits) {
  /* a small model's q, k, v (576 wide: not whole K super-blocks), odd and
   * one-row parts, every 32-element block type */
  const mq_shape b32[] = {{TOPOS_Q4_1, 37}, {TOPOS_Q4_1, 16}, {TOPOS_Q8_0, 3},  {TOPOS_Q4_0, 1},
                          {TOPOS_Q5_0, 20}, {TOPOS_Q5_1, 17}, {TOPOS_MXFP4, 23}};
  /* K types with block types between them (TinyLlama Q4_K_M's q, k in Q4_K
   * and v in Q6_K) */
  const mq_shape ks[] = {{TOPOS_Q4_K, 50}, {TOPOS_Q6_K, 17}, {TOPOS_Q8_0, 64}, {TOPOS_Q5_K, 5},
                         {TOPOS_Q4_0, 1},  {TOPOS_Q3_K, 9},  {TOPOS_Q2_K, 12}};
  /* a type the matrix-vector dispatch does not take (f16; and Q2_K on
   * AVX-512, which leaves it to the engine): one by one */
  const mq_shape mixed[] = {{TOPOS_F16, 9}, {TOPOS_Q4_K, 33}, {TOPOS_Q2_K, 4}};
  /* more parts than one dispatch takes */
  mq_shape many[10];
  for (int i = 0; i < 10; ++i) many[i] = (mq_shape){i % 2 ? TOPOS_Q8_0 : TOPOS_Q4_K, 3 + 5 * i};
  for (int64_t m = 1; m <= 3; m += 2) { /* decoding, and a prompt (one by one) */
    mq_case(b32, 7, m, 576);
    mq_case(b32, 2, m, 576);
    mq_case(ks, 7, m, 512);
    mq_case(ks, 1, m, 512);
    mq_case(mixed, 3, m, 512);
    mq_case(many, 10, m, 512);
  }
}

TEST(qmatmul_multi_names_the_bad_part) {
  const int64_t k = 64;
  float a[64] = {0}, out[8];
  uint8_t w[8 * 68] = {0};
  topos_qmatmul_part parts[2] = {{w, TOPOS_Q8_0, 2, NULL, out, NULL}, {NULL, TOPOS_Q8_0, 2, NULL, out + 2, NULL}};
  topos_status st = topos_qmatmul_multi(a, 1, k, parts, 2, TOPOS_QMATMUL_AUTO);
  CHECK(st == TOPOS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(topos_last_error(), "part 1") != NULL);
  parts[1] = (topos_qmatmul_part){w, TOPOS_Q4_K, 2, NULL, out + 2, NULL}; /* k = 64: not whole super-blocks */
  st = topos_qmatmul_multi(a, 1, k, parts, 2, TOPOS_QMATMUL_AUTO);
  CHECK(st == TOPOS_ERR_SHAPE);
  CHECK(strstr(topos_last_error(), "part 1") != NULL);
  CHECK(topos_qmatmul_multi(a, 1, k, NULL, 2, TOPOS_QMATMUL_AUTO) == TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_OK(topos_qmatmul_multi(a, 1, k, parts, 0, TOPOS_QMATMUL_AUTO)); /* nothing to do */
}
