/* hunyuan-dense (Hunyuan 0.5B - 7B) and hunyuan-moe (Hunyuan-A13B) files
 * against the tests' plain forward: NEOX rotation, then per-head q and k
 * norms (after the rotation, not before as qwen3's), rope.scaling.alpha
 * raising the base by alpha^(hd / (hd - 2)); an expert_count of 1 is a
 * dense file; the mixtures renormalise a softmax router's weights and add a
 * shared expert of expert_shared_feed_forward_length (absent:
 * feed_forward_length); decoding equal to the full context bit for bit. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

TEST(llama_hunyuan_dense_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "hunyuan-dense";
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->qk_norm_after_rope == 1 && c->rope_neox == 1 && c->n_experts == 0);
    CHECK(m.model->layers[1].q_norm && m.model->layers[1].k_norm);
  }
  lt_close(&m);
  /* the plain forward norming before the rotation (qwen3's order): far off */
  lt_spec without = s;
  without.arch = "qwen3";
  lt_check_spec_variant(&s, &without);
  /* NTK alpha: base 10000 x 50^(64 / 62) */
  s.rope_alpha = 50.0f;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(fabsf(topos_llama_config_of(m.model)->rope_base - 10000.0f * powf(50.0f, 64.0f / 62.0f)) < 1.0f);
  lt_close(&m);
  without = s;
  without.rope_alpha = 0;
  lt_check_spec_variant(&s, &without);
  /* expert_count 1: dense, as llama.cpp reads these files; 2 is refused (hunyuan-moe's) */
  s.expert_count_only = 1;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    CHECK(topos_llama_config_of(m.model)->n_experts == 0);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  s.expert_count_only = 2;
  lt_expect_refused(s, TOPOS_UNSUPPORTED, "hunyuan-dense files with experts (expert_count 2) are not supported");
}

TEST(llama_hunyuan_moe_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "hunyuan-moe";
  s.experts = 4;
  s.experts_used = 2;
  s.ff = 64; /* the experts' width, and the shared expert's without the key */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ff_expert == 64 && c->ff_shared == 64 && c->experts_norm == 1 && c->experts_sigmoid == 0);
    CHECK(m.model->layers[0].gate_inp && m.model->layers[0].w_gate && m.model->layers[0].q_norm);
  }
  lt_close(&m);
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
  s.ff_shexp = 96;
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_spec q = lt_default_spec(); /* quantized, every expert used */
  q.arch = "hunyuan-moe";
  q.experts = 3;
  q.experts_used = 3;
  q.ff = 128;
  lt_compare_plain_caches_of(&q, 3e-2);
}
