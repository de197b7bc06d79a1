/* The LayerNorm files: what each adds to the llama graph, against the
 * tests' plain forward (f32 weights: the bound is summation order's),
 * decoding equal to the full-context forward bit for bit, quantized weights
 * through both caches, and the refusals.
 *   starcoder2 LayerNorm (weight and bias) for the block and output norms,
 *              biases on q, k, v, the output and the feed-forward, which has
 *              no gate: down(GELU(up h + b)) + b; codeshell the same, its
 *              embedding output.weight where the file has no token_embd
 *   stablelm   LayerNorm, q, k, v biases, a quarter of each head rotated,
 *              the gated SiLU feed-forward
 *   phi2       LayerNorm, no gate, half of each head rotated, the attention
 *              and feed-forward both from one norm (x + (attn + ffn)), a
 *              bias on the head; q, k, v in one attn_qkv or apart
 *   gpt2       LayerNorm, no gate, learned absolute positions
 *              (position_embd.weight) and no rotation, q, k, v in attn_qkv;
 *              starcoder the same with one kv head
 *   gptneox    LayerNorm, no gate, a quarter of each head rotated, the
 *              branches in parallel each from its own norm, or in sequence
 *              (use_parallel_residual)
 *   falcon     LayerNorm, no gate, no biases, q, k, v in attn_qkv, the
 *              branches in parallel from one norm (7B, MQA) or the
 *              attention from its own (40B: attn_norm_2)
 *   command-r  LayerNorm without biases, the gated SiLU feed-forward, the
 *              branches in parallel from one norm, adjacent rotation pairs,
 *              the head tied and times logit_scale; cohere2 (Command R7B)
 *              with a window on 3 layers of 4 and the others unrotated
 *   Command R+ and StableLM 2 12B: q and k LayerNorm-ed per head with a
 *              weight per head; StableLM 2 12B without ffn_norm, the
 *              branches in parallel from the attention's norm */
#include "models/llama_harness.h"
#include "models/llama_internal.h"

static lt_spec ln_f32(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  s.biases = strcmp(arch, "stablelm") == 0 ? 1 : 3;
  if (strcmp(arch, "stablelm") == 0) s.rope_dim = 16; /* of heads of 64 */
  if (strcmp(arch, "phi2") == 0) s.rope_dim = 32;
  return s;
}

/* f32 weights against the plain forward; without LayerNorm (RMSNorm in
 * the plain forward) the logits must be far off */
static void ln_check(const lt_spec *s) {
  lt_spec without = *s;
  without.plain_rms = 1;
  lt_check_spec_variant(s, &without);
}

TEST(llama_starcoder2_stablelm_phi2_files) {
  const char *archs[] = {"starcoder2", "stablelm", "phi2"};
  for (size_t i = 0; i < 3; ++i) {
    lt_spec s = ln_f32(archs[i]);
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK(c->layer_norm == 1 && c->rope_neox == 1);
      CHECK_MSG(c->ffn_plain == (i != 1) && c->parallel_residual == (i == 2) && c->ffn_gelu == (i != 1), "%s",
                archs[i]);
      CHECK(c->rope_dim == (i == 0 ? 64 : i == 1 ? 16 : 32));
      const tp_llama_layer *L = &m.model->layers[1];
      CHECK(L->attn_norm_b && !L->ffn_norm_b == (i == 2) && !L->w_gate == (i != 1));
      CHECK(m.model->output_norm_b && !m.model->output_b == (i != 2));
    }
    lt_close(&m);
    ln_check(&s);
  }
  /* phi2 with q, k, v (and their biases) in one attn_qkv */
  lt_spec f = ln_f32("phi2");
  f.fused_qkv = 1;
  ln_check(&f);
}

/* codeshell: starcoder2's blocks; its files may have no token_embd, the
 * tokens then embedded by output.weight (llama.cpp's rule) */
TEST(llama_codeshell_files) {
  for (int no_embd = 0; no_embd <= 1; ++no_embd) {
    lt_spec s = ln_f32("codeshell");
    s.no_embd = no_embd;
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK(c->layer_norm == 1 && c->rope_neox == 1 && c->ffn_plain == 1 && c->ffn_gelu == 1 && !c->tied_output);
      CHECK(m.model->layers[0].attn_norm_b && m.model->layers[0].ffn_norm_b && m.model->output_norm_b);
    }
    lt_close(&m);
    ln_check(&s);
  }
  lt_spec q = lt_default_spec();
  q.arch = "codeshell";
  q.biases = 3;
  q.no_embd = 1;
  lt_compare_plain_caches_of(&q, 3e-2);
  /* neither table: refused, naming the embedding */
  lt_spec t = ln_f32("codeshell");
  t.layers = 1;
  t.no_embd = 1;
  t.skip_tensor = "output.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "token_embd.weight is missing");
}

