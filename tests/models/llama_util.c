/* The bodies of llama_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

lt_spec lt_default_spec(void) {
  lt_spec s;
  memset(&s, 0, sizeof s);
  s.dim = 256;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.ff = 320;
  s.vocab = 300;
  s.ctx = 64;
  /* several types: K-quants need rows of 256 (dim), the 32-blocks fit ff */
  topos_dtype t[LT_ROLES] = {TOPOS_Q8_0, TOPOS_Q4_K, TOPOS_Q8_0, TOPOS_F16, TOPOS_Q4_1,
                             TOPOS_Q6_K, TOPOS_Q4_0, TOPOS_Q8_0, TOPOS_BF16};
  memcpy(s.types, t, sizeof t);
  s.seed = 7;
  s.arch = "llama";
  return s;
}

void *lt_keep_bytes(lt_file *f, size_t bytes, int zeroed) {
  void *p = zeroed ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
  void **k = realloc(f->keep, (size_t)(f->n_keep + 1) * sizeof *k);
  if (!p || !k) {
    free(p);
    if (k) f->keep = k;
    return NULL;
  }
  f->keep = k;
  f->keep[f->n_keep++] = p;
  return p;
}

void lt_fill_unit(topos_rng *rng, float *v, int64_t count, double scale, double offset) {
  const double step = scale * 3.4641016151377544 * 0x1p-32; /* sqrt(12) / 2^32 */
  uint64_t state = topos_rng_next(rng);
  for (int64_t i = 0; i < count; i += 2) {
    uint64_t z = (state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    v[i] = (float)(offset + step * ((double)(int32_t)(uint32_t)z + 0.5));
    if (i + 1 < count) v[i + 1] = (float)(offset + step * ((double)(int32_t)(uint32_t)(z >> 32) + 0.5));
  }
}

topos_status lt_add_quantized(topos_gguf_writer *w, lt_file *f, const char *name, topos_dtype type,
                              int64_t ne0, int64_t ne1, int64_t ne2, const float *v) {
  const int64_t count = ne0 * (ne1 ? ne1 : 1) * (ne2 ? ne2 : 1), ne[3] = {ne0, ne1, ne2};
  size_t bytes;
  topos_status st = topos_dtype_bytes(type, count, &bytes);
  if (st != TOPOS_OK) return st;
  void *q = lt_keep_raw(f, bytes);
  if (!q) return TOPOS_ERR_OUT_OF_MEMORY;
  st = topos_quantize_row(type, v, q, count);
  if (st != TOPOS_OK) return st;
  return topos_gguf_writer_add_tensor_raw(w, name, (uint32_t)topos_dtype_ggml_id(type), ne2 ? 3 : ne1 ? 2 : 1, ne, q,
                                          bytes);
}

topos_status lt_add(topos_gguf_writer *w, lt_file *f, const lt_spec *s,
                    const char *name, topos_dtype type, int64_t ne0, int64_t ne1,
                    topos_rng *rng, int ones) {
  if (s->skip_tensor && strcmp(name, s->skip_tensor) == 0) return TOPOS_OK;
  if (s->bad_tensor && strcmp(name, s->bad_tensor) == 0) ne0 += 32;
  int64_t count = ne0 * (ne1 ? ne1 : 1);
  float *v = lt_keep_raw(f, (size_t)count * sizeof(float));
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  if (ones) lt_fill_unit(rng, v, count, 0.1, 1.0);
  else lt_fill_unit(rng, v, count, ne1 ? 0.08 : 0.5, 0.0);
  return lt_add_quantized(w, f, name, type, ne0, ne1, 0, v);
}

topos_status lt_write(const lt_spec *s, lt_file *f) {
  memset(f, 0, sizeof *f);
  topos_gguf_writer *w = NULL;
  topos_status st = topos_gguf_writer_create(&w);
  topos_rng rng = topos_rng_seed(s->seed);
  int64_t hd = lt_head_dim(s);
#define LT(call) \
  if (st == TOPOS_OK) st = (call)
  LT(topos_gguf_writer_add_string(w, "general.architecture", s->arch));
  LT(topos_gguf_writer_add_u32(w, "general.quantization_version", 2));
  char kb[96];
  LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "context_length"), (uint32_t)s->ctx));
  LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "embedding_length"), (uint32_t)s->dim));
  LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "block_count"),
                               (uint32_t)(s->blocks_key > 0 ? s->blocks_key : s->layers)));
  /* Qwen 1's key is twice the width (its intermediate_size); nemotron_h's one per block (lt_write_ssm_keys) */
  if (!lt_one_branch(s))
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "feed_forward_length"), (uint32_t)(lt_arch_is(s, "qwen") ? 2 : 1) * s->ff));
  LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "rope.dimension_count"), (uint32_t)lt_rope_dim(s)));
  LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.head_count"), /* mamba2's files: 0 */
                               (uint32_t)(lt_ssm_only(s) ? 0
                                          : s->heads_key > 0 ? s->heads_key : s->heads)));
  if (lt_lfm2(s)) { /* head_count_kv a per-block array */
    LT(lt_write_lfm2_keys(w, f, s));
  } else if (lt_kimi(s)) { /* likewise, 0 for the KDA blocks */
    LT(lt_write_kda_keys(w, f, s));
  } else if (lt_arch_is(s, "granitehybrid") || lt_one_branch(s) || lt_ssm_parallel(s) || lt_jamba(s)) { /* ssm.* */
    LT(lt_write_ssm_keys(w, f, s));
  } else {
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.head_count_kv"), (uint32_t)s->kv_heads));
  }
  if (lt_delta(s)) LT(lt_write_delta_keys(w, f, s));
  /* nemotron_h's files name the RMS norms' epsilon so (llama.cpp reads either) */
  LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, lt_layer_norm(s) || (lt_one_branch(s) && !lt_arch_is(s, "mamba2") &&
                                                                    !lt_mamba1(s))
                                                 ? "attention.layer_norm_epsilon"
                                                                                  : "attention.layer_norm_rms_epsilon"),
                               1e-5f));
  LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "rope.freq_base"), s->rope_base > 0 ? s->rope_base : 10000.0f));
  if (s->head_dim > 0) {
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.key_length"), (uint32_t)s->head_dim));
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.value_length"), (uint32_t)s->head_dim));
  }
  if (s->rope_scale > 0 || s->rope_type) {
    LT(topos_gguf_writer_add_string(w, lt_k(kb, s, "rope.scaling.type"), s->rope_type ? s->rope_type : "linear"));
    LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "rope.scaling.factor"), s->rope_scale));
  }
  if ((lt_phi3(s) && s->swa >= 0) ||
      ((lt_gemma(s) || lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4") || lt_oai(s) || lt_arch_is(s, "cohere2") ||
        lt_llama4(s) || lt_lfm2(s) || lt_arch_is(s, "smallthinker") || lt_arch_is(s, "mellum") ||
        lt_arch_is(s, "exaone-moe")) &&
       s->swa > 0))
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.sliding_window"), (uint32_t)s->swa));
  if (s->swa_pattern > 0)
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.sliding_window_pattern"), (uint32_t)s->swa_pattern));
  if (s->swa_list) { /* one bool (u8) per layer */
    uint8_t *flags = lt_keep(f, (size_t)s->layers);
    if (!flags) st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int64_t l = 0; flags && l < s->layers; ++l) flags[l] = s->swa_list[l % (int64_t)strlen(s->swa_list)] == 'L';
    LT(topos_gguf_writer_add_array(w, lt_k(kb, s, "attention.sliding_window_pattern"), TOPOS_GGUF_BOOL, flags,
                                   (uint64_t)s->layers));
  }
  if (s->rope_base_swa > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "rope.freq_base_swa"), s->rope_base_swa));
  if (s->rope_alpha > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "rope.scaling.alpha"), s->rope_alpha));
  if (s->rope_sections[0] || s->rope_sections[1] || s->rope_sections[2] || s->rope_sections[3])
    LT(topos_gguf_writer_add_array(w, lt_k(kb, s, "rope.dimension_sections"), TOPOS_GGUF_I32, s->rope_sections, 4));
  if (s->attn_softcap > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "attn_logit_softcapping"), s->attn_softcap));
  if (s->final_softcap > 0)
    LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "final_logit_softcapping"), s->final_softcap));
  const float scales[4] = {s->residual_scale, s->embedding_scale, s->attention_scale, s->logit_scale};
  const char *scale_keys[4] = {"residual_scale", "embedding_scale", "attention.scale", "logit_scale"};
  for (int i = 0; i < 4; ++i)
    if (scales[i] > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, scale_keys[i]), scales[i]));
  if (s->nope_all) LT(topos_gguf_writer_add_bool(w, lt_k(kb, s, "rope.scaling.finetuned"), 0));
  if (s->clamp_kqv > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "attention.clamp_kqv"), s->clamp_kqv));
  if ((lt_mpt(s) && !s->mpt_form) || lt_jais(s))
    LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "attention.max_alibi_bias"), 8.0f));
  const float extra[4] = {s->attn_temp_scale, s->yarn_beta_fast, s->yarn_beta_slow, s->yarn_log_mul};
  const char *extra_keys[4] = {"attention.temperature_scale", "rope.scaling.yarn_beta_fast",
                               "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_log_multiplier"};
  for (int i = 0; i < 4; ++i)
    if (extra[i] > 0) LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, extra_keys[i]), extra[i]));
  if (s->rope_orig_ctx > 0)
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "rope.scaling.original_context_length"), (uint32_t)s->rope_orig_ctx));
  if (s->rope_attn_factor != 0)
    LT(topos_gguf_writer_add_f32(w, lt_k(kb, s, "rope.scaling.attn_factor"), s->rope_attn_factor));
  if (s->experts > 0) LT(lt_write_expert_keys(w, s));
  if (s->experts == 0 && s->expert_count_only > 0)
    LT(topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_count"), (uint32_t)s->expert_count_only));
  if (lt_mla(s)) LT(lt_write_mla_keys(w, s));
  if (lt_ds_moe(s)) LT(lt_write_ds_moe_keys(w, s));
  if (lt_gptneox(s)) LT(topos_gguf_writer_add_bool(w, lt_k(kb, s, "use_parallel_residual"), s->par_res));
  if (lt_arch_is(s, "apertus")) { /* xIELU's parameters, one per block (lt_xielu_raw), keys without a prefix */
    const char *names[4] = {"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"};
    float *v = lt_keep(f, (size_t)(4 * s->layers) * sizeof *v);
    if (!v) st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int p = 0; v && p < 4; ++p) {
      for (int64_t l = 0; l < s->layers; ++l) {
        double raw[4];
        lt_xielu_raw(l, raw);
        v[p * s->layers + l] = (float)raw[p];
      }
      LT(topos_gguf_writer_add_array(w, names[p], TOPOS_GGUF_F32, v + p * s->layers, (uint64_t)s->layers));
    }
  }
  /* vocabulary: <unk> <s> </s>, 256 byte tokens, then filler */
  const char **tokens = lt_keep(f, (size_t)s->vocab * sizeof *tokens);
  float *scores = lt_keep(f, (size_t)s->vocab * sizeof *scores);
  int32_t *types = lt_keep(f, (size_t)s->vocab * sizeof *types);
  char *text = lt_keep(f, (size_t)s->vocab * 16);
  if (!tokens || !scores || !types || !text) st = TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; st == TOPOS_OK && i < s->vocab; ++i) {
    char *t = text + 16 * i;
    if (i < 3) snprintf(t, 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    else if (i < 259) snprintf(t, 16, "<0x%02X>", (unsigned)(i - 3));
    else snprintf(t, 16, "tok%d", (int)i);
    tokens[i] = t;
    types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    scores[i] = -(float)i;
  }
  LT(topos_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama"));
  LT(topos_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, NULL, (uint64_t)s->vocab));
  if (!s->no_scores)
    LT(topos_gguf_writer_add_array(w, "tokenizer.ggml.scores", TOPOS_GGUF_F32, scores,
                                   (uint64_t)s->vocab));
  LT(topos_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TOPOS_GGUF_I32, types,
                                 (uint64_t)s->vocab));
  const topos_dtype *ty = s->types;
  if (!s->no_embd) LT(lt_add(w, f, s, "token_embd.weight", ty[LT_EMBD], s->dim, s->vocab, &rng, 0));
  if (s->rope_freqs) {
    float *fr = lt_keep(f, (size_t)(lt_rope_dim(s) / 2) * sizeof *fr);
    int64_t ne[1] = {lt_rope_dim(s) / 2};
    if (!fr) st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; fr && i < lt_rope_dim(s) / 2; ++i)
      fr[i] = lt_rope_factor(i, lt_rope_dim(s), s->rope_base > 0 ? s->rope_base : 10000.0, (double)s->ctx);
    LT(topos_gguf_writer_add_tensor_raw(w, "rope_freqs.weight", 0, 1, ne, fr, (size_t)(lt_rope_dim(s) / 2) * sizeof *fr));
  }
  for (int t = 0; t < (s->longrope ? 2 : 0); ++t) {
    const char *name = t == 0 ? "rope_factors_long.weight" : "rope_factors_short.weight";
    if (s->skip_tensor && strcmp(s->skip_tensor, name) == 0) continue;
    float *fr = lt_keep(f, (size_t)(lt_rope_dim(s) / 2) * sizeof *fr);
    int64_t ne[1] = {lt_rope_dim(s) / 2};
    if (!fr) st = TOPOS_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; fr && i < lt_rope_dim(s) / 2; ++i) fr[i] = lt_longrope_factor(i, t == 0);
    LT(topos_gguf_writer_add_tensor_raw(w, name, 0, 1, ne, fr, (size_t)(lt_rope_dim(s) / 2) * sizeof *fr));
  }
  if (s->extra_tensor) LT(lt_add(w, f, s, s->extra_tensor, TOPOS_F32, s->dim, 0, &rng, 0));
  if (lt_bloom(s)) {
    LT(lt_add(w, f, s, "token_embd_norm.weight", TOPOS_F32, s->dim, 0, &rng, 1));
    LT(lt_add(w, f, s, "token_embd_norm.bias", TOPOS_F32, s->dim, 0, &rng, 0));
  }
  if (lt_positions(s)) LT(lt_add(w, f, s, "position_embd.weight", ty[LT_EMBD], s->dim, s->ctx, &rng, 0));
  for (int64_t l = 0; l < s->layers; ++l) {
    char n[64];
#define LT_W(suffix, type, e0, e1, ones)                          \
  do {                                                            \
    snprintf(n, sizeof n, "blk.%d." suffix, (int)l);              \
    LT(lt_add(w, f, s, n, type, e0, e1, &rng, ones));             \
  } while (0)
    /* olmo2's, exaone4's branches read the residual itself; olmo's norms have no weights */
    const int pre_norms = !lt_no_pre_norms(s) && !lt_weightless(s);
    if (pre_norms) {
      LT_W("attn_norm.weight", TOPOS_F32, s->dim, 0, 1);
    }
    if (lt_norm_bias(s)) {
      LT_W("attn_norm.bias", TOPOS_F32, s->dim, 0, 0);
    }
    if (s->attn_norm_2) {
      LT_W("attn_norm_2.weight", TOPOS_F32, s->dim, 0, 1);
      LT_W("attn_norm_2.bias", TOPOS_F32, s->dim, 0, 0);
    }
    if (lt_ffn_block(s, l) && lt_moe(s)) { /* nemotron_h_moe: a mixture alone */
      LT(lt_write_experts(w, f, s, l, &rng));
      continue;
    }
    if (lt_ffn_block(s, l)) { /* nemotron_h: a ReLU-squared feed-forward alone */
      LT_W("ffn_up.weight", ty[LT_UP], s->dim, s->ff, 0);
      LT_W("ffn_down.weight", ty[LT_DOWN], s->ff, s->dim, 0);
      continue;
    }
    if (lt_phi3(s)) { /* rows q, k, v in one weight; gate, up in one */
      LT_W("attn_qkv.weight", ty[LT_Q], s->dim, (s->heads + 2 * s->kv_heads) * hd, 0);
      LT_W("attn_output.weight", ty[LT_O], s->heads * hd, s->dim, 0);
      LT_W("ffn_norm.weight", TOPOS_F32, s->dim, 0, 1);
      LT_W("ffn_up.weight", ty[LT_UP], s->dim, 2 * s->ff, 0);
      LT_W("ffn_down.weight", ty[LT_DOWN], s->ff, s->dim, 0);
      continue;
    }
    if (lt_conv_block(s, l)) {
      LT(lt_write_shortconv(w, f, s, l, &rng));
    } else if (lt_ssm_block(s, l)) {
      LT(lt_write_mamba2(w, f, s, l, &rng));
    } else if (lt_delta_block(s, l)) {
      LT(lt_write_delta(w, f, s, l, &rng));
    } else if (lt_kda_block(s, l)) {
      LT(lt_write_kda(w, f, s, l, &rng));
    } else if (lt_mla(s)) {
      LT(lt_write_mla(w, f, s, l, &rng));
    } else if (s->fused_qkv) {
      LT_W("attn_qkv.weight", ty[LT_Q], s->dim, (s->heads + 2 * s->kv_heads) * hd, 0);
      LT_W("attn_output.weight", ty[LT_O], s->heads * hd, s->dim, 0);
    } else if (s->attn_sorted) {
      LT_W("attn_k.weight", ty[LT_K], s->dim, s->kv_heads * hd, 0);
      LT_W("attn_output.weight", ty[LT_O], s->heads * hd, s->dim, 0);
      LT_W("attn_q.weight", ty[LT_Q], s->dim, s->heads * hd, 0);
      LT_W("attn_v.weight", ty[LT_V], s->dim, s->kv_heads * hd, 0);
    } else { /* qwen3next, qwen35: each head's gate rows after its q */
      LT_W("attn_q.weight", ty[LT_Q], s->dim, (lt_delta(s) ? 2 : 1) * s->heads * hd, 0);
      LT_W("attn_k.weight", ty[LT_K], s->dim, s->kv_heads * hd, 0);
      LT_W("attn_v.weight", ty[LT_V], s->dim, s->kv_heads * hd, 0);
      LT_W("attn_output.weight", ty[LT_O], s->heads * hd, s->dim, 0);
    }
    if (lt_one_branch(s)) continue; /* nemotron_h: attention or a mixer alone */
    if (lt_ssm_parallel(s)) LT(lt_write_mamba2(w, f, s, l, &rng)); /* falcon-h1: beside the attention */
    if (pre_norms && !lt_one_norm(s)) {
      if (lt_ssm_parallel(s)) LT_W("ffn_norm", TOPOS_F32, s->dim, 0, 1); /* falcon-h1's name, no suffix */
      else if (lt_ffn_post_name(s)) LT_W("post_attention_norm.weight", TOPOS_F32, s->dim, 0, 1);
      else if (lt_dbrx(s)) LT_W("attn_output_norm.weight", TOPOS_F32, s->dim, 0, 1);
      else LT_W("ffn_norm.weight", TOPOS_F32, s->dim, 0, 1);
    }
    if (lt_oai(s)) {
      LT_W("attn_sinks.weight", TOPOS_F32, s->heads, 0, 0);
    }
    if (lt_norm_bias(s) && !lt_one_norm(s)) {
      LT_W("ffn_norm.bias", TOPOS_F32, s->dim, 0, 0);
    }
    if (lt_moe_layer(s, l)) {
      LT(lt_write_experts(w, f, s, l, &rng));
    } else {
      if (lt_gate_up(s)) { /* glm4: gate then up rows in ffn_up */
        LT_W("ffn_up.weight", ty[LT_UP], s->dim, 2 * s->ff, 0);
      } else {
        if (s->up_first) {
          LT_W("ffn_up.weight", ty[LT_UP], s->dim, s->ff, 0);
        }
        if (!lt_ffn_plain(s)) {
          LT_W("ffn_gate.weight", ty[LT_GATE], s->dim, s->ff, 0);
        }
        if (!s->up_first) {
          LT_W("ffn_up.weight", ty[LT_UP], s->dim, s->ff, 0);
        }
      }
      LT_W("ffn_down.weight", ty[LT_DOWN], s->ff, s->dim, 0);
    }
    if (lt_qk_norm(s) && !lt_conv_block(s, l) && !lt_delta_block(s, l)) {
      const int rows = lt_qk_norm_rows(s); /* norms over the whole q / k rows */
      const int heads = s->qk_norm_heads;  /* a weight per head */
      LT_W("attn_q_norm.weight", TOPOS_F32, rows ? s->heads * hd : hd, heads ? s->heads : 0, 1);
      LT_W("attn_k_norm.weight", TOPOS_F32, rows ? s->kv_heads * hd : hd, heads ? s->kv_heads : 0, 1);
      if (lt_mpt(s)) { /* LayerNorms with biases */
        LT_W("attn_q_norm.bias", TOPOS_F32, s->heads * hd, 0, 0);
        LT_W("attn_k_norm.bias", TOPOS_F32, s->kv_heads * hd, 0, 0);
      }
    }
    if (lt_post_norms(s)) {
      LT_W("post_attention_norm.weight", TOPOS_F32, s->dim, 0, 1);
      LT_W("post_ffw_norm.weight", TOPOS_F32, s->dim, 0, 1);
    }
    if (s->biases && s->fused_qkv) {
      LT_W("attn_qkv.bias", TOPOS_F32, (s->heads + 2 * s->kv_heads) * hd, 0, 0);
    } else if (s->biases) {
      LT_W("attn_q.bias", TOPOS_F32, s->heads * hd, 0, 0);
      LT_W("attn_k.bias", TOPOS_F32, s->kv_heads * hd, 0, 0);
      LT_W("attn_v.bias", TOPOS_F32, s->kv_heads * hd, 0, 0);
    }
    if (s->biases >= 2) {
      LT_W("attn_output.bias", TOPOS_F32, s->dim, 0, 0);
    }
    if (s->biases == 3 && !lt_moe_layer(s, l)) {
      if (!lt_ffn_plain(s)) LT_W("ffn_gate.bias", TOPOS_F32, s->ff, 0, 0);
      LT_W("ffn_up.bias", TOPOS_F32, s->ff, 0, 0);
      LT_W("ffn_down.bias", TOPOS_F32, s->dim, 0, 0);
    }
#undef LT_W
  }
  /* LFM2's converter names the final norm token_embd_norm */
  if (!lt_weightless(s))
    LT(lt_add(w, f, s, lt_lfm2(s) ? "token_embd_norm.weight" : "output_norm.weight", TOPOS_F32, s->dim, 0, &rng, 1));
  if (lt_norm_bias(s)) LT(lt_add(w, f, s, "output_norm.bias", TOPOS_F32, s->dim, 0, &rng, 0));
  if (!s->tied) LT(lt_add(w, f, s, "output.weight", ty[LT_OUT], s->dim, s->vocab, &rng, 0));
  if (lt_arch_is(s, "phi2") || lt_rms_bias(s)) LT(lt_add(w, f, s, "output.bias", TOPOS_F32, s->vocab, 0, &rng, 0));
  LT(topos_gguf_writer_write_memory(w, &f->bytes, &f->size));
