/* glm4 (GLM-4-0414, GLM-Z1), minicpm, arcee (AFM-4.5B) and internlm2 files
 * against the tests' plain forward:
 *   glm4       gemma2's four norms (attn_norm, post_attention_norm, ffn_norm,
 *              post_ffw_norm) without its scalings, gate and up rows in one
 *              ffn_up, q / k / v biases (apart or in attn_qkv), neighbouring
 *              pairs rotated over rope.dimension_count (half of each head);
 *              with M-RoPE sections (GLM-4.1V's) the NEOX pairing
 *   chatglm    ChatGLM3, GLM-4-9B-chat, GLM-Edge: glm4's graph with two
 *              norms (no post norms)
 *   minicpm    granite's graph, its scales defaulting where the keys are
 *              absent: embedding 12, residual 1.4 / sqrt(blocks), logits
 *              divided by 256 / dim
 *   arcee      the plain feed-forward (no gate) with ReLU squared
 *   nemotron   that with LayerNorms and NEOX pairs (Nemotron-4, Minitron);
 *   jais2      the same blocks (Jais 2)
 *   maincoder  llama's rotation, then per-head q and k norms (hunyuan's order)
 *   apertus    qwen3's attention, xIELU of up without a gate (Apertus)
 *   pangu-embedded  qwen2's graph, its biases optional (openPangu-Embedded)
 *   qwen       Qwen 1: q, k, v in attn_qkv with its bias, NEOX pairs, the
 *              feed-forward half of feed_forward_length
 *   orion      LayerNorms with biases, a gated feed-forward, NEOX pairs
 *   olmo       OLMo 1: LayerNorms without weights or biases, q, k, v clamped
 *              (attention.clamp_kqv, where the file has it)
 *   internlm2, xverse  llama's graph (internlm2's converter splits wqkv)
 *   bloom      ALiBi (each head's slope times the key's distance added to
 *              its scores, no rotation), the embedding's LayerNorm, gpt2's
 *              blocks (q, k, v in attn_qkv, GELU without a gate, biases)
 *   mpt        ALiBi by attention.max_alibi_bias, or learned positions, or
 *              neither (never rotated); LayerNorms without biases, q, k, v
 *              clamped where the file says; q and k LayerNorms over whole
 *              rows with biases where the file has them
 *   baichuan   llama's graph, ALiBi instead of the rotation with 40 blocks
 *   refact     llama's graph with ALiBi
 *   jais       ALiBi by its key, LayerNorms with biases, a gated feed-forward
 *              with biases, scores times 1 / head width
 * decoding equal to the full-context forward bit for bit at 1-3 threads;
 * quantized weights through both caches. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the layers' tensors */

/* The architecture's file with the default spec's quantized weights, through
 * both caches (quantized activations: within 3e-2 of the plain forward). */
static void lg_quantized(const char *arch, int fused_qkv, int biases, float clamp_kqv) {
  lt_spec q = lt_default_spec();
  q.arch = arch;
  q.fused_qkv = fused_qkv;
  q.biases = biases;
  q.clamp_kqv = clamp_kqv;
  lt_compare_plain_caches_of(&q, 3e-2);
}

TEST(llama_glm4_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "glm4";
  s.rope_dim = 32; /* half of each 64-wide head (partial_rotary_factor 0.5) */
  s.biases = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->rope_neox == 0 && c->rope_dim == 32 && c->post_norms == 1 && c->n_experts == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->w_gate && L->w_up && L->post_attn_norm && L->post_ffn_norm && L->bq && L->bk && L->bv);
    CHECK(topos_tensor_shape(L->w_gate)[0] == s.ff && topos_tensor_shape(L->w_up)[0] == s.ff);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_FAST, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
  /* q, k, v in one attn_qkv with its bias */
  lt_spec fused = s;
  fused.fused_qkv = 1;
  lt_compare_plain(&fused, TOPOS_NUMERICS_EXACT, 1e-5);
  /* GLM-4.1V's sections: NEOX pairs, the fourth section's pairs still */
  const int32_t sections[4] = {8, 4, 2, 2};
  memcpy(s.rope_sections, sections, sizeof sections);
  s.rope_base = 10.0f; /* the last pairs turn ~0.1 rad per position: keeping them still shows */
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->rope_neox == 1 && m.model->rope_still != NULL);
  lt_close(&m);
  lt_spec plain = s; /* the plain forward of the file without sections: neighbours paired, every pair turning */
  memset(plain.rope_sections, 0, sizeof plain.rope_sections);
  lt_check_spec_variant(&s, &plain);
  lg_quantized("glm4", 0, 1, 0);
}

