/* nemotron_h (Nemotron-H, NVIDIA Nemotron Nano 2) files against the tests'
 * plain forward: every block one residual branch through its one norm, a
 * Mamba-2 mixer (head_count_kv and feed_forward_length 0 in their per-block
 * arrays), unrotated attention (kv heads) or a ReLU-squared feed-forward
 * (a width); the RMS epsilon under attention.layer_norm_epsilon. Only the
 * attention blocks keep keys and values; the mixers' state is carried chunk
 * to chunk, so decoding equals the full context bit for bit. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec nemotron_h_spec(void) {
  lt_spec s = lt_f32_spec();
  s.arch = "nemotron_h";
  s.layers = 6;
  s.conv_blocks = "MFMAFM";
  s.head_dim = 64;
  return s;
}

TEST(llama_nemotron_h_files) {
  lt_spec s = nemotron_h_spec();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 3 && c->n_ffn_layers == 2 && c->ff == s.ff && c->n_kv_heads == 2);
    CHECK(c->ffn_relu2 == 1 && c->n_nope_layers == 6 && c->layer_norm == 0);
    const tp_llama_layer *mix = &m.model->layers[0], *ffn = &m.model->layers[1], *attn = &m.model->layers[3];
    CHECK(mix->ssm_in && !mix->w_up && !mix->ffn_norm && !mix->wq);
    CHECK(ffn->ffn_only && ffn->w_up && ffn->w_down && !ffn->w_gate && !ffn->ffn_norm && !ffn->wq && !ffn->ssm_in);
    CHECK(attn->wq && attn->wo && !attn->w_up && !attn->ffn_norm && !attn->ffn_only);
    /* the cache: one attention block's keys and values, three mixers' states */
    const uint64_t kv = 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4;
    lt_check_recurrent(&m, &s, kv + 3 * 2 * (3 * LT_SSM_CD + LT_SSM_STATE * LT_SSM_INNER) * 4);
  }
  lt_close(&m);
  /* the plain forward with GELU for ReLU squared: far off; decoding is the full context */
  lt_spec without = s;
  without.plain_without = "relu2";
  lt_check_spec_variant(&s, &without);
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
  /* quantized products, f32 and f16 caches (measured 2.2e-2) */
  lt_spec q = lt_default_spec();
  q.arch = "nemotron_h";
  q.layers = 3;
  q.conv_blocks = "MAF";
  q.head_dim = 64;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_nemotron_h_bad_files) {
  lt_spec s = nemotron_h_spec();
  s.layers = 3;
  s.conv_blocks = "MAF";
  lt_spec t = s;
  t.skip_tensor = "blk.2.ffn_up.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.2.ffn_up.weight is missing");
  t = s;
  t.skip_tensor = "blk.0.ssm_out.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ssm_out.weight is missing");
  t = s;
  t.blocks_key = 4; /* the per-block arrays list 3 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "nemotron_h.attention.head_count_kv lists 3 blocks, block_count is 4");
}

/* nemotron_h_moe (Nemotron 3 Nano): the feed-forward blocks are mixtures of
 * gateless ReLU-squared experts, 2 of 8 chosen by a sigmoid router with
 * exp_probs_b, renormalised and times 2.5, plus a shared expert */
TEST(llama_nemotron_h_moe_files) {
  lt_spec s = nemotron_h_spec();
  s.arch = "nemotron_h_moe";
  s.layers = 5;
  s.conv_blocks = "MFAFM";
  s.experts = 8;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.experts_shared = 1;
  s.ff_shexp = 96;
  s.probs_bias = 1;
  s.weights_norm = 1;
  s.experts_scale = 2.5f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 2 && c->n_ffn_layers == 2 && c->n_experts == 8 && c->ff_expert == 64);
    CHECK(c->ff_shared == 96 && c->experts_sigmoid == 1 && c->experts_norm == 1 && c->experts_scale == 2.5f);
    const tp_llama_layer *ffn = &m.model->layers[1];
    CHECK(ffn->ffn_only && ffn->gate_inp && ffn->up_exps && !ffn->gate_exps && ffn->w_up && !ffn->w_gate);
    CHECK(ffn->exp_probs_b && !m.model->layers[0].gate_inp && !m.model->layers[2].gate_inp);
  }
  lt_close(&m);
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
}

/* Nemotron 3 Super's latent mixtures: the routed experts read and write a
 * latent of moe_latent_size (ffn_latent_down before, ffn_latent_up after);
 * the router and the shared expert read the full row */
TEST(llama_nemotron_h_moe_latent_files) {
  lt_spec s = nemotron_h_spec();
  s.arch = "nemotron_h_moe";
  s.layers = 3;
  s.conv_blocks = "MFA";
  s.experts = 8, s.experts_used = 2, s.ff_exp = 64, s.experts_shared = 1, s.ff_shexp = 96;
  s.probs_bias = 1, s.weights_norm = 1, s.experts_scale = 2.5f;
  s.moe_latent = 96;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    const tp_llama_layer *ffn = &m.model->layers[1];
    CHECK(c->moe_latent == 96 && ffn->latent_down && ffn->latent_up && !m.model->layers[2].latent_down);
    if (ffn->up_exps) CHECK(topos_tensor_shape(ffn->up_exps)[2] == 96); /* [experts, width, latent] */
  }
  lt_close(&m);
  /* routed to one expert instead of two: far off */
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
  lt_spec t = s;
  t.skip_tensor = "blk.1.ffn_latent_up.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.1.ffn_latent_up.weight is missing");
}
