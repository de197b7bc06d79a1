/* The bodies of llama_ssm_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

topos_status lt_write_ssm_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
  char kb[96];
  const char *keys[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                         "ssm.group_count"};
  /* mamba: time_step_rank is dt's rank, no groups; dt_b_c_rms where the spec says */
  const uint32_t values[5] = {LT_SSM_CONV, LT_SSM_INNER, LT_SSM_STATE, lt_mamba1(s) ? LT_SSM1_RANK : LT_SSM_HEADS,
                              LT_SSM_GROUPS};
  topos_status st = TOPOS_OK;
  for (int i = 0; i < (lt_mamba1(s) ? 4 : 5) && st == TOPOS_OK; ++i)
    st = topos_gguf_writer_add_u32(w, lt_k(kb, s, keys[i]), values[i]);
  if (st == TOPOS_OK && s->ssm_rms) st = topos_gguf_writer_add_bool(w, lt_k(kb, s, "ssm.dt_b_c_rms"), 1);
  if (lt_ssm_only(s)) /* no attention, no feed-forward */
    return st == TOPOS_OK ? topos_gguf_writer_add_u32(w, lt_k(kb, s, "feed_forward_length"), 0) : st;
  if (lt_ssm_parallel(s)) /* falcon-h1: every block has both, one kv count */
    return st == TOPOS_OK ? topos_gguf_writer_add_u32(w, lt_k(kb, s, "attention.head_count_kv"), (uint32_t)s->kv_heads)
                          : st;
  uint32_t *kv = lt_keep(f, (size_t)s->layers * sizeof *kv);
  if (!kv) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; l < s->layers; ++l) kv[l] = lt_ssm_block(s, l) || lt_ffn_block(s, l) ? 0 : (uint32_t)s->kv_heads;
  if (st == TOPOS_OK)
    st = topos_gguf_writer_add_array(w, lt_k(kb, s, "attention.head_count_kv"), TOPOS_GGUF_U32, kv,
                                     (uint64_t)s->layers);
  uint32_t *ff = lt_one_branch(s) ? lt_keep(f, (size_t)s->layers * sizeof *ff) : NULL;
  if (lt_one_branch(s) && !ff) return TOPOS_ERR_OUT_OF_MEMORY;
  const int64_t width = s->experts > 0 ? (s->ff_exp > 0 ? s->ff_exp : s->ff / s->experts_used) : s->ff;
  for (int64_t l = 0; ff && l < s->layers; ++l) ff[l] = lt_ffn_block(s, l) ? (uint32_t)width : 0;
  if (st == TOPOS_OK && ff)
    st = topos_gguf_writer_add_array(w, lt_k(kb, s, "feed_forward_length"), TOPOS_GGUF_U32, ff, (uint64_t)s->layers);
  return st;
}

topos_status lt_add_f32_values(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                               int64_t ne0, int64_t ne1, double (*v)(int64_t i)) {
  if (s->skip_tensor && strcmp(name, s->skip_tensor) == 0) return TOPOS_OK;
  if (s->bad_tensor && strcmp(name, s->bad_tensor) == 0) ne0 += 32;
  const int64_t count = ne0 * (ne1 ? ne1 : 1), ne[2] = {ne0, ne1};
  float *data = lt_keep_raw(f, (size_t)count * sizeof *data);
  if (!data) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < count; ++i) data[i] = (float)v(i);
  return topos_gguf_writer_add_tensor_raw(w, name, 0 /* f32 */, ne1 ? 2 : 1, ne, data, (size_t)count * sizeof *data);
}

