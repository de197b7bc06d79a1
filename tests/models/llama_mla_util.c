/* The bodies of llama_mla_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

topos_status lt_write_mla_keys(topos_gguf_writer *w, const lt_spec *s) {
  char kb[96];
  const int64_t R = s->mla_kv_rank, P = lt_rope_dim(s), N = s->mla_nope;
  topos_status st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.kv_lora_rank"), (uint32_t)R);
  if (st == TOPOS_OK && s->mla_q_rank > 0)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.q_lora_rank"), (uint32_t)s->mla_q_rank);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.key_length"), (uint32_t)(R + P));
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.value_length"), (uint32_t)R);
  if (st == TOPOS_OK && !s->mla_legacy)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.key_length_mla"), (uint32_t)(N + P));
  if (st == TOPOS_OK)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.value_length_mla"), (uint32_t)s->mla_v);
  return st;
}

topos_status lt_write_mla(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                          topos_rng *rng) {
  const int64_t D = s->dim, H = s->heads, R = s->mla_kv_rank, P = lt_rope_dim(s), N = s->mla_nope, V = s->mla_v;
  const topos_dtype *ty = s->types;
  topos_status st = TOPOS_OK;
  char n[64];
#define LT_M(suffix, type, e0, e1, e2, scale)                                    \
  do {                                                                         \
    snprintf(n, sizeof n, "blk.%d." suffix, (int)l);                           \
    if (st == TOPOS_OK) st = lt_add3(w, f, s, n, type, e0, e1, e2, scale, rng); \
  } while (0)
  if (s->mla_q_rank > 0) {
    LT_M("attn_q_a.weight", ty[LT_Q], D, s->mla_q_rank, 0, 0.08);
    snprintf(n, sizeof n, "blk.%d.attn_q_a_norm.weight", (int)l);
    if (st == TOPOS_OK) st = lt_add(w, f, s, n, TOPOS_F32, s->mla_q_rank, 0, rng, 1);
    LT_M("attn_q_b.weight", ty[LT_Q], s->mla_q_rank, H * (N + P), 0, 0.15);
  } else {
    LT_M("attn_q.weight", ty[LT_Q], D, H * (N + P), 0, 0.08);
  }
  LT_M("attn_kv_a_mqa.weight", ty[LT_K], D, R + P, 0, 0.08);
  snprintf(n, sizeof n, "blk.%d.attn_kv_a_norm.weight", (int)l);
  if (st == TOPOS_OK) st = lt_add(w, f, s, n, TOPOS_F32, R, 0, rng, 1);
  /* the heads' keys from the latent with scores of a few units: softmaxes
   * that neither flatten nor saturate */
  LT_M("attn_k_b.weight", ty[LT_V], N, R, H, 0.25);
  LT_M("attn_v_b.weight", ty[LT_V], R, V, H, 0.15);
  LT_M("attn_output.weight", ty[LT_O], H * V, D, 0, 0.08);
#undef LT_M
  return st;
}

int lt_mla_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t positions, lt_mla_w *m) {
  memset(m, 0, sizeof *m);
  const char *names[7] = {"attn_q_b", "attn_q_a", "attn_q_a_norm", "attn_kv_a_mqa", "attn_kv_a_norm", "attn_k_b",
                          "attn_v_b"};
  float **slots[7] = {&m->q, &m->q_a, &m->q_a_norm, &m->kv_a, &m->kv_a_norm, &m->k_b, &m->v_b};
  for (int i = 0; i < 7; ++i) {
    if (s->mla_q_rank == 0 && (i == 1 || i == 2)) continue;
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, i == 0 && s->mla_q_rank == 0 ? "attn_q" : names[i]);
    if (!(*slots[i] = lt_deq(g, n))) return 0;
  }
  const int64_t H = s->heads;
  m->kc = calloc((size_t)(positions * H * (s->mla_nope + lt_rope_dim(s))), sizeof(float));
  m->vc = calloc((size_t)(positions * H * s->mla_v), sizeof(float));
  return m->kc && m->vc;
}