TEST(llama_chatglm_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "chatglm";
  s.rope_dim = 32; /* half of each 64-wide head, as GLM-4-9B's 64 of 128 */
  s.fused_qkv = 1;
  s.biases = 1; /* attn_qkv's bias */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->rope_neox == 0 && c->rope_dim == 32 && c->post_norms == 0 && c->layer_norm == 0);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(L->w_gate && L->w_up && !L->post_attn_norm && !L->post_ffn_norm);
    CHECK(topos_tensor_shape(L->w_gate)[0] == s.ff && topos_tensor_shape(L->w_up)[0] == s.ff);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_FAST, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
  lt_spec whole = s; /* the plain forward rotating whole heads: far off */
  whole.rope_dim = 0;
  lt_check_spec_variant(&s, &whole);
  lt_spec apart = s; /* q, k, v apart, each with its bias */
  apart.fused_qkv = 0;
  lt_compare_plain(&apart, TOPOS_NUMERICS_EXACT, 1e-5);
  lg_quantized("chatglm", 1, 1, 0);
}

TEST(llama_minicpm_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "minicpm";
  s.dim = 128; /* the default logit scale 256 / dim is then 2 */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->embd_scale == 12.0f && c->logit_scale == 2.0f && c->n_nope_layers == 0);
    CHECK(fabsf(c->residual_scale - 1.4f / sqrtf(2.0f)) < 1e-7f);
  }
  lt_close(&m);
  /* granite's plain forward without scales (its file would have them): far off */
  lt_spec without = s;
  without.arch = "granite";
  lt_check_spec_variant(&s, &without);
  /* the keys where the file has them */
  s.embedding_scale = 8.0f, s.residual_scale = 0.5f, s.logit_scale = 3.0f;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->embd_scale == 8.0f && c->residual_scale == 0.5f && c->logit_scale == 3.0f);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  s.logit_scale = 1e31f; /* not a usable scale: refused, as granite's */
  lt_expect_refused(s, TOPOS_ERR_RANGE, "minicpm.logit_scale = 1e+31 must be a positive finite number");
  lg_quantized("minicpm", 0, 0, 0);
}

TEST(llama_arcee_nemotron_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "arcee";
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ffn_plain == 1 && c->ffn_relu2 == 1 && c->ffn_gelu == 0 && c->layer_norm == 0 && c->rope_neox == 0);
    CHECK(!m.model->layers[0].w_gate && m.model->layers[0].w_up);
  }
  lt_close(&m);
  lt_spec without = s; /* the plain forward with GELU: far off */
  without.plain_without = "relu2";
  lt_check_spec_variant(&s, &without);
  lg_quantized("arcee", 0, 0, 0);
  s.arch = "nemotron";
  s.rope_dim = 32;
  s.biases = 3; /* its optional output, up and down biases */
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ffn_relu2 == 1 && c->layer_norm == 1 && c->norm_bias == 1 && c->rope_neox == 1);
    CHECK(m.model->layers[1].b_up && m.model->layers[1].b_down && m.model->layers[1].ffn_norm_b);
  }
  lt_close(&m);
  without = s;
  without.plain_without = "relu2";
  lt_check_spec_variant(&s, &without);
  s.arch = "jais2"; /* nemotron's blocks with every bias */
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ffn_relu2 == 1 && c->layer_norm == 1 && c->norm_bias == 1 && c->rope_neox == 1 && c->ffn_plain == 1);
  }
  lt_close(&m);
  without = s;
  without.plain_without = "relu2";
  lt_check_spec_variant(&s, &without);
}

