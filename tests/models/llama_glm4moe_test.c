/* glm4moe files (GLM-4.5, GLM-4.5-Air, GLM-4.6, GLM-4.7) and the
 * group-limited routing of DeepSeek-V3 files, against the tests' plain
 * forward:
 *   glm4moe   NEOX rotation of half of each head, q / k / v biases, the
 *             feed-forward's norm named post_attention_norm, q and k norms
 *             where the file has them (GLM-4.5) or not (Air), a dense first
 *             block, then mixtures: a sigmoid router (the default without
 *             expert_gating_func) choosing with exp_probs_b, weights
 *             renormalised and scaled, a shared expert; the last block a
 *             multi-token-prediction block the trunk skips
 *   groups    expert_group_count / expert_group_used_count: each group
 *             scored by its two best, experts chosen from the best groups
 * decoding equal to the full-context forward bit for bit at 1-3 threads;
 * quantized weights through both caches; refusals. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec lg_f32(void) {
  lt_spec s = lt_v3_spec("glm4moe");
  s.sigmoid_router = 0; /* glm4moe's default without the key: the sigmoid */
  s.rope_dim = 32;      /* half of each 64-wide head, as the converter writes partial_rotary_factor 0.5 */
  s.biases = 1;
  return s;
}

TEST(llama_glm4moe_files) {
  lt_spec s = lg_f32();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "glm4moe") == 0 && c->rope_neox == 1 && c->rope_dim == 32 && c->head_dim == 64);
    CHECK(c->n_experts == 8 && c->n_experts_used == 2 && c->ff_expert == 64 && c->ff_shared == 64);
    CHECK(c->experts_sigmoid == 1 && c->experts_norm == 1 && c->experts_scale == 2.5f && c->n_dense_lead == 1);
    CHECK(c->expert_groups == 0 && c->n_nextn_layers == 0);
    const tp_llama_layer *L0 = &m.model->layers[0], *L1 = &m.model->layers[1];
    CHECK(L0->ffn_norm && L0->w_gate && !L0->gate_inp && L0->bq && L0->bk && L0->bv);
    CHECK(L1->gate_inp && L1->exp_probs_b && L1->w_gate && L1->w_down && !L1->q_norm && !L1->k_norm);
  }
  lt_close(&m);
  /* the same file through a softmax router: far off */
  lt_spec without = s;
  without.sigmoid_router = -1;
  lt_check_spec_variant(&s, &without);
  /* GLM-4.5's q and k norms (per head) */
  s.glm_qk_norm = 1;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(m.model->layers[2].q_norm && m.model->layers[2].k_norm);
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  /* GLM-4.5V's M-RoPE sections with the fourth empty: text turns as without them */
  const int32_t sections[4] = {8, 4, 4, 0};
  memcpy(s.rope_sections, sections, sizeof sections);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  /* a fourth section: its pairs (14 and 15 of 16) see position 0 and keep angle 0 */
  const int32_t fourth[4] = {8, 4, 2, 2};
  memcpy(s.rope_sections, fourth, sizeof fourth);
  s.rope_base = 10.0f; /* the last pairs turn ~0.1 rad per position: keeping them still shows */
  lt_spec turning = s; /* the plain forward turning every pair */
  memset(turning.rope_sections, 0, sizeof turning.rope_sections);
  lt_check_spec_variant(&s, &turning);
  memset(s.rope_sections, 0, sizeof s.rope_sections);
  s.rope_base = 0;
  /* expert_gating_func 1 in the file: the softmax router */
  s.sigmoid_router = -1;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->experts_sigmoid == 0);
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
}

/* GLM-4.5's files end with a multi-token-prediction block: the trunk is the blocks before it */
TEST(llama_glm4moe_nextn_block_is_not_the_trunk) {
  lt_spec s = lg_f32();
  s.nextn = 1;
  s.extra_tensor = "blk.2.nextn.eh_proj.weight";
  lt_spec trunk = s;
  trunk.layers = 2;
  trunk.nextn = 0;
  trunk.extra_tensor = NULL;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_layers == 2 && c->n_nextn_layers == 1);
    lt_compare_plain_model(&m, &trunk, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
}

/* quantized weights through both caches (the graph quantizes activations;
 * every expert used, so rounding cannot move the choice: see
 * llama_experts_quantized_both_caches) */
TEST(llama_glm4moe_quantized_both_caches) {
  LT_NATIVE_ONLY();
  lt_spec s = lg_f32();
  const topos_dtype t[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q8_0, TOPOS_Q4_0,
                                   TOPOS_Q6_K, TOPOS_Q4_0, TOPOS_Q8_0, TOPOS_BF16};
  memcpy(s.types, t, sizeof t);
  s.experts = 3;
  s.experts_used = 3;
  s.glm_qk_norm = 1;
  lt_compare_plain_caches_of(&s, 3e-2);
  lt_check_decode_of(&s);
}

/* DeepSeek-V3's routing (8 experts in 4 groups, the best 2 groups), here in
 * a glm4moe file (llama_deepseek2_expert_groups: a deepseek2 one), against
 * the plain forward, and far from routing without groups */
TEST(llama_expert_groups) {
  lt_spec g = lg_f32();
  g.expert_groups = 4;
  g.expert_groups_used = 2;
  lt_model m;
  CHECK_OK(lt_open(&g, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->expert_groups == 4 && c->expert_groups_used == 2);
    lt_check_decode(&m, g.vocab);
  }
  lt_close(&m);
  lt_spec without = g;
  without.expert_groups = 0;
  without.expert_groups_used = 0;
  lt_check_spec_variant(&g, &without);
  /* one group used: every choice within the best-scored group */
  g.expert_groups_used = 1;
  lt_compare_plain(&g, TOPOS_NUMERICS_EXACT, 1e-5);
  /* all groups used: the plain ranking (groups read, nothing limited) */
  g.expert_groups_used = 4;
  CHECK_OK(lt_open(&g, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->expert_groups == 0);
  lt_close(&m);
}

TEST(llama_glm4moe_bad_files_are_refused) {
  lt_spec s = lg_f32();
  lt_spec t = s;
  t.skip_tensor = "blk.1.post_attention_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.post_attention_norm.weight is missing");
  t = s;
  t.skip_tensor = "blk.2.ffn_up_shexp.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.2.ffn_up_shexp.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.ffn_gate.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ffn_gate.weight has ne {288, 320}");
  t = s;
  t.expert_groups = 3; /* 8 experts do not split into 3 groups */
  t.expert_groups_used = 1;
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "8 experts in 3 groups with 1 used cannot give 2 experts");
  t = s;
  t.expert_groups = 4;
  t.expert_groups_used = 1;
  t.experts_used = 3; /* one group of 2 cannot hold 3 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "8 experts in 4 groups with 1 used cannot give 3 experts");
  t = s;
  const int32_t sections[4] = {8, 4, 40, 0}; /* past the 32 rotated dimensions */
  memcpy(t.rope_sections, sections, sizeof sections);
  lt_expect_refused(t, TOPOS_ERR_RANGE, "glm4moe.rope.dimension_sections[2] = 40 is outside 0 .. 32");
  t = s;
  t.experts = 0;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "glm4moe files are mixtures of experts");
}
