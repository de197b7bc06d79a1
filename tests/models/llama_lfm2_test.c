/* lfm2 (LFM2 350M - 2.6B) and lfm2moe (LFM2-8B-A1B) files against the
 * tests' plain forward: short-convolution blocks (head_count_kv 0 in the
 * per-block array) between qwen3-like attention blocks, the final norm named
 * token_embd_norm; the convolution's earlier rows carried from chunk to
 * chunk, so decoding equals the full context bit for bit, and chunks of any
 * length (shorter and longer than the taps) agree with the plain forward. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

/* LFM2's order of blocks in a small file: convolutions first, attention
 * between them */
static lt_spec lfm2_spec(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  s.layers = 5;
  s.conv_blocks = "CCACA";
  return s;
}

TEST(llama_lfm2_files) {
  lt_spec s = lfm2_spec("lfm2");
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->conv_len == 3 && c->n_conv_layers == 3 && c->n_kv_heads == 2 && c->qk_norm == 1 && c->rope_neox == 1);
    const tp_llama_layer *conv = &m.model->layers[1], *attn = &m.model->layers[2];
    CHECK(conv->conv_taps && conv->conv_in && conv->conv_out && !conv->wq && !conv->q_norm);
    CHECK(!attn->conv_taps && attn->wq && attn->q_norm && attn->k_norm);
    if (conv->conv_taps) { /* tap j of every channel one row: the file's [dim, taps] transposed */
      const int64_t *sh = topos_tensor_shape(conv->conv_taps);
      CHECK(sh[0] == 3 && sh[1] == s.dim);
    }
    /* the cache holds keys and values of the two attention blocks only, and two
     * f32 states of 2 rows per convolution; a reset forgets the convolutions' rows;
     * 3 tokens, then 9: a chunk after the state, against the plain forward */
    const uint64_t kv = 2 * 2 * (uint64_t)(c->n_kv_heads * c->head_dim) * 32 * 4, conv_state = 3 * 2 * 2 * 256 * 4;
    lt_check_recurrent(&m, &s, kv + conv_state);
  }
  lt_close(&m);
  /* the plain forward with the current row's tap only: far off (the
   * convolution mixes positions); decoding is the full context, bitwise */
  lt_spec without = s;
  without.plain_without = "conv history";
  lt_check_spec_variant(&s, &without);
  /* a sliding window on every attention block (attention.sliding_window) */
  s.swa = 4;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 4 && m.model->layers[2].windowed && m.model->layers[4].windowed);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  without = s;
  without.swa = 0;
  lt_check_spec_variant(&s, &without);
  /* quantized products, f32 and f16 caches */
  lt_spec q = lt_default_spec();
  q.arch = "lfm2";
  q.layers = 2;
  q.conv_blocks = "CA";
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_lfm2moe_files) {
  lt_spec s = lfm2_spec("lfm2moe");
  s.layers = 4;
  s.conv_blocks = "CACA";
  s.experts = 8;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.dense_lead = 1;
  s.sigmoid_router = 1;
  s.probs_bias = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_conv_layers == 2 && c->experts_sigmoid == 1 && c->experts_norm == 1 && c->n_dense_lead == 1);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[0].conv_taps && m.model->layers[1].gate_inp);
    CHECK(m.model->layers[2].conv_taps && m.model->layers[2].gate_inp);
    CHECK(m.model->layers[2].exp_probs_b != NULL);
  }
  lt_close(&m);
  lt_spec without = s;
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
}

TEST(llama_lfm2_bad_files) {
  lt_spec s = lfm2_spec("lfm2");
  s.layers = 3;
  s.conv_blocks = "CAC";
  lt_spec t = s;
  t.skip_tensor = "blk.2.shortconv.in_proj.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.2.shortconv.in_proj.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.shortconv.conv.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.shortconv.conv.weight has ne {35, 256}, the metadata implies {3, 256}");
  t = s;
  t.blocks_key = 4; /* head_count_kv lists 3 */
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "lfm2.attention.head_count_kv lists 3 blocks, block_count is 4");
  /* every block attention (no zero in head_count_kv) */
  t = s;
  t.conv_blocks = NULL;
  lt_model m;
  CHECK_OK(lt_open(&t, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->n_conv_layers == 0);
  lt_close(&m);
}