topos_status lt_write_mamba2(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                             topos_rng *rng) {
  char n[64];
  topos_status st = TOPOS_OK;
#define LT_S(call) \
  if (st == TOPOS_OK) st = (call)
#define LT_NAME(suffix) snprintf(n, sizeof n, "blk.%d." suffix, (int)l)
  if (lt_mamba1(s)) { /* Mamba-1: in {dim, 2 inner}, x {inner, rank + 2 state}, dt {rank, inner}, A {state, inner} */
    const int64_t DI = LT_SSM_INNER, N = LT_SSM_STATE, R = LT_SSM1_RANK;
    LT_NAME("ssm_in.weight");
    LT_S(lt_add(w, f, s, n, s->types[LT_Q], s->dim, 2 * DI, rng, 0));
    LT_NAME("ssm_conv1d.weight");
    LT_S(lt_add3(w, f, s, n, TOPOS_F32, LT_SSM_CONV, DI, 0, 0.5, rng));
    LT_NAME("ssm_conv1d.bias");
    LT_S(lt_add(w, f, s, n, TOPOS_F32, DI, 0, rng, 0));
    LT_NAME("ssm_x.weight");
    LT_S(lt_add3(w, f, s, n, TOPOS_F32, DI, R + 2 * N, 0, 0.15, rng));
    LT_NAME("ssm_dt.weight");
    LT_S(lt_add3(w, f, s, n, TOPOS_F32, R, DI, 0, 0.3, rng));
    LT_NAME("ssm_dt.bias");
    LT_S(lt_add(w, f, s, n, TOPOS_F32, DI, 0, rng, 0));
    LT_NAME("ssm_a");
    LT_S(lt_add_f32_values(w, f, s, n, N, DI, lt_ssm1_a_value));
    LT_NAME("ssm_d");
    LT_S(lt_add(w, f, s, n, TOPOS_F32, DI, 0, rng, 1));
    LT_NAME("ssm_out.weight");
    LT_S(lt_add(w, f, s, n, s->types[LT_O], DI, s->dim, rng, 0));
    if (lt_jamba(s)) { /* dt, B and C RMS-normed with weights */
      LT_NAME("ssm_dt_norm.weight");
      LT_S(lt_add(w, f, s, n, TOPOS_F32, R, 0, rng, 1));
      LT_NAME("ssm_b_norm.weight");
      LT_S(lt_add(w, f, s, n, TOPOS_F32, N, 0, rng, 1));
      LT_NAME("ssm_c_norm.weight");
      LT_S(lt_add(w, f, s, n, TOPOS_F32, N, 0, rng, 1));
    }
    return st;
  }
  LT_NAME("ssm_in.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_Q], s->dim, LT_SSM_INNER + LT_SSM_CD + LT_SSM_HEADS, rng, 0));
  LT_NAME("ssm_conv1d.weight");
  LT_S(lt_add3(w, f, s, n, TOPOS_F32, LT_SSM_CONV, LT_SSM_CD, 0, 0.5, rng));
  LT_NAME("ssm_conv1d.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_SSM_CD, 0, rng, 0));
  LT_NAME("ssm_dt.bias");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_SSM_HEADS, 0, rng, 0));
  LT_NAME("ssm_a");
  LT_S(lt_add_f32_values(w, f, s, n, 1, LT_SSM_HEADS, lt_ssm_a_value));
  LT_NAME("ssm_d");
  LT_S(lt_add_f32_values(w, f, s, n, 1, LT_SSM_HEADS, lt_ssm_d_value));
  LT_NAME("ssm_norm.weight");
  LT_S(lt_add(w, f, s, n, TOPOS_F32, LT_SSM_INNER / LT_SSM_GROUPS, LT_SSM_GROUPS, rng, 1));
  LT_NAME("ssm_out.weight");
  LT_S(lt_add(w, f, s, n, s->types[LT_O], LT_SSM_INNER, s->dim, rng, 0));
#undef LT_NAME
#undef LT_S
  return st;
}

int lt_ssm_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_ssm *m) {
  char n[64];
  float **dst[9] = {&m->in, &m->taps, &m->conv_b, &m->dt_b, &m->a, &m->d, &m->out, &m->norm, &m->x};
  const char *names[9] = {"ssm_in.weight", "ssm_conv1d.weight", "ssm_conv1d.bias", "ssm_dt.bias", "ssm_a",
                          "ssm_d", "ssm_out.weight", "ssm_norm.weight", "ssm_x.weight"};
  int ok = 1;
  for (int i = 0; i < 9; ++i) {
    if (i == (lt_mamba1(s) ? 7 : 8)) continue; /* Mamba-1: no group norm; Mamba-2: no ssm_x */
    snprintf(n, sizeof n, "blk.%d.%s", (int)l, names[i]);
    *dst[i] = lt_deq(g, n);
    ok &= *dst[i] != NULL;
  }
  if (lt_mamba1(s)) {
    snprintf(n, sizeof n, "blk.%d.ssm_dt.weight", (int)l);
    m->dt = lt_deq(g, n);
    ok &= m->dt != NULL;
  }
  const char *norms[3] = {"ssm_dt_norm", "ssm_b_norm", "ssm_c_norm"};
  for (int i = 0; i < 3; ++i) {
    m->dbc_norm[i] = NULL;
    if (!lt_jamba(s)) continue;
    snprintf(n, sizeof n, "blk.%d.%s.weight", (int)l, norms[i]);
    ok &= (m->dbc_norm[i] = lt_deq(g, n)) != NULL;
  }
  m->rows_in = lt_mamba1(s) ? 2 * LT_SSM_INNER : LT_SSM_INNER + LT_SSM_CD + LT_SSM_HEADS;
  m->rows_x = LT_SSM1_RANK + 2 * LT_SSM_STATE;
  m->rows = calloc((size_t)(N * LT_SSM_CD), sizeof *m->rows);
  m->state = calloc((size_t)(LT_SSM_INNER * LT_SSM_STATE), sizeof *m->state);
  m->scratch = malloc((size_t)(2 * LT_SSM_INNER + 2 * LT_SSM_CD + LT_SSM_HEADS) * sizeof *m->scratch);
  return ok && m->rows && m->state && m->scratch;
}

