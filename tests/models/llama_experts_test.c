/* Mixtures of experts: each architecture's files against the tests' plain
 * forward (f32 weights: the bound is summation order's; quantized weights
 * through both caches), decoding equal to the full-context forward bit for
 * bit at 1-3 threads, and the refusals.
 *   qwen3moe   qwen3's attention; experts of expert_feed_forward_length
 *              (absent: feed_forward_length / experts used), weights
 *              renormalised over the chosen experts
 *   qwen2moe   qwen2's attention (q, k, v biases); the softmax's own weights;
 *              a shared expert behind a sigmoid gate
 *   olmoe      q and k norms over whole rows; the softmax's own weights
 *   granitemoe granite's scales; renormalised; a shared expert where
 *              expert_shared_feed_forward_length gives one
 *   llama      with expert_count: Mixtral (renormalised)
 *   ernie4_5-moe  a dense first block (leading_dense_block_count), a shared
 *              expert, exp_probs_b added to the probabilities to choose the
 *              experts but not to weigh them; ernie4_5 its dense form
 *   gpt-oss    attention sinks, a window on the even layers, biases, the
 *              router's logits ranking, a softmax over the chosen weighing,
 *              the experts' biases and clamped activation
 *   dbrx       LayerNorms without biases, attn_qkv clamped, renormalised,
 *              the feed-forward's norm named attn_output_norm
 *   mellum     qwen3moe's blocks, a window on the blocks its pattern lists
 *              (rotating with the file's base, positions unscaled)
 *   exaone-moe q and k norms, a window (the others unrotated), DeepSeek-style
 *              mixtures with their shared experts one feed-forward
 *   arctic     a dense feed-forward dim wide beside a mixture of the block's
 *              input through its own norm
 *   phimoe     llama.cpp's phi3 graph: RMS norms with biases, biases on the
 *              products and the head, LongRoPE, renormalised */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' expert tensors */

static lt_spec le_f32(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  s.experts = 4;
  s.experts_used = 2;
  if (strncmp(arch, "qwen", 4) == 0 || strncmp(arch, "ernie", 5) == 0)
    s.ff_exp = 64; /* the others' experts are feed_forward_length wide */
  else s.ff = 64;
  if (strcmp(arch, "qwen2moe") == 0) s.biases = 1;
  if (strcmp(arch, "granitemoe") == 0) s.logit_scale = 4.0f, s.residual_scale = 0.5f, s.ff_shexp = 96;
  return s;
}

/* f32 weights against the plain forward; `without` routes each token to
 * one expert, which the model's logits must be far from */
static void le_check(const lt_spec *s) {
  lt_spec without = *s;
  without.ff_exp = lt_ff_expert(s); /* the file's widths, whatever experts_used implies */
  without.experts_used = 1;
  lt_check_spec_variant(s, &without);
}

/* arch's quantized file: lt_default_spec's types, 2 experts of 64, both
 * used (see llama_experts_quantized_both_caches) */
static lt_spec le_quantized(const char *arch) {
  lt_spec q = lt_default_spec();
  q.arch = arch;
  q.experts = 2;
  q.experts_used = 2;
  q.ff = 64;
  return q;
}

/* s's file of one block without tensor: refused, naming it */
static void le_refused_without(const lt_spec *s, const char *tensor) {
  lt_spec bad = *s;
  bad.layers = 1;
  bad.skip_tensor = tensor;
  char want[96];
  snprintf(want, sizeof want, "%s is missing", tensor);
  lt_expect_refused(bad, TOPOS_ERR_NOT_FOUND, want);
}

TEST(llama_qwen3moe_files) {
  lt_spec s = le_f32("qwen3moe");
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "qwen3moe") == 0 && c->qk_norm == 1 && c->rope_neox == 1);
    CHECK(c->n_experts == 4 && c->n_experts_used == 2 && c->ff_expert == 64 && c->ff_shared == 0);
    CHECK(c->experts_norm == 1 && c->experts_scale == 1.0f && c->shared_gate == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->gate_inp && L->gate_exps && L->up_exps && L->down_exps && !L->w_gate && !L->w_down);
    CHECK(topos_tensor_rank(L->gate_exps) == 3 && topos_tensor_shape(L->gate_exps)[0] == 4 &&
          topos_tensor_shape(L->gate_exps)[1] == 64 && topos_tensor_shape(L->down_exps)[2] == 64);
  }
  lt_close(&m);
  le_check(&s);
  /* the bandwidth bound's bytes per token count the experts a token reads:
   * one more of them is 2 layers x 3 matrices of 256 x 64 f32 more */
  uint64_t bytes[2] = {0, 0};
  for (int k = 1; k <= 2; ++k) {
    lt_spec u = s;
    u.experts_used = k;
    CHECK_OK(lt_open(&u, &m));
    if (m.model) bytes[k - 1] = topos_llama_config_of(m.model)->weight_bytes;
    lt_close(&m);
  }
  CHECK_EQ_INT((long long)(bytes[1] - bytes[0]), 2LL * 3 * 256 * 64 * 4);
  /* no expert_feed_forward_length: feed_forward_length / experts used (320 / 2) */
  s.ff_exp = 0;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->ff_expert == 160);
  lt_close(&m);
  le_check(&s);
  /* expert_weights_scale multiplies the chosen experts' weights */
  s.experts_scale = 2.5f;
  le_check(&s);
}

