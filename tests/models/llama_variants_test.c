/* llama-architecture files beyond the first llama ones: Llama 3.1's rope
 * factors (rope_freqs.weight), linear rope scaling, heads whose width the
 * file states (attention.key_length, not dim / heads), and tensors the graph
 * does not read, which are refused instead of ignored. */
#include "models/llama_harness.h"

/* Every logit of a spec's model against the plain forward (f32 weights, so
 * the bound is summation order's), and decoding equal to the full-context
 * forward bit for bit at 1-3 threads. `without` is the spec with the variant
 * left out: the plain forward of that differs from the model's logits by
 * far more than the bound, so the check sees the variant. */
static void lv_check(const lt_spec *s, const lt_spec *without) {
  lt_compare_plain(s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_compare_plain(s, TOPOS_NUMERICS_FAST, 1e-5);
  lt_model m;
  CHECK_OK(lt_open(s, &m));
  if (!m.model) {
    lt_close(&m);
    return;
  }
  const int64_t V = s->vocab;
  float *got = malloc((size_t)(LT_N * V) * sizeof *got), *other = malloc((size_t)(LT_N * V) * sizeof *other);
  CHECK(got && other);
  if (got && other) {
    CHECK_OK(lt_eval_all(m.model, TOPOS_NUMERICS_EXACT, 32, 5, got));
    CHECK(lt_reference_forward(m.gguf, without, lt_tokens, LT_N, other));
    double num2 = 0, den2 = 0;
    for (int64_t i = 0; i < LT_N * V; ++i) {
      const double d = (double)got[i] - other[i];
      num2 += d * d, den2 += (double)other[i] * other[i];
    }
    if (getenv("LT_VERBOSE")) fprintf(stderr, "without the variant: rel %g\n", sqrt(num2 / den2));
    CHECK_MSG(sqrt(num2 / den2) > 1e-3, "the variant changes the logits by only %g", sqrt(num2 / den2));
  }
  free(got);
  free(other);
  lt_check_decode(&m, V);
  lt_close(&m);
}

/* Llama 3.1 / 3.2 files carry one frequency divisor per rotated pair (1 for
 * the fast pairs, 8 for the slow ones, smooth between); running without
 * them, as a loader that ignores the tensor would, changes every logit. */
TEST(llama_rope_factors_of_llama31_files) {
  lt_spec s = lt_f32_spec(), without = s;
  s.rope_freqs = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    CHECK_EQ_INT(topos_llama_config_of(m.model)->rope_freqs, 1);
    /* the factors are not weights read per token */
    lt_model plain;
    CHECK_OK(lt_open(&without, &plain));
    if (plain.model)
      CHECK_EQ_INT((int64_t)topos_llama_config_of(m.model)->weight_bytes,
                   (int64_t)topos_llama_config_of(plain.model)->weight_bytes);
    lt_close(&plain);
  }
  lt_close(&m);
  /* the smooth band lies at wavelengths between ctx / 4 and ctx: with the
   * test's ctx 64 and head width 64 all three kinds of pair occur */
  int ones = 0, eights = 0, between = 0;
  for (int64_t i = 0; i < 32; ++i) {
    const float f = lt_rope_factor(i, 64, 10000.0, 64.0);
    ones += f == 1.0f, eights += f == 8.0f, between += f > 1.0f && f < 8.0f;
  }
  CHECK(ones > 0 && eights > 0 && between > 0);
  lv_check(&s, &without);
  /* quantized weights and GQA through the same tables */
  lt_spec q = lt_default_spec();
  q.rope_freqs = 1;
  q.rope_base = 500000.0f; /* Llama 3's base */
  lt_compare_plain(&q, TOPOS_NUMERICS_FAST, 3e-2);
}

/* rope.scaling.type "linear" divides positions by rope.scaling.factor;
 * "none" ignores the factor (llama.cpp's reading of both keys). */
