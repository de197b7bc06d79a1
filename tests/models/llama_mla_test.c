/* deepseek2 files (DeepSeek-V2 / V2-Lite, GLM-4.7-Flash, Moonlight):
 * multi-head latent attention against the tests' plain forward, which
 * rebuilds each head's keys and values from the latent (the graph runs the
 * absorbed form and caches the latent only); q from attn_q or through the
 * q_a / q_b pair; a dense first block, then mixtures with a shared expert,
 * softmax or sigmoid routers, expert_weights_norm and _scale, exp_probs_b;
 * DeepSeek's YaRN scale; decoding equal to the full-context forward bit for
 * bit at 1-3 threads; quantized weights through both caches; refusals. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' latent-attention tensors */

static lt_spec lm_f32(void) {
  lt_spec s = lt_f32_spec();
  s.arch = "deepseek2";
  s.layers = 3;
  s.kv_heads = 1;
  s.rope_dim = 16;
  s.mla_kv_rank = 64;
  s.mla_nope = 32;
  s.mla_v = 48;
  s.experts = 4;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.experts_shared = 1;
  s.dense_lead = 1;
  return s;
}

TEST(llama_deepseek2_files) {
  lt_spec s = lm_f32();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "deepseek2") == 0 && c->rope_neox == 0 && c->n_kv_heads == 1);
    CHECK(c->mla_kv_rank == 64 && c->mla_q_rank == 0 && c->mla_nope == 32 && c->mla_v_dim == 48);
    CHECK(c->head_dim == 80 && c->rope_dim == 16); /* the cache's row: the latent and the rotated key */
    CHECK(fabsf(c->attn_scale - 1.0f / sqrtf(48.0f)) < 1e-7f);
    CHECK(c->n_dense_lead == 1 && c->ff_shared == 64 && c->experts_norm == 0 && c->experts_sigmoid == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->wq && !L->wq_a && L->wkv_a && L->kv_a_norm && !L->wk && !L->wv);
    CHECK(topos_tensor_rank(L->wk_b) == 3 && topos_tensor_shape(L->wk_b)[0] == 4 && topos_tensor_shape(L->wk_b)[1] == 64 &&
          topos_tensor_shape(L->wk_b)[2] == 32);
    CHECK(topos_tensor_shape(L->wv_b)[1] == 48 && topos_tensor_shape(L->wv_b)[2] == 64);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[0].w_gate && L->gate_inp && L->w_gate);
  }
  lt_close(&m);
  /* routed to one expert instead of two: far off */
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
  /* a dense model (no expert_count: every block dense, as the converter
   * writes files without experts) */
  lt_spec d = s;
  d.experts = 0;
  d.dense_lead = 0;
  CHECK_OK(lt_open(&d, &m));
  if (m.model) {
    lt_compare_plain_model(&m, &d, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, d.vocab);
  }
  lt_close(&m);
}

/* GLM-4.7-Flash's files end with a multi-token-prediction block
 * (nextn_predict_layers 1): a whole block plus nextn.* tensors after the
 * trunk, which no graph reads; the model is the trunk's blocks */
TEST(llama_deepseek2_nextn_blocks_are_not_the_trunk) {
  lt_spec s = lm_f32();
  s.nextn = 1;
  s.extra_tensor = "blk.2.nextn.enorm.weight";
  lt_spec trunk = s;
  trunk.layers = 2; /* the same file's first two blocks */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_layers == 2 && c->n_nextn_layers == 1);
    lt_compare_plain_model(&m, &trunk, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
  lt_spec t = s; /* without the key the block is the model's and its nextn tensor is no graph's */
  t.nextn = 0;
  lt_expect_refused(t, TOPOS_UNSUPPORTED, "tensor blk.2.nextn.enorm.weight is not part of the llama graph");
  t = s;
  t.nextn = 3;
  lt_expect_refused(t, TOPOS_ERR_RANGE, "deepseek2.nextn_predict_layers = 3 leaves no blocks of block_count 3");
}

/* q through attn_q_a, its norm and attn_q_b; the sigmoid router with
 * exp_probs_b choosing and the chosen weights renormalised and scaled */
