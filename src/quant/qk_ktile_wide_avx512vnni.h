/* The wide K-format tile of the AVX-512 VNNI engine: 2 weight rows x 8
 * activation rows (QK_KW), for prompt-sized products of the K types without
 * a bias (Q2_K; Q4_K and Q5_K take qk_ksum_avx512vnni.h's kernels unless
 * their rows are too long for its int32 offsets). Included by the engine body (qk_engine_body.h)
 * after the K panel type, only for this ISA.
 *
 * Same results as ktile, bit for bit: every output's 16 int32 lane sums per
 * super-block are the same integers (exact; int32 wraps alike in any
 * order), and the float operations on them are ktile's, in ktile's order.
 *
 * Why it is faster. On Zen 4 the multiply-type vector ops (vpdpbusd,
 * vpdpwssd, vpmaddwd, FMA) share one 512-bit pipe pair, and every 512-bit
 * op takes two of four 256-bit pipe slots. ktile spends two multiply-type
 * ops per 64 multiply-adds (vpdpbusd, then vpdpwssd to scale the lane sums
 * by the sub-block scales). Here the lane sums of two consecutive
 * 64-element steps, which fit in 15 bits (see the unsigned route below), are
 * packed into the two halves of each 32-bit lane and one vpdpwssd scales
 * both with a paired scale vector (sc2: step a's scale in the low half, step
 * b's in the high half): 3 multiply-type ops per 128 multiply-adds instead
 * of 4. The 2 x 8 tile keeps 16 accumulators, both rows' weights and
 * scales and one activation row in registers. */
#ifndef TP_QUANT_QK_KTILE_WIDE_AVX512VNNI_H
#define TP_QUANT_QK_KTILE_WIDE_AVX512VNNI_H

#define QK_KW 8 /* activation rows of the wide tile */
#define QK_KWR 2 /* weight rows of the wide tile (a half panel) */

/* Paired scales of one row: per super-block two vectors' worth, 4 int32 per
 * 128 elements: entry 4p + i = sc[8p + i] | sc[8p + 4 + i] << 16. */
static void qk_kw_pair_scales(const int32_t *sc, int64_t k, int32_t *sc2) {
  for (int64_t p = 0; p < k / 128; ++p)
    for (int i = 0; i < 4; ++i)
      sc2[4 * p + i] = (int32_t)(((uint32_t)sc[8 * p + i] & 0xFFFFu) | ((uint32_t)sc[8 * p + 4 + i] << 16));
}

/* Register-only forms (no memory operand): each activation vector is
 * loaded once and meets both weight rows. On Zen 4 one 512-bit load issues
 * per cycle, as many as multiply-type ops, so loads are budgeted too. */
static inline __m512i qk_kw_dpbusd0(__m512i u, __m512i s) {
  __m512i acc;
  __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(acc) : "v"(u), "v"(s));
  return acc;
}
static inline __m512i qk_kw_dpwssd(__m512i acc, __m512i a, __m512i b) {
  __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

/* Unsigned route (types without a bias: Q2_K, Q4_K, Q5_K; q <= 31). The
 * activations enter as au = qa + 128 (unsigned bytes) and the weights as
 * the signed operand, so each lane sum t' = sum q * au = t + 128 * sum q is
 * >= 0 and < 2^15. Then the pair is formed by accumulation: t'_b, shifted
 * up 16 bits, is the accumulator of t'_a's vpdpbusd (no borrow, since t'_a
 * >= 0), saving the ternary op and a zeroing. The 128 * sum q part depends
 * on the weights only: per row, super-block and lane,
 *     corr = sum over the 4 steps of sc * 128 * (sum of the lane's 4 q),
 * subtracted once per super-block, which gives ktile's integers exactly. */
static void qk_kw_corr(const uint8_t *q, const int32_t *sc, int64_t k, int32_t *corr) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t sb = 0; sb < k / 256; ++sb) {
    __m512i acc = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      /* the lane's 4 q summed (q <= 31 is a valid signed byte), times its
       * scale: the low 16 bits of sc as vpmaddwd reads them, as ktile does */
      const __m512i t = qk_dpbusd0(ones, _mm512_loadu_si512(q + 256 * sb + 64 * j));
      acc = _mm512_add_epi32(acc, _mm512_madd_epi16(t, QK_EXPAND4_I(sc + 16 * sb + 4 * j)));
    }
    _mm512_storeu_si512(corr + 16 * sb, _mm512_slli_epi32(acc, 7));
  }
}

/* Rows QK_KW_AU_STRIDE(kpad) bytes apart: one cache line more than kpad,
 * so a tile's 8 rows do not all fall into the same L1 sets when kpad is a
 * multiple of 4 KiB / 8 (k = 2048: 4-way aliasing otherwise). */
