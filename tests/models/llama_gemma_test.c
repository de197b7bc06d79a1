/* qwen3 and the Gemma files (gemma, gemma2, gemma3): what each adds to the
 * llama graph, against the tests' plain forward with f32 weights (the bound
 * is summation order's), decoding equal to the full-context forward bit for
 * bit, and quantized weights through both caches.
 *   qwen3   q and k RMS-normalised per head before the rotation
 *   gemma   embeddings times sqrt(dim), GELU of the gate, tied head
 *   gemma2  + post-norms on both branches, soft-capped scores and logits,
 *           a sliding window on even layers
 *   gemma3  + q and k norms, a window on five layers of six whose rotation
 *           has a base of its own (10000) and unscaled positions
 *   granite embedding, residual, attention and logit scales from the file
 *   smollm3 every fourth layer unrotated (NoPE)
 *   mistral3 q times 1 + s ln(floor(p / original context) + 1) (Llama 4's
 *           temperature), YaRN's beta and log-multiplier keys
 *   exaone4 olmo2's layout with per-head q and k norms; in the 32B files (64
 *           blocks) a window on the layers the file lists, the others unrotated
 *   olmo2   no pre-norms (the branches read the residual), q and k norms over
 *           whole rows, post-norms; OLMo 3's window on three layers of four,
 *           whose rotation is unscaled while the full layers' is YaRN */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' norms and window flags */

static lt_spec lg_f32(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  if (strncmp(arch, "gemma", 5) == 0) s.tied = 1; /* as their converters write them */
  return s;
}

TEST(llama_qwen3_files) {
  lt_spec s = lg_f32("qwen3"), without = s;
  without.arch = "qwen2"; /* the plain forward without the q and k norms */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "qwen3") == 0);
    CHECK(c->qk_norm == 1 && c->rope_neox == 1 && c->post_norms == 0 && c->ffn_gelu == 0);
    CHECK(m.model->layers[1].q_norm && m.model->layers[1].k_norm && !m.model->layers[1].bq);
    lt_check_variant(&m, &s, &without);
  }
  lt_close(&m);
  /* quantized, GQA, heads wider than dim / heads (Qwen3's are), both caches */
  lt_spec q = lt_default_spec();
  q.arch = "qwen3";
  q.head_dim = 128;
  lt_compare_plain_caches_of(&q, 3e-2);
  lt_spec t = s;
  t.layers = 1;
  t.skip_tensor = "blk.0.attn_k_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.attn_k_norm.weight is missing");
  t = s;
  t.layers = 1;
  t.bad_tensor = "blk.0.attn_q_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_q_norm.weight has ne {96}, the metadata implies {64}");
}

TEST(llama_gemma_files) {
  lt_spec s = lg_f32("gemma"), without = s;
  without.arch = "qwen2"; /* NEOX too, but SiLU and no embedding scale */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ffn_gelu == 1 && c->rope_neox == 1 && c->tied_output == 1 && c->qk_norm == 0);
    CHECK(c->embd_scale == sqrtf(256.0f) && c->attn_scale == 1.0f / sqrtf(64.0f));
    CHECK(c->attn_softcap == 0.0f && c->final_softcap == 0.0f && c->n_swa == 0);
    lt_check_variant(&m, &s, &without);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "gemma";
  q.tied = 1;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* gemma2: a window of 5 on layer 0 (layer 1 sees every key), soft caps
 * small enough for tanh to bend random-weight scores and logits. Without
 * the window, or with other caps, the plain forward is far off; chunks the
 * window cuts into run plans whose windowed layers have masks of their own. */
