/* Gated-DeltaNet files (qwen3next, qwen35, qwen35moe; kimi-linear's Kimi
 * Delta Attention at the end) against the tests'
 * plain forward: delta-rule mixers ('D' blocks) between attention blocks
 * whose q rows carry a sigmoid gate, partial NEOX rotation (qwen35: by
 * interleaved M-RoPE sections), q and k norms, the feed-forward's norm named
 * post_attention_norm; qwen3next's and qwen35moe's feed-forwards mixtures
 * with a gated shared expert. The mixers' convolution rows and states are
 * carried from chunk to chunk, so decoding equals the full context bit for
 * bit and a reset forgets them. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec delta_spec(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  s.layers = 5;
  s.conv_blocks = "DA"; /* full_attention_interval 2: blocks 1 and 3 attend */
  s.head_dim = 64;
  s.rope_dim = 32;
  if (strcmp(arch, "qwen3next") == 0 || strcmp(arch, "qwen35moe") == 0) {
    s.experts = 8;
    s.experts_used = 2;
    s.ff_exp = 64;
    s.ff_shexp = 96;
  }
  if (strcmp(arch, "qwen3next") != 0) {
    s.rope_sections[0] = 6, s.rope_sections[1] = 5, s.rope_sections[2] = 5;
  }
  return s;
}

/* the cache of n_ctx 32: the attention blocks' keys and values, two copies
 * of each mixer's 3 convolution rows and [32, 4, 32] state */
static uint64_t delta_cache_bytes(const topos_llama_config *c, int64_t attending, int64_t mixers) {
  const uint64_t kv = (uint64_t)attending * 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4;
  return kv + (uint64_t)mixers * 2 * (3 * LT_DN_CD + LT_DN_N * LT_DN_VD) * 4;
}

TEST(llama_qwen3next_files) {
  lt_spec s = delta_spec("qwen3next");
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ssm_delta == 1 && c->ssm_delta_tiled == 0 && c->attn_gate == 1 && c->n_ssm_layers == 3);
    CHECK(c->ssm_conv == 4 && c->ssm_inner == 128 && c->ssm_state == 32 && c->ssm_heads == 4 && c->ssm_groups == 2);
    CHECK(c->n_experts == 8 && c->shared_gate == 1 && c->ff_shared == 96 && c->experts_norm == 1);
    const tp_llama_layer *mix = &m.model->layers[0], *attn = &m.model->layers[1];
    CHECK(mix->ssm_in && mix->ssm_z && mix->ssm_beta && !mix->ssm_alpha && mix->ssm_taps && !mix->wq && !mix->wo);
    CHECK(attn->wq && attn->wo && attn->q_norm && !attn->ssm_in && attn->ffn_norm && mix->gate_inp_shexp);
    if (attn->wq) CHECK(topos_tensor_shape(attn->wq)[0] == 2 * 4 * 64); /* q and gate rows */
    lt_check_recurrent(&m, &s, delta_cache_bytes(c, 2, 3));
  }
  lt_close(&m);
  /* the plain forward forgetting the state and the convolution's rows: far off */
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
  /* value heads reading the key heads tiled (qwen35's order) instead: far off too */
  without.plain_without = "tiled";
  lt_check_spec_variant(&s, &without);
  /* quantized products, f32 and f16 caches */
  lt_spec q = lt_default_spec();
  q.arch = "qwen3next";
  q.layers = 2;
  q.conv_blocks = "DA";
  q.head_dim = 64;
  q.rope_dim = 32;
  q.experts = 4, q.experts_used = 2, q.ff_exp = 64, q.ff_shexp = 64;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* qwen3next's first converter: each key head's q, k, values and z rows in one ssm_in */
TEST(llama_qwen3next_legacy_files) {
  lt_spec s = delta_spec("qwen3next");
  s.layers = 3;
  s.delta_legacy = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(m.model->layers[0].ssm_in && !m.model->layers[0].ssm_z);
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
}

TEST(llama_qwen35_files) {
  lt_spec s = delta_spec("qwen35");
  s.conv_blocks = "DDA";
  s.layers = 4;
  s.delta_array = 1; /* attention.recurrent_layers */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ssm_delta == 1 && c->ssm_delta_tiled == 1 && c->attn_gate == 1 && c->n_ssm_layers == 3);
    CHECK(c->n_experts == 0 && m.model->rope_still != NULL); /* interleaved M-RoPE's still pairs */
    const tp_llama_layer *mix = &m.model->layers[0];
    CHECK(mix->ssm_beta && mix->ssm_alpha && mix->ssm_z && mix->w_gate);
    lt_check_recurrent(&m, &s, delta_cache_bytes(c, 1, 3));
  }
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "tiled"; /* qwen3next's order */
  lt_check_spec_variant(&s, &without);
  lt_spec q = lt_default_spec();
  q.arch = "qwen35";
  q.layers = 2;
  q.conv_blocks = "DA";
  q.head_dim = 64;
  q.rope_dim = 32;
  q.rope_sections[0] = 6, q.rope_sections[1] = 5, q.rope_sections[2] = 5;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_qwen35moe_files) {
  lt_spec s = delta_spec("qwen35moe");
  s.layers = 4;
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
}

