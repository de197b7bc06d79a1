/* The llama loader's hyper-parameters: the architecture table (what each
 * general.architecture changes in the graph, as llama.cpp's graph for the
 * same files) and the ARCH.* keys read into topos_llama_config, each
 * range-checked, with llama.cpp's defaults where a key is absent. The
 * weights are llama.c's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "models/llama_internal.h"

const char *tp_llama_key(char *buf, size_t cap, const char *arch, const char *suffix) {
  snprintf(buf, cap, "%s.%s", arch, suffix);
  return buf;
}

/* Integer key `key` into *out, within min..2^31 (min 0 or 1); *present 0
 * (and *out untouched) where the file has no such key. */
static topos_status tp_llama_key_u64(topos_gguf *g, const char *key, int min, int64_t *out, int *present) {
  uint64_t v;
  topos_status st = topos_gguf_get_u64(g, key, &v);
  *present = st != TOPOS_ERR_NOT_FOUND;
  if (!*present) {
    topos_clear_error();
    return TOPOS_OK;
  }
  if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", key);
  if (v < (uint64_t)min || v > (uint64_t)1 << 31)
    return tp_fail(TOPOS_ERR_RANGE, "llama: key %s = %" PRIu64 " is outside %d..2^31", key, v, min);
  *out = (int64_t)v;
  return TOPOS_OK;
}

/* tp_llama_u64 and tp_llama_count: at least min */
static topos_status tp_llama_u64_from(topos_gguf *g, const char *key, int min, int required, int64_t fallback,
                                      int64_t *out) {
  int present;
  TP_TRY(tp_llama_key_u64(g, key, min, out, &present));
  if (present) return TOPOS_OK;
  if (required) return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing", key);
  *out = fallback;
  return TOPOS_OK;
}

topos_status tp_llama_u64(topos_gguf *g, const char *key, int required, int64_t fallback, int64_t *out) {
  return tp_llama_u64_from(g, key, 1, required, fallback, out);
}

topos_status tp_llama_count(topos_gguf *g, const char *key, int required, int64_t fallback, int64_t *out) {
  return tp_llama_u64_from(g, key, 0, required, fallback, out);
}

static topos_status tp_llama_f32(topos_gguf *g, const char *key, int required, float fallback,
                                 float *out) {
  topos_status st = topos_gguf_get_f32(g, key, out);
  if (st == TOPOS_ERR_NOT_FOUND && !required) {
    topos_clear_error();
    *out = fallback;
    return TOPOS_OK;
  }
  if (st == TOPOS_ERR_NOT_FOUND)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing", key);
  if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", key);
  if (!(*out > 0.0f) || *out > 1e30f)
    return tp_fail(TOPOS_ERR_RANGE, "llama: key %s = %g must be a positive finite number", key,
                   (double)*out);
  return TOPOS_OK;
}

/* A non-negative finite f32 key (soft caps, scales: 0 meaning none), absent the default */
static topos_status tp_llama_nonneg_f32(topos_gguf *g, const char *key, float fallback, float *out) {
  topos_status st = topos_gguf_get_f32(g, key, out);
  if (st == TOPOS_ERR_NOT_FOUND) {
    topos_clear_error();
    *out = fallback;
    return TOPOS_OK;
  }
  if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", key);
  if (!(*out >= 0.0f) || *out > 1e30f)
    return tp_fail(TOPOS_ERR_RANGE, "llama: key %s = %g must be 0 or a positive finite number", key, (double)*out);
  return TOPOS_OK;
}

/* YaRN as llama.cpp applies it to llama and qwen2 files (rope.scaling.type
 * "yarn"): pair i's angle blends the interpolated one (position / factor)
 * and the original one by a ramp over the pair index, 1 (original) below
 * the pair whose wavelength fits original_context_length / 32 times, 0
 * (interpolated) above the one fitting it once (beta_fast 32, beta_slow 1,
 * the first floored and the second ceiled, as its corr_dims are); cos and
 * sin are multiplied by attn_factor * (1 + 0.1 ln factor), which scales
 * every attention logit by that squared. */
static double tp_yarn_corr_dim(double rot_dim, double ctx_orig, double rotations, double base) {
  return rot_dim * log(ctx_orig / (rotations * 2.0 * 3.14159265358979323846)) / (2.0 * log(base));
}

/* beta_fast / beta_slow: rope.scaling.yarn_beta_fast / _slow (absent 32, 1);
 * log_mul: rope.scaling.yarn_log_multiplier (Mistral 3's files: the
 * magnitude becomes attn_factor (1 + 0.1 ln f) / (1 + 0.1 log_mul ln f), as
 * llama.cpp's mscale / mscale_all_dims with mscale 1; absent or 0: as above). */
static void tp_llama_yarn(topos_llama_config *c, double beta_fast, double beta_slow, double log_mul) {
  const double ctx_orig = (double)c->rope_ctx_orig, d = (double)c->rope_dim;
  double low = floor(tp_yarn_corr_dim(d, ctx_orig, beta_fast, c->rope_base));
  double high = ceil(tp_yarn_corr_dim(d, ctx_orig, beta_slow, c->rope_base));
  c->rope_yarn_low = (float)(low > 0.0 ? low : 0.0);
  c->rope_yarn_high = (float)(high < d - 1.0 ? high : d - 1.0);
  c->rope_ext_factor = 1.0f;
  const double ln_f = log(1.0 / (double)c->rope_freq_scale);
  double m = 1.0 + 0.1 * ln_f;
  if (log_mul != 0.0 && ln_f > 0.0) m /= 1.0 + 0.1 * log_mul * ln_f;
  c->rope_mscale = (float)((double)c->rope_mscale * m);
}

/* Position scaling as llama.cpp reads it: rope.scaling.factor (older files:
 * rope.scale_linear) divides every position unless rope.scaling.type is
 * "none"; an absent type means "linear", a factor of 0 means none. "yarn"
 * takes the same factor (tp_llama_yarn); "longrope" (or no type, as the
 * phi3 converter writes it) takes its tables (tp_llama_rope_factors). Every
 * type: cos and sin times rope.scaling.attn_factor (absent: 1; also into
 * *attn_factor, which windowed layers with their own rotation take), and
 * rope.scaling.original_context_length (absent or 0: the training context)
 * places YaRN's ramp and picks LongRoPE's table. */
static topos_status tp_llama_rope_scaling(topos_gguf *g, topos_llama_config *c, float *attn_factor) {
  char kb[96], kb2[96];
  c->rope_freq_scale = 1.0f;
  TP_TRY(tp_llama_f32(g, TP_K("rope.scaling.attn_factor"), 0, 1.0f, &c->rope_mscale));
  *attn_factor = c->rope_mscale; /* before YaRN's magnitude joins it */
  int64_t orig = 0;
  int present;
  TP_TRY(tp_llama_key_u64(g, TP_K("rope.scaling.original_context_length"), 0, &orig, &present));
  c->rope_ctx_orig = orig ? orig : c->n_ctx_train;
  const char *type = NULL;
  topos_status st = topos_gguf_get_string(g, TP_K("rope.scaling.type"), &type, NULL);
  if (st == TOPOS_ERR_NOT_FOUND) topos_clear_error(), type = "linear";
  else if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", kb);
  if (strcmp(type, "none") == 0) return TOPOS_OK;
  const int yarn = strcmp(type, "yarn") == 0;
  if (strcmp(type, "linear") != 0 && strcmp(type, "longrope") != 0 && !yarn)
    return tp_fail(TOPOS_UNSUPPORTED,
                   "llama: rope scaling \"%.32s\" is not supported (none, linear, yarn and longrope are)", type);
  const char *keys[2] = {TP_K("rope.scaling.factor"), tp_llama_key(kb2, sizeof kb2, c->arch, "rope.scale_linear")};
  for (int i = 0; i < 2; ++i) {
    float factor;
    TP_TRY(tp_llama_nonneg_f32(g, keys[i], -1.0f, &factor));
    if (factor < 0.0f) continue; /* absent: the older key */
    if (factor > 0.0f) c->rope_freq_scale = 1.0f / factor;
    break;
  }
  if (yarn) {
    float beta_fast = 32.0f, beta_slow = 1.0f, log_mul = 0.0f;
    TP_TRY(tp_llama_f32(g, TP_K("rope.scaling.yarn_beta_fast"), 0, 32.0f, &beta_fast));
    TP_TRY(tp_llama_f32(g, TP_K("rope.scaling.yarn_beta_slow"), 0, 1.0f, &beta_slow));
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("rope.scaling.yarn_log_multiplier"), 0.0f, &log_mul));
    tp_llama_yarn(c, beta_fast, beta_slow, log_mul);
  }
  return TOPOS_OK;
}

/* phi3's sliding attention window (a query at p sees keys at p - window + 1
 * .. p): attention.sliding_window, 0 for none (Phi-4); absent, llama.cpp's
 * defaults for the files written before the key (Phi-3 mini / medium 4k:
 * 2047, mini 128k: 262144, medium 128k: 131072), else refused as it does. */
static topos_status tp_llama_phi3_window(topos_gguf *g, topos_llama_config *c) {
  char kb[96];
  int present;
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.sliding_window"), 0, &c->n_swa, &present));
  if (present) return TOPOS_OK;
  if ((c->n_layers == 32 || c->n_layers == 40) && c->n_ctx_train == 4096) c->n_swa = 2047;
  else if (c->n_layers == 32 && c->n_kv_heads == 32 && c->n_ctx_train == 131072) c->n_swa = 262144;
  else if (c->n_layers == 40 && c->n_ctx_train == 131072) c->n_swa = 131072;
  else return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: phi3 file without %s", kb);
  return TOPOS_OK;
}

/* The windowed layers' rotation: as every other layer's (a base of their
 * own only where rope.freq_base_swa differs); or a base of their own
 * (rope.freq_base_swa, absent 10000) with positions unscaled and cos / sin
 * times attn_factor (gemma3); or that with the file's base as the default
 * and attn_factor 1 (OLMo 3); or the file's base whatever
 * rope.freq_base_swa says, unscaled, attn_factor 1 (mellum) — as
 * llama.cpp's graphs for each. */
