/* The bodies of llama_experts_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

lt_spec lt_v3_spec(const char *arch) {
  lt_spec s = lt_f32_spec();
  s.arch = arch;
  s.layers = 3;
  s.experts = 8;
  s.experts_used = 2;
  s.ff_exp = 64;
  s.experts_shared = 1;
  s.dense_lead = 1;
  s.sigmoid_router = 1;
  s.probs_bias = 1;
  s.weights_norm = 1;
  s.experts_scale = 2.5f;
  return s;
}

topos_status lt_write_ds_moe_keys(topos_gguf_writer *w, const lt_spec *s) {
  char kb[96];
  topos_status st = TOPOS_OK;
  if (s->experts > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_shared_count"), (uint32_t)s->experts_shared);
  if (st == TOPOS_OK && s->weights_norm) st = topos_gguf_writer_add_bool(w, lt_k(kb, s, "expert_weights_norm"), 1);
  if (st == TOPOS_OK && s->nextn > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "nextn_predict_layers"), (uint32_t)s->nextn);
  return st;
}

topos_status lt_write_expert_keys(topos_gguf_writer *w, const lt_spec *s) {
  char kb[96];
  topos_status st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_count"), (uint32_t)s->experts);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_used_count"), (uint32_t)s->experts_used);
  if (st == TOPOS_OK && s->ff_exp > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_feed_forward_length"), (uint32_t)s->ff_exp);
  if (st == TOPOS_OK && s->ff_shexp > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_shared_feed_forward_length"), (uint32_t)s->ff_shexp);
  if (st == TOPOS_OK && s->experts_scale > 0)
    st = topos_gguf_writer_add_f32(w, lt_k(kb, s, "expert_weights_scale"), s->experts_scale);
  if (st == TOPOS_OK && s->moe_latent > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "moe_latent_size"), (uint32_t)s->moe_latent);
  if (st == TOPOS_OK && s->dense_lead > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "leading_dense_block_count"), (uint32_t)s->dense_lead);
  if (st == TOPOS_OK && s->moe_step > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "interleave_moe_layer_step"), (uint32_t)s->moe_step);
  if (st == TOPOS_OK && s->sigmoid_router)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_gating_func"), s->sigmoid_router > 0 ? 2 : 1);
  if (st == TOPOS_OK && s->expert_groups > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_group_count"), (uint32_t)s->expert_groups);
  if (st == TOPOS_OK && s->expert_groups_used > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "expert_group_used_count"), (uint32_t)s->expert_groups_used);
  return st;
}

topos_status lt_add3(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                     topos_dtype type, int64_t ne0, int64_t ne1, int64_t ne2, double scale,
                     topos_rng *rng) {
  if (s->skip_tensor && strcmp(name, s->skip_tensor) == 0) return TOPOS_OK;
  if (s->bad_tensor && strcmp(name, s->bad_tensor) == 0) ne0 += 32;
  const int64_t count = ne0 * (ne1 ? ne1 : 1) * (ne2 ? ne2 : 1);
  float *v = lt_keep_raw(f, (size_t)count * sizeof(float));
  if (!v) return TOPOS_ERR_OUT_OF_MEMORY;
  lt_fill_unit(rng, v, count, scale, 0.0);
  return lt_add_quantized(w, f, name, type, ne0, ne1, ne2, v);
}

topos_status lt_write_experts(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                              topos_rng *rng) {
  const int64_t D = s->dim, E = s->experts, F = lt_ff_expert(s), S = lt_ff_shared(s);
  const int64_t X = s->moe_latent > 0 ? s->moe_latent : D; /* the routed experts' width */
  const topos_dtype *ty = s->types;
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_E(suffix, type, e0, e1, e2, scale)                       \
  do {                                                              \
    snprintf(n, sizeof n, "blk.%d." suffix, (int)l);                \
    if (st == TOPOS_OK) st = lt_add3(w, f, s, n, type, e0, e1, e2, scale, rng); \
  } while (0)
  /* the router's logits spread by ~1.5: the ranks stand clear of rounding */
  LT_E("ffn_gate_inp.weight", TOPOS_F32, D, E, 0, 0.1);
  /* gpt-oss: gate and up values of ~6, so its clamps at 7 act on many of them */
  const double in_scale = lt_oai(s) ? 0.4 : 0.08;
  const int gated = !lt_one_branch(s); /* nemotron_h_moe: up and down, ReLU squared */
  if (gated) LT_E("ffn_gate_exps.weight", ty[LT_GATE], X, F, E, in_scale);
  LT_E("ffn_up_exps.weight", ty[LT_UP], X, F, E, in_scale);
  LT_E("ffn_down_exps.weight", ty[LT_DOWN], F, X, E, 0.08);
  if (X != D) { /* the latent's way in and out */
    LT_E("ffn_latent_down.weight", TOPOS_F32, D, X, 0, 0.15);
    LT_E("ffn_latent_up.weight", TOPOS_F32, X, D, 0, 0.15);
  }
  if (S > 0) {
    if (gated) LT_E("ffn_gate_shexp.weight", ty[LT_GATE], D, S, 0, 0.08);
    LT_E("ffn_up_shexp.weight", ty[LT_UP], D, S, 0, 0.08);
    LT_E("ffn_down_shexp.weight", ty[LT_DOWN], S, D, 0, 0.08);
  }
  if (lt_shared_gate(s)) LT_E("ffn_gate_inp_shexp.weight", TOPOS_F32, D, 0, 0, 0.1);
  if (s->probs_bias) LT_E("exp_probs_b.bias", TOPOS_F32, E, 0, 0, 0.3); /* moves the choice by ~1 logit */
  if (lt_arctic(s)) { /* the mixture's own norm; the dense feed-forward beside it, dim wide */
    snprintf(n, sizeof n, "blk.%d.ffn_norm_exps.weight", (int)l);
    if (st == TOPOS_OK) st = lt_add(w, f, s, n, TOPOS_F32, D, 0, rng, 1);
    LT_E("ffn_gate.weight", ty[LT_GATE], D, D, 0, 0.08);
    LT_E("ffn_up.weight", ty[LT_UP], D, D, 0, 0.08);
    LT_E("ffn_down.weight", ty[LT_DOWN], D, D, 0, 0.08);
  }
  if (lt_oai(s)) { /* the router's bias, each expert's gate, up and down biases */
    LT_E("ffn_gate_inp.bias", TOPOS_F32, E, 0, 0, 0.5);
    LT_E("ffn_gate_exps.bias", TOPOS_F32, F, E, 0, 1.0);
    LT_E("ffn_up_exps.bias", TOPOS_F32, F, E, 0, 1.0);
    LT_E("ffn_down_exps.bias", TOPOS_F32, D, E, 0, 0.3);
  }