TEST(llama_qwen2moe_olmoe_granitemoe_mixtral_files) {
  const char *archs[] = {"qwen2moe", "olmoe", "granitemoe", "llama"};
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; ++i) {
    lt_spec s = le_f32(archs[i]);
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      const int shared = i == 0 || i == 2, norm = i >= 2;
      CHECK_MSG(c->experts_norm == norm && c->shared_gate == (i == 0), "%s", archs[i]);
      CHECK_MSG(c->ff_shared == (i == 0 ? 320 : i == 2 ? 96 : 0), "%s: ff_shared %lld", archs[i],
                (long long)c->ff_shared);
      CHECK(c->qk_norm == (i == 1 ? 2 : 0));
      const tp_llama_layer *L = &m.model->layers[0];
      CHECK(!L->w_gate == !shared && !L->gate_inp_shexp == (i != 0) && L->gate_inp != NULL);
    }
    lt_close(&m);
    le_check(&s);
  }
}

/* quantized experts (the default spec's types), GQA, both caches. Every
 * expert is used: the graph quantizes activations and the plain forward
 * does not, a difference of ~1 % in the router's inputs, and a ranking
 * that close would route a token elsewhere (a step, not an error the bound
 * measures; the f32 files above check the choosing). */
TEST(llama_experts_quantized_both_caches) {
  LT_NATIVE_ONLY();
  const char *archs[] = {"qwen3moe", "qwen2moe"};
  for (size_t i = 0; i < 2; ++i) {
    lt_spec q = lt_default_spec();
    q.arch = archs[i];
    q.experts = 3;
    q.experts_used = 3;
    q.ff_exp = 128;
    q.biases = i == 1;
    lt_compare_plain_caches_of(&q, 3e-2);
  }
}

TEST(llama_experts_bad_files_are_refused) {
  lt_spec s = le_f32("qwen3moe");
  s.layers = 1;
  lt_spec t = s;
  t.experts = 0;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "qwen3moe files are mixtures of experts; qwen3moe.expert_count is missing");
  t = s;
  t.experts_used = 5;
  lt_expect_refused(t, TOPOS_ERR_RANGE, "qwen3moe.expert_used_count = 5 is more than expert_count 4");
  t = s;
  t.skip_tensor = "blk.0.ffn_up_exps.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ffn_up_exps.weight is missing");
  t = s;
  t.bad_tensor = "blk.0.ffn_down_exps.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ffn_down_exps.weight has ne {96, 256, 4}, the metadata implies {64, 256, 4}");
  t = s;
  t.bad_tensor = "blk.0.ffn_gate_inp.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ffn_gate_inp.weight has ne {288, 4}");
  t = le_f32("qwen2moe");
  t.layers = 1;
  t.skip_tensor = "blk.0.ffn_gate_inp_shexp.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ffn_gate_inp_shexp.weight is missing");
  /* a dense architecture's file with experts */
  t = s;
  t.arch = "qwen3";
  lt_expect_refused(t, TOPOS_UNSUPPORTED, "qwen3 files with experts (expert_count 4) are not supported");
}

