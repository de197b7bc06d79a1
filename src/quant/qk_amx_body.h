/* AMX-INT8 route of the fast engine for m >= QK_AMX_MIN_M (included by
 * qk_avx512vnni.c after the engine body; AMX instructions as inline asm, so
 * no extra compiler flags). Only called when the CPU and the OS grant AMX
 * tile data (base/cpu.c requests it) and TOPOS_DISABLE_ISA leaves amx on.
 *
 * One tdpbusd (tdpbssd for types with a bias) multiplies 16 weight rows (A:
 * decoded q, or q - bias as signed bytes, 16 rows x CK bytes straight from
 * the panel buffer) by 16 activation rows (B: the
 * quantized activations repacked once per product into the 4-byte
 * interleaved layout tiles want), CK = 32 elements (16 for the K formats
 * with 16-element scales), giving every (weight row, activation row) pair's
 * exact integer sum of one chunk. The float epilogue per chunk, with lanes
 * over the activation rows, is
 *     acc += float(C) * (s * da) - mn * g
 * (C the exact sum of (q - bias) * qa; g: da * S with S the chunk's
 * activation sum, or Q8_1's s): the same
 * operations for a pair whatever tile holds it, so results do not depend on
 * the thread count; they do differ in rounding from the VNNI route.
 *
 * Where the time goes (Sapphire Rapids, Q8_0 64 x 2048 x 2048, ~26 ns per
 * chunk and group): the tile unit's share (loads of A and B, the product,
 * the store of C) is ~11-12 ns per chunk in isolation, the epilogue's 48
 * vector operations the rest. While tile instructions are in flight the
 * core runs 512-bit vector operations at half their usual rate (48
 * vcvtdq2ps alone 7.4 ns, beside one tilezero 14.8 ns; 256-bit operations
 * keep their rate but need twice as many), and the two overlap little. So
 * the epilogue's operation count is the cost: three per row and chunk
 * (cvt, the scale product, the fma; the scale product cannot be hoisted,
 * both scales change per chunk). Measured and not kept: the chunks in
 * blocks of 2-16 with the epilogue of a whole block after its products
 * (no gain), two groups sharing one A load (-10 % of the tile unit's time
 * in isolation, but the second group's sums would live in memory), the
 * output written by a register transpose and 16-lane stores instead of
 * scalar ones (no gain). */
/* From m = 4 the tiles beat the VNNI route for every type (below it the
 * matrix-vector kernels win). Products 2048 x 2048, 1 thread, Sapphire
 * Rapids, the route alternating in one process (medians of 5), VNNI ->
 * AMX in us: Q8_0 m = 4 891 -> 371, m = 8 890 -> 373, m = 16 971 -> 407;
 * Q4_0 971 -> 452 (m = 4); Q4_K 931 -> 585 (4), 1033 -> 640 (16); Q6_K
 * 1010 -> 849 (4), 1155 -> 932 (16). At m = 1..3 the matrix-vector kernels
 * take 98-418 us, the tiles 344-861. (Before this session's tile changes
 * the crossover was m = 8, 16 for Q4_K / Q5_K and 24 for Q2_K, Q3_K, Q6_K.)
 * Short TinyLlama prompts, 1 thread, builds alternating (medians of 7):
 * Q4_K_M 6 tokens 21.1 -> 30.9 t/s, 12 tokens 41.7 -> 61.9; Q8_0 6 tokens
 * 25.4 -> 44.9. */
#define QK_AMX_MIN_M 4

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} qk_amx_config;

/* tmm0, tmm1: C of tile sets 0 and 1 (16 x 64 bytes; a chunk's products
 * go to one set while the other's are stored); tmm4, tmm6: A (16 weight
 * rows x ck) of sets 0 and 1; tmm5, tmm7: B (ck/4 x 64). */
