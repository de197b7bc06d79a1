/* What each architecture changes in the tests' files and plain forward
 * (included by llama_util.h after lt_spec): one predicate per feature. */
#ifndef TESTS_MODELS_LLAMA_ARCHS_H
#define TESTS_MODELS_LLAMA_ARCHS_H

static inline int lt_arch_is(const lt_spec *s, const char *name) { return s->arch && strcmp(s->arch, name) == 0; }
/* nemotron_h: each block one branch through its one norm, a Mamba-2 mixer
 * ('M' in lt_spec.conv_blocks), attention ('A', unrotated) or a ReLU-squared
 * feed-forward ('F'); mamba2: Mamba-2 mixers alone (head_count and
 * feed_forward_length 0) */
static inline int lt_one_branch(const lt_spec *s) {
  return lt_arch_is(s, "nemotron_h") || lt_arch_is(s, "nemotron_h_moe") || lt_arch_is(s, "mamba2") ||
         lt_arch_is(s, "mamba");
}
static inline int lt_jamba(const lt_spec *s) { return lt_arch_is(s, "jamba"); }
/* mamba: Mamba-1 mixers alone; jamba: between attention blocks (unrotated), every block with its
 * feed-forward, the mixers with dt, B, C norms (llama_ssm_util.h) */
static inline int lt_mamba1(const lt_spec *s) { return lt_arch_is(s, "mamba") || lt_arch_is(s, "jamba"); }
/* mamba, mamba2: no attention, no feed-forward anywhere (head_count and feed_forward_length 0) */
static inline int lt_ssm_only(const lt_spec *s) { return lt_arch_is(s, "mamba") || lt_arch_is(s, "mamba2"); }
/* falcon-h1: a Mamba-2 mixer beside every block's attention (llama_ssm_util.h) */
static inline int lt_ssm_parallel(const lt_spec *s) { return lt_arch_is(s, "falcon-h1"); }
static inline int lt_ffn_block(const lt_spec *s, int64_t l) {
  return s->conv_blocks && s->conv_blocks[l % (int64_t)strlen(s->conv_blocks)] == 'F';
}
/* qwen3next, qwen35, qwen35moe: gated-DeltaNet mixers ('D' in
 * lt_spec.conv_blocks; llama_delta_util.h) between attention blocks whose q
 * rows carry a sigmoid gate; qwen35's value heads read the key heads tiled */
static inline int lt_delta(const lt_spec *s) {
  return lt_arch_is(s, "qwen3next") || lt_arch_is(s, "qwen35") || lt_arch_is(s, "qwen35moe");
}
static inline int lt_delta_block(const lt_spec *s, int64_t l) {
  return lt_delta(s) && s->conv_blocks && s->conv_blocks[l % (int64_t)strlen(s->conv_blocks)] == 'D';
}
/* kimi-linear: Kimi Delta Attention mixers ('K' in lt_spec.conv_blocks: head_count_kv 0;
 * llama_delta_util.h) between deepseek2's latent attention blocks, unrotated */
static inline int lt_kimi(const lt_spec *s) { return lt_arch_is(s, "kimi-linear"); }
static inline int lt_kda_block(const lt_spec *s, int64_t l) {
  return lt_kimi(s) && s->conv_blocks && s->conv_blocks[l % (int64_t)strlen(s->conv_blocks)] == 'K';
}
/* the shared expert behind a sigmoid gate (ffn_gate_inp_shexp) */
static inline int lt_shared_gate(const lt_spec *s) {
  return lt_arch_is(s, "qwen2moe") || lt_arch_is(s, "qwen3next") || lt_arch_is(s, "qwen35moe");
}
/* lfm2, lfm2moe: short-convolution blocks (llama_lfm2_util.h), qwen3's attention */
static inline int lt_lfm2(const lt_spec *s) { return lt_arch_is(s, "lfm2") || lt_arch_is(s, "lfm2moe"); }

/* gemma, gemma2, gemma3: embeddings times sqrt(dim), GELU gate; the last
 * two with post-norms, gemma3 and qwen3 with q and k norms */
