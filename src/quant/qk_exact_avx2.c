/* The reference product of float weights (f32, f16, bf16) with f32
 * activations on AVX2, with the reference's bits (qmatmul.c's
 * qk_ref_float_dot and dot_ref.c's f32 dot): per output, each product
 * w * a formed in f32 from the exactly widened weight, the products summed
 * in f64 in ascending k from +0, rounded to f32 once, then the bias added
 * in f32. That order is one long chain per output, so the lanes here are
 * outputs, never k: 16 weight rows side by side, each lane its row's own
 * chain in the reference's order. A panel of 16 rows is widened and
 * transposed once (wt[kk][16]); every activation row then streams it: per
 * kk a broadcast of a[kk], two f32 products of 8 lanes, their halves
 * widened to f64 and added, four independent chains.
 *
 * The Exact posture runs every product of float weights on this path (the
 * tests' f32 files, f16 / bf16 models in Exact): the scalar chain costs a
 * dependent f64 add per element (~4 cycles) where this costs ~1/4 cycle.
 * Call only after tp_qk_cpu_avx2(). */
#include <immintrin.h>
#include <string.h>

#include "base/temp.h"
#include "quant/qk_internal.h"

#define QE_ROWS TP_QK_EXACT_ROWS

/* 8 widened elements of a weight row from element kk. */
static inline __m256 qe_load8(const uint8_t *row, topos_dtype wtype, int64_t kk) {
  if (wtype == TOPOS_F32) return _mm256_loadu_ps((const float *)(const void *)(row + 4 * kk));
  const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * kk));
  if (wtype == TOPOS_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16: the high half */
}

/* Transposes 8 vectors of 8 floats in place (r[i][e] -> r[e][i]). */
static inline void qe_transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* wt[kk * 16 + r] = widened w[row r][kk]; rows past `rows` repeat the last
 * (their outputs are dropped). */
static void qe_panel(const tp_qk_task *t, int64_t j, int rows, float *wt) {
  const uint8_t *src[QE_ROWS];
  for (int r = 0; r < QE_ROWS; ++r)
    src[r] = (const uint8_t *)t->w + (size_t)(j + (r < rows ? r : rows - 1)) * t->row_bytes;
  const int64_t k = t->k, k8 = k - k % 8;
  for (int64_t kk = 0; kk < k8; kk += 8)
    for (int half = 0; half < 2; ++half) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = qe_load8(src[8 * half + i], t->wtype, kk);
      qe_transpose8(r);
      for (int e = 0; e < 8; ++e) _mm256_storeu_ps(wt + (kk + e) * QE_ROWS + 8 * half, r[e]);
    }
  for (int64_t kk = k8; kk < k; ++kk)
    for (int r = 0; r < QE_ROWS; ++r) wt[kk * QE_ROWS + r] = tp_qk_float_at(src[r], t->wtype, kk);
}

int tp_qk_exact_float_avx2(const tp_qk_task *t, int64_t p0, int64_t p1) {
  const int64_t k = t->k;
  float *wt = tp_temp_alloc((size_t)k * QE_ROWS * sizeof(float));
  if (!wt) return 0;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * QE_ROWS;
    const int rows = (int)(t->n - j < QE_ROWS ? t->n - j : QE_ROWS);
    qe_panel(t, j, rows, wt);
    for (int64_t i = 0; i < t->m; ++i) {
      const float *a = t->a + i * k;
      __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const __m256 av = _mm256_broadcast_ss(a + kk);
        const __m256 lo = _mm256_mul_ps(_mm256_loadu_ps(wt + kk * QE_ROWS), av);
        const __m256 hi = _mm256_mul_ps(_mm256_loadu_ps(wt + kk * QE_ROWS + 8), av);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
      }
      float v[QE_ROWS]; /* each f64 sum rounded once, as (float)sum */
      _mm_storeu_ps(v, _mm256_cvtpd_ps(s0));
      _mm_storeu_ps(v + 4, _mm256_cvtpd_ps(s1));
      _mm_storeu_ps(v + 8, _mm256_cvtpd_ps(s2));
      _mm_storeu_ps(v + 12, _mm256_cvtpd_ps(s3));
      float *out = t->out + i * t->n + j;
      for (int r = 0; r < rows; ++r) out[r] = t->bias ? v[r] + t->bias[j + r] : v[r];
    }
  }
  tp_temp_free(wt);
  return 1;
}
