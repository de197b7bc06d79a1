/* Mamba-2 test files and their plain forward (included by llama_util.h):
 * granitehybrid's blocks marked 'M' in lt_spec.conv_blocks have
 * head_count_kv 0 in the per-block array and ssm_* tensors instead of
 * attention. The plain forward keeps every position's xBC row, sums the
 * convolution's taps in double and runs the scan's recurrence in double. */
#ifndef TESTS_MODELS_LLAMA_SSM_UTIL_H
#define TESTS_MODELS_LLAMA_SSM_UTIL_H

/* ssm.conv_kernel, inner_size, state_size, time_step_rank (heads), group_count */
enum { LT_SSM_CONV = 4, LT_SSM_INNER = 128, LT_SSM_STATE = 16, LT_SSM_HEADS = 8, LT_SSM_GROUPS = 2 };
#define LT_SSM_P (LT_SSM_INNER / LT_SSM_HEADS)
#define LT_SSM_CD (LT_SSM_INNER + 2 * LT_SSM_GROUPS * LT_SSM_STATE)
#define LT_SSM1_RANK 8 /* mamba: dt's rank */

/* block l is a Mamba-2 mixer (lt_ffn_block: llama_archs.h) */
static inline int lt_ssm_block(const lt_spec *s, int64_t l) {
  return s->conv_blocks && s->conv_blocks[l % (int64_t)strlen(s->conv_blocks)] == 'M';
}


/* ssm.* and head_count_kv as one entry per block (0: a Mamba-2 mixer;
 * nemotron_h: or a feed-forward, feed_forward_length one entry per block
 * too, 0 but for those) */
topos_status lt_write_ssm_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);

/* an f32 tensor of GGUF extents {ne0, ne1} holding v(i) */
topos_status lt_add_f32_values(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                               int64_t ne0, int64_t ne1, double (*v)(int64_t i));

/* A = -exp(A_log) as the converter writes it: slow decays (the state
 * remembers several tokens); D, the skip's weight per head */
static inline double lt_ssm_a_value(int64_t h) { return -(0.05 + 0.07 * (double)h); }
static inline double lt_ssm_d_value(int64_t h) { return 0.5 + 0.125 * (double)h; }
/* Mamba-1's A [inner][state] (i = channel * state + n): decays from fast to slow */
static inline double lt_ssm1_a_value(int64_t i) { return -(0.05 + 0.9 * (double)(i % LT_SSM_STATE) / LT_SSM_STATE); }

/* block l's mixer: ssm_in {dim, 2 inner + 2 groups state + heads} in q's
 * type, the convolution {taps, CD} f32 and its bias, dt's bias, A, D, the
 * group norm {inner / groups, groups}, ssm_out {inner, dim} in o's type */
topos_status lt_write_mamba2(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                             topos_rng *rng);

/* A mixer's weights, dequantized; the xBC row of every position so far
 * (rows [N, CD]) and the scan's state in double [heads][P][state]. */
typedef struct lt_ssm {
  float *in, *taps, *conv_b, *dt_b, *a, *d, *norm, *out, *rows;
  float *x, *dt; /* Mamba-1: ssm_x, ssm_dt */
  float *dbc_norm[3]; /* jamba: the RMS norms' weights of dt, B, C */
  int64_t rows_in, rows_x; /* ssm_in's and ssm_x's rows (not constants: gcc 12's loop analysis of lt_matvec
                            * misfires on them) */
  float *scratch; /* the projection, the convolved xBC and y */
  double *state;
} lt_ssm;

int lt_ssm_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_ssm *m);

static inline void lt_ssm_free(lt_ssm *m) {
  float *all[15] = {m->in,      m->taps, m->conv_b, m->dt_b,        m->a,           m->d,          m->norm, m->out,
                    m->rows,    m->scratch, m->x,   m->dt,          m->dbc_norm[0], m->dbc_norm[1], m->dbc_norm[2]};
  for (int i = 0; i < 15; ++i) free(all[i]);
  free(m->state);
}

static inline double lt_silu(double v) { return v / (1.0 + exp(-v)); }

/* out[D] = the mixer at position p for the block's normed input h
 * (`history` 0: the state and the convolution forget the earlier
 * positions, a lt_check_variant `without`) */
void lt_ssm_apply(lt_ssm *m, int64_t D, int64_t p, int history, const float *h, float *out);


/* Mamba-1's mixer at position p (lt_ssm_apply's counterpart): x, z halves
 * of in h; x convolved (+ bias), SiLU; dt, B, C from ssm_x x (RMS-normed
 * without weights where `rms`); dt = softplus(ssm_dt dt + bias); per
 * channel c and entry n: s = s exp(dt[c] A[c][n]) + B[n] x[c] dt[c], y =
 * sum C[n] s; (y + x D) SiLU(z) through out. */
void lt_ssm1_apply(lt_ssm *m, int64_t D, int64_t p, int history, int rms, const float *h, float *out);

#endif