static inline int lt_gemma(const lt_spec *s) { return s->arch && strncmp(s->arch, "gemma", 5) == 0; }
static inline int lt_post_norms(const lt_spec *s) {
  return lt_arch_is(s, "gemma2") || lt_arch_is(s, "gemma3") || lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4") ||
         lt_arch_is(s, "glm4");
}
/* hunyuan-dense, hunyuan-moe: q and k norms after the rotation, rope.scaling.alpha */
static inline int lt_hunyuan(const lt_spec *s) {
  return lt_arch_is(s, "hunyuan-dense") || lt_arch_is(s, "hunyuan-moe");
}
static inline int lt_qk_norm(const lt_spec *s) {
  return lt_arch_is(s, "qwen3") || lt_arch_is(s, "qwen3vl") || lt_arch_is(s, "qwen3vlmoe") || lt_arch_is(s, "gemma3") || lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4") ||
         lt_arch_is(s, "qwen3moe") || lt_arch_is(s, "olmoe") || (lt_arch_is(s, "glm4moe") && s->glm_qk_norm) ||
         lt_arch_is(s, "minimax-m2") || lt_arch_is(s, "dots1") || lt_arch_is(s, "bailingmoe2") || lt_hunyuan(s) ||
         s->qk_norm_heads || lt_lfm2(s) || (lt_arch_is(s, "mpt") && s->mpt_qk_norm) || lt_arch_is(s, "maincoder") ||
         lt_arch_is(s, "apertus") || lt_delta(s) || lt_arch_is(s, "mellum") || lt_arch_is(s, "exaone-moe");
}
/* olmo2, olmoe, minimax-m2: q and k norms over the whole rows, not per head */
static inline int lt_qk_norm_rows(const lt_spec *s) {
  return lt_arch_is(s, "olmo2") || lt_arch_is(s, "olmoe") || lt_arch_is(s, "minimax-m2") || lt_arch_is(s, "mpt");
}
static inline int lt_granite(const lt_spec *s) {
  return lt_arch_is(s, "granite") || lt_arch_is(s, "granitemoe") || lt_arch_is(s, "granitehybrid");
}
/* minicpm: granite's graph, its scales defaulting where the file has no keys:
 * embedding 12, residual 1.4 / sqrt(blocks), logits divided by 256 / dim */
static inline int lt_minicpm(const lt_spec *s) { return lt_arch_is(s, "minicpm"); }
static inline double lt_embedding_scale(const lt_spec *s) {
  return s->embedding_scale > 0 ? s->embedding_scale : lt_minicpm(s) ? 12.0 : 0.0;
}
static inline double lt_residual_scale(const lt_spec *s) {
  return s->residual_scale > 0 ? s->residual_scale : lt_minicpm(s) ? 1.4 / sqrt((double)s->layers) : 0.0;
}
static inline double lt_logit_scale(const lt_spec *s) {
  return s->logit_scale > 0 ? s->logit_scale : lt_minicpm(s) ? 256.0 / (double)s->dim : 0.0;
}
/* arcee (RMS norms), nemotron (LayerNorms): the plain feed-forward with ReLU squared */
static inline int lt_relu2(const lt_spec *s) {
  return lt_arch_is(s, "arcee") || lt_arch_is(s, "nemotron") || lt_arch_is(s, "jais2") || lt_arch_is(s, "nemotron_h") ||
         lt_arch_is(s, "nemotron_h_moe");
}
/* The LayerNorm files: starcoder2, phi2, gpt2, starcoder, gptneox, falcon
 * without a gate (GELU of up), stablelm and command-r / cohere2 with one;
 * command-r's norms without biases; phi2's, falcon's and command-r's
 * branches both from one norm, gptneox's (use_parallel_residual) each from
 * its own. */
static inline int lt_gptneox(const lt_spec *s) { return lt_arch_is(s, "gptneox"); }
/* gpt2, starcoder: learned positions, no rotation */
static inline int lt_positions(const lt_spec *s) {
  return lt_arch_is(s, "gpt2") || lt_arch_is(s, "starcoder") || (lt_arch_is(s, "mpt") && s->mpt_form == 'p');
}
/* bloom: ALiBi (no rotation) and the embedding's LayerNorm, gpt2's blocks otherwise;
 * mpt: ALiBi by its key (8 here), LayerNorms without biases */
static inline int lt_bloom(const lt_spec *s) { return lt_arch_is(s, "bloom"); }
static inline int lt_mpt(const lt_spec *s) { return lt_arch_is(s, "mpt"); }
/* dbrx: LayerNorms without biases, every block a mixture (softmax, renormalised), the feed-forward's
 * norm named attn_output_norm; codeshell: starcoder2's blocks, the embedding from output.weight where
 * the file has no token_embd (lt_spec.no_embd) */