TEST(llama_delta_bad_files) {
  lt_spec s = delta_spec("qwen35");
  s.layers = 2;
  lt_spec t = s;
  t.skip_tensor = "blk.0.attn_gate.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.attn_gate.weight is missing");
  t = s;
  t.skip_tensor = "blk.0.ssm_alpha.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ssm_alpha.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.ssm_conv1d.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ssm_conv1d.weight has ne {36, 256}, the metadata implies {4, 256}");
  t = s;
  t.bad_tensor = "blk.1.attn_q.weight"; /* q without its gate rows */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.1.attn_q.weight has ne {288, 512}, the metadata implies {256, 512}");
  t = s;
  t.delta_array = 1;
  t.blocks_key = 3; /* recurrent_layers lists 2 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "qwen35.attention.recurrent_layers lists 2 blocks, block_count is 3");
  /* qwen3next's mixers need ssm_ba, not qwen35's two */
  t = delta_spec("qwen3next");
  t.layers = 2;
  t.skip_tensor = "blk.0.ssm_ba.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ssm_ba.weight is missing");
}

/* kimi-linear (Kimi Linear): Kimi Delta Attention mixers ('K') between
 * deepseek2's latent attention, unrotated; a dense first block, then
 * mixtures behind a sigmoid router with exp_probs_b, always renormalised,
 * scaled, with a shared expert */
static lt_spec kimi_spec(void) {
  lt_spec s = lt_v3_spec("kimi-linear");
  s.weights_norm = 0; /* no expert_weights_norm key: renormalised all the same */
  s.layers = 4;
  s.conv_blocks = "KKA"; /* block 2 attends */
  s.kv_heads = 1, s.rope_dim = 16, s.mla_kv_rank = 64, s.mla_nope = 32, s.mla_v = 48;
  return s;
}

TEST(llama_kimi_linear_files) {
  lt_spec s = kimi_spec();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ssm_kda == 1 && c->ssm_delta == 1 && c->attn_gate == 0 && c->n_ssm_layers == 3);
    CHECK(c->ssm_heads == 4 && c->ssm_groups == 4 && c->ssm_state == 32 && c->ssm_inner == 128 && c->ssm_conv == 4);
    CHECK(c->mla_kv_rank == 64 && c->n_kv_heads == 1 && c->experts_norm == 1 && c->experts_sigmoid == 1);
    CHECK(c->n_nope_layers == 4); /* nothing rotates */
    const tp_llama_layer *mix = &m.model->layers[0], *attn = &m.model->layers[2];
    CHECK(mix->ssm_in && mix->ssm_k && mix->ssm_v && mix->ssm_f_b && mix->ssm_g_a && mix->ssm_out && !mix->wo);
    if (mix->ssm_taps) { /* q | k | v's taps side by side */
      const int64_t *sh = topos_tensor_shape(mix->ssm_taps);
      CHECK(sh[0] == 4 && sh[1] == 3 * 128);
    }
    if (mix->ssm_a) CHECK(topos_tensor_rank(mix->ssm_a) == 1 && topos_tensor_shape(mix->ssm_a)[0] == 4);
    CHECK(attn->wkv_a && attn->wk_b && attn->wo && !attn->ssm_in && attn->gate_inp && !mix->gate_inp);
    /* the cache: the attention block's latent rows (64 + 16), per mixer two
     * copies of 3 rows of q | k | v and the [32, 4, 32] state */
    const uint64_t kv = 2 * (uint64_t)(64 + 16) * 32 * 4, state = 3 * 2 * (3 * 384 + 32 * 128) * 4;
    lt_check_recurrent(&m, &s, kv + state);
  }
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
  lt_spec q = lt_default_spec();
  q.arch = "kimi-linear";
  q.layers = 2;
  q.conv_blocks = "KA";
  q.kv_heads = 1, q.rope_dim = 16, q.mla_kv_rank = 64, q.mla_nope = 32, q.mla_v = 48;
  lt_compare_plain_caches_of(&q, 4e-2); /* measured 2.6e-2 */
}

TEST(llama_kimi_linear_bad_files) {
  lt_spec s = kimi_spec();
  s.layers = 3;
  lt_spec t = s;
  t.skip_tensor = "blk.1.ssm_conv1d_k.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.ssm_conv1d_k.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.ssm_conv1d_v.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ssm_conv1d_v.weight has ne {36, 1, 128, 1}");
  t = s;
  t.bad_tensor = "blk.0.ssm_f_b.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ssm_f_b.weight has ne {64, 128}, the metadata implies {32, 128}");
  t = s;
  t.skip_tensor = "blk.1.ssm_a";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.ssm_a is missing");
}