#undef LT_E
  return st;
}

int lt_experts_load(topos_gguf *g, const lt_spec *s, int64_t l, lt_experts *x) {
  memset(x, 0, sizeof *x);
  const char *names[13] = {"ffn_gate_inp.weight",   "ffn_gate_exps.weight",  "ffn_up_exps.weight",
                           "ffn_down_exps.weight",  "ffn_gate_shexp.weight", "ffn_up_shexp.weight",
                           "ffn_down_shexp.weight", "ffn_gate_inp_shexp.weight", "exp_probs_b.bias",
                           "ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias"};
  float **slots[13] = {&x->router, &x->gate, &x->up,    &x->down,  &x->sgate, &x->sup,  &x->sdown,
                       &x->sgi,    &x->bias, &x->rbias, &x->bgate, &x->bup,   &x->bdown};
  for (int i = 0; i < 13; ++i) {
    if (i >= 4 && i < 7 && lt_ff_shared(s) == 0) continue;
    if ((i == 1 || i == 4) && lt_one_branch(s)) continue; /* no gates */
    if (i == 7 && !lt_shared_gate(s)) continue;
    if (i == 8 && !s->probs_bias) continue;
    if (i >= 9 && !lt_oai(s)) continue;
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s", (int)l, names[i]);
    *slots[i] = lt_deq(g, n);
    if (!*slots[i]) return 0;
  }
  if (lt_arctic(s)) {
    char n[64];
    snprintf(n, sizeof n, "blk.%d.ffn_norm_exps.weight", (int)l);
    if (!(x->nexps = lt_deq(g, n))) return 0;
  }
  if (s->moe_latent > 0) {
    char n[64];
    snprintf(n, sizeof n, "blk.%d.ffn_latent_down.weight", (int)l);
    x->ldown = lt_deq(g, n);
    snprintf(n, sizeof n, "blk.%d.ffn_latent_up.weight", (int)l);
    x->lup = lt_deq(g, n);
    if (!x->ldown || !x->lup) return 0;
  }
  return 1;
}