#undef LT
  topos_gguf_writer_destroy(w);
  return st;
}

float *lt_deq(topos_gguf *g, const char *name) {
  topos_tensor *t = NULL, *f = NULL;
  if (topos_gguf_tensor(g, name, &t) != TOPOS_OK) return NULL;
  topos_status st = topos_dequantize(t, &f);
  topos_tensor_release(t);
  if (st != TOPOS_OK) return NULL;
  int64_t n = topos_tensor_volume(f);
  float *v = malloc((size_t)n * sizeof *v);
  if (v) topos_tensor_read_f32(f, v, n);
  topos_tensor_release(f);
  return v;
}

void lt_matvec(const float *W, const float *x, float *y, int64_t n, int64_t k) {
  const int64_t k2 = k - k % 2;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float *w0 = W + i * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
    lt_d2 s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
    for (int64_t j = 0; j < k2; j += 2) {
      const lt_d2 xj = lt_widen2(x + j);
      s0 += lt_widen2(w0 + j) * xj, s1 += lt_widen2(w1 + j) * xj;
      s2 += lt_widen2(w2 + j) * xj, s3 += lt_widen2(w3 + j) * xj;
    }
    y[i] = lt_row_total(s0, w0, x, k), y[i + 1] = lt_row_total(s1, w1, x, k);
    y[i + 2] = lt_row_total(s2, w2, x, k), y[i + 3] = lt_row_total(s3, w3, x, k);
  }
  for (; i < n; ++i) {
    const float *w = W + i * k;
    lt_d2 s = {0, 0};
    for (int64_t j = 0; j < k2; j += 2) s += lt_widen2(w + j) * lt_widen2(x + j);
    y[i] = lt_row_total(s, w, x, k);
  }
}