TEST(llama_gemma2_files) {
  lt_spec s = lg_f32("gemma2"), unwindowed = s, capped = s;
  s.swa = 5;
  s.attn_softcap = 0.5f;
  s.final_softcap = 2.0f;
  unwindowed.attn_softcap = 0.5f, unwindowed.final_softcap = 2.0f; /* window: the default 4096 */
  capped.swa = 5; /* the default caps, 50 and 30 */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->post_norms == 1 && c->ffn_gelu == 1 && c->qk_norm == 0);
    CHECK(c->attn_softcap == 0.5f && c->final_softcap == 2.0f);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 1 && c->rope_base_swa == 0.0f);
    CHECK(m.model->layers[0].windowed && !m.model->layers[1].windowed);
    CHECK(m.model->layers[0].post_attn_norm && m.model->layers[1].post_ffn_norm);
    lt_check_variant(&m, &s, &unwindowed);
    lt_check_variant(&m, &s, &capped);
    lt_compare_plain_caches(&m, &s, 2e-3);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  /* the keys' defaults, as llama.cpp reads them */
  lt_spec d = lg_f32("gemma2");
  d.layers = 1;
  CHECK_OK(lt_open(&d, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 4096 && c->attn_softcap == 50.0f && c->final_softcap == 30.0f);
    CHECK_EQ_INT(c->n_swa_layers, 1);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "gemma2";
  q.tied = 1;
  q.swa = 5;
  lt_compare_plain_caches_of(&q, 3e-2);
  /* the 27B files (46 blocks) scale q by 1 / sqrt(dim / heads), not by the
   * head width (their query_pre_attn_scalar; llama.cpp tells them by the
   * block count): heads of 16 over a dim of 64 with 2 heads */
  lt_spec big = lg_f32("gemma2");
  big.dim = 64, big.heads = 2, big.kv_heads = 1, big.head_dim = 16, big.ff = 64, big.layers = 46;
  for (int blocks = 45; blocks <= 46; ++blocks) {
    big.layers = blocks;
    CHECK_OK(lt_open(&big, &m));
    if (m.model)
      CHECK(topos_llama_config_of(m.model)->attn_scale == (blocks == 46 ? 1.0f / sqrtf(32.0f) : 0.25f));
    lt_close(&m);
  }
  lt_spec t = d;
  t.skip_tensor = "blk.0.post_ffw_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.post_ffw_norm.weight is missing");
}

/* gemma3: q and k norms, post-norms, a window of 5 on the layers the
 * pattern (here 2: layer 0 of 2) leaves windowed, whose rotation takes base
 * 10000 and unscaled positions while the full layers take the file's base
 * (1e6) and its linear scaling (factor 8, as the 4B and larger files). */
TEST(llama_gemma3_files) {
  lt_spec s = lg_f32("gemma3");
  s.swa = 5;
  s.swa_pattern = 2;
  s.rope_base = 1000000.0f;
  s.rope_scale = 8.0f;
  s.final_softcap = 0.0f;
  lt_spec same_base = s; /* the plain forward with the windowed layers' base 1e6 */
  same_base.rope_base_swa = 1000000.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->post_norms == 1 && c->ffn_gelu == 1 && c->attn_softcap == 0.0f);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 1 && c->rope_base_swa == 10000.0f);
    CHECK(c->rope_freq_scale == 0.125f);
    lt_check_variant(&m, &s, &same_base);
    lt_compare_plain_caches(&m, &s, 2e-3);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  /* rope.freq_base_swa where the file states it; final soft-capping where it asks */
  lt_spec b = s;
  b.rope_base_swa = 500.0f;
  b.final_softcap = 2.0f;
  CHECK_OK(lt_open(&b, &m));
  if (m.model) {
    CHECK(topos_llama_config_of(m.model)->rope_base_swa == 500.0f);
    lt_check_variant(&m, &b, &s);
  }
  lt_close(&m);
  /* no window key: no window and one rope base; the default pattern of 6
   * leaves both of 2 layers windowed (one mask set for all: phi3's plans) */
  lt_spec n = lg_f32("gemma3");
  CHECK_OK(lt_open(&n, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 0 && c->n_swa_layers == 0 && c->rope_base_swa == 0.0f);
    lt_compare_plain_model(&m, &n, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  lt_spec all = lg_f32("gemma3");
  all.swa = 5;
  CHECK_OK(lt_open(&all, &m));
  if (m.model) {
    CHECK_EQ_INT(topos_llama_config_of(m.model)->n_swa_layers, 2);
    lt_check_variant(&m, &all, &n);
    lt_check_window_chunks(&m, &all);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "gemma3";
  q.tied = 1;
  q.swa = 5;
  q.swa_pattern = 2;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_granite_files) {
  lt_spec s = lg_f32("granite"), plain = s;
  s.residual_scale = 0.22f, s.embedding_scale = 12.0f, s.attention_scale = 0.0078125f, s.logit_scale = 8.0f;
  plain.logit_scale = 8.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->residual_scale == 0.22f && c->embd_scale == 12.0f && c->attn_scale == 0.0078125f && c->logit_scale == 8.0f);
    CHECK(c->rope_neox == 0 && c->n_nope_layers == 0);
    lt_check_variant(&m, &s, &plain);
  }
  lt_close(&m);
  lt_spec n = s; /* rope.scaling.finetuned false: no layer rotates */
  n.nope_all = 1;
  CHECK_OK(lt_open(&n, &m));
  if (m.model) {
    CHECK_EQ_INT(topos_llama_config_of(m.model)->n_nope_layers, 2);
    lt_check_variant(&m, &n, &s);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "granite";
  q.residual_scale = 0.22f, q.embedding_scale = 12.0f, q.logit_scale = 8.0f;
  lt_compare_plain_caches_of(&q, 3e-2);
  lt_spec t = s; /* llama.cpp requires logit_scale too */
  t.logit_scale = 0.0f;
  t.layers = 1;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "required key granite.logit_scale is missing");
}