void lt_glu_add(const float *gate, const float *up, const float *down, const float *h, int64_t D,
                int64_t F, double w, int relu, float *out) {
  float *g = malloc((size_t)F * 4), *u = malloc((size_t)F * 4), *y = malloc((size_t)D * 4);
  if (!g || !u || !y) {
    free(g), free(u), free(y);
    return;
  }
  lt_matvec(up, h, u, F, D);
  if (gate) {
    lt_matvec(gate, h, g, F, D);
    for (int64_t i = 0; i < F; ++i) g[i] = (relu ? (g[i] > 0 ? g[i] : 0.0f) : g[i] / (1.0f + expf(-g[i]))) * u[i];
  } else { /* gateless (nemotron_h_moe): ReLU squared of up */
    for (int64_t i = 0; i < F; ++i) g[i] = u[i] > 0 ? u[i] * u[i] : 0.0f;
  }
  lt_matvec(down, g, y, D, F);
  for (int64_t i = 0; i < D; ++i) out[i] += (float)(w * y[i]);
  free(g), free(u), free(y);
}

void lt_oai_expert_add(const lt_spec *s, const lt_experts *x, int64_t e, const float *h, int64_t D,
                       int64_t F, double w, float *out) {
  const double nb = lt_without(s, "expert biases") ? 0.0 : 1.0, lim = lt_without(s, "clamp") ? INFINITY : 7.0;
  float *g = malloc((size_t)F * 4), *u = malloc((size_t)F * 4), *y = malloc((size_t)D * 4);
  if (!g || !u || !y) {
    free(g), free(u), free(y);
    return;
  }
  lt_matvec(x->gate + e * F * D, h, g, F, D);
  lt_matvec(x->up + e * F * D, h, u, F, D);
  for (int64_t i = 0; i < F; ++i) {
    const double a = fmin((double)g[i] + nb * x->bgate[e * F + i], lim);
    const double b = fmax(-lim, fmin((double)u[i] + nb * x->bup[e * F + i], lim));
    g[i] = (float)(a / (1.0 + exp(-1.702 * a)) * (b + 1.0));
  }
  lt_matvec(x->down + e * D * F, g, y, D, F);
  for (int64_t i = 0; i < D; ++i) out[i] += (float)(w * ((double)y[i] + nb * x->bdown[e * D + i]));
  free(g), free(u), free(y);
}