double lt_yarn_pair(const lt_spec *s, int64_t i, double d, double base, double ctx0) {
  const double pi = 3.14159265358979323846;
  const double fast = s->yarn_beta_fast > 0 ? s->yarn_beta_fast : 32.0;
  const double slow = s->yarn_beta_slow > 0 ? s->yarn_beta_slow : 1.0;
  /* the pair index whose wavelength fits ctx0 `turns` times */
  const double lo = d * log(ctx0 / (fast * 2.0 * pi)) / (2.0 * log(base));
  const double hi = d * log(ctx0 / (slow * 2.0 * pi)) / (2.0 * log(base));
  const double a = fmax(0.0, floor(lo)), b = fmin(d - 1.0, ceil(hi));
  const double y = ((double)i - a) / fmax(0.001, b - a);
  return 1.0 - fmin(1.0, fmax(0.0, y)); /* the weight of the original angle */
}

double lt_rel_l2(const float *got, const float *ref, int64_t n, double *ref2) {
  double num2 = 0, den2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = (double)got[i] - ref[i];
    num2 += d * d, den2 += (double)ref[i] * ref[i];
  }
  if (ref2) *ref2 = den2;
  return sqrt(num2 / den2);
}

/* a block's or the output's norm of x: LayerNorm where b is given (RMS norm
 * where not), phimoe's RMS norm plus b */