void lt_ssm_apply(lt_ssm *m, int64_t D, int64_t p, int history, const float *h, float *out) {
  enum { DI = LT_SSM_INNER, N = LT_SSM_STATE, H = LT_SSM_HEADS, G = LT_SSM_GROUPS, K = LT_SSM_CONV };
  enum { P = LT_SSM_P, CD = LT_SSM_CD };
  float *proj = m->scratch, *xbc = proj + DI + CD + H, *y = xbc + CD;
  lt_matvec(m->in, h, proj, m->rows_in, D);
  memcpy(m->rows + p * CD, proj + DI, CD * sizeof *xbc);
  if (!history) memset(m->state, 0, (size_t)(DI * N) * sizeof *m->state);
  for (int64_t ch = 0; ch < CD; ++ch) {
    double acc = m->conv_b[ch];
    for (int64_t j = history ? 0 : K - 1; j < K; ++j) {
      const int64_t at = p - (K - 1) + j;
      if (at >= 0) acc += (double)m->taps[ch * K + j] * m->rows[at * CD + ch];
    }
    xbc[ch] = (float)lt_silu(acc);
  }
  const float *x = xbc, *B = xbc + DI, *C = xbc + DI + G * N, *z = proj;
  for (int64_t hh = 0; hh < H; ++hh) {
    const double raw = (double)proj[DI + CD + hh] + m->dt_b[hh];
    const double dt = raw > 20 ? raw : log1p(exp(raw)), a = exp(dt * m->a[hh]);
    const int64_t g = hh / (H / G);
    for (int64_t pp = 0; pp < P; ++pp) {
      const int64_t c = hh * P + pp;
      double acc = 0, *st = m->state + c * N;
      for (int64_t n = 0; n < N; ++n) {
        st[n] = st[n] * a + (double)B[g * N + n] * x[c] * dt;
        acc += (double)C[g * N + n] * st[n];
      }
      y[c] = (float)((acc + (double)x[c] * m->d[hh]) * lt_silu(z[c]));
    }
  }
  for (int64_t g = 0; g < G; ++g) { /* RMS over each group of DI / G */
    const int64_t W = DI / G;
    double ss = 0;
    for (int64_t i = 0; i < W; ++i) ss += (double)y[g * W + i] * y[g * W + i];
    const double inv = 1.0 / sqrt(ss / (double)W + 1e-5);
    for (int64_t i = 0; i < W; ++i) y[g * W + i] = (float)(y[g * W + i] * inv * m->norm[g * W + i]);
  }
  lt_matvec(m->out, y, out, D, DI);
}

void lt_ssm1_apply(lt_ssm *m, int64_t D, int64_t p, int history, int rms, const float *h, float *out) {
  enum { DI = LT_SSM_INNER, N = LT_SSM_STATE, K = LT_SSM_CONV, R = LT_SSM1_RANK };
  float *xz = m->scratch, *x = xz + 2 * DI, *xdb = x + DI, *y = xdb + R + 2 * N;
  double dtv[DI];
  lt_matvec(m->in, h, xz, m->rows_in, D);
  memcpy(m->rows + p * DI, xz, DI * sizeof *x);
  if (!history) memset(m->state, 0, (size_t)(DI * N) * sizeof *m->state);
  for (int64_t ch = 0; ch < DI; ++ch) {
    double acc = m->conv_b[ch];
    for (int64_t j = history ? 0 : K - 1; j < K; ++j) {
      const int64_t at = p - (K - 1) + j;
      if (at >= 0) acc += (double)m->taps[ch * K + j] * m->rows[at * DI + ch];
    }
    x[ch] = (float)lt_silu(acc);
  }
  lt_matvec(m->x, x, xdb, m->rows_x, DI);
  for (int part = 0; (rms || m->dbc_norm[0]) && part < 3; ++part) { /* dt, B, C each RMS-normed */
    float *v = xdb + (part ? R + (part - 1) * N : 0);
    const int64_t w = part ? N : R;
    double ss = 0;
    for (int64_t i = 0; i < w; ++i) ss += (double)v[i] * v[i];
    for (int64_t i = 0; i < w; ++i)
      v[i] = (float)(v[i] / sqrt(ss / (double)w + 1e-5) * (m->dbc_norm[part] ? m->dbc_norm[part][i] : 1.0f));
  }
  for (int64_t ch = 0; ch < DI; ++ch) {
    double raw = m->dt_b[ch];
    for (int64_t k = 0; k < R; ++k) raw += (double)m->dt[ch * R + k] * xdb[k];
    dtv[ch] = raw > 20 ? raw : log1p(exp(raw));
  }
  const float *B = xdb + R, *C = B + N;
  for (int64_t ch = 0; ch < DI; ++ch) {
    double acc = 0, *st = m->state + ch * N;
    for (int64_t n = 0; n < N; ++n) {
      st[n] = st[n] * exp(dtv[ch] * m->a[ch * N + n]) + (double)B[n] * x[ch] * dtv[ch];
      acc += (double)C[n] * st[n];
    }
    y[ch] = (float)((acc + (double)x[ch] * m->d[ch]) * lt_silu(xz[DI + ch]));
  }
  lt_matvec(m->out, y, out, D, DI);
}