void lt_experts_apply(const lt_spec *s, const lt_experts *x, const float *h, const float *rin,
                      float *out) {
  const int64_t D = s->dim, E = s->experts, K = s->experts_used, F = lt_ff_expert(s), S = lt_ff_shared(s);
  if (E > 256 || K > E) { /* the arrays below: the tests' files have at most 8 experts */
    memset(out, 0, (size_t)D * 4);
    return;
  }
  double p[256], sum = 0, peak = -INFINITY;
  int picked[256] = {0}, order[256];
  for (int64_t e = 0; e < E; ++e) {
    double z = 0;
    for (int64_t i = 0; i < D; ++i) z += (double)x->router[e * D + i] * rin[i];
    p[e] = z;
    if (z > peak) peak = z;
  }
  if (lt_llama4(s)) { /* the logits rank; each chosen expert reads h times its logit's sigmoid */
    float *hw = malloc((size_t)D * 4);
    memset(out, 0, (size_t)D * 4);
    for (int64_t j = 0; hw && j < K; ++j) {
      int best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (!picked[e] && (best < 0 || (float)p[e] > (float)p[best])) best = (int)e;
      picked[best] = 1;
      const float w = (float)(1.0 / (1.0 + exp(-(double)(float)p[best])) *
                              (s->experts_scale > 0 ? s->experts_scale : 1.0));
      for (int64_t i = 0; i < D; ++i) hw[i] = h[i] * w;
      lt_swiglu_add(x->gate + best * F * D, x->up + best * F * D, x->down + best * D * F, hw, D, F, 1.0, out);
    }
    free(hw);
    lt_swiglu_add(x->sgate, x->sup, x->sdown, h, D, S, 1.0, out);
    return;
  }
  if (lt_oai(s)) { /* gpt-oss: biased logits rank, a softmax over the chosen weighs */
    double z[256];
    for (int64_t e = 0; e < E; ++e) z[e] = (float)(p[e] + x->rbias[e]);
    memset(out, 0, (size_t)D * 4);
    double zmax = -INFINITY, zsum = 0;
    for (int64_t j = 0; j < K; ++j) {
      int best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (!picked[e] && (best < 0 || z[e] > z[best])) best = (int)e;
      picked[best] = 1, order[j] = best, zmax = fmax(zmax, z[best]);
    }
    for (int64_t j = 0; j < K; ++j) zsum += exp(z[order[j]] - zmax);
    for (int64_t j = 0; j < K; ++j) lt_oai_expert_add(s, x, order[j], h, D, F, exp(z[order[j]] - zmax) / zsum, out);
    return;
  }
  if (lt_sigmoid_router(s)) { /* expert_gating_func 2 (glm4moe's default): each logit's sigmoid */
    for (int64_t e = 0; e < E; ++e) p[e] = 1.0 / (1.0 + exp(-p[e]));
  } else {
    for (int64_t e = 0; e < E; ++e) sum += (p[e] = exp(p[e] - peak));
    for (int64_t e = 0; e < E; ++e) p[e] /= sum;
  }
  double wsum = 0;
  double rank[256]; /* what chooses: the probabilities, plus exp_probs_b where the file has it */
  for (int64_t e = 0; e < E; ++e) rank[e] = (float)p[e] + (x->bias ? x->bias[e] : 0.0f);
  const int64_t G = s->expert_groups, Gu = s->expert_groups_used > 0 ? s->expert_groups_used : G;
  if (G > 1 && Gu < G) { /* DeepSeek-V3: a group scores its two best; experts of the Gu best groups only */
    const int64_t P = E / G;
    double score[64];
    int keep[64] = {0};
    for (int64_t gi = 0; gi < G; ++gi) {
      double a = -INFINITY, b = -INFINITY; /* the best two */
      for (int64_t e = gi * P; e < (gi + 1) * P; ++e) {
        if (rank[e] > a) b = a, a = rank[e];
        else if (rank[e] > b) b = rank[e];
      }
      score[gi] = (float)((float)a + (float)b);
    }
    for (int64_t j = 0; j < Gu; ++j) {
      int best = -1;
      for (int64_t gi = 0; gi < G; ++gi)
        if (!keep[gi] && (best < 0 || score[gi] > score[best])) best = (int)gi;
      keep[best] = 1;
    }
    for (int64_t e = 0; e < E; ++e)
      if (!keep[e / P]) rank[e] = -INFINITY;
  }
  for (int64_t j = 0; j < K; ++j) { /* the best left: largest, then the lower index */
    int best = -1;
    for (int64_t e = 0; e < E; ++e)
      if (!picked[e] && (best < 0 || rank[e] > rank[best])) best = (int)e;
    picked[best] = 1, order[j] = best, wsum += p[best];
  }
  /* the routed experts in the latent (X wide, entered through ldown) where the file has one */
  const int64_t X = s->moe_latent > 0 ? s->moe_latent : D;
  float *hx = x->ldown ? malloc((size_t)X * 4) : (float *)h, *ro = x->lup ? calloc((size_t)X, 4) : out;
  if (!hx || !ro) {
    if (hx != h) free(hx);
    if (ro != out) free(ro);
    memset(out, 0, (size_t)D * 4);
    return;
  }
  if (x->ldown) lt_matvec(x->ldown, h, hx, X, D);
  memset(out, 0, (size_t)D * 4);
  for (int64_t j = 0; j < K; ++j) {
    const int64_t e = order[j];
    double w = p[e] / (lt_experts_norm(s) ? wsum : 1.0) * (s->experts_scale > 0 ? s->experts_scale : 1.0);
    lt_expert_add(s, x->gate ? x->gate + e * F * X : NULL, x->up + e * F * X, x->down + e * X * F, hx, X, F, w, ro);
  }
  if (x->lup) lt_matvec(x->lup, ro, out, D, X);
  if (hx != h) free(hx);
  if (ro != out) free(ro);
  if (S > 0) {
    double w = 1.0;
    if (x->sgi) {
      double z = 0;
      for (int64_t i = 0; i < D; ++i) z += (double)x->sgi[i] * h[i];
      w = 1.0 / (1.0 + exp(-z));
    }
    lt_swiglu_add(x->sgate, x->sup, x->sdown, h, D, S, w, out);
  }
}