TEST(llama_ernie4_5_files) {
  lt_spec s = le_f32("ernie4_5-moe");
  s.layers = 3;
  s.dense_lead = 1;
  s.moe_step = 1;
  s.ff_shexp = 96;
  s.probs_bias = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_dense_lead == 1 && c->moe_step == 1 && c->experts_norm == 1 && c->ff_shared == 96 && c->rope_neox == 0);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[0].w_gate && topos_tensor_shape(m.model->layers[0].w_gate)[0] == 320);
    CHECK(m.model->layers[1].gate_inp && m.model->layers[2].exp_probs_b && m.model->layers[2].w_gate);
  }
  lt_close(&m);
  le_check(&s);
  /* the bias moves the choice: the plain forward without it is far off */
  lt_spec without = s;
  without.probs_bias = 0;
  lt_check_spec_variant(&s, &without);
  /* the dense form */
  lt_spec d = lt_f32_spec();
  d.arch = "ernie4_5";
  d.biases = 2;
  CHECK_OK(lt_open(&d, &m));
  if (m.model) {
    lt_compare_plain_model(&m, &d, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, d.vocab);
  }
  lt_close(&m);
  lt_spec t = s;
  t.layers = 2;
  t.skip_tensor = "blk.0.ffn_gate.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ffn_gate.weight is missing");
}

/* gpt-oss: attention sinks, a window of 4 on the even layers, q / k / v /
 * output biases, post_attention_norm as the feed-forward's norm, the
 * router's logits (with its bias) ranking and a softmax over the chosen
 * ones weighing, the experts' biases and clamped activation. */
static lt_spec le_gpt_oss(void) {
  lt_spec s = le_f32("gpt-oss");
  s.ff_exp = 64;
  s.biases = 2;
  s.swa = 4;
  return s;
}

TEST(llama_gpt_oss_files) {
  lt_spec s = le_gpt_oss();
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(strcmp(c->arch, "gpt-oss") == 0 && c->rope_neox == 1 && c->experts_oai == 1 && c->attn_sinks == 1);
    CHECK(c->n_swa == 4 && c->n_swa_layers == 1 && c->experts_norm == 0 && c->ff_expert == 64);
    const tp_llama_layer *L0 = &m.model->layers[0], *L1 = &m.model->layers[1];
    CHECK(L0->windowed == 1 && L1->windowed == 0 && L1->attn_sinks && L1->ffn_norm && L1->bo && L1->bq);
    CHECK(L1->gate_inp_b && L1->gate_exps_b && L1->up_exps_b && L1->down_exps_b);
    CHECK(topos_tensor_shape(L1->gate_exps_b)[0] == 4 && topos_tensor_shape(L1->gate_exps_b)[1] == 64 &&
          topos_tensor_shape(L1->down_exps_b)[1] == 256);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  le_check(&s);
  /* each feature left out of the plain forward moves the logits far */
  const char *features[] = {"sinks", "expert biases", "clamp"};
  for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i) {
    lt_spec without = s;
    without.plain_without = features[i];
    lt_check_spec_variant(&s, &without);
  }
}

/* quantized weights (the default spec's types) through both caches */
TEST(llama_gpt_oss_quantized_both_caches) {
  LT_NATIVE_ONLY();
  lt_spec q = lt_default_spec();
  q.arch = "gpt-oss";
  q.experts = 3;
  q.experts_used = 3; /* every expert: the ranking is not what this bound measures */
  q.ff_exp = 128;
  q.biases = 2;
  q.swa = 4;
  /* 2.4-2.6 % here: gate and up of ~6 (the clamps at work) carry the
   * activations' quantization further than the other mixtures' 1.6 % */
  lt_compare_plain_caches_of(&q, 4e-2);
}

TEST(llama_gpt_oss_bad_files_are_refused) {
  lt_spec s = le_gpt_oss();
  s.layers = 1;
  lt_spec t = s;
  t.swa = 0;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "required key gpt-oss.attention.sliding_window is missing");
  t = s;
  t.skip_tensor = "blk.0.attn_sinks.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.attn_sinks.weight is missing");
  t = s;
  t.skip_tensor = "blk.0.ffn_up_exps.bias";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.ffn_up_exps.bias is missing");
  t = s;
  t.bad_tensor = "blk.0.ffn_down_exps.bias";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ffn_down_exps.bias has ne {288, 4}, the metadata implies {256, 4}");
  t = s;
  t.skip_tensor = "blk.0.post_attention_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.post_attention_norm.weight is missing");
}

/* minimax-m2 (MiniMax-M2 / M2.1): q and k norms over the whole rows, half
 * of each head rotated (NEOX), every block a mixture with the file's
 * sigmoid router choosing with exp_probs_b and the chosen weights
 * renormalised */
