/* granitehybrid (Granite 4.0-H) files against the tests' plain forward:
 * Mamba-2 mixers (head_count_kv 0 in the per-block array, ssm_* tensors)
 * between granite's attention blocks, no rotation (rope.scaling.finetuned
 * false), granite's scales, dense or mixture feed-forwards. The mixers'
 * convolution rows and scan state are carried from chunk to chunk, so
 * decoding equals the full context bit for bit, chunks after a state agree
 * with the plain forward, and a reset forgets the state. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

static lt_spec hybrid_spec(void) {
  lt_spec s = lt_f32_spec();
  s.arch = "granitehybrid";
  s.layers = 5;
  s.conv_blocks = "MMAMA";
  s.logit_scale = 4.0f;
  s.residual_scale = 0.5f;
  s.embedding_scale = 2.0f;
  s.attention_scale = 0.125f;
  s.nope_all = 1;
  return s;
}

TEST(llama_granitehybrid_files) {
  lt_spec s = hybrid_spec();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ssm_conv == 4 && c->ssm_inner == 128 && c->ssm_state == 16 && c->ssm_heads == 8 && c->ssm_groups == 2);
    CHECK(c->n_ssm_layers == 3 && c->n_conv_layers == 0 && c->n_kv_heads == 2 && c->n_nope_layers == 5);
    const tp_llama_layer *mix = &m.model->layers[1], *attn = &m.model->layers[2];
    CHECK(mix->ssm_in && mix->ssm_taps && mix->ssm_conv_b && mix->ssm_a && mix->ssm_norm && !mix->wq && !mix->wo);
    CHECK(!attn->ssm_in && attn->wq && attn->wo && attn->w_gate && mix->w_gate);
    if (mix->ssm_taps) { /* tap j of every channel one row: the file's [CD, taps] transposed */
      const int64_t *sh = topos_tensor_shape(mix->ssm_taps);
      CHECK(sh[0] == 4 && sh[1] == LT_SSM_CD);
    }
    /* the cache holds the two attention blocks' keys and values, and per
     * mixer two copies of 3 convolution rows and the [16, 8, 16] state */
    const uint64_t kv = 2 * 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4;
    const uint64_t state = 3 * 2 * (3 * LT_SSM_CD + LT_SSM_STATE * LT_SSM_INNER) * 4;
    lt_check_recurrent(&m, &s, kv + state);
  }
  lt_close(&m);
  /* the plain forward with the state and the convolution forgetting the
   * earlier tokens: far off; decoding is the full context, bitwise */
  lt_spec without = s;
  without.plain_without = "ssm history";
  lt_check_spec_variant(&s, &without);
  /* quantized products, f32 and f16 caches: measured 3.04e-2 (the other
   * architectures' 2.0-2.2e-2): the mixer's gate, group norm and decays
   * exp(dt A) carry the quantized activations' error further */
  lt_spec q = lt_default_spec();
  q.arch = "granitehybrid";
  q.layers = 2;
  q.conv_blocks = "MA";
  q.logit_scale = 4.0f;
  q.nope_all = 1;
  lt_compare_plain_caches_of(&q, 4e-2);
}

/* Granite 4.0-H Tiny's form: mixtures with a shared expert after both kinds of block */
TEST(llama_granitehybrid_experts_files) {
  lt_spec s = hybrid_spec();
  s.layers = 4;
  s.conv_blocks = "MAMM";
  s.experts = 8;
  s.experts_used = 2;
  s.ff_shexp = 96;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_ssm_layers == 3 && c->n_experts == 8 && c->experts_norm == 1 && c->ff_shared == 96);
    CHECK(m.model->layers[0].ssm_in && m.model->layers[0].gate_inp && m.model->layers[1].gate_inp);
  }
  lt_close(&m);
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
}

TEST(llama_granitehybrid_bad_files) {
  lt_spec s = hybrid_spec();
  s.layers = 3;
  s.conv_blocks = "MAM";
  lt_spec t = s;
  t.skip_tensor = "blk.2.ssm_in.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.2.ssm_in.weight is missing");
  t = s;
  t.skip_tensor = "blk.0.ssm_a";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ssm_a is missing");
  t = s;
  t.bad_tensor = "blk.0.ssm_conv1d.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ssm_conv1d.weight has ne {36, 192}, the metadata implies {4, 192}");
  t = s;
  t.bad_tensor = "blk.2.ssm_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.2.ssm_norm.weight has ne {96, 2}, the metadata implies {64, 2}");
  t = s;
  t.blocks_key = 4; /* head_count_kv lists 3 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "granitehybrid.attention.head_count_kv lists 3 blocks, block_count is 4");
  /* a mixer's tensors in a file whose blocks are all attention: not the graph topos runs */
  t = s;
  t.skip_tensor = NULL;
  t.conv_blocks = NULL;
  lt_model m;
  CHECK_STATUS(lt_open(&t, &m), TOPOS_OK);
  if (m.model) CHECK(topos_llama_config_of(m.model)->n_ssm_layers == 0);
  lt_close(&m);
}