/* smollm3: layers 3, 7, ... (every fourth) leave q and k unrotated; four
 * layers so one of them does. */
TEST(llama_smollm3_files) {
  lt_spec s = lt_f32_spec(), rotated = s;
  s.arch = "smollm3";
  s.layers = 4;
  rotated.layers = 4; /* a llama file's plain forward: every layer rotates */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    CHECK_EQ_INT(topos_llama_config_of(m.model)->n_nope_layers, 1);
    CHECK(m.model->layers[3].nope && !m.model->layers[2].nope);
    lt_check_variant(&m, &s, &rotated);
  }
  lt_close(&m);
}

TEST(llama_olmo2_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "olmo2";
  lt_spec plain = s; /* the plain forward with positions scaled, which the file does not ask */
  plain.rope_scale = 4.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 2 && c->pre_norms == 0 && c->post_norms == 1 && c->rope_neox == 1 && c->n_swa == 0);
    CHECK(!m.model->layers[0].attn_norm && !m.model->layers[1].ffn_norm && m.model->layers[1].post_ffn_norm);
    lt_check_variant(&m, &s, &plain);
  }
  lt_close(&m);
  /* OLMo 3: a window of 5 on layers 0-2 of 4, YaRN on layer 3 only */
  lt_spec w = lt_f32_spec();
  w.arch = "olmo2";
  w.layers = 4;
  w.swa = 5;
  w.rope_type = "yarn";
  w.rope_scale = 4.0f;
  w.rope_orig_ctx = 4096;
  w.rope_attn_factor = 1.2f;
  CHECK_OK(lt_open(&w, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 3 && c->rope_base_swa == 10000.0f && c->rope_mscale_swa == 1.0f);
    CHECK(m.model->layers[2].windowed && !m.model->layers[3].windowed);
    lt_check_variant(&m, &w, &s); /* s: no window, no YaRN */
    lt_check_window_chunks(&m, &w);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "olmo2";
  lt_compare_plain_caches_of(&q, 3e-2);
  lt_spec t = s;
  t.layers = 1;
  t.bad_tensor = "blk.0.attn_k_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_k_norm.weight has ne {160}, the metadata implies {128}");
}