TEST(llama_minimax_m2_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "minimax-m2";
  s.experts = 8;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.rope_dim = 32;
  s.sigmoid_router = 1;
  s.probs_bias = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 2 && c->rope_neox == 1 && c->rope_dim == 32 && c->experts_sigmoid == 1);
    CHECK(c->experts_norm == 1 && c->ff_expert == 64 && c->ff_shared == 0);
    CHECK(m.model->layers[1].exp_probs_b && !m.model->layers[1].w_gate);
  }
  lt_close(&m);
  lt_spec without = s; /* the same file through the softmax router */
  without.sigmoid_router = -1;
  lt_check_spec_variant(&s, &without);
  lt_spec q = lt_default_spec(); /* quantized, every expert used */
  q.arch = "minimax-m2";
  q.experts = 3;
  q.experts_used = 3;
  q.ff_exp = 128;
  q.sigmoid_router = -1;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* dots1 (dots.llm1): qwen3's attention (per-head q and k norms, NEOX), a
 * dense first block, then DeepSeek-V3's mixtures: a sigmoid router with
 * exp_probs_b and groups, renormalised and scaled weights, shared experts */
TEST(llama_dots1_files) {
  lt_spec s = lt_v3_spec("dots1");
  s.experts_shared = 2;
  s.expert_groups = 4;
  s.expert_groups_used = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->rope_neox == 1 && c->experts_sigmoid == 1 && c->experts_norm == 1);
    CHECK(c->ff_shared == 128 && c->n_dense_lead == 1 && c->expert_groups == 4 && c->expert_groups_used == 2);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[1].gate_inp && m.model->layers[1].w_gate);
  }
  lt_close(&m);
  lt_spec without = s; /* the same file routed without groups */
  without.expert_groups = 0;
  without.expert_groups_used = 0;
  lt_check_spec_variant(&s, &without);
}

/* deepseek (DeepSeek-MoE 16B, V1): llama's attention (adjacent pairs
 * rotated, no norms), a dense first block, then a softmax router whose
 * chosen weights are not renormalised, times expert_weights_scale, and two
 * shared experts; the plain forward renormalising them is far off */
TEST(llama_deepseek_files) {
  lt_spec s = lt_v3_spec("deepseek");
  s.sigmoid_router = -1;
  s.probs_bias = 0;
  s.weights_norm = 0;
  s.experts_shared = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 0 && c->rope_neox == 0 && c->experts_sigmoid == 0 && c->experts_norm == 0);
    CHECK(c->ff_shared == 128 && c->n_dense_lead == 1 && c->experts_scale == 2.5f);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[1].gate_inp && m.model->layers[1].w_gate);
  }
  lt_close(&m);
  lt_spec without = s; /* the same file with the chosen weights renormalised */
  without.weights_norm = 1;
  lt_check_spec_variant(&s, &without);
}

/* dbrx: LayerNorms without biases, q, k, v in one attn_qkv clamped by
 * attention.clamp_kqv, every block a mixture of a softmax router whose
 * chosen weights are renormalised, the feed-forward's norm named
 * attn_output_norm. Without the clamp or with one expert per token the
 * plain forward is far off. */
TEST(llama_dbrx_files) {
  lt_spec s = le_f32("dbrx");
  s.fused_qkv = 1;
  s.clamp_kqv = 0.08f; /* many of q, k and v past it */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->layer_norm == 1 && c->norm_bias == 1 && c->rope_neox == 1 && c->clamp_kqv == 0.08f);
    CHECK(c->n_experts == 4 && c->experts_norm == 1 && c->experts_sigmoid == 0 && c->ff_expert == 64);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->wq && L->wk && L->wv && L->ffn_norm && !L->ffn_norm_b && !L->attn_norm_b && L->gate_exps && !L->w_gate);
    CHECK(!m.model->output_norm_b);
  }
  lt_close(&m);
  le_check(&s);
  lt_spec unclamped = s;
  unclamped.clamp_kqv = 0;
  lt_check_spec_variant(&s, &unclamped);
  le_refused_without(&s, "blk.0.attn_output_norm.weight"); /* dbrx's name for the feed-forward's norm */
  lt_spec q = le_quantized("dbrx");
  q.fused_qkv = 1;
  q.clamp_kqv = 0.5f;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* mellum (Mellum 2): qwen3moe's blocks, a window on the blocks the pattern
 * lists; the windowed blocks rotate with the file's base (its
 * rope.freq_base_swa, written here, unread: as llama.cpp's graph) and
 * positions unscaled, the others with the linear scaling. Without the
 * window, or with one expert per token, the plain forward is far off. */