typedef enum tp_swa_rope {
  TP_SWA_ROPE_SAME,
  TP_SWA_ROPE_OWN_10000,
  TP_SWA_ROPE_OWN_BASE,
  TP_SWA_ROPE_UNSCALED
} tp_swa_rope;

typedef struct tp_llama_arch {
  const char *name;
  unsigned flags;
  /* sliding window: swa 0 none; 1 every layer (phi3); 2 read from the
   * file, default_swa when absent (-1: the key is required), on layers
   * l % period < period - 1
   * (attention.sliding_window_pattern may give another period or list
   * the layers); window_blocks: only files of this many blocks have one,
   * its default 4096 (exaone4: the 32B), 0 any */
  int swa;
  int64_t default_swa, period, window_blocks;
  tp_swa_rope swa_rope;
  /* files of this many blocks scale q by 1 / sqrt(dim / heads) instead of
   * 1 / sqrt(head width): the 27B Gemmas' query_pre_attn_scalar, which
   * llama.cpp tells by the block count too */
  int64_t qpas_blocks;
} tp_llama_arch;

/* M-RoPE: none; where the file has sections (glm4moe, GLM-4.5V's), or
 * always (qwen2vl); interleaved, always (qwen3vl) */
enum tp_mrope { TP_MROPE_NONE, TP_MROPE_IF_SECTIONS, TP_MROPE, TP_IMROPE };

/* What only a few architectures have, by name (tp_llama_archs' rows stay short) */
typedef struct tp_llama_arch_extra {
  const char *name;
  /* expert_gating_func chooses the router: 1 softmax, 2 sigmoid; 0 or
   * absent: this default (1 or 2); 0 here: the softmax only */
  int router_key;
  /* DeepSeek-style mixtures: expert_shared_count shared experts,
   * expert_weights_norm, and the nextn_predict_layers blocks after the
   * trunk (skipped) */
  int ds_moe;
  int qk_norm_optional; /* attn_q_norm / attn_k_norm where the file has them (GLM-4.5: yes, Air: no) */
  int mrope; /* rope.dimension_sections (tp_llama_mrope): one of tp_mrope */
  int llama4; /* tp_llama_llama4 */
  /* Hunyuan: q and k norms after the rotation, rope.scaling.alpha, an
   * expert_count of 1 dense, a mixture's shared expert feed_forward_length
   * wide where expert_shared_feed_forward_length is absent */
  int hunyuan;
  /* gate | up rows in one ffn_up (GLM-4; phi3's TP_ARCH_FUSED too) and the
   * nextn_predict_layers blocks after the trunk skipped, without the rest of
   * ds_moe */
  int gate_up, nextn;
  int relu2;   /* the plain feed-forward's activation is ReLU squared (arcee) */
  int minicpm; /* granite's scales with MiniCPM's defaults where the keys are absent, rotation always */
  int ff_half; /* feed_forward_length is twice the feed-forward's width (Qwen 1's intermediate_size) */
  int weightless; /* LayerNorms without weights or biases (OLMo 1) */
  int clamp;      /* attention.clamp_kqv where the file has it (OLMo 1.7, MPT) */
  /* ALiBi instead of the rotation: alibi a fixed maximum bias (llama.cpp's
   * 8: no key names it; bloom, refact), alibi_key by attention.max_alibi_bias
   * (absent: no ALiBi; mpt, jais); baichuan: 8 for 40-block files (the 13B),
   * else llama's rotation */
  float alibi;
  int alibi_key, baichuan;
  int embd_norm;       /* the embedding's LayerNorm, token_embd_norm (bloom) */
  int norm_bias_maybe; /* LayerNorm biases where the file has them (mpt) */
  int attn_scale_hd;   /* scores times 1 / head width, not its square root (jais) */
  /* attn_q_norm / attn_k_norm where the file has them, a weight per head
   * ([head width, heads]) and the block norms' kind: Command R+, StableLM 2 12B */
  int qk_norm_heads;
  int parallel_without_ffn_norm; /* no blk.0.ffn_norm: the feed-forward reads the attention's norm (StableLM 2 12B) */
  /* LFM2: attention.head_count_kv a per-block array whose zeros are short
   * convolutions (tp_llama_shortconv), the final norm named token_embd_norm */
  int shortconv;
  int no_rope;         /* no layer rotates, whatever else positions them (mpt, jais: ALiBi where
                        * the file gives a bias, else nothing, as llama.cpp's graphs) */
  int positions_maybe; /* position_embd.weight where the file has it: learned positions (mpt) */
  int qk_norm_late;    /* the per-head q and k norms follow the rotation (hunyuan, maincoder) */
  int xielu;           /* the plain feed-forward's activation is xIELU, per block (tp_llama_xielu: apertus) */
  int smallthinker;    /* tp_llama_smallthinker */
  int ssm;             /* head_count_kv's zeros are Mamba-2 blocks (tp_llama_ssm_config: granitehybrid); 2:
                        * those whose feed_forward_length entry is 0 too, the others feed-forwards alone
                        * (tp_llama_nemotron_h_blocks); 3: every block, beside its attention (falcon-h1); 4:
                        * every block, alone, no attention anywhere (mamba2); 5: likewise, Mamba-1 mixers
                        * (mamba); 6: Mamba-1 mixers where head_count_kv is 0 (jamba) */
  /* gated-DeltaNet mixers between attention blocks whose q rows carry a gate (tp_llama_delta_config):
   * 1 value head h reads key head h / (heads / groups) (qwen3next), 2 h % groups (qwen35) */
  int delta;
  /* Kimi Delta Attention mixers where head_count_kv is 0 (tp_llama_kda_config), unrotated latent
   * attention elsewhere, the mixtures' weights always renormalised (kimi-linear) */
  int kda;
  int gemma4;  /* llama_gemma4.c */
  int gemma3n; /* llama_gemma3n.c */
  /* feed_forward_length, head_count, head_count_kv: numbers or per-block lists (tp_llama_block_lists) */
  int block_lists;
  const char *ffn_norm_name; /* the feed-forward's norm under another name (dbrx: attn_output_norm) */
  int embd_from_output;      /* no token_embd: output.weight is the embedding too (codeshell) */
  /* ds_moe's shared experts one feed-forward of expert_shared_feed_forward_length (absent: an
   * expert's width), the count not multiplying it (exaone-moe) */
  int shared_total;
  int experts_residual; /* config.experts_residual (arctic) */
  int rms_bias;         /* RMS norms with a bias after the weight (phimoe, as llama.cpp's phi3 graph) */
} tp_llama_arch_extra;

static const tp_llama_arch_extra tp_llama_arch_extras[] = {
    {.name = "deepseek2", .router_key = 1, .ds_moe = 1},
    {.name = "deepseek", .ds_moe = 1},
    {.name = "bailingmoe", .ds_moe = 1},
    {.name = "glm4moe", .router_key = 2, .ds_moe = 1, .qk_norm_optional = 1, .mrope = TP_MROPE_IF_SECTIONS},
    {.name = "llama4", .llama4 = 1},
    {.name = "minimax-m2", .router_key = 1},
    {.name = "dots1", .router_key = 1, .ds_moe = 1},
    {.name = "bailingmoe2", .router_key = 1, .ds_moe = 1},
    {.name = "hunyuan-dense", .hunyuan = 1, .qk_norm_late = 1},
    {.name = "hunyuan-moe", .hunyuan = 1, .qk_norm_late = 1},
    {.name = "qwen2vl", .mrope = TP_MROPE},
    {.name = "qwen3vl", .mrope = TP_IMROPE},
    {.name = "qwen3vlmoe", .mrope = TP_IMROPE},
    {.name = "glm4", .mrope = TP_MROPE_IF_SECTIONS, .gate_up = 1, .nextn = 1},
    {.name = "chatglm", .gate_up = 1},
    {.name = "arcee", .relu2 = 1},
    {.name = "nemotron", .relu2 = 1},
    {.name = "jais2", .relu2 = 1},
    {.name = "maincoder", .qk_norm_late = 1},
    {.name = "apertus", .xielu = 1},
    {.name = "smallthinker", .smallthinker = 1, .router_key = 1},
    {.name = "qwen", .ff_half = 1},
    {.name = "olmo", .weightless = 1, .clamp = 1},
    {.name = "bloom", .alibi = 8.0f, .embd_norm = 1},
    {.name = "mpt", .alibi_key = 1, .norm_bias_maybe = 1, .clamp = 1, .qk_norm_optional = 1, .no_rope = 1,
     .positions_maybe = 1},
    {.name = "refact", .alibi = 8.0f},
    {.name = "jais", .alibi_key = 1, .attn_scale_hd = 1, .no_rope = 1},
    {.name = "baichuan", .baichuan = 1},
    {.name = "minicpm", .minicpm = 1},
    {.name = "command-r", .qk_norm_optional = 1, .qk_norm_heads = 1},
    {.name = "stablelm", .qk_norm_optional = 1, .qk_norm_heads = 1, .parallel_without_ffn_norm = 1},
    {.name = "lfm2", .shortconv = 1},
    {.name = "lfm2moe", .shortconv = 1, .router_key = 2},
    {.name = "granitehybrid", .ssm = 1},
    {.name = "falcon-h1", .ssm = 3},
    {.name = "mamba2", .ssm = 4},
    {.name = "mamba", .ssm = 5},
    {.name = "jamba", .ssm = 6, .no_rope = 1},
    {.name = "kimi-linear", .kda = 1, .router_key = 1, .ds_moe = 1, .no_rope = 1},
    {.name = "qwen3next", .delta = 1, .nextn = 1},
    {.name = "qwen35", .delta = 2, .nextn = 1, .mrope = TP_IMROPE},
    {.name = "qwen35moe", .delta = 2, .nextn = 1, .mrope = TP_IMROPE},
    {.name = "gemma4", .gemma4 = 1, .block_lists = 1},
    {.name = "gemma3n", .gemma3n = 1, .block_lists = 1},
    {.name = "openelm", .block_lists = 1},
    {.name = "dbrx", .clamp = 1, .norm_bias_maybe = 1, .ffn_norm_name = "attn_output_norm.weight"},
    {.name = "codeshell", .embd_from_output = 1},
    {.name = "arctic", .experts_residual = 1},
    {.name = "phimoe", .rms_bias = 1},
    {.name = "exaone-moe", .router_key = 1, .ds_moe = 1, .shared_total = 1},
    {.name = "nemotron_h", .ssm = 2, .relu2 = 1, .no_rope = 1},
    {.name = "nemotron_h_moe", .ssm = 2, .relu2 = 1, .no_rope = 1, .router_key = 2, .ds_moe = 1},
};