static void qk_amx_configure(int ck) {
  qk_amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 2; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  for (int t = 4; t < 8; t += 2) {
    cfg.colsb[t] = (uint16_t)ck, cfg.rows[t] = 16;
    cfg.colsb[t + 1] = 64, cfg.rows[t + 1] = (uint8_t)(ck / 4);
  }
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

/* Every tile 16 rows x 64 bytes (routes whose tiles are all full-size). */
static void qk_amx_configure_full(void) {
  qk_amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

static inline void qk_amx_release(void) { __asm__ volatile("tilerelease" ::: "memory"); }

/* out rows g * 16 .. (those below m) x weight rows n0 .. n0 + nr - 1 from
 * acc[r] (lane c: activation row g * 16 + c), plus the bias. */
static void qk_amx_write(const tp_qk_task *t, int64_t g, int64_t n0, int nr, const __m512 acc[16]) {
  float accm[16][16] __attribute__((aligned(64)));
  for (int r = 0; r < 16; ++r) _mm512_store_ps(accm[r], acc[r]);
  for (int c = 0; c < 16 && g * 16 + c < t->m; ++c)
    for (int r = 0; r < nr; ++r) {
      const float v = accm[r][c];
      t->out[(g * 16 + c) * t->n + n0 + r] = t->bias ? v + t->bias[n0 + r] : v;
    }
}

/* C(set) = A(weight rows at a, stride astride) x B(the packed tile at b);
 * A's bytes signed (tdpbssd) or unsigned (tdpbusd). Each set has its own A
 * and B tiles (set 0: tmm4, tmm5; set 1: tmm6, tmm7), so that a set's loads
 * need not wait for the other set's product to have read its operands (in
 * the timings no different from shared A / B tiles; with the next product
 * issued before the previous store, the whole change measured ~7 % faster). */
static inline void qk_amx_chunk(int set, int sgn, const uint8_t *a, int64_t astride, const int8_t *b, uint8_t *acopy,
                                int64_t ck) {
  const int64_t bstride = 64;
  if (set == 0) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm4\n\ttileloadd (%2,%3,1), %%tmm5"
                     : : "r"(a), "r"(astride), "r"(b), "r"(bstride) : "memory");
    if (sgn) __asm__ volatile("tilezero %%tmm0\n\ttdpbssd %%tmm5, %%tmm4, %%tmm0" ::: "memory");
    else __asm__ volatile("tilezero %%tmm0\n\ttdpbusd %%tmm5, %%tmm4, %%tmm0" ::: "memory");
    if (acopy) __asm__ volatile("tilestored %%tmm4, (%0,%1,1)" : : "r"(acopy), "r"(ck) : "memory");
  } else {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm6\n\ttileloadd (%2,%3,1), %%tmm7"
                     : : "r"(a), "r"(astride), "r"(b), "r"(bstride) : "memory");
    if (sgn) __asm__ volatile("tilezero %%tmm1\n\ttdpbssd %%tmm7, %%tmm6, %%tmm1" ::: "memory");
    else __asm__ volatile("tilezero %%tmm1\n\ttdpbusd %%tmm7, %%tmm6, %%tmm1" ::: "memory");
    if (acopy) __asm__ volatile("tilestored %%tmm6, (%0,%1,1)" : : "r"(acopy), "r"(ck) : "memory");
  }
}