TEST(llama_deepseek2_q_lora_and_sigmoid_router) {
  lt_spec s = lm_f32();
  s.mla_q_rank = 48;
  s.sigmoid_router = 1;
  s.weights_norm = 1;
  s.probs_bias = 1;
  s.experts_scale = 1.5f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->mla_q_rank == 48 && c->experts_sigmoid == 1 && c->experts_norm == 1 && c->experts_scale == 1.5f);
    CHECK(m.model->layers[2].wq_a && m.model->layers[2].q_a_norm && topos_tensor_shape(m.model->layers[2].wq)[1] == 48);
  }
  lt_close(&m);
  lt_spec without = s;
  without.sigmoid_router = 0; /* the same file through a softmax router */
  lt_check_spec_variant(&s, &without);
}

/* DeepSeek's YaRN: the rotated parts' cos and sin unscaled, the scores
 * times (1 + 0.1 mscale_all_dim ln f)^2 (the file's yarn_log_multiplier is
 * 0.1 mscale_all_dim); without the multiplier, YaRN's own magnitude on both */
TEST(llama_deepseek2_yarn) {
  lt_spec s = lm_f32();
  s.rope_type = "yarn";
  s.rope_scale = 4.0f;
  s.rope_orig_ctx = 16;
  s.yarn_log_mul = 0.0707f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    const double ms = 1.0 + 0.707 * 0.1 * log(4.0);
    CHECK(c->rope_mscale == 1.0f && fabs(c->attn_scale - ms * ms / sqrt(48.0)) < 1e-6);
  }
  lt_close(&m);
  lt_spec without = s;
  without.yarn_log_mul = 0;
  lt_check_spec_variant(&s, &without);
  lt_spec own = without; /* no multiplier in the file */
  lt_compare_plain(&own, TOPOS_NUMERICS_EXACT, 1e-5);
}

/* quantized weights (K-quant rows where 256 divides them, block-32 types
 * elsewhere) through both caches, against the plain forward over the
 * dequantized weights (the graph quantizes activations: measured 3.4e-2..3.9e-2
 * here, five quantized products in a row; bound 6e-2) */
TEST(llama_deepseek2_quantized_both_caches) {
  LT_NATIVE_ONLY();
  lt_spec s = lm_f32();
  const topos_dtype t[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q8_0, TOPOS_Q4_0,
                                   TOPOS_Q6_K, TOPOS_Q4_0, TOPOS_Q8_0, TOPOS_BF16};
  memcpy(s.types, t, sizeof t);
  lt_compare_plain_caches_of(&s, 6e-2);
  s.types[LT_V] = TOPOS_F16; /* attn_k_b / attn_v_b in f16, as many files keep them */
  s.mla_q_rank = 64;
  s.types[LT_Q] = TOPOS_Q8_0;
  lt_compare_plain_caches_of(&s, 6e-2);
  lt_check_decode_of(&s);
}

/* DeepSeek-V3's router: sigmoid, exp_probs_b, 8 experts in 4 groups of
 * which the best 2 (by the sum of each group's two best) hold the choice,
 * weights renormalised and times 2.5 */
TEST(llama_deepseek2_expert_groups) {
  lt_spec s = lm_f32();
  s.experts = 8;
  s.expert_groups = 4;
  s.expert_groups_used = 2;
  s.sigmoid_router = 1;
  s.probs_bias = 1;
  s.weights_norm = 1;
  s.experts_scale = 2.5f;
  lt_spec without = s;
  without.expert_groups = 0;
  without.expert_groups_used = 0;
  lt_check_spec_variant(&s, &without);
  lt_check_decode_of(&s);
}

TEST(llama_deepseek2_bad_files_are_refused) {
  lt_spec s = lm_f32();
  s.layers = 2;
  lt_spec t = s;
  t.mla_legacy = 1;
  lt_expect_refused(t, TOPOS_UNSUPPORTED, "deepseek2.attention.key_length_mla is missing: a deepseek2 file written "
                                          "before its converter split attn_kv_b");
  t = s;
  t.skip_tensor = "blk.1.attn_k_b.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.attn_k_b.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.attn_v_b.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_v_b.weight has ne {96, 48, 4}, the metadata implies {64, 48, 4}");
  t = s;
  t.bad_tensor = "blk.0.attn_kv_a_mqa.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_kv_a_mqa.weight has ne {288, 80}");
  t = s;
  t.kv_heads = 2;
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "a latent-attention file has one kv head, head_count_kv is 2");
  t = s;
  t.skip_tensor = "blk.1.ffn_gate_shexp.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.ffn_gate_shexp.weight is missing");
}