static tp_llama_arch_extra tp_llama_extra_of(const char *name) {
  for (size_t i = 0; i < sizeof tp_llama_arch_extras / sizeof tp_llama_arch_extras[0]; ++i)
    if (strcmp(tp_llama_arch_extras[i].name, name) == 0) return tp_llama_arch_extras[i];
  return (tp_llama_arch_extra){.name = name};
}

static const tp_llama_arch tp_llama_archs[] = {
    {"llama", TP_ARCH_BIASES | TP_ARCH_MOE_OK | TP_ARCH_MOE_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen2", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_QKV_BIAS, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen3", TP_ARCH_NEOX | TP_ARCH_QK_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"phi3", TP_ARCH_NEOX | TP_ARCH_FUSED, 1, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"gemma", TP_ARCH_NEOX | TP_ARCH_GEMMA, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"gemma2", TP_ARCH_NEOX | TP_ARCH_GEMMA | TP_ARCH_POST_NORMS | TP_ARCH_SOFTCAP, 2, 4096, 2, 0, TP_SWA_ROPE_SAME, 46},
    {"gemma3", TP_ARCH_NEOX | TP_ARCH_GEMMA | TP_ARCH_POST_NORMS | TP_ARCH_QK_NORM | TP_ARCH_FINAL_SOFTCAP, 2, 0, 6, 0,
     TP_SWA_ROPE_OWN_10000, 62},
    {"gemma4", TP_ARCH_NEOX | TP_ARCH_GEMMA | TP_ARCH_POST_NORMS | TP_ARCH_QK_NORM | TP_ARCH_FINAL_SOFTCAP |
     TP_ARCH_MOE_OK | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY, 2, -1, 0, 0, TP_SWA_ROPE_OWN_10000, 0},
    /* OpenELM: heads, kv heads and feed-forward widths per block, attn_qkv, per-head q and k norms */
    {"openelm", TP_ARCH_NEOX | TP_ARCH_QK_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"gemma3n", TP_ARCH_NEOX | TP_ARCH_GEMMA | TP_ARCH_POST_NORMS | TP_ARCH_QK_NORM | TP_ARCH_FINAL_SOFTCAP, 2, -1, 5, 0,
     TP_SWA_ROPE_OWN_10000, 0},
    {"granite", TP_ARCH_BIASES | TP_ARCH_GRANITE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"minicpm", TP_ARCH_BIASES | TP_ARCH_GRANITE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* granite's graph */
    {"internlm2", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* the converter splits wqkv */
    {"arcee", TP_ARCH_BIASES | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* AFM: relu2 */
    {"xverse", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"olmo", TP_ARCH_LAYER_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* OLMo 1: norms without weights */
    {"bloom", TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* ALiBi */
    /* ALiBi or learned positions; q and k LayerNorms over whole rows where the file has them */
    {"mpt", TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_QK_NORM | TP_ARCH_QK_NORM_ROW, 0, 0, 0,
     0, TP_SWA_ROPE_SAME, 0},
    {"baichuan", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* the 13B: ALiBi */
    {"refact", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},  /* ALiBi */
    {"jais", TP_ARCH_BIASES | TP_ARCH_LAYER_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* ALiBi, gated */
    {"qwen", TP_ARCH_NEOX | TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0}, /* Qwen 1: attn_qkv, half ff */
    {"orion", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Maincoder: llama's rotation, then per-head q and k norms (hunyuan's order) */
    {"maincoder", TP_ARCH_BIASES | TP_ARCH_QK_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* SmallThinker: every block a mixture (tp_llama_smallthinker) */
    {"smallthinker", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY, 0, 0, 0, 0, TP_SWA_ROPE_SAME,
     0},
    /* openPangu-Embedded: qwen2's graph with its biases optional (its output bias in the files) */
    {"pangu-embedded", TP_ARCH_NEOX | TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Apertus: qwen3's attention (its optional output bias), xIELU of up without a gate */
    {"apertus", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_QK_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Jais 2: nemotron's blocks (LayerNorms with biases, relu2 without a gate, NEOX) */
    {"jais2", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Nemotron-4 / Minitron: LayerNorms (the converter adds LayerNorm1p's 1), relu2 without a gate */
    {"nemotron", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    {"smollm3", TP_ARCH_BIASES | TP_ARCH_NOPE4, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"mistral3", TP_ARCH_BIASES | TP_ARCH_TEMPERATURE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"exaone4", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_POST_NORMS | TP_ARCH_NO_PRE_NORMS | TP_ARCH_NOPE_FULL, 2, 0,
     4, 64, TP_SWA_ROPE_SAME, 0},
    /* K-EXAONE: pre-norms, q and k norms, a window (required) on 3 blocks of 4 (or the pattern's), the
     * others unrotated; DeepSeek-style mixtures after leading_dense_block_count dense blocks, the shared
     * experts one feed-forward of expert_shared_feed_forward_length; nextn blocks skipped */
    {"exaone-moe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_NOPE_FULL | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY |
     TP_ARCH_MOE_LAYERS, 2, -1, 4, 0, TP_SWA_ROPE_SAME, 0},
    {"olmo2", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_QK_NORM_ROW | TP_ARCH_POST_NORMS | TP_ARCH_NO_PRE_NORMS, 2, 0,
     4, 0, TP_SWA_ROPE_OWN_BASE, 0},
    {"qwen2moe", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_QKV_BIAS | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_SHARED_GATE,
     0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen3moe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* Mellum 2: qwen3moe's blocks, a window where the file gives one on 3 blocks of 4 (or those its
     * pattern lists), rotating with the file's base, positions unscaled */
    {"mellum", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY, 2, 0, 4, 0,
     TP_SWA_ROPE_UNSCALED, 0},
    {"olmoe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_QK_NORM_ROW | TP_ARCH_MOE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"granitemoe", TP_ARCH_BIASES | TP_ARCH_GRANITE | TP_ARCH_MOE | TP_ARCH_MOE_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Falcon-H1: attention and a Mamba-2 mixer side by side in every block (the converter folds the
     * multipliers into the weights) */
    {"falcon-h1", TP_ARCH_NEOX | TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Mamba-2 (mamba2-130m ... 2.7b, Mamba-Codestral): Mamba-2 mixers alone, no attention, no feed-forward */
    {"mamba2", 0, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Mamba (mamba-130m ... 2.8b), Falcon-Mamba-7B: Mamba-1 mixers alone */
    {"mamba", 0, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Jamba (Jamba 1.5 Mini / Large, Jamba Reasoning 3B): Mamba-1 mixers and unrotated attention, each
     * block's feed-forward a mixture where the file has a router (softmax, not renormalised) */
    {"jamba", TP_ARCH_MOE_OK, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Nemotron-H, Nemotron Nano 2: each block one branch, a Mamba-2 mixer, attention (unrotated) or a
     * ReLU-squared feed-forward */
    {"nemotron_h", TP_ARCH_BIASES | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Nemotron 3 Nano: the feed-forward blocks mixtures of gateless ReLU-squared experts (a sigmoid router
     * with exp_probs_b) and shared ones */
    {"nemotron_h_moe", TP_ARCH_BIASES | TP_ARCH_FFN_PLAIN | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* Granite 4.0-H: granitemoe's (or granite's) blocks, Mamba-2 mixers where head_count_kv is 0 */
    {"granitehybrid", TP_ARCH_BIASES | TP_ARCH_GRANITE | TP_ARCH_MOE_OK | TP_ARCH_MOE_NORM, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    {"ernie4_5", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"exaone", TP_ARCH_NEOX | TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"seed_oss", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_FFN_POST_NAME, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"ernie4_5-moe", TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS, 0, 0,
     0, 0, TP_SWA_ROPE_SAME, 0},
    {"starcoder2", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* CodeShell: starcoder2's blocks (LayerNorms with biases, GELU without a gate, NEOX) */
    {"codeshell", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN, 0, 0, 0, 0, TP_SWA_ROPE_SAME,
     0},
    /* Phi-3.5-MoE: RMS norms with biases, q, k, v apart, biases on the products and the head, every
     * block a mixture (softmax, renormalised), LongRoPE where the file has its tables: llama.cpp's
     * phi3 graph (the model's own LayerNorms and sparsemixer routing are not what it computes) */
    {"phimoe", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Snowflake Arctic: llama's blocks, a dense feed-forward dim wide, and beside it every block a mixture
     * (softmax, renormalised) of the block's input through its own norm */
    {"arctic", TP_ARCH_MOE | TP_ARCH_MOE_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* DBRX: LayerNorms without biases, attn_qkv clamped, every block a mixture (softmax, renormalised) */
    {"dbrx", TP_ARCH_NEOX | TP_ARCH_LAYER_NORM | TP_ARCH_MOE | TP_ARCH_MOE_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"stablelm", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"phi2", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_PARALLEL, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    {"gpt2", TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_POSITIONS, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* StarCoder 1 / SantaCoder (gpt_bigcode): GPT-2's graph with multi-query attention */
    {"starcoder", TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_POSITIONS, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    {"command-r", TP_ARCH_LAYER_NORM | TP_ARCH_PARALLEL | TP_ARCH_COHERE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Command R7B / A: a window (required) on 3 layers of 4, the others unrotated */
    {"cohere2", TP_ARCH_LAYER_NORM | TP_ARCH_PARALLEL | TP_ARCH_COHERE | TP_ARCH_NOPE_FULL, 2, -1, 4, 0,
     TP_SWA_ROPE_SAME, 0},
    {"falcon", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_PARALLEL | TP_ARCH_NORM_2,
     0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"gptneox", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_LAYER_NORM | TP_ARCH_FFN_PLAIN | TP_ARCH_PARALLEL_KEY, 0, 0, 0,
     0, TP_SWA_ROPE_SAME, 0},
    /* DeepSeek-MoE (V1, 16B): llama's attention, dense leading blocks, a softmax router without
     * renormalisation, shared experts */
    {"deepseek", TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Ling 1.0 (bailingmoe): deepseek's blocks, expert_weights_norm read, optional biases */
    {"bailingmoe", TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    {"deepseek2", TP_ARCH_MOE_OK | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS | TP_ARCH_MLA, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* Kimi Linear: Kimi Delta Attention mixers between deepseek2's latent attention, unrotated */
    {"kimi-linear", TP_ARCH_MOE_OK | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS | TP_ARCH_MLA, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* dots.llm1: qwen3's attention, DeepSeek-V3's mixtures */
    {"dots1", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS,
     0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Ling 2.0 / Ring 2.0: dots1's, with q, k, v in one attn_qkv and half of each head rotated */
    {"bailingmoe2", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY |
     TP_ARCH_MOE_LAYERS, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Qwen2.5-VL, Qwen3-VL (and its mixtures): qwen2's, qwen3's and qwen3moe's text models, rotated by
     * sections (tp_llama_mrope); Qwen3-VL's deepstack inputs are zero for text */
    {"qwen2vl", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_QKV_BIAS, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen3vl", TP_ARCH_NEOX | TP_ARCH_QK_NORM, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen3vlmoe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* Qwen3-Next, Qwen3.5 (and its mixtures): gated-DeltaNet mixers between gated attention blocks
     * (tp_llama_delta_config), the feed-forward's norm named post_attention_norm */
    {"qwen3next", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_FFN_POST_NAME | TP_ARCH_MOE | TP_ARCH_MOE_NORM |
     TP_ARCH_MOE_FF_KEY | TP_ARCH_SHARED_GATE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen35", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_FFN_POST_NAME, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"qwen35moe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_FFN_POST_NAME | TP_ARCH_MOE | TP_ARCH_MOE_NORM |
     TP_ARCH_MOE_FF_KEY | TP_ARCH_SHARED_GATE, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Hunyuan 0.5B-7B and Hunyuan-A13B: q and k norms after the rotation */
    {"hunyuan-dense", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"hunyuan-moe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_NORM, 0, 0, 0, 0,
     TP_SWA_ROPE_SAME, 0},
    /* MiniMax-M2: whole-row q and k norms, half of each head rotated, a sigmoid router from the file */
    {"minimax-m2", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_QK_NORM_ROW | TP_ARCH_MOE | TP_ARCH_MOE_NORM |
     TP_ARCH_MOE_FF_KEY, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* Llama 4: chunked attention on three layers of four, the fourth unrotated with temperature tuning */
    {"llama4", TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_MOE_LAYERS | TP_ARCH_NOPE4 | TP_ARCH_TEMPERATURE |
     TP_ARCH_BIASES, 2, 8192, 4, 0, TP_SWA_ROPE_SAME, 0},
    /* GLM-4.5 / 4.5-Air / 4.6 / 4.7: the feed-forward's norm named post_attention_norm, half the head rotated */
    /* GLM-4-0414 / GLM-Z1: gemma2's four norms, ffn_up gate | up, q, k, v
     * biases, neighbours paired (NEOX under M-RoPE), nextn blocks skipped */
    {"glm4", TP_ARCH_BIASES | TP_ARCH_POST_NORMS, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    /* ChatGLM3-6B, GLM-4-9B-chat, GLM-Edge: glm4's graph without the post norms */
    {"chatglm", TP_ARCH_BIASES, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"glm4moe", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_QK_NORM | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY |
     TP_ARCH_MOE_LAYERS | TP_ARCH_FFN_POST_NAME, 0, 0, 0, 0, TP_SWA_ROPE_SAME, 0},
    {"gpt-oss", TP_ARCH_NEOX | TP_ARCH_BIASES | TP_ARCH_MOE | TP_ARCH_MOE_FF_KEY | TP_ARCH_OAI | TP_ARCH_FFN_POST_NAME,
     2, -1, 2, 0, TP_SWA_ROPE_SAME, 0},
    /* LFM2 (Liquid): short-convolution blocks between qwen3-like attention ones; a window, where the
     * file gives one, on every attention block; LFM2-MoE: dense leading blocks, then a sigmoid router */
    {"lfm2", TP_ARCH_NEOX | TP_ARCH_QK_NORM, 2, 0, 1, 0, TP_SWA_ROPE_SAME, 0},
    {"lfm2moe", TP_ARCH_NEOX | TP_ARCH_QK_NORM | TP_ARCH_MOE | TP_ARCH_MOE_NORM | TP_ARCH_MOE_FF_KEY |
     TP_ARCH_MOE_LAYERS, 2, 0, 1, 0, TP_SWA_ROPE_SAME, 0},
};

static const tp_llama_arch *tp_llama_arch_of(const char *name) {
  for (size_t i = 0; i < sizeof tp_llama_archs / sizeof tp_llama_archs[0]; ++i)
    if (strcmp(tp_llama_archs[i].name, name) == 0) return &tp_llama_archs[i];
  return NULL;
}

/* attention.sliding_window_pattern as an array of one flag per layer (OLMo 3's
 * and EXAONE 4's converters write it so; bool or integer elements) into
 * m->swa_layers; *listed 0 where the key is absent or a number. */
static topos_status tp_llama_window_list(topos_llama *m, const char *key, int *listed) {
  const topos_llama_config *c = &m->config;
  int64_t index;
  topos_gguf_kv kv;
  *listed = 0;
  if (topos_gguf_find_key(m->gguf, key, &index) != TOPOS_OK) {
    topos_clear_error();
    return TOPOS_OK;
  }
  TP_TRY(topos_gguf_kv_at(m->gguf, index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY) return TOPOS_OK;
  if (kv.count != (uint64_t)c->n_layers)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s lists %" PRIu64 " layers, the file has %" PRId64, key, kv.count,
                   c->n_layers);
  m->swa_layers = malloc((size_t)c->n_layers);
  if (!m->swa_layers) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", key);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    int64_t v;
    topos_status st = topos_gguf_array_int(m->gguf, index, (uint64_t)l, &v);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", key, l);
    m->swa_layers[l] = v != 0;
  }
  *listed = 1;
  return TOPOS_OK;
}

/* gemma2 / gemma3 / olmo2 / exaone4's window: attention.sliding_window
 * (gemma2 absent: 4096; exaone4 only in files of window_blocks blocks;
 * gemma3, olmo2 absent or 0: no window, and then no second rope base
 * either), on the layers attention.sliding_window_pattern lists, or its
 * period (absent: the architecture's) leaves windowed: l % period <
 * period - 1 (period 0 or 1: every layer). The windowed layers' rotation:
 * gemma2 the others'; gemma3 rope.freq_base_swa (absent 10000), positions
 * unscaled, cos and sin times attn_factor; olmo2 (OLMo 3) rope.freq_base_swa
 * (absent the file's base), unscaled, attn_factor 1 — as llama.cpp. */
static topos_status tp_llama_layer_window(topos_llama *m, const tp_llama_arch *a, float attn_factor,
                                          int64_t *period) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int present, listed;
  c->n_swa = a->default_swa;
  if (a->window_blocks) c->n_swa = c->n_layers == a->window_blocks ? 4096 : 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.sliding_window"), 0, &c->n_swa, &present));
  if (a->window_blocks && c->n_layers != a->window_blocks) c->n_swa = 0; /* the key notwithstanding */
  if (c->n_swa < 0)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing (%s files have a window)", kb, a->name);
  *period = a->period;
  if (c->n_swa == 0) return TOPOS_OK;
  TP_TRY(tp_llama_window_list(m, TP_K("attention.sliding_window_pattern"), &listed));
  if (!listed) TP_TRY(tp_llama_key_u64(g, TP_K("attention.sliding_window_pattern"), 0, period, &present));
  if (a->swa_rope == TP_SWA_ROPE_OWN_10000) {
    TP_TRY(tp_llama_f32(g, TP_K("rope.freq_base_swa"), 0, 10000.0f, &c->rope_base_swa));
    c->rope_mscale_swa = attn_factor;
  } else if (a->swa_rope == TP_SWA_ROPE_OWN_BASE) {
    TP_TRY(tp_llama_f32(g, TP_K("rope.freq_base_swa"), 0, c->rope_base, &c->rope_base_swa));
    c->rope_mscale_swa = 1.0f;
  } else if (a->swa_rope == TP_SWA_ROPE_UNSCALED) {
    c->rope_base_swa = c->rope_base;
    c->rope_mscale_swa = 1.0f;
  } else {
    float base = 0.0f;
    TP_TRY(tp_llama_f32(g, TP_K("rope.freq_base_swa"), 0, c->rope_base, &base));
    if (base != c->rope_base) c->rope_base_swa = base;
    c->rope_mscale_swa = c->rope_mscale;
  }
  return TOPOS_OK;
}


/* deepseek2's latent attention, as the converter writes it for llama.cpp's
 * MLA path: key_length_mla (each head's q / k width, its last rope_dim
 * dimensions rotated) and value_length_mla, the latent's kv_lora_rank, one
 * kv head, and key_length / value_length (where present) the latent's
 * widths kv_lora_rank + rope_dim and kv_lora_rank. Files written before the
 * converter split attn_kv_b have none of the _mla keys. */
static topos_status tp_llama_mla(topos_gguf *g, topos_llama_config *c) {
  char kb[96];
  int present;
  int64_t key_mla = 0, key_len = 0, value_len = 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.key_length_mla"), 0, &key_mla, &present));
  if (!present)
    return tp_fail(TOPOS_UNSUPPORTED, "llama: %s is missing: a deepseek2 file written before its converter "
                   "split attn_kv_b into attn_k_b and attn_v_b (convert it again)", kb);
  TP_TRY(tp_llama_u64(g, TP_K("attention.value_length_mla"), 1, 0, &c->mla_v_dim));
  TP_TRY(tp_llama_u64(g, TP_K("attention.kv_lora_rank"), 1, 0, &c->mla_kv_rank));
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.q_lora_rank"), 0, &c->mla_q_rank, &present)); /* 0: attn_q */
  TP_TRY(tp_llama_u64(g, TP_K("rope.dimension_count"), 1, 0, &c->rope_dim));
  if (c->mla_kv_rank == 0 || c->mla_v_dim == 0 || c->rope_dim == 0 || key_mla <= c->rope_dim)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: latent attention needs kv_lora_rank, value_length_mla and "
                   "rope.dimension_count > 0 and key_length_mla (%" PRId64 ") past rope.dimension_count (%" PRId64
                   ")", key_mla, c->rope_dim);
  if (c->mla_kv_rank > ((int64_t)1 << 20) || key_mla > ((int64_t)1 << 20) || c->mla_v_dim > ((int64_t)1 << 20) ||
      c->mla_q_rank > ((int64_t)1 << 20))
    return tp_fail(TOPOS_ERR_RANGE, "llama: latent attention widths past 2^20");
  c->mla_nope = key_mla - c->rope_dim;
  c->head_dim = c->mla_kv_rank + c->rope_dim;
  TP_TRY(tp_llama_u64(g, TP_K("attention.key_length"), 0, c->head_dim, &key_len));
  TP_TRY(tp_llama_u64(g, TP_K("attention.value_length"), 0, c->mla_kv_rank, &value_len));
  if (key_len != c->head_dim || value_len != c->mla_kv_rank)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: attention.key_length %" PRId64 " / value_length %" PRId64
                   " are not the latent's %" PRId64 " / %" PRId64 " (kv_lora_rank + rope.dimension_count, "
                   "kv_lora_rank)", key_len, value_len, c->head_dim, c->mla_kv_rank);
  if (c->n_kv_heads != 1)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: a latent-attention file has one kv head, head_count_kv is %" PRId64,
                   c->n_kv_heads);
  return TOPOS_OK;
}

/* Its scores' scale, as llama.cpp's deepseek2 graph (DeepSeek's YaRN):
 * mscale^2 / sqrt(key_length_mla) with mscale = a (1 + 0.1 m ln f), m the
 * file's yarn_log_multiplier / 0.1 (the converter stores mscale_all_dim
 * times 0.1) and a the rotation's magnitude; with that multiplier YaRN's
 * cos and sin keep rope.scaling.attn_factor alone (mscale over
 * mscale_all_dim, equal for these files). Without YaRN, a is attn_factor
 * (1 + 0.1 ln f) for any other factor f. */
static topos_status tp_llama_mla_scale(topos_gguf *g, topos_llama_config *c, float attn_factor) {
  char kb[96];
  float log_mul = 0.0f;
  TP_TRY(tp_llama_nonneg_f32(g, TP_K("rope.scaling.yarn_log_multiplier"), 0.0f, &log_mul));
  const double m = (double)log_mul / 0.1, ln_f = log(1.0 / (double)c->rope_freq_scale);
  double a;
  if (c->rope_ext_factor != 0.0f) {
    if (m != 0.0) c->rope_mscale = attn_factor; /* else tp_llama_yarn's attn_factor (1 + 0.1 ln f) */
    a = c->rope_mscale;
  } else {
    a = (double)attn_factor * (1.0 + 0.1 * ln_f);
  }
  const double mscale = a * (1.0 + 0.1 * m * ln_f);
  c->attn_scale = (float)(mscale * mscale / sqrt((double)(c->mla_nope + c->rope_dim)));
  return TOPOS_OK;
}
/* M-RoPE (the vision-language models' rotation: sections of the pairs
 * turn by a token's time, height, width or fourth position) for text: a
 * text token's position goes to the first three sections and 0 to the
 * fourth (llama.cpp's rule), so the pairs ggml's rope_multi gives the
 * fourth keep angle 0 (m->rope_still) and the rest turn as without
 * sections. Pair i's sector is i mod the sections' sum; M-RoPE gives the
 * fourth the sectors past the first three sections, the interleaved kind
 * (qwen3vl) every sector but those s % 3 == 0, 1, 2 below three times
 * sections 0, 1, 2. rope.dimension_sections is 4 integers; glm4moe uses
 * them only where sections 0 and 1 are both nonzero (as llama.cpp). */
static topos_status tp_llama_mrope(topos_llama *m, int kind) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int64_t index;
  topos_gguf_kv kv;
  if (topos_gguf_find_key(g, TP_K("rope.dimension_sections"), &index) != TOPOS_OK) {
    topos_clear_error();
    if (kind == TP_MROPE_IF_SECTIONS) return TOPOS_OK;
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing (%s files rotate by sections)", kb,
                   c->arch);
  }
  TP_TRY(topos_gguf_kv_at(g, index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY || kv.count < 4)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s is not an array of 4 sections", kb);
  int64_t v[4], sum = 0;
  for (int i = 0; i < 4; ++i) {
    topos_status st = topos_gguf_array_int(g, index, (uint64_t)i, &v[i]);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%d]", kb, i);
    if (v[i] < 0 || v[i] > c->rope_dim)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%d] = %" PRId64 " is outside 0 .. %" PRId64, kb, i, v[i],
                     c->rope_dim);
    sum += v[i];
  }
  if (kind == TP_MROPE_IF_SECTIONS && !(v[0] > 0 && v[1] > 0)) return TOPOS_OK;
  if (sum == 0 || sum > c->rope_dim) /* (ggml's bound: sectors past the pairs are never reached) */
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s sum to %" PRId64 ", not 1 .. %" PRId64 " (rotated dimensions)", kb,
                   sum, c->rope_dim);
  const int64_t half = c->rope_dim / 2;
  m->rope_still = calloc((size_t)half, 1);
  if (!m->rope_still) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", kb);
  for (int64_t i = 0; i < half; ++i) {
    const int64_t s = i % sum;
    m->rope_still[i] = kind == TP_IMROPE ? !((s % 3 == 0 && s < 3 * v[0]) || (s % 3 == 1 && s < 3 * v[1]) ||
                                             (s % 3 == 2 && s < 3 * v[2]))
                                         : s >= v[0] + v[1] + v[2];
  }
  c->rope_neox = 1; /* ggml's M-RoPE pairs x[i] with x[i + d/2] (glm4's plain rotation pairs neighbours) */
  return TOPOS_OK;
}

/* Llama 4, as llama.cpp's graph for it: the windowed layers (three of
 * four) attend within chunks of attention.sliding_window (absent, as the
 * converter leaves it: 8192, Scout's and Maverick's attention_chunk_size;
 * llama.cpp would take 8192 for any other nonzero key too), rotate q and
 * k, and normalise them (L2, per head, after the rotation) except in the
 * 128-expert Maverick; the
 * others rotate nothing and scale q by 1 + 0.1 ln(floor((p + 1) / 8192) + 1);
 * every mixture has a shared expert as wide as the routed ones, its router's
 * logits rank and the chosen expert's sigmoid scales its input. Files with
 * sliding_window 0 (MobileLLM's, dense: refused for their zero experts
 * anyway) are refused. */
static topos_status tp_llama_llama4(topos_llama_config *c) {
  if (c->n_swa == 0)
    return tp_fail(TOPOS_UNSUPPORTED, "llama: llama4 files without chunked attention (attention.sliding_window 0) "
                   "are not supported");
  c->swa_chunked = 1;
  c->attn_temp_scale = 0.1f, c->attn_temp_floor = 8192, c->attn_temp_offset = 1, c->attn_temp_nope_only = 1;
  c->qk_l2_norm = c->n_experts != 128;
  c->ff_shared = c->ff_expert;
  return TOPOS_OK;
}

/* granite's scales, as llama.cpp reads them: logit_scale (required: logits
 * times 1 / it), residual_scale and embedding_scale (absent or 0: none;
 * attention.scale: tp_llama_config_read); and
 * rope.scaling.finetuned false: no layer rotates q and k. MiniCPM files run
 * granite's graph with defaults where the keys are absent (older exports
 * have none): embedding 12, residual 1.4 / sqrt(block_count), logit 256 /
 * embedding_length, and always rotate. */
static topos_status tp_llama_granite(topos_gguf *g, topos_llama_config *c, int minicpm, int *nope) {
  char kb[96];
  float v;
  if (minicpm) {
    c->embd_scale = 12.0f;
    c->residual_scale = 1.4f / sqrtf((float)c->n_layers);
    c->logit_scale = 256.0f / (float)c->dim;
    TP_TRY(tp_llama_f32(g, TP_K("logit_scale"), 0, c->logit_scale, &c->logit_scale));
    TP_TRY(tp_llama_f32(g, TP_K("residual_scale"), 0, c->residual_scale, &c->residual_scale));
    TP_TRY(tp_llama_f32(g, TP_K("embedding_scale"), 0, c->embd_scale, &c->embd_scale));
    if (!(c->logit_scale > 0.0f) || !isfinite(c->logit_scale))
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s.logit_scale %g is not a positive number", c->arch,
                     (double)c->logit_scale);
    *nope = 0;
    return TOPOS_OK;
  }
  TP_TRY(tp_llama_f32(g, TP_K("logit_scale"), 1, 1.0f, &c->logit_scale));
  TP_TRY(tp_llama_nonneg_f32(g, TP_K("residual_scale"), 0.0f, &v));
  if (v != 0.0f) c->residual_scale = v;
  TP_TRY(tp_llama_nonneg_f32(g, TP_K("embedding_scale"), 0.0f, &v));
  if (v != 0.0f) c->embd_scale = v;
  int finetuned = 1;
  topos_status st = topos_gguf_get_bool(g, TP_K("rope.scaling.finetuned"), &finetuned);
  if (st == TOPOS_ERR_NOT_FOUND) topos_clear_error(), finetuned = 1;
  else if (st != TOPOS_OK) return tp_fail_context(st, "llama: key %s", kb);
  *nope = !finetuned;
  return TOPOS_OK;
}

/* A mixture of experts, as llama.cpp reads these files: expert_count (0 or
 * absent: dense, where the architecture allows), expert_used_count (1 ..
 * expert_count), each expert's width (qwen2moe / qwen3moe:
 * expert_feed_forward_length, absent feed_forward_length / experts used;
 * the others feed_forward_length), a shared expert of
 * expert_shared_feed_forward_length (qwen2moe: absent feed_forward_length;
 * granitemoe: where the key gives one), expert_weights_scale (absent or 0:
 * none), ernie4_5-moe's dense leading blocks and interleave step, and a
 * softmax router (expert_gating_func 1 where present). */
static topos_status tp_llama_experts(topos_gguf *g, const tp_llama_arch *a, topos_llama_config *c) {
  const tp_llama_arch_extra x = tp_llama_extra_of(a->name);
  char kb[96];
  int present;
  c->experts_scale = 1.0f;
  c->n_experts = 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("expert_count"), 0, &c->n_experts, &present));
  if (x.hunyuan && !(a->flags & TP_ARCH_MOE) && c->n_experts <= 1) c->n_experts = 0; /* as llama.cpp */
  if (c->n_experts == 0 && (a->flags & TP_ARCH_MOE))
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: %s files are mixtures of experts; %s is %s", a->name, kb,
                   present ? "0" : "missing");
  if (c->n_experts == 0) return TOPOS_OK;
  if (!(a->flags & (TP_ARCH_MOE | TP_ARCH_MOE_OK)))
    return tp_fail(TOPOS_UNSUPPORTED, "llama: %s files with experts (expert_count %" PRId64 ") are not supported",
                   a->name, c->n_experts);
  if (c->n_experts > 65536)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is past 65536", kb, c->n_experts);
  TP_TRY(tp_llama_u64(g, TP_K("expert_used_count"), 1, 0, &c->n_experts_used));
  if (c->n_experts_used > c->n_experts)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is more than expert_count %" PRId64, kb,
                   c->n_experts_used, c->n_experts);
  c->ff_expert = c->ff;
  if (a->flags & TP_ARCH_MOE_FF_KEY)
    TP_TRY(tp_llama_u64(g, TP_K("expert_feed_forward_length"), 0, c->ff / c->n_experts_used, &c->ff_expert));
  if (c->ff_expert == 0)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: the experts' width is 0 (expert_feed_forward_length and "
                   "feed_forward_length absent or too small)");
  c->shared_gate = (a->flags & TP_ARCH_SHARED_GATE) != 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("moe_latent_size"), 0, &c->moe_latent, &present));
  if (c->moe_latent > ((int64_t)1 << 20))
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is past 2^20", kb, c->moe_latent);
  TP_TRY(tp_llama_key_u64(g, TP_K("expert_shared_feed_forward_length"), 0, &c->ff_shared, &present));
  if (!present || c->ff_shared == 0) c->ff_shared = c->shared_gate || x.hunyuan ? c->ff : 0;
  if (x.ds_moe) { /* expert_shared_count experts, each expert_shared_feed_forward_length (absent: an expert's
                   * width) wide, as one feed-forward (llama.cpp's rule for bailingmoe2; the others' files
                   * have no such key) */
    int64_t shared = 0;
    TP_TRY(tp_llama_key_u64(g, TP_K("expert_shared_count"), 0, &shared, &present));
    if (shared > 64) return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " is past 64", kb, shared);
    if (x.shared_total) c->ff_shared = c->ff_shared > 0 ? c->ff_shared : c->ff_expert;
    else c->ff_shared = shared * (c->ff_shared > 0 ? c->ff_shared : c->ff_expert);
  }
  if (c->shared_gate && c->ff_shared == 0)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: %s's shared expert has no width (%s and feed_forward_length "
                   "absent)", a->name, kb);
  c->experts_norm = (a->flags & TP_ARCH_MOE_NORM) != 0;
  c->experts_residual = x.experts_residual;
  if (x.kda) { /* always renormalised, as llama.cpp's kimi-linear graph */
    c->experts_norm = 1;
  } else if (x.ds_moe) { /* expert_weights_norm: absent false */
    topos_status nst = topos_gguf_get_bool(g, TP_K("expert_weights_norm"), &c->experts_norm);
    if (nst == TOPOS_ERR_NOT_FOUND) topos_clear_error(), c->experts_norm = 0;
    else if (nst != TOPOS_OK) return tp_fail_context(nst, "llama: key %s", kb);
  }
  /* DeepSeek-V3's group-limited routing (the best experts of the best
   * groups only), as llama.cpp reads it for every architecture: groups
   * must tile the experts, each hold two (a group ranks by its best two),
   * and those used hold the experts chosen */
  int64_t groups = 0, groups_used = 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("expert_group_count"), 0, &groups, &present));
  TP_TRY(tp_llama_key_u64(g, TP_K("expert_group_used_count"), 0, &groups_used, &present));
  if (groups > 1) {
    if (!present) groups_used = groups;
    if (c->n_experts % groups != 0 || c->n_experts / groups < 2 || groups_used < 1 || groups_used > groups ||
        groups_used * (c->n_experts / groups) < c->n_experts_used)
      return tp_fail(TOPOS_ERR_SHAPE, "llama: %" PRId64 " experts in %" PRId64 " groups with %" PRId64
                     " used cannot give %" PRId64 " experts (expert_group_count / expert_group_used_count)",
                     c->n_experts, groups, groups_used, c->n_experts_used);
    if (groups_used < groups) c->expert_groups = groups, c->expert_groups_used = groups_used;
  }
  float scale;
  TP_TRY(tp_llama_nonneg_f32(g, TP_K("expert_weights_scale"), 0.0f, &scale));
  if (scale != 0.0f) c->experts_scale = scale;
  c->moe_step = 1;
  if (a->flags & TP_ARCH_MOE_LAYERS) {
    TP_TRY(tp_llama_key_u64(g, TP_K("leading_dense_block_count"), 0, &c->n_dense_lead, &present));
    TP_TRY(tp_llama_u64(g, TP_K("interleave_moe_layer_step"), 0, 1, &c->moe_step));
  }
  if ((c->n_dense_lead > 0 || c->moe_step > 1) && c->ff == 0)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: %s's dense blocks need feed_forward_length", a->name);
  /* gpt-oss, llama4: their own routers (and gpt-oss's activation),
   * whatever expert_gating_func says (llama.cpp's graphs fix them) */
  c->experts_oai = (a->flags & TP_ARCH_OAI) != 0;
  c->experts_llama4 = x.llama4;
  if (c->experts_oai || c->experts_llama4) return TOPOS_OK;
  int64_t gating = 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("expert_gating_func"), 0, &gating, &present));
  if (gating == 0) { /* absent or "none": the architecture's default */
    gating = x.router_key ? x.router_key : 1;
    if (a->flags & TP_ARCH_MLA) { /* llama.cpp's rule for deepseek2 files without it: GLM-4.7-Flash's
                                   * (47 or 48 blocks, 154880 tokens) sigmoid, others softmax */
      int64_t vocab = 0;
      TP_TRY(tp_llama_u64(g, TP_K("vocab_size"), 0, 0, &vocab));
      if ((c->n_layers == 47 || c->n_layers == 48) && vocab == 154880) gating = 2;
    }
  }
  const int sigmoid_ok = x.router_key != 0;
  if (gating != 1 && !(gating == 2 && sigmoid_ok))
    return tp_fail(TOPOS_UNSUPPORTED, "llama: %s = %" PRId64 " (the softmax router, 1, is supported%s)", kb,
                   gating, sigmoid_ok ? ", and the sigmoid one, 2" : "");
  c->experts_sigmoid = gating == 2;
  return TOPOS_OK;
}

/* A required key that holds one value for every block or an array of one
 * per block: its index and entry (*kv); an array of another length than
 * block_count is refused. `why` follows the missing key's message. */
topos_status tp_llama_block_key(const topos_llama *m, const char *key, const char *why, int64_t *index,
                                topos_gguf_kv *kv) {
  if (topos_gguf_find_key(m->gguf, key, index) != TOPOS_OK) {
    topos_clear_error();
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing%s", key, why);
  }
  TP_TRY(topos_gguf_kv_at(m->gguf, *index, kv));
  /* (the multi-token-prediction blocks past the trunk may have entries too: nemotron_h_moe) */
  const topos_llama_config *c = &m->config;
  if (kv->type == TOPOS_GGUF_ARRAY && kv->count != (uint64_t)c->n_layers &&
      (c->n_nextn_layers == 0 || kv->count != (uint64_t)(c->n_layers + c->n_nextn_layers)))
    return tp_fail(TOPOS_ERR_SHAPE, "llama: %s lists %" PRIu64 " blocks, block_count is %" PRId64, key, kv->count,
                   c->n_layers + c->n_nextn_layers);
  return TOPOS_OK;
}

/* attention.head_count_kv as a per-block list whose zeros mark the blocks
 * that mix tokens some other way (*blocks, *count: LFM2's convolutions,
 * granitehybrid's Mamba-2 mixers); the attention blocks share one count
 * (c->n_kv_heads; none at all: n_heads). A plain number is every block's
 * count, as llama.cpp reads it (then *blocks stays NULL). */
topos_status tp_llama_kv_zero_blocks(topos_llama *m, const char *why, uint8_t **blocks, int64_t *count) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int64_t index;
  topos_gguf_kv kv;
  TP_TRY(tp_llama_block_key(m, TP_K("attention.head_count_kv"), why, &index, &kv));
  if (kv.type != TOPOS_GGUF_ARRAY) return tp_llama_u64(g, kb, 1, 0, &c->n_kv_heads);
  *blocks = calloc((size_t)c->n_layers, 1);
  if (!*blocks) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: %s", kb);
  c->n_kv_heads = 0;
  for (int64_t l = 0; l < c->n_layers; ++l) {
    int64_t v;
    topos_status st = topos_gguf_array_int(g, index, (uint64_t)l, &v);
    if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s[%" PRId64 "]", kb, l);
    if (v < 0 || v > c->n_heads)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s[%" PRId64 "] = %" PRId64 " is outside 0..head_count %" PRId64, kb, l,
                     v, c->n_heads);
    if (v == 0) {
      (*blocks)[l] = 1;
      ++*count;
    } else if (c->n_kv_heads && v != c->n_kv_heads) {
      return tp_fail(TOPOS_UNSUPPORTED, "llama: %s gives the attention blocks %" PRId64 " and %" PRId64
                     " kv heads (one count for all is supported)", kb, c->n_kv_heads, v);
    } else {
      c->n_kv_heads = v;
    }
  }
  if (c->n_kv_heads == 0) c->n_kv_heads = c->n_heads;
  return TOPOS_OK;
}

/* LFM2: head_count_kv's zeros are short-convolution blocks;
 * shortconv.l_cache gives the convolution's taps. */
static topos_status tp_llama_shortconv(topos_llama *m) {
  topos_llama_config *c = &m->config;
  char kb[96];
  TP_TRY(tp_llama_u64(m->gguf, TP_K("shortconv.l_cache"), 1, 0, &c->conv_len));
  if (c->conv_len < 2 || c->conv_len > 64)
    return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " (2 to 64 taps are supported)", kb, c->conv_len);
  return tp_llama_kv_zero_blocks(m, " (its zeros mark the convolution blocks)", &m->conv_blocks, &c->n_conv_layers);
}

/* SmallThinker, as llama.cpp's graph: the router reads the block's input
 * (before the attention and its norm), the experts take relu(gate) * up;
 * where the file has attention.sliding_window (any nonzero value: the
 * window is 4096, as llama.cpp fixes it), the blocks of a period (the
 * pattern's key or list, else 4) are windowed but the first, and blocks 0,
 * 4, 8, ... do not rotate. */
static topos_status tp_llama_smallthinker(topos_llama *m, int64_t *swa_period) {
  topos_gguf *g = m->gguf;
  topos_llama_config *c = &m->config;
  char kb[96];
  int present, listed;
  c->experts_relu = 1;
  c->router_input = 1;
  *swa_period = 0;
  int64_t swa = 0;
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.sliding_window"), 0, &swa, &present));
  if (!present || swa == 0) return TOPOS_OK;
  c->n_swa = 4096;
  TP_TRY(tp_llama_window_list(m, TP_K("attention.sliding_window_pattern"), &listed));
  m->nope_blocks = calloc((size_t)c->n_layers, 1);
  if (!m->nope_blocks) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: smallthinker blocks");
  for (int64_t l = 0; l < c->n_layers; ++l) m->nope_blocks[l] = l % 4 == 0;
  if (listed) return TOPOS_OK;
  int64_t period = 4;
  TP_TRY(tp_llama_key_u64(g, TP_K("attention.sliding_window_pattern"), 0, &period, &present));
  m->swa_layers = malloc((size_t)c->n_layers);
  if (!m->swa_layers) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: smallthinker windows");
  for (int64_t l = 0; l < c->n_layers; ++l) m->swa_layers[l] = period == 0 || l % period != 0; /* dense first */
  return TOPOS_OK;
}

/* ggml's softplus in f32: x past 20 as is, else ln(1 + e^x) */
static float tp_softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* Apertus's xIELU, per block (xielu.alpha_n, alpha_p, beta, eps: keys without
 * the architecture's prefix, as its converter writes them and llama.cpp reads
 * them; one number for all blocks or an array of one each), kept as llama.cpp's op takes
 * them: [l][0] = beta + softplus(alpha_n), [1] = softplus(alpha_p), [2] =
 * beta, [3] = eps; xielu(x) = x > 0 ? [1] x^2 + [2] x : (expm1(min(x, [3]))
 * - x) [0] + [2] x. */
static topos_status tp_llama_xielu(topos_llama *m) {
  topos_gguf *g = m->gguf;
  const topos_llama_config *c = &m->config;
  const char *names[4] = {"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"};
  m->xielu = malloc((size_t)c->n_layers * 4 * sizeof *m->xielu);
  if (!m->xielu) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: xIELU parameters");
  for (int p = 0; p < 4; ++p) {
    const char *kb = names[p];
    int64_t index;
    topos_gguf_kv kv;
    TP_TRY(tp_llama_block_key(m, kb, "", &index, &kv));
    const int array = kv.type == TOPOS_GGUF_ARRAY;
    float one = 0.0f; /* a number for every block: read once */
    if (!array) {
      const topos_status st = topos_gguf_get_f32(g, kb, &one);
      if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s", kb);
    }
    for (int64_t l = 0; l < c->n_layers; ++l) {
      double v = one;
      if (array) {
        const topos_status st = topos_gguf_array_float(g, index, (uint64_t)l, &v);
        if (st != TOPOS_OK) return tp_fail_context(st, "llama: %s", kb);
      }
      const float f = (float)v;
      if (!isfinite(f) || fabsf(f) > 1e6f)
        return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %g (block %" PRId64 ") is not a finite parameter", kb, (double)f, l);
      m->xielu[l * 4 + p] = f;
    }
  }
  for (int64_t l = 0; l < c->n_layers; ++l) {
    float *x = m->xielu + l * 4;
    const float an = x[0], ap = x[1], beta = x[2];
    x[0] = beta + tp_softplus(an);
    x[1] = tp_softplus(ap);
  }
  return TOPOS_OK;
}

topos_status tp_llama_config_read(topos_llama *m, int64_t *swa_period, int *nope_all) {
  topos_gguf *g = m->gguf;
  const char *arch = NULL;
  topos_status st = topos_gguf_get_string(g, "general.architecture", &arch, NULL);
  if (st == TOPOS_ERR_NOT_FOUND)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: general.architecture is missing");
  TP_TRY(st);
  const tp_llama_arch *a = tp_llama_arch_of(arch);
  if (!a) { /* the table's names, in its order */
    char known[1024];
    size_t used = 0;
    const size_t n = sizeof tp_llama_archs / sizeof tp_llama_archs[0];
    for (size_t i = 0; i < n && used < sizeof known; ++i)
      used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                               tp_llama_archs[i].name);
    return tp_fail(TOPOS_UNSUPPORTED, "llama: architecture \"%.64s\" is not supported (%s are)", arch, known);
  }
  const tp_llama_arch_extra x = tp_llama_extra_of(a->name);
  topos_llama_config *c = &m->config;
  char kb[96];
  c->arch = a->name;
  c->rope_neox = (a->flags & TP_ARCH_NEOX) != 0;
  c->qk_norm = a->flags & TP_ARCH_QK_NORM ? (a->flags & TP_ARCH_QK_NORM_ROW ? 2 : 1) : 0;
  c->pre_norms = !(a->flags & TP_ARCH_NO_PRE_NORMS);
  c->post_norms = (a->flags & TP_ARCH_POST_NORMS) != 0;
  c->ffn_gelu = (a->flags & (TP_ARCH_GEMMA | TP_ARCH_FFN_PLAIN)) != 0;
  c->layer_norm = (a->flags & TP_ARCH_LAYER_NORM) != 0;
  c->ffn_plain = (a->flags & TP_ARCH_FFN_PLAIN) != 0;
  c->ffn_relu2 = x.relu2;
  c->ffn_xielu = x.xielu;
  if (x.relu2 || x.xielu) c->ffn_gelu = 0;
  c->parallel_residual = (a->flags & TP_ARCH_PARALLEL) != 0;
  c->attn_sinks = (a->flags & TP_ARCH_OAI) != 0;
  c->learned_positions = (a->flags & TP_ARCH_POSITIONS) != 0;
  if (x.positions_maybe) { /* mpt: where the file has the table */
    int64_t index;
    c->learned_positions = topos_gguf_find_tensor(g, "position_embd.weight", &index) == TOPOS_OK;
    topos_clear_error();
  }
  TP_TRY(tp_llama_u64(g, TP_K("context_length"), 1, 0, &c->n_ctx_train));
  TP_TRY(tp_llama_u64(g, TP_K("embedding_length"), 1, 0, &c->dim));
  TP_TRY(tp_llama_u64(g, TP_K("block_count"), 1, 0, &c->n_layers));
  if (x.ds_moe || x.nextn) { /* the last blocks predict further tokens: not the trunk (llama.cpp skips them) */
    int present;
    TP_TRY(tp_llama_key_u64(g, TP_K("nextn_predict_layers"), 0, &c->n_nextn_layers, &present));
    if (c->n_nextn_layers >= c->n_layers)
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %" PRId64 " leaves no blocks of block_count %" PRId64, kb,
                     c->n_nextn_layers, c->n_layers);
    c->n_layers -= c->n_nextn_layers;
  }
  /* a mixture's experts may have a width of their own and no dense one */
  const int ssm_only = x.ssm == 4 || x.ssm == 5; /* mamba2, mamba: no attention, no feed-forward */
  if (x.block_lists) TP_TRY(tp_llama_block_lists(m));
  else if (x.ssm != 2 && !ssm_only) /* (nemotron_h: one per block, tp_llama_nemotron_h_blocks) */
    TP_TRY(tp_llama_u64(g, TP_K("feed_forward_length"), !(a->flags & TP_ARCH_MOE), 0, &c->ff));
  if (x.ff_half) {
    if (c->ff < 2 || c->ff % 2)
      return tp_fail(TOPOS_ERR_SHAPE, "llama: %s = %" PRId64 " is not twice a width (%s files)", kb, c->ff, c->arch);
    c->ff /= 2;
  }
  if (ssm_only) c->n_heads = 1; /* (their files say 0) */
  else if (!x.block_lists) TP_TRY(tp_llama_u64(g, TP_K("attention.head_count"), 1, 0, &c->n_heads));
  if (x.block_lists) { /* (read above) */
  } else if (x.shortconv) TP_TRY(tp_llama_shortconv(m));
  else if (x.kda) TP_TRY(tp_llama_kda_config(m));
  else if (x.ssm)
    TP_TRY(tp_llama_ssm_config(m, x.ssm >= 5 ? 1 : 2,
                               x.ssm == 3 ? TP_SSM_PARALLEL : ssm_only ? TP_SSM_ONLY : TP_SSM_HYBRID));
  else TP_TRY(tp_llama_u64(g, TP_K("attention.head_count_kv"), 0, c->n_heads, &c->n_kv_heads));
  if (x.delta) TP_TRY(tp_llama_delta_config(m, x.delta == 2));
  c->attn_gate = x.delta != 0;
  m->moe_where_present = x.ssm == 6; /* jamba */
  if (x.ssm == 2) { /* nemotron_h: the RMS key where the file has it, else the LayerNorm one, as llama.cpp */
    TP_TRY(tp_llama_f32(g, TP_K("attention.layer_norm_rms_epsilon"), 0, 0.0f, &c->rms_eps));
    if (c->rms_eps == 0.0f) TP_TRY(tp_llama_f32(g, TP_K("attention.layer_norm_epsilon"), 1, 0, &c->rms_eps));
    TP_TRY(tp_llama_nemotron_h_blocks(m));
  } else {
    TP_TRY(tp_llama_f32(g, TP_K(c->layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"),
                        1, 0, &c->rms_eps));
  }
  TP_TRY(tp_llama_f32(g, TP_K("rope.freq_base"), 0, 10000.0f, &c->rope_base));
  c->qk_norm_after_rope = x.qk_norm_late;
  if (x.qk_norm_heads) c->qk_norm = 3;
  if (x.parallel_without_ffn_norm) {
    int64_t index;
    c->parallel_residual = topos_gguf_find_tensor(g, "blk.0.ffn_norm.weight", &index) != TOPOS_OK;
    topos_clear_error();
  }
  if (!x.block_lists && c->n_heads % c->n_kv_heads != 0) /* (lists: checked per block) */
    return tp_fail(TOPOS_ERR_SHAPE, "llama: head_count %" PRId64
                   " is not a multiple of head_count_kv %" PRId64, c->n_heads, c->n_kv_heads);
  if (a->flags & TP_ARCH_MLA) {
    TP_TRY(tp_llama_mla(g, c));
  } else {
    /* the head width: attention.key_length where the file says it (heads
     * need not tile the embedding then, as in Mistral NeMo), else dim / heads */
    int64_t key_len = 0, value_len = 0;
    TP_TRY(tp_llama_u64(g, TP_K("attention.key_length"), 0, 0, &key_len));
    TP_TRY(tp_llama_u64(g, TP_K("attention.value_length"), 0, 0, &value_len));
    /* (heads per block: without a width, block 0's count divides the embedding, as llama.cpp) */
    const int64_t heads0 = m->heads_list ? m->heads_list[0] : c->n_heads;
    if ((!key_len || !value_len) && c->dim % heads0 != 0)
      return tp_fail(TOPOS_ERR_SHAPE, "llama: embedding_length %" PRId64
                     " is not a multiple of head_count %" PRId64 " and the file gives no head width (attention.%s)",
                     c->dim, heads0, key_len ? "value_length" : "key_length");
    c->head_dim = key_len ? key_len : c->dim / heads0;
    if ((value_len ? value_len : c->dim / heads0) != c->head_dim)
      return tp_fail(TOPOS_UNSUPPORTED, "llama: value heads of %" PRId64 " differ from key heads of %" PRId64
                     " (not supported)", value_len ? value_len : c->dim / heads0, c->head_dim);
  }
  if (c->head_dim % 2 != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: head dimension %" PRId64 " is odd", c->head_dim);
  if (c->n_heads > ((int64_t)1 << 31) / c->head_dim)
    return tp_fail(TOPOS_ERR_RANGE, "llama: head_count %" PRId64 " x head dimension %" PRId64
                   " is past 2^31", c->n_heads, c->head_dim);
  if (!(a->flags & TP_ARCH_MLA)) /* (latent attention: read above) */
    TP_TRY(tp_llama_u64(g, TP_K("rope.dimension_count"), 0, c->head_dim, &c->rope_dim));
  if (x.hunyuan && c->head_dim > 2) { /* NTK-aware alpha: base alpha^(hd / (hd - 2)), in f32 as llama.cpp (the
                                       * converter folds it into freq_base for the text-only files) */
    float alpha = 0.0f;
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("rope.scaling.alpha"), 0.0f, &alpha));
    if (alpha > 0.0f) c->rope_base *= powf(alpha, (float)c->head_dim / (float)(c->head_dim - 2));
  }
  /* partial rotary (Phi-4-mini: 96 of 128): the first rope_dim dimensions
   * of each head rotate, the rest pass through */
  if (c->rope_dim > c->head_dim || c->rope_dim % 2 != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "llama: rope.dimension_count %" PRId64
                   " must be even and at most the head dimension %" PRId64, c->rope_dim, c->head_dim);
  c->head_dim_swa = c->head_dim, c->rope_dim_swa = c->rope_dim; /* (Gemma 4's differ: below) */
  if (x.mrope) TP_TRY(tp_llama_mrope(m, x.mrope));
  float attn_factor;
  TP_TRY(tp_llama_rope_scaling(g, c, &attn_factor));
  if (a->flags & TP_ARCH_MLA) TP_TRY(tp_llama_mla_scale(g, c, attn_factor));
  *swa_period = 0;
  if (a->swa == 1) TP_TRY(tp_llama_phi3_window(g, c));
  if (a->swa == 2) TP_TRY(tp_llama_layer_window(m, a, attn_factor, swa_period));
  if (x.smallthinker) TP_TRY(tp_llama_smallthinker(m, swa_period));
  c->embd_scale = a->flags & TP_ARCH_GEMMA ? sqrtf((float)c->dim) : 1.0f;
  if (!(a->flags & TP_ARCH_MLA)) c->attn_scale = (float)(1.0 / sqrt((double)c->head_dim));
  if (a->qpas_blocks && c->n_layers == a->qpas_blocks)
    c->attn_scale = 1.0f / sqrtf((float)(c->dim / c->n_heads));
  else if (a->flags & TP_ARCH_GEMMA)
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
  c->residual_scale = 1.0f;
  c->logit_scale = 1.0f;
  *nope_all = c->learned_positions;
  /* ALiBi (tp_llama_arch_extra.alibi): no layer rotates */
  c->alibi_max_bias = x.baichuan && c->n_layers == 40 ? 8.0f : x.alibi;
  if (x.alibi_key) { /* absent or 0: none, as llama.cpp reads these files */
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("attention.max_alibi_bias"), 0.0f, &c->alibi_max_bias));
    if (!isfinite(c->alibi_max_bias))
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %g is not a finite bias", kb, (double)c->alibi_max_bias);
  }
  if (c->alibi_max_bias > 0.0f || x.no_rope) *nope_all = 1;
  c->embd_norm = x.embd_norm;
  if (x.attn_scale_hd) c->attn_scale = 1.0f / (float)c->head_dim;
  if (a->flags & TP_ARCH_GRANITE) TP_TRY(tp_llama_granite(g, c, x.minicpm, nope_all));
  c->norm_weightless = x.weightless;
  c->norm_bias = (c->layer_norm && !(a->flags & TP_ARCH_COHERE) && !x.weightless) || x.rms_bias;
  if (x.clamp) { /* OLMo 1.7's and MPT's clip_qkv; absent or 0: none */
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("attention.clamp_kqv"), 0.0f, &c->clamp_kqv));
    if (!isfinite(c->clamp_kqv))
      return tp_fail(TOPOS_ERR_RANGE, "llama: %s = %g is not a finite bound", kb, (double)c->clamp_kqv);
  }
  if (a->flags & TP_ARCH_COHERE) { /* logits times logit_scale (absent or 0: none) */
    float v;
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("logit_scale"), 0.0f, &v));
    if (v != 0.0f) c->logit_scale = 1.0f / v;
  }
  if (a->flags & TP_ARCH_PARALLEL_KEY) { /* required, as llama.cpp reads gptneox files */
    topos_status pst = topos_gguf_get_bool(g, TP_K("use_parallel_residual"), &c->parallel_residual);
    if (pst == TOPOS_ERR_NOT_FOUND) return tp_fail(TOPOS_ERR_NOT_FOUND, "llama: required key %s is missing", kb);
    if (pst != TOPOS_OK) return tp_fail_context(pst, "llama: key %s", kb);
  }
  if (a->flags & TP_ARCH_TEMPERATURE) /* Llama 4's temperature tuning, as llama.cpp's mistral3 graph: q at
                                       * position p times 1 + scale ln(floor(p / original_context_length) + 1) */
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("attention.temperature_scale"), 0.0f, &c->attn_temp_scale));
  c->attn_temp_floor = c->rope_ctx_orig > 0 ? c->rope_ctx_orig : 1; /* mistral3's (tp_llama_llama4: Llama 4's) */
  if (a->flags & (TP_ARCH_GRANITE | TP_ARCH_TEMPERATURE)) { /* attention.scale instead of 1 / sqrt(head width) */
    float v;
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("attention.scale"), 0.0f, &v));
    if (v != 0.0f) c->attn_scale = v;
  }
  if (a->flags & TP_ARCH_SOFTCAP) {
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("attn_logit_softcapping"), 50.0f, &c->attn_softcap));
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("final_logit_softcapping"), 30.0f, &c->final_softcap));
  } else if (a->flags & TP_ARCH_FINAL_SOFTCAP) {
    /* (gemma3n: llama.cpp's 30 where the file is silent) */
    TP_TRY(tp_llama_nonneg_f32(g, TP_K("final_logit_softcapping"), x.gemma3n ? 30.0f : 0.0f, &c->final_softcap));
  }
  if (x.gemma4) TP_TRY(tp_llama_gemma4_config(m));
  if (x.gemma3n) TP_TRY(tp_llama_gemma3n_config(m, *swa_period));
  TP_TRY(tp_llama_experts(g, a, c));
  if (x.llama4) TP_TRY(tp_llama_llama4(c));
  if (x.xielu) TP_TRY(tp_llama_xielu(m));
  return TOPOS_OK;
}

unsigned tp_llama_arch_flags(const char *arch) {
  const tp_llama_arch *a = arch ? tp_llama_arch_of(arch) : NULL;
  return a ? a->flags : 0;
}

int tp_llama_arch_qk_norm_optional(const char *arch) { return arch && tp_llama_extra_of(arch).qk_norm_optional; }
int tp_llama_arch_gate_up_fused(const char *arch) { return arch && tp_llama_extra_of(arch).gate_up; }
int tp_llama_arch_norm_bias_optional(const char *arch) { return arch && tp_llama_extra_of(arch).norm_bias_maybe; }
const char *tp_llama_arch_ffn_norm_name(const char *arch) {
  const char *n = arch ? tp_llama_extra_of(arch).ffn_norm_name : NULL;
  return n ? n : "ffn_norm.weight";
}
int tp_llama_arch_embd_from_output(const char *arch) { return arch && tp_llama_extra_of(arch).embd_from_output; }