TEST(llama_mellum_files) {
  lt_spec s = le_f32("mellum");
  s.ff_exp = 64;
  s.swa = 5;
  s.swa_list = "LG";
  s.rope_scale = 2.0f;
  s.rope_base_swa = 500.0f;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->rope_neox == 1 && c->experts_norm == 1 && c->ff_expert == 64);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 1 && c->rope_base_swa == c->rope_base && c->rope_mscale_swa == 1.0f);
    CHECK(m.model->layers[0].windowed && !m.model->layers[1].windowed);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  le_check(&s);
  lt_spec unwindowed = s;
  unwindowed.swa = 0;
  unwindowed.swa_list = NULL;
  lt_check_spec_variant(&s, &unwindowed);
  /* no window key: none (every block full, rotated alike) */
  lt_spec full = le_f32("mellum");
  full.ff_exp = 64;
  CHECK_OK(lt_open(&full, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->n_swa == 0 && topos_llama_config_of(m.model)->n_swa_layers == 0);
  lt_close(&m);
  le_check(&full);
}

/* exaone-moe (K-EXAONE): pre-norms, q and k norms, a window on 3 blocks of
 * 4 (here the pattern's "LG") with the others unrotated, DeepSeek-style
 * mixtures after a dense first block (a sigmoid router ranking with
 * exp_probs_b, renormalised, times expert_weights_scale) and 2 shared
 * experts as one feed-forward of expert_shared_feed_forward_length (the
 * count does not multiply it, as llama.cpp reads these files) */
TEST(llama_exaone_moe_files) {
  lt_spec s = lt_v3_spec("exaone-moe");
  s.swa = 5;
  s.swa_list = "LG";
  s.experts_shared = 2;
  s.ff_shexp = 96;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->rope_neox == 1 && c->experts_sigmoid == 1 && c->experts_norm == 1);
    CHECK(c->ff_shared == 96 && c->n_dense_lead == 1 && c->experts_scale == 2.5f);
    CHECK(c->n_swa == 5 && c->n_swa_layers == 2 && c->n_nope_layers == 1);
    CHECK(m.model->layers[0].windowed && !m.model->layers[1].windowed && m.model->layers[1].nope);
    CHECK(!m.model->layers[0].gate_inp && m.model->layers[1].gate_inp && m.model->layers[1].exp_probs_b);
  }
  lt_close(&m);
  lt_spec one = s; /* one expert per token */
  one.experts_used = 1;
  lt_check_spec_variant(&s, &one);
  lt_spec unwindowed = s; /* every block full, so none rotated */
  unwindowed.swa = 0;
  unwindowed.swa_list = NULL;
  lt_check_spec_variant(&s, &unwindowed);
  /* the window is required */
  lt_spec bad = s;
  bad.swa = 0;
  bad.swa_list = NULL;
  lt_expect_refused(bad, TOPOS_ERR_NOT_FOUND, "exaone-moe.attention.sliding_window is missing");
}

/* arctic (Snowflake Arctic): llama's attention; every block a dense SwiGLU
 * feed-forward dim wide of the usual norm, and beside it a mixture
 * (softmax, renormalised, experts feed_forward_length wide) of the block's
 * input through ffn_norm_exps, both added to the attention's residual.
 * Without the dense branch (a plain mixture of the usual norm) or with one
 * expert per token the plain forward is far off. */
TEST(llama_arctic_files) {
  lt_spec s = le_f32("arctic");
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->experts_residual == 1 && c->experts_norm == 1 && c->rope_neox == 0 && c->ff_expert == 64 &&
          c->ff_shared == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->gate_inp && L->ffn_norm_exps && L->ffn_norm && L->w_gate && topos_tensor_shape(L->w_gate)[0] == 256);
  }
  lt_close(&m);
  le_check(&s);
  lt_spec q = le_quantized("arctic");
  lt_compare_plain_caches_of(&q, 3e-2);
  le_refused_without(&s, "blk.0.ffn_norm_exps.weight");
}

/* phimoe (Phi-3.5-MoE), as llama.cpp's phi3 graph computes it: RMS norms
 * with a bias after the weight (the block's two and the output's), biases
 * on q, k, v, the attention's output and the head, every block a mixture
 * (softmax, renormalised), LongRoPE's tables. The plain forward without the
 * norms' biases, or with one expert per token, is far off. */