static void lt_block_norm(const lt_spec *s, float *o, const float *x, const float *w, const float *b, int64_t n) {
  if (!lt_rms_bias(s) || !b) {
    lt_norm(o, x, w, b, n, 1e-5f);
    return;
  }
  lt_rmsnorm(o, x, w, n, 1e-5f);
  for (int64_t i = 0; i < n; ++i) o[i] += b[i];
}

int lt_reference_forward(topos_gguf *g, const lt_spec *s, const int32_t *tokens,
                         int64_t N, int64_t ctx_len, float *logits) {
  int64_t D = s->dim, H = s->heads, KVH = s->kv_heads, hd = lt_head_dim(s), F = s->ff, V = s->vocab;
  int64_t kvd = KVH * hd, qd = H * hd;
  double base = s->rope_base > 0 ? s->rope_base : 10000.0;
  if (s->rope_alpha > 0) /* hunyuan's NTK alpha, in f32 as the model reads it */
    base = (float)((float)base * powf(s->rope_alpha, (float)hd / (float)(hd - 2)));
  const double pscale = s->rope_scale > 0 && !(s->rope_type && strcmp(s->rope_type, "none") == 0)
                            ? 1.0 / s->rope_scale : 1.0;
  float *embd = lt_deq(g, s->no_embd ? "output.weight" : "token_embd.weight"); /* codeshell's may be absent */
  float *onorm = lt_weightless(s) ? NULL : lt_deq(g, lt_lfm2(s) ? "token_embd_norm.weight" : "output_norm.weight");
  float *embd_nw = lt_bloom(s) ? lt_deq(g, "token_embd_norm.weight") : NULL;
  float *embd_nb = lt_bloom(s) ? lt_deq(g, "token_embd_norm.bias") : NULL;
  /* command-r's LayerNorms have no bias: zeros here, so lt_norm takes LayerNorm */
  float *onorm_b = lt_norm_bias(s) ? lt_deq(g, "output_norm.bias") : lt_layer_norm(s) ? calloc((size_t)D, 4) : NULL;
  float *out_b = lt_arch_is(s, "phi2") || lt_rms_bias(s) ? lt_deq(g, "output.bias") : NULL;
  float *pos = lt_positions(s) && !lt_without(s, "positions") ? lt_deq(g, "position_embd.weight") : NULL;
  float *out = lt_deq(g, s->tied ? "token_embd.weight" : "output.weight");
  float *K = calloc((size_t)(s->layers * N * kvd), sizeof(float));
  float *Vc = calloc((size_t)(s->layers * N * kvd), sizeof(float));
  float *x = malloc((size_t)D * 4), *h = malloc((size_t)D * 4), *q = malloc((size_t)qd * 4);
  float *att = malloc((size_t)N * 4), *o = malloc((size_t)qd * 4), *t2 = malloc((size_t)D * 4);
  float *g1 = malloc((size_t)(F > D ? F : D) * 4) /* the parallel branch's output too */, *u1 = malloc((size_t)F * 4);
  float *zeros = calloc((size_t)hd, 4); /* a bias-free LayerNorm's bias */
  float *xin = malloc((size_t)D * 4);    /* the block's input (smallthinker's router reads it) */
  float *he = malloc((size_t)D * 4);     /* arctic: the mixture's norm of xin */
  /* every layer's weights, dequantized once: [l][i] of names[i]; phi3's
   * fused attn_qkv holds q, k, v and its ffn_up gate then up (its rows in
   * that order), so [l][2], [3], [7] point into [l][1] and [l][6] */
  float *(*LW)[9] = calloc((size_t)s->layers, sizeof *LW), *(*LB)[9] = calloc((size_t)s->layers, sizeof *LB);
  /* q, k norms [hd], post-attention, post-feed-forward norms [D] and sinks [H], where the file has them */
  float *(*LN)[5] = calloc((size_t)s->layers, sizeof *LN);
  lt_experts *LX = calloc((size_t)s->layers, sizeof *LX); /* mixtures: their feed-forwards */
  lt_mla_w *LM = calloc((size_t)s->layers, sizeof *LM);   /* deepseek2: the latent attention */
  lt_conv *LC = calloc((size_t)s->layers, sizeof *LC);    /* lfm2: the short convolutions */
  lt_ssm *LS = calloc((size_t)s->layers, sizeof *LS);     /* granitehybrid: the Mamba-2 mixers */
  lt_dnet *LDN = calloc((size_t)s->layers, sizeof *LDN);  /* qwen3next, qwen35: the delta-rule mixers */
  float *qgate = malloc((size_t)(2 * qd) * 4);            /* qwen3next, qwen35: q rows with their gates */
  float *bcx = malloc((size_t)(3 * D) * 4);
  /* LayerNorm biases: attn_norm, ffn_norm; Falcon-40B's attn_norm_2 weight and bias */
  float *(*LNB)[4] = calloc((size_t)s->layers, sizeof *LNB);
  float *(*LQB)[2] = calloc((size_t)s->layers, sizeof *LQB); /* mpt: the q and k LayerNorms' biases */
  int ok = embd && (onorm || lt_weightless(s)) && (!lt_bloom(s) || (embd_nw && embd_nb)) && out && K && Vc && x && h && q && att && o && t2 && g1 && u1 && zeros && LW && LB && LN && LX && LM && LC && LS && LDN && qgate && bcx && xin && he && LNB && LQB &&
           (!lt_layer_norm(s) || onorm_b) && (!lt_arch_is(s, "phi2") || out_b) && (!lt_positions(s) || pos ||
                                                                             lt_without(s, "positions"));
  /* gemma2's soft-capping (absent keys: 50 and 30), gemma3's optional final one */
  const double attn_cap = lt_arch_is(s, "gemma2") ? (s->attn_softcap > 0 ? s->attn_softcap : 50.0) : 0.0;
  const double final_cap = lt_arch_is(s, "gemma2") ? (s->final_softcap > 0 ? s->final_softcap : 30.0)
                           : lt_arch_is(s, "gemma3") ? s->final_softcap : 0.0;
  const int fused = lt_gate_up(s), fused_qkv = lt_phi3(s) || s->fused_qkv; /* fused: gate | up in ffn_up */
  const char *names[9] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                          "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
  for (int64_t l = 0; ok && l < s->layers; ++l) {
    char n[64];
    for (int i = 0; i < 9; ++i) {
      if ((fused_qkv && (i == 2 || i == 3)) || (fused && i == 7)) continue;
      if ((i == 0 || i == 5) && (lt_no_pre_norms(s) || lt_weightless(s))) continue;
      if (i >= 1 && i <= 3 && lt_mla(s)) continue;
      if (i >= 1 && i <= 4 && (lt_conv_block(s, l) || lt_ssm_block(s, l) || lt_ffn_block(s, l) ||
                               lt_delta_block(s, l) || lt_kda_block(s, l)))
        continue;
      if (i >= 5 && lt_one_branch(s) && (i == 5 || !lt_ffn_block(s, l))) continue; /* nemotron_h */
      if (i >= 6 && lt_moe_layer(s, l) && !lt_arctic(s)) continue; /* arctic: a dense feed-forward beside */
      if ((i == 6 && lt_ffn_plain(s)) || (i == 5 && lt_one_norm(s))) continue;
      const char *name = fused_qkv && i == 1 ? "attn_qkv"
                         : fused && i == 6  ? "ffn_up"
                         : lt_ffn_post_name(s) && i == 5 ? "post_attention_norm" /* gpt-oss's name for it */
                         : lt_dbrx(s) && i == 5          ? "attn_output_norm"
                                            : names[i];
      snprintf(n, sizeof n, lt_ssm_parallel(s) && i == 5 ? "blk.%d.%s" : "blk.%d.%s.weight", (int)l, name);
      LW[l][i] = lt_deq(g, n);
      if (!LW[l][i]) ok = 0;
    }
    if (lt_moe_layer(s, l) && !lt_experts_load(g, s, l, &LX[l])) ok = 0;
    if (lt_mla(s) && !lt_kda_block(s, l) && !lt_mla_load(g, s, l, N, &LM[l])) ok = 0;
    if (lt_conv_block(s, l) && !lt_conv_load(g, s, l, N, &LC[l])) ok = 0;
    if ((lt_ssm_block(s, l) || lt_ssm_parallel(s)) && !lt_ssm_load(g, s, l, N, &LS[l])) ok = 0;
    if ((lt_delta_block(s, l) || lt_kda_block(s, l)) && !lt_delta_load(g, s, l, N, &LDN[l])) ok = 0;
    for (int i = 0; (lt_layer_norm(s) || lt_rms_bias(s)) && i < (lt_one_norm(s) ? 1 : 2); ++i) {
      snprintf(n, sizeof n, "blk.%d.%s.bias", (int)l, i ? "ffn_norm" : "attn_norm");
      if (!(LNB[l][i] = lt_norm_bias(s) ? lt_deq(g, n) : calloc((size_t)D, 4))) ok = 0;
    }
    for (int i = 2; s->attn_norm_2 && i < 4; ++i) {
      snprintf(n, sizeof n, "blk.%d.attn_norm_2.%s", (int)l, i == 2 ? "weight" : "bias");
      if (!(LNB[l][i] = lt_deq(g, n))) ok = 0;
    }
    const char *norms[5] = {"attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm", "attn_sinks"};
    for (int i = 0; i < 5; ++i) {
      if (!(i < 2 ? lt_qk_norm(s) && !lt_conv_block(s, l) && !lt_delta_block(s, l) : i < 4 ? lt_post_norms(s) : lt_oai(s))) continue;
      snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, norms[i]);
      LN[l][i] = lt_deq(g, n);
      if (!LN[l][i]) ok = 0;
    }
    for (int i = 0; lt_mpt(s) && lt_qk_norm(s) && i < 2; ++i) {
      snprintf(n, sizeof n, "blk.%d.%s.bias", (int)l, i ? "attn_k_norm" : "attn_q_norm");
      if (!(LQB[l][i] = lt_deq(g, n))) ok = 0;
    }
    /* biases of names[i]: q, k, v (biases >= 1), output (>= 2), gate, up, down (3) */
    for (int i = 1; i < 9; ++i) {
      const int want = i <= 3 ? s->biases >= 1 && (!s->fused_qkv || i == 1)
                       : i == 4 ? s->biases >= 2
                       : i >= 6 ? s->biases == 3 && !lt_moe_layer(s, l) && !(i == 6 && lt_ffn_plain(s)) : 0;
      if (!want) continue;
      snprintf(n, sizeof n, "blk.%d.%s.bias", (int)l, s->fused_qkv && i == 1 ? "attn_qkv" : names[i]);
      LB[l][i] = lt_deq(g, n);
      if (!LB[l][i]) ok = 0;
    }
  }
  for (int64_t p = 0; ok && p < N; ++p) {
    memcpy(x, embd + (int64_t)tokens[p] * D, (size_t)D * 4);
    if (embd_nw) lt_norm(x, x, embd_nw, embd_nb, D, 1e-5f); /* bloom */
    for (int64_t i = 0; lt_gemma(s) && i < D; ++i) x[i] *= sqrtf((float)D);
    for (int64_t i = 0; lt_embedding_scale(s) > 0 && i < D; ++i) x[i] *= (float)lt_embedding_scale(s);
    for (int64_t i = 0; pos && i < D; ++i) x[i] += pos[p * D + i];
    for (int64_t l = 0; ok && l < s->layers; ++l) {
      memcpy(xin, x, (size_t)D * 4);
      float *W[9], *B[9];
      for (int i = 0; i < 9; ++i) W[i] = LW[l][i], B[i] = LB[l][i];
      if (fused_qkv) W[2] = W[1] + qd * D, W[3] = W[2] + kvd * D;
      if (fused) W[7] = W[6] + F * D;
      if (s->fused_qkv && B[1]) B[2] = B[1] + qd, B[3] = B[2] + kvd;
      if (lt_ffn_block(s, l)) { /* nemotron_h: x + ffn(norm(x)) (nemotron_h_moe: a mixture) */
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        if (lt_moe(s)) lt_experts_apply(s, &LX[l], h, h, t2);
        else lt_plain_ffn(W[7], B[7], W[8], B[8], h, u1, t2, D, F, lt_ffn_act(s), l);
        for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
        continue;
      }
      if (lt_kda_block(s, l)) {
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        lt_kda_apply(&LDN[l], D, p, !lt_without(s, "ssm history"), h, t2);
      } else if (lt_mla(s)) {
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        if (!lt_mla_attention(s, &LM[l], W[4], p, h, t2)) ok = 0;
      } else if (lt_conv_block(s, l)) {
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        lt_conv_apply(&LC[l], D, p, !lt_without(s, "conv history"), h, bcx, t2);
      } else if (lt_ssm_block(s, l)) {
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        if (lt_mamba1(s)) lt_ssm1_apply(&LS[l], D, p, !lt_without(s, "ssm history"), s->ssm_rms, h, t2);
        else lt_ssm_apply(&LS[l], D, p, !lt_without(s, "ssm history"), h, t2);
      } else if (lt_delta_block(s, l)) {
        lt_rmsnorm(h, x, W[0], D, 1e-5f);
        lt_delta_apply(&LDN[l], s, D, p, !lt_without(s, "ssm history"), h, t2);
      } else {
        float *kp = K + (l * N + p) * kvd, *vp = Vc + (l * N + p) * kvd;
        if (W[0] || lt_weightless(s)) lt_block_norm(s, h, x, W[0], s->plain_rms ? NULL : LNB[l][0], D);
        else memcpy(h, x, (size_t)D * 4);
        const float *hq = h; /* Falcon-40B: the attention reads its own norm of x */
        if (LNB[l][2]) lt_norm(t2, x, LNB[l][2], LNB[l][3], D, 1e-5f), hq = t2;
        if (lt_delta(s)) { /* each head's q, then its gate */
          lt_matvec(W[1], hq, qgate, 2 * qd, D);
          for (int64_t i = 0; i < qd; ++i) q[i] = qgate[i / hd * 2 * hd + i % hd];
        } else {
          lt_matvec(W[1], hq, q, qd, D);
        }
        lt_matvec(W[2], hq, kp, kvd, D);
        lt_matvec(W[3], hq, vp, kvd, D);
        for (int64_t i = 0; B[1] && i < qd; ++i) q[i] += B[1][i];
        for (int64_t i = 0; B[2] && i < kvd; ++i) kp[i] += B[2][i];
        for (int64_t i = 0; B[3] && i < kvd; ++i) vp[i] += B[3][i];
        for (int64_t i = 0; s->clamp_kqv > 0 && i < qd + 2 * kvd; ++i) { /* olmo: after the biases */
          float *v = i < qd ? q + i : i < qd + kvd ? kp + (i - qd) : vp + (i - qd - kvd);
          *v = *v < -s->clamp_kqv ? -s->clamp_kqv : *v > s->clamp_kqv ? s->clamp_kqv : *v;
        }
        /* q and k norms, per head (hunyuan: after the rotation, below) */
        for (int64_t head = 0; LN[l][0] && !lt_qk_norm_rows(s) && !lt_qk_norm_late(s) && head < H + KVH; ++head) {
          float *v = head < H ? q + head * hd : kp + (head - H) * hd;
          if (s->qk_norm_heads) /* LayerNorm, no bias, the head's own weight */
            lt_norm(v, v, head < H ? LN[l][0] + head * hd : LN[l][1] + (head - H) * hd, zeros, hd, 1e-5f);
          else
            lt_rmsnorm(v, v, head < H ? LN[l][0] : LN[l][1], hd, 1e-5f);
        }
        if (LN[l][0] && lt_qk_norm_rows(s)) { /* over the whole q and k rows (mpt: LayerNorms) */
          lt_norm(q, q, LN[l][0], LQB[l][0], qd, 1e-5f);
          lt_norm(kp, kp, LN[l][1], LQB[l][1], kvd, 1e-5f);
        }
        /* gemma3's windowed layers: a base of their own (absent: 10000) and no
         * position scaling; olmo2's: the file's base unless it says, no scaling,
         * no attn_factor; gemma2's: the same base unless the file says; mellum's: the
         * file's base whatever rope.freq_base_swa says, no scaling, no attn_factor */
        const int win = lt_windowed(s, l), mellum = lt_arch_is(s, "mellum"), olmo = lt_arch_is(s, "olmo2") || mellum;
        const int own_base = win && (lt_arch_is(s, "gemma3") || olmo || s->rope_base_swa > 0);
        const double lbase = !own_base               ? base
                             : mellum                ? base
                             : s->rope_base_swa > 0 ? s->rope_base_swa
                             : olmo                  ? base
                                                     : 10000.0;
        const double lscale = own_base ? 1.0 : pscale;
        /* rope: adjacent pairs, freq = base^(-2i/hd), positions scaled
         * linearly, Llama 3.1's factors dividing the frequencies; YaRN */
        const int64_t rd = lt_rope_dim(s); /* partial rotary: the first rd dimensions rotate */
        for (int64_t head = 0; !lt_nope(s, l) && head < H + KVH; ++head) {
          float *v = head < H ? q + head * hd : kp + (head - H) * hd;
          for (int64_t i = 0; i < rd / 2; ++i) {
            double th = (lt_rope_still(s, i) ? 0.0 : (double)p) * lscale * pow(lbase, -2.0 * (double)i / (double)rd);
            double mag = s->rope_attn_factor > 0 && !(own_base && olmo) ? s->rope_attn_factor : 1.0;
            if (s->rope_freqs) th /= lt_rope_factor(i, rd, base, (double)s->ctx);
            /* LongRoPE: the long table where the context (ctx_len) is longer than the original one */
            if (s->longrope) th /= lt_longrope_factor(i, ctx_len > (s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->ctx));
            if (lt_yarn(s) && !own_base) {
              const double orig = th / pscale, w = lt_yarn_pair(s, i, (double)rd, base,
                                                               (double)(s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->ctx));
              th = th * (1.0 - w) + orig * w;
              mag *= 1.0 + 0.1 * log(1.0 / pscale);
              if (s->yarn_log_mul > 0) mag /= 1.0 + 0.1 * s->yarn_log_mul * log(1.0 / pscale);
            }
            float c = (float)(cos(th) * mag), sn = (float)(sin(th) * mag);
            const int64_t i0 = lt_neox(s) ? i : 2 * i, i1 = lt_neox(s) ? i + rd / 2 : 2 * i + 1;
            float a = v[i0], b = v[i1];
            v[i0] = a * c - b * sn;
            v[i1] = a * sn + b * c;
          }
        }
        if (s->attn_temp_scale > 0) { /* mistral3: q times 1 + scale ln(floor(p / original context) + 1) */
          const int64_t orig = s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->ctx;
          const float f = (float)(log((double)(p / orig) + 1.0) * s->attn_temp_scale + 1.0);
          for (int64_t i = 0; i < qd; ++i) q[i] *= f;
        }
        for (int64_t head = 0; LN[l][0] && lt_qk_norm_late(s) && head < H + KVH; ++head) {
          float *v = head < H ? q + head * hd : kp + (head - H) * hd;
          lt_rmsnorm(v, v, head < H ? LN[l][0] : LN[l][1], hd, 1e-5f);
        }
        if (lt_llama4(s) && lt_nope(s, l)) { /* q times 1 + 0.1 ln(floor((p + 1) / 8192) + 1) */
          const float f = (float)(log((double)((p + 1) / 8192) + 1.0) * 0.1 + 1.0);
          for (int64_t i = 0; i < qd; ++i) q[i] *= f;
        }
        for (int64_t head = 0; lt_llama4(s) && !lt_nope(s, l) && s->experts != 128 && head < H + KVH; ++head) {
          float *v = head < H ? q + head * hd : kp + (head - H) * hd; /* L2 norm: RMS, no weight */
          lt_rmsnorm(v, v, NULL, hd, 1e-5f);
        }
        for (int64_t head = 0; head < H; ++head) {
          int64_t kh = head / (H / KVH);
          float mx = -INFINITY;
          /* a sliding window (phi3; gemma2 / gemma3's windowed layers): keys from p - swa + 1;
           * llama4's chunks: from the chunk's start */
          const int64_t wnd = win ? lt_window(s) : 0;
          const int64_t j0 = wnd <= 0 ? 0 : lt_llama4(s) ? p / wnd * wnd : p >= wnd ? p - wnd + 1 : 0;
          for (int64_t j = 0; j < j0; ++j) att[j] = -INFINITY;
          for (int64_t j = j0; j <= p; ++j) {
            double sc = 0;
            for (int64_t i = 0; i < hd; ++i)
              sc += (double)q[head * hd + i] * K[(l * N + j) * kvd + kh * hd + i];
            sc = s->attention_scale > 0 ? sc * s->attention_scale : lt_jais(s) ? sc / (double)hd : sc / sqrt((double)hd);
            if (lt_alibi(s) && !lt_without(s, "alibi")) sc += lt_alibi_slope(H, head) * (double)(j - p);
            if (attn_cap > 0) sc = attn_cap * tanh(sc / attn_cap);
            att[j] = (float)sc;
            if (att[j] > mx) mx = att[j];
          }
          /* gpt-oss's sink: one more logit in the softmax, no value */
          const float *sink = lt_without(s, "sinks") ? NULL : LN[l][4];
          if (sink && sink[head] > mx) mx = sink[head];
          double sum = sink ? exp((double)sink[head] - mx) : 0.0;
          for (int64_t j = 0; j <= p; ++j) sum += exp((double)att[j] - mx);
          for (int64_t i = 0; i < hd; ++i) {
            double acc = 0;
            for (int64_t j = 0; j <= p; ++j)
              acc += exp((double)att[j] - mx) / sum * Vc[(l * N + j) * kvd + kh * hd + i];
            o[head * hd + i] = (float)acc;
          }
        }
        for (int64_t i = 0; lt_delta(s) && i < qd; ++i) /* the heads' outputs times sigmoid(gate) */
          o[i] = (float)(o[i] / (1.0 + exp(-(double)qgate[i / hd * 2 * hd + hd + i % hd])));
        lt_matvec(W[4], o, t2, D, qd);
        for (int64_t i = 0; B[4] && i < D; ++i) t2[i] += B[4][i];
      }
      if (lt_ssm_parallel(s)) { /* falcon-h1: the mixer of the same norm beside the attention */
        lt_ssm_apply(&LS[l], D, p, !lt_without(s, "ssm history"), h, g1);
        for (int64_t i = 0; i < D; ++i) t2[i] += g1[i];
      }
      if (lt_one_branch(s)) { /* nemotron_h: no feed-forward after attention or a mixer */
        for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
        continue;
      }
      { /* the attention's output t2 into the residual; the feed-forward */
        if (LN[l][2]) lt_rmsnorm(t2, t2, LN[l][2], D, 1e-5f);
        for (int64_t i = 0; lt_residual_scale(s) > 0 && i < D; ++i) t2[i] *= (float)lt_residual_scale(s);
        if (lt_parallel(s)) { /* x + (attn + ffn(h)): h the attention's norm (phi2) or the ffn's (gptneox) */
          if (W[5]) lt_block_norm(s, h, x, W[5], s->plain_rms ? NULL : LNB[l][1], D);
          if (W[6]) memset(g1, 0, (size_t)D * 4), lt_swiglu_add(W[6], W[7], W[8], h, D, F, 1.0, g1); /* command-r */
          else lt_plain_ffn(W[7], B[7], W[8], B[8], h, u1, g1, D, F, lt_ffn_act(s), l);
          for (int64_t i = 0; i < D; ++i) x[i] += t2[i] + g1[i];
          continue;
        }
        for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
        if (W[5] || lt_weightless(s)) lt_block_norm(s, h, x, W[5], s->plain_rms ? NULL : LNB[l][1], D);
        else memcpy(h, x, (size_t)D * 4);
        if (lt_ffn_plain(s)) {
          lt_plain_ffn(W[7], B[7], W[8], B[8], h, u1, t2, D, F, lt_ffn_act(s), l);
          for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
          continue;
        }
        if (lt_moe_layer(s, l)) {
          if (lt_arctic(s)) { /* the dense feed-forward of h beside the mixture of the input's own norm */
            lt_rmsnorm(he, xin, LX[l].nexps, D, 1e-5f);
            lt_experts_apply(s, &LX[l], he, he, t2);
            lt_swiglu_add(W[6], W[7], W[8], h, D, D, 1.0, t2);
          } else {
            lt_experts_apply(s, &LX[l], h, lt_arch_is(s, "smallthinker") ? xin : h, t2);
          }
          for (int64_t i = 0; lt_residual_scale(s) > 0 && i < D; ++i) t2[i] *= (float)lt_residual_scale(s);
          for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
          continue;
        }
        lt_matvec(W[6], h, g1, F, D);
        lt_matvec(W[7], h, u1, F, D);
        for (int64_t i = 0; B[6] && i < F; ++i) g1[i] += B[6][i];
        for (int64_t i = 0; B[7] && i < F; ++i) u1[i] += B[7][i];
        for (int64_t i = 0; i < F; ++i) {
          const double a = g1[i]; /* gemma: GELU, tanh form */
          g1[i] = lt_gemma(s) ? (float)(lt_gelu(a) * u1[i]) : g1[i] / (1.0f + expf(-g1[i])) * u1[i];
        }
        lt_matvec(W[8], g1, t2, D, F);
        for (int64_t i = 0; B[8] && i < D; ++i) t2[i] += B[8][i];
        if (LN[l][3]) lt_rmsnorm(t2, t2, LN[l][3], D, 1e-5f);
        for (int64_t i = 0; lt_residual_scale(s) > 0 && i < D; ++i) t2[i] *= (float)lt_residual_scale(s);
        for (int64_t i = 0; i < D; ++i) x[i] += t2[i];
      }
    }
    if (ok) {
      lt_block_norm(s, h, x, onorm, s->plain_rms ? NULL : onorm_b, D);
      lt_matvec(out, h, logits + p * V, V, D);
      for (int64_t i = 0; out_b && i < V; ++i) logits[p * V + i] += out_b[i];
      for (int64_t i = 0; lt_logit_scale(s) > 0 && i < V; ++i) /* granite divides, command-r multiplies */
        logits[p * V + i] = lt_cohere(s) ? logits[p * V + i] * s->logit_scale
                                         : (float)(logits[p * V + i] / lt_logit_scale(s));
      for (int64_t i = 0; final_cap > 0 && i < V; ++i)
        logits[p * V + i] = (float)(final_cap * tanh(logits[p * V + i] / final_cap));
    }
  }
  for (int64_t l = 0; l < s->layers && LW && LB; ++l) {
    for (int i = 0; i < 9; ++i) free(LW[l][i]);
    for (int i = 0; i < 9; ++i) free(LB[l][i]);
    for (int i = 0; LN && i < 5; ++i) free(LN[l][i]);
    if (LX) lt_experts_free(&LX[l]);
    if (LM) lt_mla_free(&LM[l]);
    if (LC) lt_conv_free(&LC[l]);
    if (LS) lt_ssm_free(&LS[l]);
    if (LDN) lt_delta_free(&LDN[l]);
    for (int i = 0; LNB && i < 4; ++i) free(LNB[l][i]);
    for (int i = 0; LQB && i < 2; ++i) free(LQB[l][i]);
  }
  free(LW); free(LB); free(LN); free(LX); free(LM); free(LC); free(LS); free(LDN); free(qgate); free(bcx); free(xin); free(he); free(LNB); free(LQB); free(onorm_b); free(out_b); free(pos);
  free(embd); free(onorm); free(embd_nw); free(embd_nb); free(out); free(K); free(Vc); free(x); free(h); free(q);
  free(att); free(o); free(t2); free(g1); free(u1); free(zeros);
  return ok;
}