static inline int lt_dbrx(const lt_spec *s) { return lt_arch_is(s, "dbrx"); }
/* arctic: every block a dense feed-forward dim wide of the usual norm beside a mixture (softmax,
 * renormalised, experts feed_forward_length wide) of the block's input through ffn_norm_exps */
static inline int lt_arctic(const lt_spec *s) { return lt_arch_is(s, "arctic"); }
/* phimoe: RMS norms with biases (the block's, the output's), a bias on the head, every block a
 * mixture (softmax, renormalised), as llama.cpp's phi3 graph */
static inline int lt_rms_bias(const lt_spec *s) { return lt_arch_is(s, "phimoe"); }
/* jais: ALiBi by its key (8 here), gated LayerNorm blocks, scores times 1 / head width */
static inline int lt_jais(const lt_spec *s) { return lt_arch_is(s, "jais"); }
/* baichuan: ALiBi (and no rotation) with 40 blocks, the 13B's; refact: always */
static inline int lt_alibi(const lt_spec *s) {
  return lt_bloom(s) || (lt_mpt(s) && !s->mpt_form) || lt_jais(s) || lt_arch_is(s, "refact") ||
         (lt_arch_is(s, "baichuan") && s->layers == 40);
}
/* ALiBi's slope of head h of H with the maximum bias 8: 2^(-8/n (h+1)) for
 * the first n = 2^floor(log2 H) heads, 2^(-4/n (2(h - n) + 1)) after */