static inline void qk_amx_store(int set, int32_t *c) {
  const int64_t stride = 64;
  if (set == 0) __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
  else __asm__ volatile("tilestored %%tmm1, (%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
}

/* The 16-row panel after the one at row n0 (NULL: none), to be fetched in
 * `slices` slices of *step bytes (qk_prefetch_slice). */
static inline const uint8_t *qk_amx_next_panel(const tp_qk_task *t, int64_t n0, int64_t slices, int64_t *step) {
  *step = 0;
  if (n0 + 16 >= t->n) return NULL;
  const int64_t nx = t->n - n0 - 16 < 16 ? t->n - n0 - 16 : 16;
  *step = (nx * (int64_t)t->row_bytes + slices - 1) / slices;
  return (const uint8_t *)t->w + (size_t)(n0 + 16) * t->row_bytes;
}

/* Activations for tiles: per group of 16 rows and chunk j, the B tile
 * (ck/4 rows of 16 x 4 bytes), da and g, 16 lanes each. */
typedef struct {
  int64_t groups, chunks, ck;
  int8_t *tiles; /* groups * chunks * ck * 16 */
  float *d, *g;  /* groups * chunks * 16 */
  void *mem;
} qk_amx_act;

typedef struct {
  const qk_act *act;
  const tp_qk_traits *tr;
  qk_amx_act *out;
} qk_amx_act_job;

/* Groups g0 .. g1 - 1 of the activation tiles: each tile row (4 bytes of
 * each of the group's 16 activation rows) by one gather, the chunk's row
 * sums by vpdpbusd against ones on the way, da and g by gathers too; rows
 * past m are masked off, so they read as 0 (a scalar copy took ~1/3 of a
 * 64 x 2048 product's fixed cost). */
static void qk_amx_act_groups(void *vjob, int64_t g0, int64_t g1) {
  const qk_amx_act_job *job = vjob;
  const qk_act *act = job->act;
  qk_amx_act *out = job->out;
  const int64_t kpad = act->kpad, lanes = kpad / 4, dstride = kpad / 256 + 1, ck = out->ck;
  const int q8k = job->tr->act == TP_QK_ACT_Q8_K, q81 = job->tr->act == TP_QK_ACT_Q8_1;
  const __m512i row = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), ones = _mm512_set1_epi8(1);
  const __m512i qoff = _mm512_mullo_epi32(row, _mm512_set1_epi32((int)kpad));
  const __m512i loff = _mm512_mullo_epi32(row, _mm512_set1_epi32((int)lanes));
  const __m512i soff = _mm512_mullo_epi32(row, _mm512_set1_epi32((int)dstride));
  for (int64_t gi = g0; gi < g1; ++gi) {
    const int64_t valid = act->m - gi * 16 < 16 ? act->m - gi * 16 : 16;
    const __mmask16 mask = (__mmask16)((1u << valid) - 1u);
    const int8_t *q = act->q + gi * 16 * kpad;
    const float *d = act->d + gi * 16 * lanes, *gs = act->g + gi * 16 * lanes, *dsb = act->dsb + gi * 16 * dstride;
    for (int64_t j = 0; j < out->chunks; ++j) {
      const size_t cell = (size_t)(gi * out->chunks + j);
      int8_t *tile = out->tiles + cell * (size_t)ck * 16;
      __m512i sum = _mm512_setzero_si512();
      for (int64_t l = 0; l < ck / 4; ++l) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, qoff, q + j * ck + 4 * l, 1);
        _mm512_storeu_si512((void *)(tile + l * 64), v);
        sum = qk_dpbusd(sum, ones, v);
      }
      const __m512 dv = q8k ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, soff, dsb + (j * ck) / 256, 4)
                            : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, loff, d + j * ck / 4, 4);
      __m512 g = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(sum));
      if (q81) { /* Q8_1's s, spread over lanes of 1/8 (exact), summed in lane order */
        g = _mm512_setzero_ps();
        for (int64_t l = 0; l < ck / 4; ++l)
          g = _mm512_add_ps(g, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, loff, gs + j * ck / 4 + l, 4));
      }
      _mm512_storeu_ps(out->d + cell * 16, dv);
      _mm512_storeu_ps(out->g + cell * 16, g);
    }
  }
}

/* The activations as tiles, a group of 16 rows per parallel step (a
 * prompt's 128 x 5632 took ~1 % of a product's time, serial). */
static int qk_amx_act_prepare(const qk_act *act, const tp_qk_traits *tr, int64_t ck, int threads, qk_amx_act *out) {
  memset(out, 0, sizeof *out);
  out->groups = (act->m + 15) / 16;
  out->chunks = act->kpad / ck;
  out->ck = ck;
  const size_t cells = (size_t)out->groups * (size_t)out->chunks;
  char *mem = tp_temp_alloc(cells * (size_t)ck * 16 + cells * 16 * 8 + 64);
  if (!mem) return 0;
  out->mem = mem;
  out->d = (float *)(void *)mem;
  out->g = out->d + cells * 16;
  out->tiles = (int8_t *)(void *)(out->g + cells * 16);
  qk_amx_act_job job = {act, tr, out};
  tp_qk_parallel_for(threads, out->groups, 1, qk_amx_act_groups, &job);
  return 1;
}

typedef struct {
  const tp_qk_task *task;
  tp_qk_traits tr;
  qk_act act;
  qk_amx_act amx;
  qk_decode_fn decode;
  qk_kdecode_fn kdecode;
  volatile int failed;
} qk_amx_ctx;

/* Decodes 16 weight rows (the last repeated) into q[16][kpad] and float
 * s, mn per 16 elements (K formats: s = d * sc). */