TEST(llama_layernorm_quantized_both_caches) {
  LT_NATIVE_ONLY();
  const char *archs[] = {"starcoder2", "phi2"};
  for (size_t i = 0; i < 2; ++i) {
    lt_spec q = lt_default_spec();
    q.arch = archs[i];
    q.biases = 3;
    lt_compare_plain_caches_of(&q, 3e-2);
  }
}

TEST(llama_layernorm_bad_files_are_refused) {
  lt_spec s = ln_f32("starcoder2");
  s.layers = 1;
  lt_spec t = s;
  t.skip_tensor = "blk.0.attn_norm.bias";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.attn_norm.bias is missing");
  t = s;
  t.skip_tensor = "output_norm.bias";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "output_norm.bias is missing");
  t = s;
  t.bad_tensor = "blk.0.ffn_norm.bias";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.ffn_norm.bias has ne {288}, the metadata implies {256}");
  t = ln_f32("phi2");
  t.layers = 1;
  t.fused_qkv = 1;
  t.bad_tensor = "blk.0.attn_qkv.bias";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_qkv.bias has ne {544}, the metadata implies {512}");
}

TEST(llama_gpt2_files) {
  lt_spec s = ln_f32("gpt2");
  s.fused_qkv = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->learned_positions == 1 && c->n_nope_layers == s.layers && c->layer_norm == 1 && c->ffn_plain == 1);
    CHECK(m.model->pos_embd && topos_tensor_shape(m.model->pos_embd)[0] == s.ctx);
    /* no row past the learned positions: a longer context is refused */
    topos_llama_context_options o = topos_llama_context_options_default();
    o.n_ctx = s.ctx + 1;
    topos_llama_context *ctx = NULL;
    CHECK(topos_llama_context_new(m.model, &o, &ctx) == TOPOS_ERR_RANGE);
    CHECK_ERROR_HAS("past the 64 positions this gpt2 model has learned");
    CHECK(ctx == NULL);
  }
  lt_close(&m);
  ln_check(&s);
  lt_spec without = s; /* the positions matter */
  without.plain_without = "positions";
  lt_check_spec_variant(&s, &without);
  lt_spec q = lt_default_spec();
  q.arch = "gpt2";
  q.biases = 3;
  lt_compare_plain_caches_of(&q, 3e-2);
  lt_spec t = s;
  t.layers = 1;
  t.skip_tensor = "position_embd.weight";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "position_embd.weight is missing");
  /* starcoder (StarCoder 1, gpt_bigcode): the same graph, multi-query */
  lt_spec sc = s;
  sc.arch = "starcoder";
  sc.kv_heads = 1;
  ln_check(&sc);
}

TEST(llama_gptneox_files) {
  for (int par = 1; par >= 0; --par) {
    lt_spec s = ln_f32("gptneox");
    s.fused_qkv = 1;
    s.rope_dim = 16;
    s.par_res = par;
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK(c->parallel_residual == par && c->rope_neox == 1 && c->rope_dim == 16 && c->learned_positions == 0);
      CHECK(m.model->layers[1].ffn_norm && m.model->layers[1].ffn_norm_b && !m.model->output_b);
    }
    lt_close(&m);
    ln_check(&s);
    lt_spec other = s; /* the plain forward in the other order is far off */
    other.par_res = !par;
    lt_check_spec_variant(&s, &other);
  }
  lt_spec q = lt_default_spec();
  q.arch = "gptneox";
  q.biases = 3;
  q.par_res = 1;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_falcon_files) {
  for (int big = 0; big < 2; ++big) { /* Falcon-7B's form (one kv head), Falcon-40B's (attn_norm_2) */
    lt_spec s = ln_f32("falcon");
    s.biases = 0;
    s.fused_qkv = 1;
    s.kv_heads = big ? 2 : 1;
    s.attn_norm_2 = big;
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK(c->parallel_residual == 1 && c->rope_neox == 1 && c->layer_norm == 1 && c->ffn_plain == 1);
      const tp_llama_layer *L = &m.model->layers[1];
      CHECK(!L->ffn_norm && !L->attn_norm_2 == !big && !L->attn_norm_2_b == !big && !L->bq && !L->bo);
    }
    lt_close(&m);
    ln_check(&s);
    if (big) { /* the attention's own norm matters */
      lt_spec without = s;
      without.attn_norm_2 = 0;
      lt_check_spec_variant(&s, &without);
      lt_spec t = s;
      t.layers = 1;
      t.skip_tensor = "blk.0.attn_norm_2.bias";
      lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "blk.0.attn_norm_2.bias is missing");
    }
  }
  lt_spec q = lt_default_spec();
  q.arch = "falcon";
  q.fused_qkv = 1;
  q.attn_norm_2 = 1;
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* command-r / cohere2 files: no biases, the head tied, logits times logit_scale */
static lt_spec ln_cohere(const char *arch, float logit_scale) {
  lt_spec s = ln_f32(arch);
  s.biases = 0;
  s.tied = 1;
  s.logit_scale = logit_scale;
  return s;
}

