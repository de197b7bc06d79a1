/* The bodies of conv_direct_template.h's kernels, included once per
 * variant: with TP_CD_FNAME and TP_CD_FR (output channels per block) for the
 * forward, or TP_CD_WNAME, TP_CD_WL (lanes along f) and TP_CD_RB (rows of dW
 * per block) for the weight gradient. No include guard, on purpose. */
#ifdef TP_CD_FNAME
/* Forward, images [b0, b1): each image padded (zeros around, rows of whole
 * blocks), then per output row oy, 16 columns ox (one accumulator each) and
 * FR output channels (the vector lanes, K's rows padded with zeros):
 *   out[p, f] = P[p,0]*K[0,f] + P[p,1]*K[1,f] + ...   (i ascending: the
 * product's order), each P broadcast from the padded image at a constant
 * offset; then + bias in the add's operand order. Columns past OW are
 * computed and not stored; each accumulator is one output row's FR values,
 * stored as they are. */
static int TP_CD_FNAME(const tp_cd_args *q, int64_t b0, int64_t b1) {
  typedef float V __attribute__((vector_size(4 * TP_CD_FR)));
  enum { R = 16, FR = TP_CD_FR };
  const int64_t C = q->C, KH = q->KH, KW = q->KW, F = q->F, K = C * KH * KW;
  const int64_t HP = q->OH + KH - 1, chunks = (q->OW + R - 1) / R, LW = chunks * R + KW - 1 + R;
  const int64_t fblocks = (F + FR - 1) / FR;
  float *xp = malloc((size_t)(C * HP * LW) * sizeof(float));
  float *kp = malloc((size_t)(fblocks * (K + 1) * FR) * sizeof(float)); /* + the bias row */
  if (!xp || !kp) {
    free(xp), free(kp);
    return -1;
  }
  for (int64_t fb = 0; fb < fblocks; ++fb) {
    for (int64_t i = 0; i < K; ++i)
      for (int l = 0; l < FR; ++l) {
        int64_t f = fb * FR + l;
        kp[(fb * (K + 1) + i) * FR + l] = f < F ? q->k[i * F + f] : 0.0f;
      }
    for (int l = 0; l < FR; ++l) {
      int64_t f = fb * FR + l;
      kp[(fb * (K + 1) + K) * FR + l] = q->bias && f < F ? q->bias[f * q->bias_stride] : 0.0f;
    }
  }
  for (int64_t b = b0; b < b1; ++b) {
    memset(xp, 0, (size_t)(C * HP * LW) * sizeof(float));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t yy = 0; yy < HP; ++yy) {
        int64_t y = yy - q->top;
        if (y < 0 || y >= q->H) continue;
        memcpy(xp + (c * HP + yy) * LW + q->left, q->x + ((b * C + c) * q->H + y) * q->W,
               (size_t)q->W * sizeof(float));
      }
    for (int64_t oy = 0; oy < q->OH; ++oy)
      for (int64_t ch = 0; ch < chunks; ++ch)
        for (int64_t fb = 0; fb < fblocks; ++fb) {
          const float *kb = kp + fb * (K + 1) * FR;
          V acc[R], kv;
          const float *row = xp + oy * LW + ch * R; /* i = 0: c 0, kh 0, kw 0 */
          memcpy(&kv, kb, sizeof kv);
          _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) acc[r] = (row[r] - (V){0}) * kv;
          int64_t i = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const float *line = xp + (c * HP + oy + kh) * LW + ch * R;
              for (int64_t kw = 0; kw < KW; ++kw, ++i) {
                if (i == 0) continue;
                const float *at = line + kw;
                memcpy(&kv, kb + i * FR, sizeof kv);
                _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) acc[r] += (at[r] - (V){0}) * kv;
              }
            }
          int64_t cols = q->OW - ch * R < R ? q->OW - ch * R : R;
          int64_t fs = F - fb * FR < FR ? F - fb * FR : FR;
          float *o = q->out + ((b * q->OH + oy) * q->OW + ch * R) * F + fb * FR;
          V bv;
          memcpy(&bv, kb + K * FR, sizeof bv);
          for (int64_t r = 0; r < cols; ++r) {
            V v = !q->bias ? acc[r] : q->product_first ? acc[r] + bv : bv + acc[r];
            if (fs == FR) {
              memcpy(o + r * F, &v, sizeof v);
            } else {
              float t[FR];
              memcpy(t, &v, sizeof t);
              memcpy(o + r * F, t, (size_t)fs * sizeof(float));
            }
          }
        }
  }
  free(xp), free(kp);
  return 0;
}
#endif

#ifdef TP_CD_WNAME
/* Weight gradient, rows [i0, i1) of dW [K, F] (F <= WL), blocks of RB rows
 * (clamped at the end): dW[i, f] = P[0,i]*G[0,f] + P[1,i]*G[1,f] + ... over
 * every p ascending (b, oy, ox) — the product's order — with the RB rows'
 * accumulators in registers along each output row (kept exactly in
 * between). Per (b, oy) the block's
 * patch rows are copied (ox along the row, +0 outside x) so the broadcasts
 * read fixed offsets. */