TEST(llama_mistral3_files) {
  lt_spec s = lt_f32_spec(), cold = s;
  s.arch = "mistral3";
  s.attn_temp_scale = 0.5f;
  s.rope_orig_ctx = 4; /* the factor steps at positions 4 and 8 of the 12 */
  cold.arch = "mistral3";
  cold.rope_orig_ctx = 4;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->attn_temp_scale == 0.5f && c->rope_neox == 0 && c->rope_ctx_orig == 4);
    lt_check_variant(&m, &s, &cold);
  }
  lt_close(&m);
  /* YaRN with its beta and log-multiplier keys (Ministral 3: 32, 1, 1) against the defaults' */
  lt_spec y = lt_f32_spec();
  y.arch = "mistral3";
  y.rope_type = "yarn";
  y.rope_scale = 4.0f;
  y.rope_orig_ctx = 4096;
  y.yarn_beta_fast = 8.0f, y.yarn_beta_slow = 2.0f, y.yarn_log_mul = 1.0f;
  lt_spec plain_yarn = y;
  plain_yarn.yarn_beta_fast = plain_yarn.yarn_beta_slow = plain_yarn.yarn_log_mul = 0.0f;
  CHECK_OK(lt_open(&y, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->rope_yarn_low == 15.0f && c->rope_yarn_high == 21.0f && fabsf(c->rope_mscale - 1.0f) < 1e-6f);
    lt_check_variant(&m, &y, &plain_yarn);
  }
  lt_close(&m);
  lt_spec q = lt_default_spec();
  q.arch = "mistral3";
  q.attn_temp_scale = 0.5f;
  q.rope_orig_ctx = 4;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* EXAONE 4: 30-block files have no window (even where a key says one); the
 * 64-block ones window the layers attention.sliding_window_pattern lists
 * (an array of flags, "LLLG") and leave the full layers unrotated. */
TEST(llama_exaone4_files) {
  lt_spec s = lt_f32_spec(), scaled = s;
  s.arch = "exaone4";
  scaled.arch = "exaone4";
  scaled.rope_scale = 4.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->pre_norms == 0 && c->post_norms == 1 && c->n_swa == 0 && c->n_nope_layers == 0);
    lt_check_variant(&m, &s, &scaled);
  }
  lt_close(&m);
  lt_spec k = s; /* a window key on a small file: no window, as llama.cpp */
  k.swa = 5;
  k.swa_list = "LLLG";
  CHECK_OK(lt_open(&k, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->n_swa == 0 && topos_llama_config_of(m.model)->n_swa_layers == 0);
  lt_close(&m);
  /* 64 small blocks: windowed layers listed LLLG, the G ones unrotated */
  lt_spec b = lt_f32_spec();
  b.arch = "exaone4";
  b.dim = 64, b.heads = 2, b.kv_heads = 1, b.ff = 64, b.layers = 64;
  b.swa = 5;
  b.swa_list = "LLLG";
  CHECK_OK(lt_open(&b, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 48 && c->n_nope_layers == 16);
    CHECK(m.model->layers[2].windowed && !m.model->layers[3].windowed && m.model->layers[3].nope);
    lt_compare_plain_model(&m, &b, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  lt_spec bad = b; /* the list must cover every layer */
  bad.layers = 63;
  bad.blocks_key = 64;
  lt_expect_refused(bad, TOPOS_ERR_SHAPE, "attention.sliding_window_pattern lists 63 layers, the file has 64");
}

/* OLMo 3's converter writes the pattern as a list too */
TEST(llama_olmo2_window_list) {
  lt_spec w = lt_f32_spec(), every_fourth = w;
  w.arch = "olmo2";
  w.layers = 4;
  w.swa = 5;
  w.swa_list = "GLLL"; /* not the period's LLLG */
  every_fourth = w;
  every_fourth.swa_list = NULL;
  lt_model m;
  CHECK_OK(lt_open(&w, &m));
  if (m.model) {
    CHECK(!m.model->layers[0].windowed && m.model->layers[3].windowed);
    lt_check_variant(&m, &w, &every_fourth);
  }
  lt_close(&m);
}
