/* Mamba-2 files without a hybrid's attention layout, against the tests'
 * plain forward. falcon-h1 (Falcon-H1): every block's attention (rotated
 * as NEOX pairs) and a Mamba-2 mixer read the same norm and add to the
 * residual together, then the SwiGLU feed-forward through ffn_norm (named
 * without a suffix, as the converter writes it); every block keeps keys and
 * values and a mixer state. mamba2 (Mamba-2): mixers alone. States and
 * caches are carried chunk to chunk: decoding equals the full context bit
 * for bit. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec falcon_h1_spec(void) {
  lt_spec s = lt_f32_spec();
  s.arch = "falcon-h1";
  s.layers = 3;
  s.head_dim = 64;
  return s;
}

TEST(llama_falcon_h1_files) {
  lt_spec s = falcon_h1_spec();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 3 && c->n_kv_heads == 2 && c->rope_neox == 1 && c->n_nope_layers == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->ssm_in && L->ssm_norm && L->wq && L->wo && L->ffn_norm && L->w_gate && L->w_down);
    /* every block: keys and values, and a mixer's two states */
    const uint64_t kv = 3 * 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4;
    lt_check_recurrent(&m, &s, kv + 3 * 2 * (3 * LT_SSM_CD + LT_SSM_STATE * LT_SSM_INNER) * 4);
  }
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
  /* quantized products, f32 and f16 caches */
  lt_spec q = lt_default_spec();
  q.arch = "falcon-h1";
  q.head_dim = 64;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_falcon_h1_bad_files) {
  lt_spec s = falcon_h1_spec();
  s.layers = 2;
  lt_spec t = s;
  t.skip_tensor = "blk.1.ffn_norm";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.ffn_norm is missing");
  t = s;
  t.skip_tensor = "blk.0.ssm_in.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ssm_in.weight is missing");
  /* Falcon-H1-0.5B's blocks have no group norm: refused nowhere, read as absent */
  t = s;
  t.skip_tensor = "blk.0.ssm_norm.weight";
  lt_model m;
  CHECK_OK(lt_open(&t, &m));
  if (m.model) CHECK(m.model->layers[0].ssm_norm == NULL && m.model->layers[1].ssm_norm != NULL);
  lt_close(&m);
}

/* mamba2 (Mamba-2 130M ... 2.7B, Mamba-Codestral): every block a Mamba-2
 * mixer alone; head_count and feed_forward_length 0; no cache, only states */
TEST(llama_mamba2_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "mamba2";
  s.layers = 3;
  s.conv_blocks = "M";
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 3 && c->ff == 0 && c->n_heads == 1);
    CHECK(m.model->layers[2].ssm_in && !m.model->layers[2].wo && !m.model->layers[2].w_down);
    lt_check_recurrent(&m, &s, 3 * 2 * (3 * LT_SSM_CD + LT_SSM_STATE * LT_SSM_INNER) * 4); /* no cache */
  }
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
}

/* mamba (Mamba, Falcon-Mamba): every block a Mamba-1 mixer alone, each
 * channel its own head with a decay per state entry; dt, B and C RMS-normed
 * where ssm.dt_b_c_rms says (Falcon-Mamba) */
TEST(llama_mamba_files) {
  for (int rms = 0; rms < 2; ++rms) {
    lt_spec s = lt_f32_spec();
    s.arch = "mamba";
    s.layers = 3;
    s.conv_blocks = "M";
    s.ssm_rms = rms;
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK(c->n_ssm_layers == 3 && c->ssm_dt_rank == LT_SSM1_RANK && c->ssm_heads == LT_SSM_INNER);
      CHECK(c->ssm_dt_b_c_rms == rms && c->ssm_groups == 1);
      const tp_llama_layer *L = &m.model->layers[1];
      CHECK(L->ssm_x && L->ssm_dt && L->ssm_a && topos_tensor_shape(L->ssm_a)[1] == LT_SSM_STATE && !L->ssm_norm);
      lt_check_recurrent(&m, &s, 3 * 2 * (3 * LT_SSM_INNER + LT_SSM_STATE * LT_SSM_INNER) * 4);
    }
    lt_close(&m);
    lt_spec without = s;
    without.plain_without = "ssm history";
    lt_check_spec_variant(&s, &without);
  }
}

/* jamba (Jamba 1.5, Jamba Reasoning): Mamba-1 mixers (dt, B, C RMS-normed
 * with weights) where head_count_kv is 0, unrotated attention elsewhere,
 * every block's feed-forward a softmax-routed mixture where the file has a
 * router (every second block here), else dense */
TEST(llama_jamba_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "jamba";
  s.layers = 4;
  s.conv_blocks = "MAMM";
  s.experts = 8;
  s.experts_used = 2;
  s.moe_step = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 3 && c->ssm_dt_rank == LT_SSM1_RANK && c->n_kv_heads == 2 && c->n_nope_layers == 4);
    CHECK(c->n_experts == 8 && c->experts_norm == 0);
    const tp_llama_layer *L0 = &m.model->layers[0], *L1 = &m.model->layers[1], *L3 = &m.model->layers[3];
    CHECK(L0->ssm_x && L0->ssm_dt_norm && L0->ssm_b_norm && L0->ssm_c_norm && L0->w_gate && !L0->gate_inp);
    CHECK(L1->wq && L1->gate_inp && !L1->w_gate && L3->ssm_in && L3->gate_inp);
    const uint64_t kv = 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4;
    lt_check_recurrent(&m, &s, kv + 3 * 2 * (3 * LT_SSM_INNER + LT_SSM_STATE * LT_SSM_INNER) * 4);
  }
  lt_close(&m);
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
}
