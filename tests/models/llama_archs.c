/* The bodies of llama_archs.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

int lt_rope_still(const lt_spec *s, int64_t i) {
  const int32_t *v = s->rope_sections;
  const int64_t sum = (int64_t)v[0] + v[1] + v[2] + v[3];
  const int imrope = lt_arch_is(s, "qwen3vl") || lt_arch_is(s, "qwen3vlmoe") || lt_arch_is(s, "qwen35") ||
                     lt_arch_is(s, "qwen35moe");
  if (sum == 0 || !lt_mrope_on(s)) return 0;
  const int64_t k = i % sum;
  if (imrope) return !((k % 3 == 0 && k < 3 * v[0]) || (k % 3 == 1 && k < 3 * v[1]) || (k % 3 == 2 && k < 3 * v[2]));
  return k >= (int64_t)v[0] + v[1] + v[2];
}

int lt_neox(const lt_spec *s) {
  return lt_arch_is(s, "qwen2") || lt_arch_is(s, "qwen3") || lt_arch_is(s, "qwen2vl") || lt_arch_is(s, "qwen3vl") ||
         lt_arch_is(s, "qwen3vlmoe") || lt_arch_is(s, "phi3") || lt_gemma(s) ||
         lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4") || lt_arch_is(s, "qwen2moe") ||
         lt_arch_is(s, "qwen3moe") || lt_arch_is(s, "olmoe") || lt_norm_bias(s) || lt_ffn_post_name(s) ||
         lt_arch_is(s, "exaone") || lt_arch_is(s, "minimax-m2") || lt_arch_is(s, "dots1") ||
         lt_arch_is(s, "bailingmoe2") || lt_hunyuan(s) || (lt_arch_is(s, "glm4") && lt_mrope_on(s)) ||
         lt_arch_is(s, "qwen") || lt_lfm2(s) || lt_arch_is(s, "apertus") || lt_arch_is(s, "pangu-embedded") ||
         lt_arch_is(s, "smallthinker") || lt_ssm_parallel(s) || lt_dbrx(s) || lt_arch_is(s, "mellum") ||
         lt_arch_is(s, "exaone-moe");
}

int lt_own_keys(const lt_spec *s) {
  return lt_one_branch(s) || lt_jamba(s) || lt_neox(s) || lt_granite(s) || lt_arch_is(s, "smollm3") || lt_arch_is(s, "mistral3") ||
         lt_arch_is(s, "ernie4_5") || lt_arch_is(s, "ernie4_5-moe") ||
         lt_arch_is(s, "exaone4") || lt_cohere(s) || lt_arch_is(s, "deepseek2") ||
         lt_arch_is(s, "glm4moe") || lt_llama4(s) || lt_arch_is(s, "minimax-m2") || lt_arch_is(s, "qwen2vl") ||
         lt_arch_is(s, "qwen3vl") || lt_arch_is(s, "qwen3vlmoe") ||
         lt_arch_is(s, "dots1") || lt_arch_is(s, "bailingmoe2") || lt_hunyuan(s) || lt_arch_is(s, "glm4") ||
         lt_minicpm(s) || lt_relu2(s) || lt_arch_is(s, "internlm2") || lt_arch_is(s, "xverse") || lt_weightless(s) ||
         lt_alibi(s) || lt_mpt(s) || lt_arch_is(s, "baichuan") || lt_arch_is(s, "chatglm") ||
         lt_arch_is(s, "maincoder") || lt_arch_is(s, "smallthinker") || lt_kimi(s) || lt_arch_is(s, "deepseek") ||
         lt_arch_is(s, "bailingmoe") || lt_dbrx(s) || lt_arctic(s);
}

int64_t lt_window(const lt_spec *s) {
  if (lt_phi3(s)) return s->swa > 0 ? s->swa : 0;
  if (lt_arch_is(s, "gemma2")) return s->swa > 0 ? s->swa : 4096;
  if (lt_arch_is(s, "gemma3") || lt_arch_is(s, "olmo2") || lt_oai(s) || lt_arch_is(s, "cohere2") || lt_lfm2(s) ||
      lt_arch_is(s, "mellum") || lt_arch_is(s, "exaone-moe"))
    return s->swa > 0 ? s->swa : 0;
  if (lt_arch_is(s, "smallthinker")) return s->swa > 0 ? 4096 : 0; /* any window is 4096, as llama.cpp */
  if (lt_arch_is(s, "exaone4")) return s->layers == 64 && s->swa > 0 ? s->swa : s->layers == 64 ? 4096 : 0;
  if (lt_llama4(s)) return s->swa > 0 ? s->swa : 8192; /* chunks, not a window */
  return 0;
}

int lt_windowed(const lt_spec *s, int64_t l) {
  if (lt_window(s) == 0) return 0;
  if (lt_phi3(s) || lt_lfm2(s)) return 1; /* lfm2: every attention block */
  if (s->swa_list) return s->swa_list[l % (int64_t)strlen(s->swa_list)] == 'L';
  if (lt_arch_is(s, "smallthinker")) { /* the first of each period full */
    const int64_t p = s->swa_pattern > 0 ? s->swa_pattern : 4;
    return l % p != 0;
  }
  const int64_t p = s->swa_pattern > 0                               ? s->swa_pattern
                    : lt_arch_is(s, "gemma2") || lt_oai(s)           ? 2
                    : lt_arch_is(s, "olmo2") || lt_arch_is(s, "exaone4") || lt_arch_is(s, "cohere2") ||
                              lt_llama4(s) || lt_arch_is(s, "mellum") || lt_arch_is(s, "exaone-moe") ? 4
                                                                     : 6;
  return p <= 1 || l % p < p - 1;
}