/* apertus: qwen3's attention, up through xIELU without a gate, each block
 * its own parameters (llama.cpp's op: alpha_n' = beta + softplus(alpha_n),
 * alpha_p' = softplus(alpha_p)) */
TEST(llama_apertus_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "apertus";
  s.biases = 2; /* the q, k, v and output biases its files may have */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ffn_xielu == 1 && c->ffn_gelu == 0 && c->ffn_plain == 1 && c->layer_norm == 0 && c->qk_norm == 1);
    const tp_llama_layer *L = &m.model->layers[1];
    CHECK(!L->w_gate && L->q_norm && L->bo);
    CHECK(L->xielu[1] == logf(1.0f + expf(0.7f)) && L->xielu[0] == 0.5f + logf(1.0f + expf(0.9f)));
    CHECK(L->xielu[2] == 0.5f && L->xielu[3] == -1e-6f);
  }
  lt_close(&m);
  lt_spec without = s; /* the plain forward with GELU: far off */
  without.plain_without = "xielu";
  lt_check_spec_variant(&s, &without);
  lg_quantized("apertus", 0, 0, 0);
}

/* pangu-embedded (openPangu-Embedded 1B / 7B): qwen2's graph, q, k, v and
 * output biases where the file has them */
TEST(llama_pangu_embedded_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "pangu-embedded";
  s.biases = 2;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->rope_neox == 1 && c->qk_norm == 0 && m.model->layers[1].bq && m.model->layers[1].bo);
  }
  lt_close(&m);
  lt_spec without = s; /* the plain forward pairing neighbours (llama's): far off */
  without.arch = "llama";
  lt_check_spec_variant(&s, &without);
  s.biases = 0; /* none at all */
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
}

TEST(llama_maincoder_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "maincoder";
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->qk_norm == 1 && c->qk_norm_after_rope == 1 && c->rope_neox == 0);
    CHECK(m.model->layers[1].q_norm && m.model->layers[1].k_norm);
  }
  lt_close(&m);
  lt_spec without = s; /* the plain forward with the norms before the rotation: far off */
  without.plain_without = "late norms";
  lt_check_spec_variant(&s, &without);
}

TEST(llama_qwen_orion_olmo_internlm2_xverse_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "qwen";
  s.fused_qkv = 1;
  s.biases = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->ff == s.ff && c->rope_neox == 1 && m.model->layers[0].bq && m.model->layers[0].w_gate);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode(&m, s.vocab);
  }
  lt_close(&m);
  lg_quantized("qwen", 1, 1, 0);
  s = lt_f32_spec();
  s.arch = "orion";
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->layer_norm == 1 && c->norm_bias == 1 && c->ffn_plain == 0 && c->rope_neox == 1);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  s = lt_f32_spec();
  s.arch = "olmo";
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->layer_norm == 1 && c->norm_weightless == 1 && c->norm_bias == 0 && c->clamp_kqv == 0.0f);
    CHECK(!m.model->layers[0].attn_norm && !m.model->layers[0].ffn_norm && !m.model->output_norm);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
  }
  lt_close(&m);
  s.clamp_kqv = 0.05f; /* most of q, k and v past it */
  lt_spec unclamped = s;
  unclamped.clamp_kqv = 0;
  lt_check_spec_variant(&s, &unclamped);
  lg_quantized("olmo", 0, 0, 0.5f);
  const char *llamas[2] = {"internlm2", "xverse"};
  for (int i = 0; i < 2; ++i) {
    s = lt_f32_spec();
    s.arch = llamas[i];
    lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_check_decode_of(&s);
  }
}

/* The plain forward without ALiBi's biases is far off the file's logits:
 * the biases are applied, not merely declared. */
static void lg_check_alibi_matters(const lt_spec *s) {
  lt_spec without = *s;
  without.plain_without = "alibi";
  lt_check_spec_variant(s, &without);
}