#define QK_KW_AU_STRIDE(kpad) ((kpad) + 64)
static uint8_t *qk_kw_unsigned_act(const qk_act *act) {
  const int64_t kpad = act->kpad, stride = QK_KW_AU_STRIDE(kpad);
  uint8_t *au = tp_temp_alloc((size_t)(act->m * stride));
  if (!au) return NULL;
  for (int64_t r = 0; r < act->m; ++r)
    for (int64_t i = 0; i < kpad; ++i) au[r * stride + i] = (uint8_t)((uint8_t)act->q[r * kpad + i] ^ 0x80u);
  return au;
}

/* Rows r0, r0 + 1 of the panel x activation rows c0 .. c0 + 7, into res[r *
 * QK_KW + c]; au: the unsigned activations. */
QK_INLINE void QK_FN(kwtile)(const QK_FN(kpanel) *p, int r0, const qk_act *act, const uint8_t *au, int64_t c0,
                             float *res) {
  const int64_t kpad = act->kpad, nsb = kpad / 256, dstride = kpad / 256 + 1, astride = QK_KW_AU_STRIDE(kpad);
  const int64_t ng = kpad / 16;
  float accm[QK_KWR * QK_KW * 16] __attribute__((aligned(64)));
  memset(accm, 0, sizeof accm);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isum[QK_KWR][QK_KW];
#pragma GCC unroll 8
    for (int r = 0; r < QK_KWR; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < QK_KW; ++c) isum[r][c] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const int64_t e = 256 * sb + 128 * h;
      __m512i qa[QK_KWR], qb[QK_KWR], sv[QK_KWR];
#pragma GCC unroll 2
      for (int r = 0; r < QK_KWR; ++r) {
        qa[r] = _mm512_loadu_si512(p->q[r0 + r] + e);
        qb[r] = _mm512_loadu_si512(p->q[r0 + r] + e + 64);
        sv[r] = QK_EXPAND4_I(p->sc2[r0 + r] + e / 32);
      }
#pragma GCC unroll 8
      for (int c = 0; c < QK_KW; ++c) {
        __m512i aa = _mm512_loadu_si512(au + (c0 + c) * astride + e);
        __m512i ab = _mm512_loadu_si512(au + (c0 + c) * astride + e + 64);
        __asm__("" : "+v"(aa), "+v"(ab)); /* one load each, for both rows */
#pragma GCC unroll 2
        for (int r = 0; r < QK_KWR; ++r) {
          /* t'_b in the high half, then t'_a accumulated below it */
          __m512i pair = _mm512_slli_epi32(qk_kw_dpbusd0(ab, qb[r]), 16);
          __asm__("vpdpbusd %2, %1, %0" : "+v"(pair) : "v"(aa), "v"(qa[r]));
          isum[r][c] = qk_kw_dpwssd(isum[r][c], pair, sv[r]);
        }
      }
    }
#pragma GCC unroll 2
    for (int r = 0; r < QK_KWR; ++r) {
      const __m512i corr = _mm512_loadu_si512(p->corr[r0 + r] + 16 * sb);
#pragma GCC unroll 8
      for (int c = 0; c < QK_KW; ++c) isum[r][c] = _mm512_sub_epi32(isum[r][c], corr);
    }
    /* ktile's float operations on ktile's integers */
    __m512 mf[QK_KWR];
#pragma GCC unroll 2
    for (int r = 0; r < QK_KWR; ++r) mf[r] = _mm512_loadu_ps(p->mf[r0 + r] + 16 * sb);
    __asm__("" : "+v"(mf[0]), "+v"(mf[1]));
#pragma GCC unroll 8
    for (int c = 0; c < QK_KW; ++c) {
      const int64_t row = c0 + c;
      const float da = act->dsb[row * dstride + sb];
      const __m512 bf = _mm512_loadu_ps(act->bf + row * ng + 16 * sb);
#pragma GCC unroll 2
      for (int r = 0; r < QK_KWR; ++r) {
        float *am = accm + (r * QK_KW + c) * 16;
        __m512 acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]), _mm512_set1_ps(p->d[r0 + r][sb] * da),
                                     _mm512_load_ps(am));
        acc = _mm512_fnmadd_ps(mf[r], bf, acc);
        _mm512_store_ps(am, acc);
      }
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < QK_KWR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < QK_KW; ++c) res[(r0 + r) * QK_KW + c] = qk_reduce_avx512(_mm512_load_ps(accm + (r * QK_KW + c) * 16));
}

/* A whole panel (both halves) x 8 activation rows: Q2_K, Q4_K, Q5_K. */
static void QK_FN(kt_min_w8)(const QK_FN(kpanel) * p, const qk_act *a, const uint8_t *au, int64_t c0, float *r) {
  QK_FN(kwtile)(p, 0, a, au, c0, r);
  QK_FN(kwtile)(p, 2, a, au, c0, r);
}

#endif
