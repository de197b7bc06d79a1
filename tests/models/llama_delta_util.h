/* Gated-DeltaNet test files and their plain forward (included by
 * llama_util.h): qwen3next / qwen35 blocks marked 'D' in lt_spec.conv_blocks
 * are delta-rule mixers (attention.recurrent_layers where the spec says
 * delta_array, else full_attention_interval = the pattern's length). The
 * plain forward keeps every position's convolved rows, sums the taps in
 * double and runs each value head's delta rule on a double state. */
#ifndef TESTS_MODELS_LLAMA_DELTA_UTIL_H
#define TESTS_MODELS_LLAMA_DELTA_UTIL_H

/* ssm.conv_kernel, state_size (each head's width), group_count (key heads), time_step_rank (value heads) */
enum { LT_DN_K = 4, LT_DN_N = 32, LT_DN_G = 2, LT_DN_H = 4 };
#define LT_DN_R (LT_DN_H / LT_DN_G)
#define LT_DN_KD (LT_DN_G * LT_DN_N)
#define LT_DN_VD (LT_DN_H * LT_DN_N)
#define LT_DN_CD (2 * LT_DN_KD + LT_DN_VD)

/* qwen35, qwen35moe: value head h reads key head h % groups (the plain
 * forward without "tiled": h / (heads / groups), qwen3next's) */
static inline int lt_delta_tiled(const lt_spec *s) {
  const int tiled = !lt_arch_is(s, "qwen3next");
  return lt_without(s, "tiled") ? !tiled : tiled;
}

topos_status lt_write_delta_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);

/* A = -exp(A_log) per value head: decays exp(softplus(.) A) of ~0.5-0.8 */
static inline double lt_delta_a_value(int64_t h) { return -(0.3 + 0.2 * (double)h); }

/* block l's mixer: attn_qkv {dim, CD} in q's type and attn_gate {dim, VD}
 * in v's (delta_legacy: one ssm_in {dim, 2 KD + 2 VD}, each key head's q,
 * k, values and z), the convolution {taps, CD} f32, ssm_ba {dim, 2 heads}
 * (qwen3next) or ssm_beta and ssm_alpha {dim, heads} in k's type, dt's
 * bias, A, the norm {state}, ssm_out {VD, dim} in o's type */
topos_status lt_write_delta(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                            topos_rng *rng);

/* A mixer's weights, dequantized; the convolution's input row of every
 * position so far (rows [N, CD]) and each value head's state S[i][j] in
 * double [heads][state][state]. */
typedef struct lt_dnet {
  float *in, *z, *b, *a, *taps, *dt_b, *A, *norm, *out, *rows, *scratch;
  float *k, *v, *fa, *fb, *ga, *gb; /* kimi-linear: k and v, the decays' and the gate's low-rank pairs */
  double *state;
  int64_t rows_in, rows_z, rows_b, rows_a; /* (not constants: gcc 12's loop analysis of lt_matvec misfires) */
  int64_t heads, rows_d, rows_r;           /* kimi-linear: H, D = H hd, hd */
} lt_dnet;

int lt_kda_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m);

int lt_delta_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m);

static inline void lt_delta_free(lt_dnet *m) {
  float *all[17] = {m->in, m->z, m->b,  m->a, m->taps, m->dt_b, m->A,  m->norm, m->out,
                    m->rows, m->scratch, m->k, m->v, m->fa,   m->fb,   m->ga, m->gb};
  for (int i = 0; i < 17; ++i) free(all[i]);
  free(m->state);
}

/* The mixers' shared steps, in double. x[ch] = SiLU(sum over taps j of
 * taps[ch K + j] rows[p - K + 1 + j][ch]) (rows before 0 are zeros;
 * `history` 0: the current row's tap alone) */
void lt_dn_conv(const float *rows, const float *taps, int64_t CD, int64_t p, int history, float *x);

/* the q heads then the k heads of x (n of each, N wide) L2-normed, q times 1 / sqrt(N) */
void lt_dn_l2norm(float *x, int64_t n, int64_t N);

/* One head's rule on S [N][N]: row i times decay[i]; d = b (v - S^T k); S
 * += k d^T; y = S^T q, RMS-normed (eps 1e-5) times norm: ys[N] */
void lt_dn_rule(double *S, int64_t N, const double *decay, double b, const float *q, const float *k,
                const float *v, const float *norm, double *ys);

/* out[D] = the mixer at position p for the block's normed input h
 * (`history` 0: the state and the convolution forget the earlier positions) */
void lt_delta_apply(lt_dnet *m, const lt_spec *s, int64_t D, int64_t p, int history, const float *h,
                    float *out);


/* ---- kimi-linear: Kimi Delta Attention ('K' blocks, head_count_kv 0; the
 * others deepseek2's latent attention, unrotated) */

enum { LT_KDA_HD = 32 }; /* kda.head_dim; ssm.conv_kernel is LT_DN_K */

topos_status lt_write_kda_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);

/* an f32 tensor of the given extents (Kimi's converter writes {taps, 1,
 * width, 1} convolutions and a {1, heads, 1, 1} A), lt_fill_unit's values
 * times scale plus offset */
topos_status lt_add_f32_dims(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                             int n_dims, const int64_t *ne, double scale, double offset,
                             topos_rng *rng);

/* block l's mixer: attn_q, attn_k, attn_v {dim, D} in the q, k, v types;
 * their convolutions {taps, 1, D, 1}; ssm_f_a, ssm_g_a {dim, hd} and
 * ssm_f_b, ssm_g_b {hd, D} f32; ssm_beta {dim, H}; A {1, H, 1, 1} (-(0.3
 * to 0.9)); ssm_dt.bias {D}; ssm_norm {hd}; attn_output {D, dim} in o's type */
topos_status lt_write_kda(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                          topos_rng *rng);

int lt_kda_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_dnet *m);

/* out[D] = the KDA mixer at position p for the block's normed input h */
void lt_kda_apply(lt_dnet *m, int64_t dim, int64_t p, int history, const float *h, float *out);

#endif