TEST(llama_phimoe_files) {
  lt_spec s = le_f32("phimoe");
  s.biases = 2;
  s.longrope = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->layer_norm == 0 && c->norm_bias == 1 && c->rope_neox == 1 && c->rope_longrope == 1);
    CHECK(c->experts_norm == 1 && c->ff_expert == 64 && c->ff_shared == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->attn_norm_b && L->ffn_norm_b && L->bq && L->bo && m.model->output_norm_b && m.model->output_b);
  }
  lt_close(&m);
  le_check(&s);
  lt_spec unbiased = s;
  unbiased.plain_rms = 1; /* the plain forward's norms without their biases */
  lt_check_spec_variant(&s, &unbiased);
  lt_spec q = le_quantized("phimoe");
  q.biases = 2;
  lt_compare_plain_caches_of(&q, 3e-2);
  le_refused_without(&s, "blk.0.ffn_norm.bias");
}

/* bailingmoe (Ling 1.0): deepseek's blocks, every one a mixture, the
 * chosen weights renormalised where expert_weights_norm says (here); the
 * plain forward without the renormalisation is far off */
TEST(llama_bailingmoe_files) {
  lt_spec s = lt_v3_spec("bailingmoe");
  s.sigmoid_router = -1;
  s.probs_bias = 0;
  s.dense_lead = 0;
  s.experts_shared = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->rope_neox == 0 && c->experts_sigmoid == 0 && c->experts_norm == 1 && c->n_dense_lead == 0);
    CHECK(c->ff_shared == 128 && m.model->layers[0].gate_inp && m.model->layers[0].w_gate);
  }
  lt_close(&m);
  lt_spec without = s; /* the same file with the chosen weights as the softmax gives them */
  without.weights_norm = 0;
  lt_check_spec_variant(&s, &without);
}

/* bailingmoe2 (Ling / Ring 2.0): dots1's blocks with q, k, v in one
 * attn_qkv, half of each head rotated, shared experts of
 * expert_shared_feed_forward_length each, a multi-token-prediction block
 * after the trunk */
TEST(llama_bailingmoe2_files) {
  lt_spec s = lt_v3_spec("bailingmoe2");
  s.fused_qkv = 1;
  s.rope_dim = 32;
  s.ff_shexp = 48;
  s.experts_shared = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->rope_neox == 1 && c->rope_dim == 32 && c->ff_shared == 96);
    CHECK(c->experts_sigmoid == 1 && c->experts_norm == 1 && c->n_dense_lead == 1);
  }
  lt_close(&m);
  lt_spec without = s; /* the same file through the softmax router */
  without.sigmoid_router = -1;
  lt_check_spec_variant(&s, &without);
  s.nextn = 1;
  s.extra_tensor = "blk.2.nextn.eh_proj.weight";
  lt_spec trunk = s;
  trunk.layers = 2;
  trunk.nextn = 0;
  trunk.extra_tensor = NULL;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    CHECK(topos_llama_config_of(m.model)->n_layers == 2);
    lt_compare_plain_model(&m, &trunk, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
}

/* smallthinker (SmallThinker 4B-A0.6B, 21B-A3B): every block a mixture
 * whose router reads the block's input (not the feed-forward's norm of it
 * after attention), experts of relu(gate) * up, the chosen weights
 * renormalised; with a window (4096, whatever the key says, as llama.cpp),
 * every block but the first of each 4 windowed and blocks 0, 4, ... not
 * rotated */
TEST(llama_smallthinker_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "smallthinker";
  s.layers = 5;
  s.experts = 8;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.sigmoid_router = -1; /* expert_gating_func 1, the softmax */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->experts_relu == 1 && c->router_input == 1 && c->experts_norm == 1 && c->experts_sigmoid == 0);
    CHECK(c->n_swa == 0 && c->n_nope_layers == 0 && c->ff_expert == 64 && m.model->layers[0].gate_inp);
  }
  lt_close(&m);
  lt_spec without = s; /* one expert of two: far off */
  without.experts_used = 1;
  lt_check_spec_variant(&s, &without);
  s.swa = 64;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 4096 && c->n_swa_layers == 3 && c->n_nope_layers == 2);
    CHECK(m.model->layers[0].nope && !m.model->layers[0].windowed && m.model->layers[1].windowed &&
          m.model->layers[4].nope && !m.model->layers[4].windowed);
  }
  lt_close(&m);
  without = s; /* every block rotated: far off */
  without.swa = 0;
  lt_check_spec_variant(&s, &without);
  lt_spec q = lt_default_spec(); /* quantized, both caches */
  q.arch = "smallthinker";
  q.experts = 4;
  q.experts_used = 2;
  q.ff_exp = 128;
  q.sigmoid_router = -1;
  lt_compare_plain_caches_of(&q, 3e-2);
}
