/* llama4 files (Llama 4 Scout / Maverick) against the tests' plain forward:
 * three layers of four attend within chunks (attention.sliding_window; 4
 * here so that chunks end inside the tests' 12-token prompts, 8192 in the
 * real files) and rotate q and k, then L2-normalise them per head (not with 128
 * experts, as Maverick); the fourth rotates nothing and attends to every
 * key (with temperature tuning past 8191 tokens); mixtures on every
 * interleave_moe_layer_step-th block, routed by the logits, the chosen
 * experts reading their input times the logit's sigmoid, plus a shared
 * expert. Decoding equal to the full-context forward bit for bit at 1-3
 * threads; quantized weights through both caches; refusals. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec l4_f32(void) {
  lt_spec s = lt_f32_spec();
  s.arch = "llama4";
  s.layers = 4;
  s.experts = 4;
  s.experts_used = 1;
  s.ff_exp = 64;
  s.swa = 4; /* three chunks in the tests' 12 tokens */
  return s;
}

TEST(llama_llama4_files) {
  lt_spec s = l4_f32();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "llama4") == 0 && c->rope_neox == 0 && c->n_swa == 4 && c->swa_chunked == 1);
    CHECK(c->n_swa_layers == 3 && c->n_nope_layers == 1 && c->qk_l2_norm == 1 && c->experts_llama4 == 1);
    CHECK(c->attn_temp_scale == 0.1f && c->attn_temp_floor == 8192 && c->attn_temp_offset == 1);
    CHECK(c->ff_expert == 64 && c->ff_shared == 64 && c->experts_norm == 0);
    CHECK(m.model->layers[0].windowed && !m.model->layers[0].nope && !m.model->layers[3].windowed &&
          m.model->layers[3].nope);
    CHECK(m.model->layers[1].gate_inp && m.model->layers[1].w_gate && m.model->layers[1].w_down);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
  /* the plain forward with chunks of 6: far off */
  lt_spec without = s;
  without.swa = 6;
  lt_check_spec_variant(&s, &without);
  /* two experts per token, mixtures on every second block (the others dense) */
  s.experts_used = 2;
  s.moe_step = 2;
  s.experts_scale = 1.5f;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(!m.model->layers[0].gate_inp && m.model->layers[1].gate_inp && m.model->layers[3].gate_inp);
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  /* Maverick's 128 experts: no L2 norm (two blocks, both chunked and rotated, keep the file small) */
  s = l4_f32();
  s.layers = 2;
  s.experts = 128;
  s.ff_exp = 32;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->qk_l2_norm == 0);
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
}

/* chunked attention through the cache: prompts in pieces that cross chunk
 * boundaries, then decoding, equal to the full context's bits */
TEST(llama_llama4_chunks_across_prompt_pieces) {
  lt_spec s = l4_f32();
  s.swa = 5;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
}

/* quantized weights through both caches (every expert used: see
 * llama_experts_quantized_both_caches) */
TEST(llama_llama4_quantized_both_caches) {
  LT_NATIVE_ONLY();
  lt_spec s = l4_f32();
  const topos_dtype t[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q8_0, TOPOS_Q4_0,
                                   TOPOS_Q6_K, TOPOS_Q4_0, TOPOS_Q8_0, TOPOS_BF16};
  memcpy(s.types, t, sizeof t);
  s.experts = 2;
  s.experts_used = 2;
  lt_compare_plain_caches_of(&s, 3e-2);
}

TEST(llama_llama4_bad_files_are_refused) {
  lt_spec s = l4_f32();
  lt_spec t = s;
  t.experts = 0;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "llama4 files are mixtures of experts");
  t = s;
  t.skip_tensor = "blk.2.ffn_down_shexp.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.2.ffn_down_shexp.weight is missing");
  t = s;
  t.bad_tensor = "blk.1.ffn_gate_exps.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.1.ffn_gate_exps.weight has ne {288, 64, 4}");
}
