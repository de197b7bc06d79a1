/* A faster legacy tile of the AVX-512 VNNI engine for the types without a
 * min (Q8_0, Q4_0, Q5_0): QK_R weight rows x QK_C activation rows, for
 * prompt-sized products. Included by the engine body (qk_engine_body.h)
 * after the legacy panel type, only for this ISA.
 *
 * Same results as qtile, bit for bit. qtile, per 64-element step and
 * output, forms the exact lane sums t (one vpdpbusd), then
 *     acc = fma(float(t), s * d, acc)
 * lane by lane, s * d being the product of the weight block's and the
 * activation block's scales (lanes 0..7 meet the step's first 32-block,
 * lanes 8..15 the second), and reduces acc at the end. On Zen 4 the
 * vpdpbusd, the multiply and the FMA all take the one multiply-type pipe
 * pair. Here the products s * d are formed 16 blocks per multiply into a
 * table P (the same IEEE products), and each step takes its two from P
 * with a permute, which runs on other pipes: 2 multiply-type ops per step
 * and output instead of 3. The integer and float operations on every lane
 * are qtile's, in qtile's order. */
#ifndef TP_QUANT_QK_QTILE_WIDE_AVX512VNNI_H
#define TP_QUANT_QK_QTILE_WIDE_AVX512VNNI_H

/* Per activation row, the scale of each 32-block, compact (act->d holds it
 * once per 4-element lane), zero-padded to whole chunks of 16 blocks:
 * db[row * stride + b], stride = the padded block count. */
static float *qk_qw_block_scales(const qk_act *act, int64_t *stride) {
  const int64_t nb = act->kpad / 32, st = (nb + 15) / 16 * 16, lanes = act->kpad / 4;
  float *db = aligned_alloc(64, (size_t)(act->m * st) * sizeof(float));
  if (!db) return NULL;
  for (int64_t r = 0; r < act->m; ++r) {
    for (int64_t b = 0; b < nb; ++b) db[r * st + b] = act->d[r * lanes + 8 * b];
    for (int64_t b = nb; b < st; ++b) db[r * st + b] = 0.0f;
  }
  *stride = st;
  return db;
}

/* The panel's rows x activation rows c0 .. c0 + QK_C - 1; the lane sums
 * start from act->init, as qtile's. pt: scratch for P, QK_R * QK_C * st
 * floats (st: db's stride), 64-byte aligned. Not inlined into the driver,
 * so its loops keep the registers. */
__attribute__((noinline)) static void QK_FN(qwtile)(const QK_FN(qpanel) *p, const qk_act *act, const float *db,
                                                    int64_t st, float *restrict pt, int64_t c0, float *res) {
  const int64_t kpad = act->kpad, lanes = kpad / 4, nb = kpad / 32;
  /* P[r][c][b] = s[r][b] * d[c][b]; s is stored per 16 elements, twice per block */
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int64_t left = 2 * (nb - b0); /* s entries left in the row */
    const __mmask16 m0 = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
    const __mmask16 m1 = left >= 32 ? 0xFFFF : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
    for (int r = 0; r < QK_R; ++r) {
      const __m512 s = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, p->s[r] + 2 * b0), even,
                                              _mm512_maskz_loadu_ps(m1, p->s[r] + 2 * b0 + 16));
      for (int c = 0; c < QK_C; ++c)
        _mm512_store_ps(pt + (r * QK_C + c) * st + b0, _mm512_mul_ps(s, _mm512_load_ps(db + (c0 + c) * st + b0)));
    }
  }
  /* step e meets blocks e / 32 (lanes 0..7) and e / 32 + 1 (lanes 8..15) */
  const __m512i pair0 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc[QK_R][QK_C];
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < QK_C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t e = 0; e < kpad; e += 64) {
    const int64_t b = e / 32, b0 = b & ~(int64_t)15;
    const __m512i idx = _mm512_add_epi32(pair0, _mm512_set1_epi32((int)(b - b0)));
    __m512i qv[QK_R];
#pragma GCC unroll 4
    for (int r = 0; r < QK_R; ++r) qv[r] = _mm512_loadu_si512(p->q[r] + e);
#pragma GCC unroll 4
    for (int c = 0; c < QK_C; ++c) {
      const int64_t row = c0 + c;
      const __m512i av = _mm512_loadu_si512(act->q + row * kpad + e);
      const __m512i init = _mm512_loadu_si512(act->init + row * lanes + e / 4);
#pragma GCC unroll 4
      for (int r = 0; r < QK_R; ++r) {
        const __m512 sd = _mm512_permutexvar_ps(idx, _mm512_load_ps(pt + (r * QK_C + c) * st + b0));
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(qk_dpbusd(init, qv[r], av)), sd, acc[r][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < QK_R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < QK_C; ++c) res[r * QK_C + c] = qk_reduce_avx512(acc[r][c]);
}

#endif