static void qk_amx_decode(const qk_amx_ctx *ctx, int64_t n0, int nr, uint8_t *q, float *s, float *mn,
                          int32_t *sc_tmp, float *d_tmp) {
  const tp_qk_task *t = ctx->task;
  const int64_t kpad = ctx->act.kpad, ng = kpad / 16;
  for (int r = 0; r < 16; ++r) {
    const int64_t row = n0 + (r < nr ? r : nr - 1);
    const uint8_t *src = (const uint8_t *)t->w + (size_t)row * t->row_bytes;
    uint8_t *qr = q + (size_t)r * (size_t)kpad;
    float *sr = s + r * ng, *mr = mn + r * ng;
    memset(qr + t->k, 0, (size_t)(kpad - t->k));
    for (int64_t g = 0; g < ng; ++g) sr[g] = mr[g] = 0.0f;
    if (ctx->kdecode) {
      ctx->kdecode(src, t->k, qr, sc_tmp, mr, d_tmp);
      for (int64_t g = 0; g < t->k / 16; ++g) sr[g] = d_tmp[g / 16] * (float)(int16_t)sc_tmp[g];
    } else {
      ctx->decode(src, t->k, qr, sr, mr);
    }
    /* types with a bias: q - bias as signed bytes (tdpbssd), so the sums
     * need no -bias * S term (an integer add per row and chunk in the
     * epilogue); the padding stays 0. TinyLlama prompts of 256 tokens,
     * builds alternating (Sapphire Rapids, medians of 3, two pairs): Q8_0
     * 162-165 -> 180-187 t/s at 1 thread; Q4_0 171-177 -> 181-186; Q4_K_M
     * (its Q6_K rows) 150-160 -> 156-166; 2 threads within the noise to +20 %. */
    if (ctx->tr.bias) {
      const __m512i b = _mm512_set1_epi8((char)ctx->tr.bias);
      int64_t e = 0;
      for (; e + 64 <= t->k; e += 64)
        _mm512_storeu_si512((void *)(qr + e), _mm512_sub_epi8(_mm512_loadu_si512((const void *)(qr + e)), b));
      for (; e < t->k; ++e) qr[e] = (uint8_t)(qr[e] - ctx->tr.bias);
    }
  }
}

/* Q4_0 / Q4_1 / MXFP4: a full panel (16 rows, k == kpad) decoded straight
 * into q as A tiles want it, four blocks per step (each block's 16 packed
 * bytes -> its 16 low nibbles, then its 16 high ones; Q4_0's minus its bias
 * 8, MXFP4's through the level table, as signed bytes), and each chunk's 16
 * row scales (Q4_1: and mins, negated as mn is) by one gather. The generic
 * decoder plus the bias pass took ~20 % of the Q4_0 route's time (MXFP4 at
 * 4 x 2880 x 2880, 1 thread, Sapphire Rapids: see the commit adding it). */
static void qk_amx_decode_nibbles(const tp_qk_task *t, int64_t n0, int64_t chunks, uint8_t *q, float *st, float *mnt) {
  const int q41 = t->wtype == TOPOS_Q4_1, mx = t->wtype == TOPOS_MXFP4;
  const int64_t bsz = mx ? 17 : q41 ? 20 : 18, qs_at = mx ? 1 : q41 ? 4 : 2;
  const uint8_t *panel = (const uint8_t *)t->w + (size_t)n0 * t->row_bytes;
  const __m512i m4 = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8(q41 || mx ? 0 : 8);
  const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(TP_MXFP4_LEVELS)); /* MXFP4: nibble -> level */
  const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  for (int r = 0; r < 16; ++r) {
    const uint8_t *row = panel + (size_t)r * t->row_bytes + qs_at;
    uint8_t *qr = q + (size_t)r * (size_t)t->k;
    int64_t b = 0;
    for (; b + 4 <= chunks; b += 4) {
      __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(row + bsz * b)));
      x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(row + bsz * (b + 1))), 1);
      x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(row + bsz * (b + 2))), 2);
      x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(row + bsz * (b + 3))), 3);
      __m512i lo = _mm512_and_si512(x, m4), hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
      if (mx) lo = _mm512_shuffle_epi8(lut, lo), hi = _mm512_shuffle_epi8(lut, hi);
      lo = _mm512_sub_epi8(lo, bias), hi = _mm512_sub_epi8(hi, bias);
      _mm512_storeu_si512((void *)(qr + 32 * b), _mm512_permutex2var_epi64(lo, first, hi));
      _mm512_storeu_si512((void *)(qr + 32 * b + 64), _mm512_permutex2var_epi64(lo, second, hi));
    }
    for (; b < chunks; ++b) {
      const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(row + bsz * b));
      const __m128i m = _mm512_castsi512_si128(m4), bb = _mm512_castsi512_si128(bias), l = _mm512_castsi512_si128(lut);
      __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
      if (mx) lo = _mm_shuffle_epi8(l, lo), hi = _mm_shuffle_epi8(l, hi);
      _mm_storeu_si128((__m128i *)(void *)(qr + 32 * b), _mm_sub_epi8(lo, bb));
      _mm_storeu_si128((__m128i *)(void *)(qr + 32 * b + 16), _mm_sub_epi8(hi, bb));
    }
  }
  const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32((int)t->row_bytes));
  for (int64_t j = 0; j < chunks; ++j) { /* d (and Q4_1's m; MXFP4's e) of each row's block j */
    const __m512i dm = _mm512_i32gather_epi32(rows, (const void *)(panel + bsz * j), 1);
    _mm512_storeu_ps(st + j * 16, mx ? qk_e8m0_half16(_mm512_and_si512(dm, _mm512_set1_epi32(0xFF)))
                                     : _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
    if (q41)
      _mm512_storeu_ps(mnt + j * 16, _mm512_sub_ps(_mm512_setzero_ps(),
                                                   _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)))));
  }
}