static inline double lt_alibi_slope(int64_t H, int64_t h) {
  int64_t n = 1;
  while (n * 2 <= H) n *= 2;
  return h < n ? pow(2.0, -8.0 / (double)n * (double)(h + 1)) : pow(2.0, -4.0 / (double)n * (double)(2 * (h - n) + 1));
}
static inline int lt_ffn_plain(const lt_spec *s) {
  return lt_arch_is(s, "starcoder2") || lt_arch_is(s, "codeshell") || lt_arch_is(s, "phi2") || lt_positions(s) ||
         lt_gptneox(s) ||
         lt_arch_is(s, "falcon") || lt_relu2(s) || lt_bloom(s) || lt_mpt(s) || lt_arch_is(s, "apertus");
}
static inline int lt_cohere(const lt_spec *s) { return lt_arch_is(s, "command-r") || lt_arch_is(s, "cohere2"); }
/* olmo (OLMo 1): LayerNorms without weights or biases */
static inline int lt_weightless(const lt_spec *s) { return lt_arch_is(s, "olmo"); }
static inline int lt_layer_norm(const lt_spec *s) {
  return (lt_ffn_plain(s) && !lt_arch_is(s, "arcee") && !lt_arch_is(s, "apertus") && !lt_one_branch(s)) ||
         lt_arch_is(s, "stablelm") || lt_arch_is(s, "orion") ||
         lt_cohere(s) || lt_weightless(s) || lt_jais(s) || lt_dbrx(s);
}
static inline int lt_norm_bias(const lt_spec *s) {
  return (lt_layer_norm(s) && !lt_cohere(s) && !lt_weightless(s) && !lt_mpt(s) && !lt_dbrx(s)) || lt_rms_bias(s);
}
static inline int lt_one_norm(const lt_spec *s) {
  return lt_arch_is(s, "phi2") || lt_arch_is(s, "falcon") || lt_cohere(s) || s->no_ffn_norm;
}
static inline int lt_parallel(const lt_spec *s) { return lt_one_norm(s) || (lt_gptneox(s) && s->par_res); }
/* olmo2, exaone4: no attn_norm / ffn_norm, the branches read the residual */
static inline int lt_no_pre_norms(const lt_spec *s) { return lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4"); }

/* gpt-oss: attention sinks, post_attention_norm as the feed-forward's norm,
 * the experts' biases, router and activation (llama_experts_util.h) */
static inline int lt_oai(const lt_spec *s) { return lt_arch_is(s, "gpt-oss"); }
/* gpt-oss, seed_oss, glm4moe: the feed-forward's norm is named post_attention_norm */
static inline int lt_ffn_post_name(const lt_spec *s) {
  return lt_oai(s) || lt_arch_is(s, "seed_oss") || lt_arch_is(s, "glm4moe") || lt_delta(s);
}
static inline int lt_without(const lt_spec *s, const char *feature) {
  return s->plain_without && strcmp(s->plain_without, feature) == 0;
}
/* the gateless feed-forward's activation in the plain forward: 0 GELU, 1
 * ReLU squared (arcee, nemotron, jais2), 2 xIELU (apertus; without "xielu":
 * GELU) */
static inline int lt_ffn_act(const lt_spec *s) {
  if (lt_arch_is(s, "apertus")) return lt_without(s, "xielu") ? 0 : 2;
  return lt_relu2(s) && !lt_without(s, "relu2") ? 1 : 0;
}
/* hunyuan, maincoder: the per-head q and k norms after the rotation (the
 * plain forward without "late norms": before it) */
static inline int lt_qk_norm_late(const lt_spec *s) {
  return (lt_hunyuan(s) || lt_arch_is(s, "maincoder")) && !lt_without(s, "late norms");
}

/* Llama 4: chunked attention on three layers of four (the fourth unrotated,
 * with temperature tuning), q and k L2-normed after the rotation (but with
 * 128 experts), the router's logits ranking and sigmoid-weighted inputs */
static inline int lt_llama4(const lt_spec *s) { return lt_arch_is(s, "llama4"); }

/* M-RoPE's sections in force (glm4moe, glm4: only where sections 0 and 1 are nonzero) */
static inline int lt_mrope_on(const lt_spec *s) {
  const int32_t *v = s->rope_sections;
  if (lt_arch_is(s, "glm4moe") || lt_arch_is(s, "glm4")) return v[0] > 0 && v[1] > 0;
  return v[0] || v[1] || v[2] || v[3];
}

/* M-RoPE for text: pair i of the rotated ones keeps angle 0 where the
 * sections give it the fourth position (qwen2vl, glm4moe: sectors past the
 * first three sections; qwen3vl, qwen3vlmoe interleaved: every sector s but
 * those with s % 3 == k below 3 sections[k]) */
int lt_rope_still(const lt_spec *s, int64_t i);

/* phi3 files: q, k, v in one attn_qkv weight, gate and up in one ffn_up */
static inline int lt_phi3(const lt_spec *s) { return s->arch && strncmp(s->arch, "phi3", 4) == 0; }
/* gate and up rows in one ffn_up: phi3, glm4 and chatglm (whose q, k, v may be apart) */
static inline int lt_gate_up(const lt_spec *s) { return lt_phi3(s) || lt_arch_is(s, "glm4") || lt_arch_is(s, "chatglm"); }

/* qwen2 and phi3 files rotate pairs (x[i], x[i + hd/2]); llama files
 * adjacent ones ("phi3-adjacent": a phi3 file's plain forward rotating
 * those, for lt_check_variant) */
int lt_neox(const lt_spec *s);

/* keys under ARCH.*: the architectures topos reads (another's files are
 * refused before their keys matter, so they get llama.*) */
int lt_own_keys(const lt_spec *s);

/* The window the model uses (phi3: the key; gemma2: 4096 unless the key
 * says; gemma3: the key or none) and whether layer l has it (phi3 all;
 * gemma2 / gemma3: l % period < period - 1, period 2 / 6 or the key's). */
int64_t lt_window(const lt_spec *s);

int lt_windowed(const lt_spec *s, int64_t l);

/* layers that do not rotate q and k: smollm3's and llama4's every fourth, granite's all
 * where the file says rope.scaling.finetuned false */
static inline int lt_nope(const lt_spec *s, int64_t l) {
  return ((lt_arch_is(s, "smollm3") || lt_llama4(s)) && (l + 1) % 4 == 0) || (lt_granite(s) && s->nope_all) || lt_positions(s) ||
         lt_alibi(s) || lt_mpt(s) || lt_jais(s) || lt_one_branch(s) || lt_jamba(s) || /* never rotated */
         (lt_arch_is(s, "smallthinker") && s->swa > 0 && l % 4 == 0) || /* with a window, blocks 0, 4, ... */
         ((lt_arch_is(s, "exaone4") || lt_arch_is(s, "cohere2") || lt_arch_is(s, "exaone-moe")) && lt_window(s) > 0 &&
          !lt_windowed(s, l));
}

#endif