TEST(llama_command_r_files) {
  lt_spec s = ln_cohere("command-r", 0.0625f);
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->layer_norm == 1 && c->norm_bias == 0 && c->parallel_residual == 1 && c->rope_neox == 0);
    CHECK(c->ffn_plain == 0 && c->ffn_gelu == 0 && c->tied_output == 1 && c->logit_scale == 16.0f);
    CHECK(!m.model->layers[0].attn_norm_b && !m.model->layers[0].ffn_norm && !m.model->output_norm_b);
  }
  lt_close(&m);
  ln_check(&s);
  lt_spec q = lt_default_spec();
  q.arch = "command-r";
  q.tied = 1;
  q.logit_scale = 0.0625f; /* the default spec's quantized types, biases none */
  lt_compare_plain_caches_of(&q, 3e-2);
  q.qk_norm_heads = 1; /* and Command R+'s */
  lt_compare_plain_caches_of(&q, 3e-2);
}

/* Command R+ (command-r with attn_q_norm / attn_k_norm) and StableLM 2 12B
 * (stablelm with them and no ffn_norm: the branches in parallel from the
 * attention's norm): q and k LayerNorm-ed per head, no bias, a weight per
 * head ([head width, heads]), before the rotation. Against the plain
 * forward; without the norms it is far off. */
TEST(llama_per_head_qk_layernorm_files) {
  const char *archs[2] = {"command-r", "stablelm"};
  for (int i = 0; i < 2; ++i) {
    lt_spec s = i ? ln_f32("stablelm") : ln_cohere("command-r", 0.0625f);
    s.qk_norm_heads = 1;
    s.no_ffn_norm = i == 1;
    lt_model m;
    CHECK_OK(lt_open(&s, &m));
    if (m.model) {
      const topos_llama_config *c = topos_llama_config_of(m.model);
      CHECK_MSG(c->qk_norm == 3 && c->parallel_residual == 1, "%s", archs[i]);
      const tp_llama_layer *L = &m.model->layers[1];
      CHECK(L->q_norm && L->k_norm && !L->ffn_norm);
      if (L->q_norm && L->k_norm)
        CHECK(topos_tensor_shape(L->q_norm)[0] == s.heads && topos_tensor_shape(L->k_norm)[0] == s.kv_heads);
    }
    lt_close(&m);
    lt_spec without = s;
    without.qk_norm_heads = 0; /* the plain forward without the norms */
    lt_check_spec_variant(&s, &without);
  }
  /* a weight per head of the wrong width is refused */
  lt_spec t = ln_cohere("command-r", 0.0625f);
  t.qk_norm_heads = 1;
  t.layers = 1;
  t.bad_tensor = "blk.0.attn_q_norm.weight";
  lt_expect_refused(t, TOPOS_ERR_SHAPE, "blk.0.attn_q_norm.weight has ne {96, 4}, the metadata implies {64, 4}");
}

TEST(llama_cohere2_files) {
  lt_spec s = ln_cohere("cohere2", 0.25f);
  s.layers = 4;
  s.swa = 4;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->n_swa == 4 && c->n_swa_layers == 3 && c->n_nope_layers == 1 && c->norm_bias == 0 && c->logit_scale == 4.0f);
    CHECK(m.model->layers[3].nope == 1 && m.model->layers[3].windowed == 0 && m.model->layers[0].windowed == 1);
    lt_check_window_chunks(&m, &s);
  }
  lt_close(&m);
  ln_check(&s);
  lt_spec t = s;
  t.swa = 0;
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "required key cohere2.attention.sliding_window is missing");
}