/* The float epilogue of chunk jj for one activation group: acc[r] (lanes:
 * the group's activation rows) += float(C[r]) * (s[r] * da) (- mn[r] * g).
 * st / mnt: the chunk's 16 weight-row scales side by side. */
static inline __attribute__((always_inline)) void qk_amx_epilogue(__m512 acc[16], const int32_t *cb, const float *st,
                                                                  const float *mnt, const float *d, const float *g,
                                                                  const int has_min) {
  const __m512 dv = _mm512_loadu_ps(d);
  const __m512 gv = has_min ? _mm512_loadu_ps(g) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r) {
    const __m512i ci = _mm512_load_si512((const void *)(cb + 16 * r));
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(st[r]), dv);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ci), scale, acc[r]);
    if (has_min) acc[r] = _mm512_fnmadd_ps(_mm512_set1_ps(mnt[r]), gv, acc[r]);
  }
}

/* One activation group (16 rows) through all chunks of a 16-row weight
 * panel whose A tiles start at abase (astride apart, chunk j at j * achunk),
 * its 16 x 16 sums in registers (two groups side by side kept them in
 * memory: one load and one store more per row and chunk; TinyLlama prompts
 * of 256 tokens, plans alternating in one process, Sapphire Rapids, medians
 * of 5-9: Q8_0 171 -> 176 t/s at 1 thread, 303 -> 322 at 2; Q4_K_M 164 ->
 * 167, 304 -> 325; Q4_0 189 -> 197). Three stages in flight: the product of
 * chunk j + 1, issued before the store of chunk j (the tile unit runs in
 * order: the next product is under way while the store waits for its
 * result), and the epilogue of chunk j - 1 (a tile store takes a while to
 * become readable by vector loads). Unrolled by two so that each tile set
 * is named in the code (no branch per chunk on the set); sgn and has_min
 * are constants in each instance. */
static inline __attribute__((always_inline)) void qk_amx_group(const qk_amx_act *aa, int64_t g, const uint8_t *abase,
                                                               int64_t astride, int64_t achunk, uint8_t *acopy,
                                                               const float *st, const float *mnt, int32_t *cbuf,
                                                               const uint8_t *pf, int64_t pf_step, __m512 acc[16],
                                                               const int sgn, const int has_min) {
  const int64_t chunks = aa->chunks;
  const size_t tile_bytes = (size_t)aa->ck * 16, cell0 = (size_t)(g * chunks);
  const int8_t *bt = aa->tiles + cell0 * tile_bytes;
  const float *dc = aa->d + cell0 * 16, *gc = aa->g + cell0 * 16;
  int32_t *c0 = cbuf, *c1 = cbuf + 256;
#define QK_AMX_EPILOGUE(cb, j) qk_amx_epilogue(acc, cb, st + (j) * 16, mnt + (j) * 16, dc + (j) * 16, gc + (j) * 16, has_min)
  for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t ck = aa->ck, copy_step = 16 * ck;
  qk_amx_chunk(0, sgn, abase, astride, bt, acopy, ck);
  for (int64_t j = 0; j < chunks; j += 2) {
    if (j + 1 < chunks)
      qk_amx_chunk(1, sgn, abase + (j + 1) * achunk, astride, bt + (size_t)(j + 1) * tile_bytes,
                   acopy ? acopy + (j + 1) * copy_step : NULL, ck);
    qk_amx_store(0, c0);
    qk_prefetch_slice(pf, g * chunks + j, pf_step);
    if (j > 0) QK_AMX_EPILOGUE(c1, j - 1);
    if (j + 1 == chunks) {
      QK_AMX_EPILOGUE(c0, j);
      break;
    }
    if (j + 2 < chunks)
      qk_amx_chunk(0, sgn, abase + (j + 2) * achunk, astride, bt + (size_t)(j + 2) * tile_bytes,
                   acopy ? acopy + (j + 2) * copy_step : NULL, ck);
    qk_amx_store(1, c1);
    qk_prefetch_slice(pf, g * chunks + j + 1, pf_step);
    QK_AMX_EPILOGUE(c0, j);
    if (j + 2 == chunks) QK_AMX_EPILOGUE(c1, j + 1);
  }
#undef QK_AMX_EPILOGUE
}