static int TP_CD_WNAME(const tp_cd_args *q, int64_t i0, int64_t i1) {
  typedef TP_CD_CAT(tp_cd_v16_, TP_CD_SUFFIX) M;       /* 16 lanes along ox (the patch rows) */
  typedef float V __attribute__((vector_size(4 * TP_CD_WL))); /* along f */
  enum { L = 16, RB = TP_CD_RB, WL = TP_CD_WL };
  const int64_t C = q->C, KH = q->KH, KW = q->KW, F = q->F, K = C * KH * KW;
  /* patch rows a fixed 32 wide (OW <= 32, patterns_conv_direct.c): the
   * broadcasts' offsets are constants */
  enum { PW = 32 };
  const int64_t chunks = (q->OW + L - 1) / L;
  const int64_t xtotal = q->B * C * q->H * q->W, gtotal = q->B * q->OH * q->OW * F;
  float *pb = malloc((size_t)(RB * PW) * sizeof(float));
  int32_t *keeps = malloc((size_t)(KW * PW) * sizeof(int32_t)); /* ox inside x and < OW, per kw */
  if (!pb || !keeps) {
    free(pb), free(keeps);
    return -1;
  }
  (void)K;
  for (int64_t kw = 0; kw < KW; ++kw)
    for (int64_t ox = 0; ox < PW; ++ox) {
      int64_t xs = ox + kw - q->left;
      keeps[kw * PW + ox] = xs >= 0 && xs < q->W && ox < q->OW ? -1 : 0;
    }
  for (int64_t r0 = i0; r0 < i1; r0 += RB) {
    int64_t rows = i1 - r0 < RB ? i1 - r0 : RB;
    int64_t ci[RB], khi[RB], kwi[RB];
    for (int r = 0; r < RB; ++r) {
      int64_t i = r0 + (r < rows ? r : rows - 1);
      ci[r] = i / (KH * KW), khi[r] = i / KW % KH, kwi[r] = i % KW;
    }
    V accm[RB]; /* the running sums between (b, oy) rows (stored exactly) */
    int first = 1;
    for (int64_t b = 0; b < q->B; ++b)
      for (int64_t oy = 0; oy < q->OH; ++oy) {
        /* the block's patch rows for this (b, oy): ox = 0 .. OW-1 */
        for (int r = 0; r < RB; ++r) {
          float *dst = pb + r * PW;
          int64_t y = oy + khi[r] - q->top;
          if (y < 0 || y >= q->H) {
            for (int64_t l = 0; l < PW; ++l) dst[l] = 0.0f;
            continue;
          }
          int64_t at = ((b * C + ci[r]) * q->H + y) * q->W + kwi[r] - q->left;
          for (int64_t ch = 0; ch < chunks; ++ch) {
            int64_t from = at + ch * L;
            M v;
            if (from >= 0 && from + L <= xtotal) {
              memcpy(&v, q->x + from, sizeof v);
            } else {
              for (int l = 0; l < L; ++l) v[l] = from + l >= 0 && from + l < xtotal ? q->x[from + l] : 0.0f;
            }
            TP_CD_CAT(tp_cd_m16_, TP_CD_SUFFIX) keep, bits;
            memcpy(&keep, keeps + kwi[r] * PW + ch * L, sizeof keep);
            memcpy(&bits, &v, sizeof bits);
            bits &= keep;
            memcpy(dst + ch * L, &bits, sizeof bits);
          }
        }
        int64_t p0 = (b * q->OH + oy) * q->OW;
        V acc[RB], gv = {0};
        int64_t ox = 0;
        if (first) { /* p = 0: the first product seeds every sum */
          if (WL <= gtotal) {
            memcpy(&gv, q->g, sizeof gv);
          } else {
            for (int l = 0; l < WL; ++l) gv[l] = l < F ? q->g[l] : 0.0f;
          }
          _Pragma("GCC unroll 32") for (int r = 0; r < RB; ++r) acc[r] = (pb[r * PW] - (V){0}) * gv;
          ox = 1, first = 0;
        } else {
          memcpy(acc, accm, sizeof acc);
        }
        for (; ox < q->OW; ++ox) {
          int64_t from = (p0 + ox) * F;
          if (from + WL <= gtotal) {
            memcpy(&gv, q->g + from, sizeof gv);
          } else {
            for (int l = 0; l < WL; ++l) gv[l] = l < F ? q->g[from + l] : 0.0f;
          }
          _Pragma("GCC unroll 32") for (int r = 0; r < RB; ++r) acc[r] += (pb[r * PW + ox] - (V){0}) * gv;
        }
        memcpy(accm, acc, sizeof acc);
      }
    for (int64_t r = 0; r < rows; ++r) {
      float t[WL];
      memcpy(t, &accm[r], sizeof t);
      memcpy(q->out + (r0 + r) * F, t, (size_t)F * sizeof(float));
    }
  }
  free(pb), free(keeps);
  return 0;
}
#endif