void lt_mla_rope(const lt_spec *s, float *v, int64_t p) {
  const int64_t P = lt_rope_dim(s);
  const double base = s->rope_base > 0 ? s->rope_base : 10000.0, f = s->rope_scale > 0 ? s->rope_scale : 1.0;
  for (int64_t i = 0; i < P / 2; ++i) {
    const double orig = (double)p * pow(base, -2.0 * (double)i / (double)P);
    double th = orig / f, mag = 1.0;
    if (lt_yarn(s)) {
      const double keep = lt_yarn_pair(s, i, (double)P, base, (double)(s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->ctx));
      th = th * (1.0 - keep) + orig * keep;
      if (!(s->yarn_log_mul > 0)) mag = 1.0 + 0.1 * log(f);
    }
    const float c = (float)(cos(th) * mag), sn = (float)(sin(th) * mag), a = v[2 * i], b = v[2 * i + 1];
    v[2 * i] = a * c - b * sn;
    v[2 * i + 1] = a * sn + b * c;
  }
}

int lt_mla_attention(const lt_spec *s, lt_mla_w *m, const float *wo, int64_t p, const float *h,
                     float *out) {
  const int64_t D = s->dim, H = s->heads, R = s->mla_kv_rank, P = lt_rope_dim(s), N = s->mla_nope, V = s->mla_v;
  const int64_t QK = N + P, qr = s->mla_q_rank;
  float *q = malloc((size_t)(H * QK) * 4), *kv = malloc((size_t)(R + P) * 4), *qa = malloc((size_t)(qr + 1) * 4);
  float *o = malloc((size_t)(H * V) * 4), *att = malloc((size_t)(p + 1) * sizeof(double) * 2);
  if (!q || !kv || !qa || !o || !att) {
    free(q), free(kv), free(qa), free(o), free(att);
    return 0;
  }
  if (qr > 0) {
    lt_matvec(m->q_a, h, qa, qr, D);
    lt_rmsnorm(qa, qa, m->q_a_norm, qr, 1e-5f);
    lt_matvec(m->q, qa, q, H * QK, qr);
  } else {
    lt_matvec(m->q, h, q, H * QK, D);
  }
  lt_matvec(m->kv_a, h, kv, R + P, D);
  lt_rmsnorm(kv, kv, m->kv_a_norm, R, 1e-5f);
  if (!lt_kimi(s)) lt_mla_rope(s, kv + R, p); /* Kimi Linear's does not rotate */
  for (int64_t head = 0; head < H; ++head) {
    if (!lt_kimi(s)) lt_mla_rope(s, q + head * QK + N, p);
    float *k = m->kc + (p * H + head) * QK, *v = m->vc + (p * H + head) * V;
    for (int64_t j = 0; j < N; ++j) { /* k_b [H, R, N]: column j of head's R x N */
      double acc = 0;
      for (int64_t r = 0; r < R; ++r) acc += (double)m->k_b[(head * R + r) * N + j] * kv[r];
      k[j] = (float)acc;
    }
    memcpy(k + N, kv + R, (size_t)P * 4); /* one rotated key part for every head */
    lt_matvec(m->v_b + head * V * R, kv, v, V, R);
  }
  /* DeepSeek's scale: mscale^2 / sqrt(N + P), mscale = 1 + 0.1 mscale_all_dim ln f (the file's
   * yarn_log_multiplier is 0.1 mscale_all_dim), or without it YaRN's own magnitude squared */
  double ms = 1.0;
  if (lt_yarn(s)) ms = s->yarn_log_mul > 0 ? 1.0 + s->yarn_log_mul * log(s->rope_scale) : 1.0 + 0.1 * log(s->rope_scale);
  const double scale = ms * ms / sqrt((double)QK);
  double *sc = (double *)(void *)att;
  for (int64_t head = 0; head < H; ++head) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j <= p; ++j) {
      double d = 0;
      for (int64_t i = 0; i < QK; ++i) d += (double)q[head * QK + i] * m->kc[(j * H + head) * QK + i];
      sc[j] = d * scale;
      mx = fmax(mx, sc[j]);
    }
    for (int64_t j = 0; j <= p; ++j) sum += (sc[j] = exp(sc[j] - mx));
    for (int64_t i = 0; i < V; ++i) {
      double acc = 0;
      for (int64_t j = 0; j <= p; ++j) acc += sc[j] / sum * m->vc[(j * H + head) * V + i];
      o[head * V + i] = (float)acc;
    }
  }
  lt_matvec(wo, o, out, D, H * V);
  free(q), free(kv), free(qa), free(o), free(att);
  return 1;
}