static void qk_amx_range(void *vctx, int64_t p0, int64_t p1) {
  qk_amx_ctx *ctx = vctx;
  const tp_qk_task *t = ctx->task;
  const qk_amx_act *aa = &ctx->amx;
  const int64_t kpad = ctx->act.kpad, ng = kpad / 16, ck = aa->ck, sstep = ck / 16, chunks = aa->chunks;
  const int has_min = ctx->tr.has_min, sgn = ctx->tr.bias != 0;
  uint8_t *q = tp_temp_alloc((size_t)16 * (size_t)kpad + (size_t)(2 * 16 * ng + ng + kpad / 256 + 16) * 4 + 2 * 1024 +
                             (size_t)chunks * 2 * 16 * 4 + 128);
  if (!q) {
    ctx->failed = 1;
    return;
  }
  float *s = (float *)(void *)(q + (size_t)16 * (size_t)kpad), *mn = s + 16 * ng;
  int32_t *sc_tmp = (int32_t *)(void *)(mn + 16 * ng);
  float *d_tmp = (float *)(void *)(sc_tmp + ng);
  int32_t *cbuf = (int32_t *)(void *)(((uintptr_t)(d_tmp + kpad / 256 + 16) + 63) & ~(uintptr_t)63);
  float *st = (float *)(void *)(cbuf + 512), *mnt = st + chunks * 16;
  qk_amx_configure((int)ck);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
    /* Q8_0's quants are already signed bytes: a full panel's A tiles load
     * straight from the file's blocks (32 bytes at 2 + 34 j in each row),
     * and only the scales are decoded, a chunk's 16 rows by one gather (a
     * short last panel, or rows whose k the activations pad, are decoded:
     * the padding chunks must read zero weights and zero scales, not the
     * next row). The Q8_0 product 128 x 2048 x 2048 2.27 -> 2.05 ms at 1
     * thread; TinyLlama Q8_0 prompts of 256 tokens 192 -> 212 t/s (1
     * thread), 337 -> 359 (2); medians of 5-9, alternating in one process,
     * Sapphire Rapids. */
    const int direct = t->wtype == TOPOS_Q8_0 && nr == 16 && kpad == t->k;
    const uint8_t *abase = q;
    int64_t astride = kpad, achunk = ck;
    if (direct) {
      abase = (const uint8_t *)t->w + (size_t)n0 * t->row_bytes + 2, astride = (int64_t)t->row_bytes, achunk = 34;
      const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                              _mm512_set1_epi32((int)t->row_bytes));
      const uint8_t *panel = (const uint8_t *)t->w + (size_t)n0 * t->row_bytes;
      for (int64_t j = 0; j < chunks; ++j) { /* 4 bytes from each row's block j: d and two quants */
        const __m512i dq = _mm512_i32gather_epi32(rows, (const void *)(panel + 34 * j), 1);
        _mm512_storeu_ps(st + j * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dq)));
      }
    } else if ((t->wtype == TOPOS_Q4_0 || t->wtype == TOPOS_Q4_1 || t->wtype == TOPOS_MXFP4) && nr == 16 &&
               kpad == t->k) {
      qk_amx_decode_nibbles(t, n0, chunks, q, st, mnt);
    } else {
      qk_amx_decode(ctx, n0, nr, q, s, mn, sc_tmp, d_tmp);
      for (int64_t j = 0; j < chunks; ++j)
        for (int r = 0; r < 16; ++r) st[j * 16 + r] = s[r * ng + j * sstep], mnt[j * 16 + r] = mn[r * ng + j * sstep];
    }
    /* The next panel is fetched into L2 a slice per chunk through all of
     * this panel's groups: the decoder above otherwise meets the weights on
     * demand misses (22 % of a TinyLlama Q8_0 prompt's samples sat in
     * qk_decode_q8_0, 9 % after). Prompts of 256 tokens, plans alternating
     * in one process, medians of 5 (Sapphire Rapids), fetched through the
     * first group only: Q8_0 147 -> 157 t/s (1 thread), 288 -> 308 (2);
     * Q4_K_M 139 -> 151; Q4_0 163 -> 174. Spread over every group instead
     * (the first group alone asked up to ~13 GB/s of one core at m = 64),
     * plans alternating, medians of 3-15: Q8_0 64 tokens 194 -> 221 t/s,
     * 512 tokens at 2 threads 393 -> 434; Q4_K_M 64 tokens 170 -> 176, 325
     * -> 335 (2 threads), 512 tokens 175 -> 182; Q4_0 512 tokens at 2
     * threads 393 -> 402. */
    int64_t pf_step = 0;
    const uint8_t *pf = qk_amx_next_panel(t, n0, aa->groups * chunks, &pf_step);
    /* Tiles read in place from the file, m >= 113: the first group stores
     * each A tile it loaded into q (unused then), chunk after chunk, and the
     * other groups load those 16 x ck contiguous bytes instead of 16 rows 34
     * bytes into lines a row apart (half of them crossing a line). Q8_0 at
     * 1 thread, 2048 x 2048, against the build without (alternating in one
     * process, Sapphire Rapids): m = 128 1.03x, 256 1.08x, 512 1.12x, 512 x
     * 5632 1.06x (runs vary by +-5 %); TinyLlama Q8_0 prompts of 512
     * tokens, builds alternating, 194-199 -> 202-209 t/s at 1 thread, 371-378
     * -> 381-385 at 2. At m = 64 0.97x (the stores cost more than 3 groups
     * gain), so not there. */
    for (int64_t g = 0; g < aa->groups; ++g) {
      __m512 acc[16];
      const uint8_t *ab = abase;
      int64_t as = astride, ac = achunk;
      uint8_t *acopy = NULL;
      if (direct && aa->groups >= 8) {
        if (g == 0) acopy = q;
        else ab = q, as = ck, ac = 16 * ck;
      }
      if (sgn && !has_min) qk_amx_group(aa, g, ab, as, ac, acopy, st, mnt, cbuf, pf, pf_step, acc, 1, 0);
      else if (has_min) qk_amx_group(aa, g, ab, as, ac, acopy, st, mnt, cbuf, pf, pf_step, acc, sgn, 1);
      else qk_amx_group(aa, g, ab, as, ac, acopy, st, mnt, cbuf, pf, pf_step, acc, 0, 0);
      qk_amx_write(t, g, n0, nr, acc);
    }
  }
  qk_amx_release();
  tp_temp_free(q);
}