TEST(llama_linear_rope_scaling) {
  lt_spec s = lt_f32_spec(), without = s;
  s.rope_scale = 4.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->rope_freq_scale == 0.25f);
  lt_close(&m);
  lv_check(&s, &without);
  lt_spec none = s;
  none.rope_type = "none";
  CHECK_OK(lt_open(&none, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->rope_freq_scale == 1.0f);
  lt_close(&m);
  lt_compare_plain(&none, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_spec zero = s; /* a factor of 0 means no scaling */
  zero.rope_scale = 0.0f;
  zero.rope_type = "linear";
  lt_compare_plain(&zero, TOPOS_NUMERICS_EXACT, 1e-5);
}

/* attention.key_length: heads of 32 over an embedding of 256 with 4 heads
 * (q is 128 wide, the output product maps 128 back to 256), with GQA, the
 * rope factors and linear scaling at once; and with 16-bit caches. */
TEST(llama_head_width_from_key_length) {
  lt_spec s = lt_f32_spec();
  s.head_dim = 32;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    CHECK_EQ_INT(topos_llama_config_of(m.model)->head_dim, 32);
    CHECK_EQ_INT(topos_llama_config_of(m.model)->rope_dim, 32);
  }
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_spec both = s, without = s;
  both.rope_freqs = 1;
  both.rope_scale = 2.0f;
  lv_check(&both, &without);
  lt_kv = TOPOS_F16;
  lt_compare_plain(&both, TOPOS_NUMERICS_FAST, 2e-3);
  lt_kv = TOPOS_F32;
  lt_spec wide = lt_default_spec(); /* heads wider than dim / heads, quantized */
  wide.head_dim = 128;
  lt_compare_plain(&wide, TOPOS_NUMERICS_FAST, 3e-2);
}

/* What the loader refuses about these keys and tensors, naming them. */
TEST(llama_variants_refused) {
  lt_spec s = lt_f32_spec();
  s.layers = 1;
  lt_spec t = s;
  t.rope_type = "yarn";
  t.rope_scale = 4.0f;
  lt_expect_refused(t, TOPOS_UNSUPPORTED, "rope scaling \"yarn\"");
  t = s;
  t.rope_scale = -2.0f;
  t.rope_type = "linear";
  lt_expect_refused(t, TOPOS_ERR_RANGE, "llama.rope.scaling.factor = -2");
  t = s;
  t.extra_tensor = "blk.0.attn_q.bias"; /* a bias the graph would not add */
  lt_expect_refused(t, TOPOS_UNSUPPORTED, "blk.0.attn_q.bias is not part of the llama graph");
  t = s;
  t.extra_tensor = "rope_freqs.weight"; /* 256 long, not head width / 2 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "rope_freqs.weight has ne {256}, the metadata implies {32}");
  t = s;
  t.head_dim = 3;
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "head dimension 3 is odd");
  t = s;
  t.heads_key = 3; /* 256 / 3 is no width, and the file states none */
  t.kv_heads = 1;
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "gives no head width");
}

/* A zero, negative or NaN rope factor is refused by position. */
TEST(llama_bad_rope_factors_refused) {
  lt_spec s = lt_default_spec();
  s.layers = 1;
  s.rope_freqs = 1;
  lt_model m;
  CHECK_OK(lt_write(&s, &m.file));
  /* find the factors in the written file and spoil one at a time */
  const float want = lt_rope_factor(31, 64, 10000.0, 64.0);
  uint8_t *bytes = m.file.bytes;
  size_t at = 0;
  int found = 0;
  for (size_t i = 0; !found && i + 32 * 4 <= m.file.size; i += 4) {
    float first, last;
    memcpy(&first, bytes + i, 4);
    memcpy(&last, bytes + i + 31 * 4, 4);
    if (first == 1.0f && last == want) at = i, found = 1;
  }
  CHECK(found);
  const float bad[3] = {0.0f, -1.0f, NAN};
  for (int b = 0; found && b < 3; ++b) {
    float keep;
    memcpy(&keep, bytes + at + 5 * 4, 4);
    memcpy(bytes + at + 5 * 4, &bad[b], 4);
    topos_gguf *g = NULL;
    topos_llama *model = NULL;
    CHECK_OK(topos_gguf_open_memory(m.file.bytes, m.file.size, &g));
    CHECK_STATUS(topos_llama_from_gguf(g, &model), TOPOS_ERR_RANGE);
    CHECK_ERROR_HAS("rope_freqs.weight[5]");
    CHECK(model == NULL);
    topos_gguf_close(g);
    memcpy(bytes + at + 5 * 4, &keep, 4);
  }
  lt_file_free(&m.file);
}
