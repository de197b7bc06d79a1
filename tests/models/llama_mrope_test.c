/* Vision-language models' text: qwen2vl (Qwen2-VL, Qwen2.5-VL), qwen3vl and
 * qwen3vlmoe (Qwen3-VL) files rotate by M-RoPE sections (interleaved for
 * Qwen3-VL); a text token's position goes to the first three sections and
 * 0 to the fourth, so the pairs in the fourth keep angle 0. Against the
 * tests' plain forward, which turns those pairs by position 0, and far
 * from it turning every pair; decoding equal to the full context. */
#include "models/llama_harness.h"
#include "models/llama_internal.h" /* the model's still pairs */

static void lr_check(lt_spec s, const int32_t sections[4], int still_pairs) {
  memcpy(s.rope_sections, sections, 4 * sizeof *sections);
  s.rope_base = 10.0f; /* the last pairs turn ~0.1 rad per position: keeping them still shows */
  lt_model m;
  CHECK_OK(lt_open(&s, &m));
  if (m.model) {
    int n = 0;
    for (int64_t i = 0; m.model->rope_still && i < topos_llama_config_of(m.model)->rope_dim / 2; ++i)
      n += m.model->rope_still[i];
    CHECK_MSG(n == still_pairs, "%s: %d still pairs, want %d", s.arch, n, still_pairs);
  }
  lt_close(&m);
  lt_spec turning = s;
  memset(turning.rope_sections, 0, sizeof turning.rope_sections);
  if (still_pairs > 0) lt_check_spec_variant(&s, &turning);
  else lt_compare_plain(&s, TOPOS_NUMERICS_EXACT, 1e-5);
}

TEST(llama_mrope_text_files) {
  lt_spec s = lt_f32_spec();
  s.arch = "qwen2vl";
  s.biases = 1;
  const int32_t mrope[4] = {8, 12, 10, 2}; /* 32 pairs: sectors 30, 31 in the fourth */
  lr_check(s, mrope, 2);
  const int32_t three[4] = {8, 12, 12, 0}; /* Qwen2.5-VL's kind: every pair turns */
  lr_check(s, three, 0);
  s = lt_f32_spec();
  s.arch = "qwen3vl";
  const int32_t imrope[4] = {12, 10, 10, 0}; /* interleaved: sector 31 (31 % 3 == 1, past 30) keeps 0 */
  lr_check(s, imrope, 1);
  const int32_t wide[4] = {11, 11, 10, 0}; /* sectors 30 (30 % 3 == 0, below 33) turn; 29 (2, below 30) too */
  lr_check(s, wide, 0);
  s.arch = "qwen3vlmoe";
  s.experts = 4;
  s.experts_used = 2;
  s.ff_exp = 64;
  lr_check(s, imrope, 1);
  /* the sections are required for these files */
  lt_spec t = lt_f32_spec();
  t.arch = "qwen3vl";
  lt_expect_refused(t, TOPOS_ERR_NOT_FOUND, "required key qwen3vl.rope.dimension_sections is missing");
}