static topos_status qk_amx_run(const tp_qk_task *t, const tp_qk_traits *tr) {
  qk_amx_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.task = t;
  ctx.tr = *tr;
  ctx.decode = qk_decoder_of(t->wtype);
  ctx.kdecode = qk_kdecoder_of(t->wtype);
  /* chunks of one scale: 32 where scales are per 32, 16 for Q2_K, Q3_K (and
   * Q6_K, which like Q4_K and Q5_K takes qk_amx_ksum.h's route instead) */
  const int64_t ck = (t->wtype == TOPOS_Q2_K || t->wtype == TOPOS_Q3_K || t->wtype == TOPOS_Q6_K) ? 16 : 32;
  if (!qk_act_prepare(tr, t->a, t->m, t->k, &ctx.act, t->threads))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  if (!qk_amx_act_prepare(&ctx.act, tr, ck, t->threads, &ctx.amx)) {
    qk_act_free(&ctx.act);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activation tiles %lld x %lld", (long long)t->m,
                   (long long)t->k);
  }
  tp_qk_parallel_for(t->threads, (t->n + 15) / 16, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m), qk_amx_range,
                     &ctx);
  tp_temp_free(ctx.amx.mem);
  qk_act_free(&ctx.act);
  if (ctx.failed) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: weight panel buffer");
  return TOPOS_OK;
}