TEST(llama_bloom_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "bloom";
  s.fused_qkv = 1;
  s.biases = 3;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->alibi_max_bias == 8.0f && c->embd_norm == 1 && c->layer_norm == 1 && c->n_nope_layers == c->n_layers);
    CHECK(m.model->embd_norm && m.model->embd_norm_b);
  }
  lt_close(&m);
  lg_check_alibi_matters(&s);
  /* 6 heads: the slopes past the first 4 take the second base */
  s.dim = 192, s.heads = 6, s.kv_heads = 3;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_EXACT, 1e-5);
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_FAST, 1e-5);
    lt_check_decode(&m, s.vocab);
    /* the 16-bit cache reads its heads' masks as views */
    lt_kv = TOPOS_F16;
    lt_compare_plain_model(&m, &s, TOPOS_NUMERICS_FAST, 1e-2);
    lt_kv = TOPOS_F32;
  }
  lt_close(&m);
  lg_quantized("bloom", 1, 3, 0);
}

TEST(llama_mpt_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "mpt";
  s.fused_qkv = 1;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->alibi_max_bias == 8.0f && c->embd_norm == 0 && c->layer_norm == 1 && c->n_nope_layers == c->n_layers);
    CHECK(!m.model->layers[0].attn_norm_b && !m.model->output_norm_b);
  }
  lt_close(&m);
  lg_check_alibi_matters(&s);
  /* q and k LayerNorms over whole rows with biases (MPT's qk_ln), where the file has them */
  lt_spec q = s;
  q.mpt_qk_norm = 1;
  CHECK_OK(lt_open(&q, &m));
  if (m.model) {
    CHECK(topos_llama_config_of(m.model)->qk_norm == 2);
    CHECK(m.model->layers[1].q_norm && m.model->layers[1].q_norm_b && m.model->layers[1].k_norm_b);
  }
  lt_close(&m);
  lt_spec without = q;
  without.mpt_qk_norm = 0;
  lt_check_spec_variant(&q, &without);
  /* learned positions instead of ALiBi (no max_alibi_bias), never rotated */
  lt_spec p = s;
  p.mpt_form = 'p';
  CHECK_OK(lt_open(&p, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->learned_positions == 1 && c->alibi_max_bias == 0.0f && c->n_nope_layers == c->n_layers && m.model->pos_embd);
  }
  lt_close(&m);
  without = p;
  without.plain_without = "positions";
  lt_check_spec_variant(&p, &without);
  /* neither: no position signal but the causal mask (llama.cpp's mpt graph rotates nothing) */
  p.mpt_form = 'n';
  CHECK_OK(lt_open(&p, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->n_nope_layers == p.layers);
  if (m.model) lt_compare_plain_model(&m, &p, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_close(&m);
  s.clamp_kqv = 0.05f;
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_check_decode_of(&s);
  lg_quantized("mpt", 1, 0, 0);
}

TEST(llama_baichuan_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "baichuan";
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5); /* 2 blocks: rotated */
  s.layers = 40; /* the 13B's count: ALiBi, unrotated (small blocks: 40 of them) */
  s.dim = 64, s.heads = 4, s.kv_heads = 4, s.ff = 64;
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->alibi_max_bias == 8.0f && c->n_nope_layers == 40);
  }
  lt_close(&m);
  lg_check_alibi_matters(&s);
}

TEST(llama_refact_jais_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "refact";
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) CHECK(topos_llama_config_of(m.model)->alibi_max_bias == 8.0f);
  lt_close(&m);
  lg_check_alibi_matters(&s);
  s.arch = "jais";
  s.fused_qkv = 1;
  s.biases = 3;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    const topos_llama_config *c = topos_llama_config_of(m.model);
    CHECK(c->alibi_max_bias == 8.0f && c->layer_norm == 1 && c->norm_bias == 1 && c->ffn_plain == 0);
    CHECK(c->attn_scale == 1.0f / 64.0f && m.model->layers[0].b_gate);
  }
  lt_close(&m);
  lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
  lt_check_decode_of(&s);
  lg_quantized("jais", 1, 3, 0);
}
