/* AMX-BF16 route for float weights (F16, BF16) in the Fast posture, m >=
 * TP_QK_AMXF_MIN_M (included by qk_avx512vnni.c after qk_amx_body.h, whose
 * config struct it shares; AMX as inline asm, no extra compiler flags).
 * Only called when the CPU and the OS grant AMX tile data with bf16 and
 * TOPOS_DISABLE_ISA leaves amx on.
 *
 * The tiles multiply bf16 pairs and add in f32, so both operands are split
 * into bf16 parts that sum to (nearly) the f32 values:
 *   weight  w = hi + lo       hi = w's f32 bits cut to bf16, lo = w - hi
 *                             (an f16 has 11 significant bits, hi keeps 8:
 *                             the other 3 fit lo exactly, so w = hi + lo;
 *                             a bf16 weight is its own hi, lo = 0)
 *   activation a ~ a1 + a2    a1 = bf16(a), a2 = bf16(a - a1), both to
 *                             nearest: |a - a1 - a2| <= 2^-16 |a|
 * and each output sums hi*a1 + hi*a2 + lo*a1 (three tdpbf16ps per 32
 * elements, in that order, into one f32 tile that stays in the tile
 * register over the whole of k: unlike the integer route there is no
 * per-block scale, hence no per-chunk store and epilogue). The terms left
 * out are small: |a - a1| <= 2^-8 |a| and |lo| < 2^-7 |w|, so
 * |lo * (a - a1)| <= 2^-15 |w a|, and |hi * (a - a1 - a2)| <= 2^-16 |w a|;
 * with the tile's f32 adds (1.5 k of them per output, each pair of
 * products rounded once) an output is within (2^-14 + 2 k 2^-24) sum |w a|
 * of the exact sum (tests/quant/qmatmul_test.c holds it to that, and to
 * NMSE 1e-8 against the reference; random data measures ~2e-11), well
 * inside Fast's 1e-6. The tile unit adds with denormals as zero (inputs and
 * results below 2^-126 flush), which moves nothing at these magnitudes.
 * The bits do not depend on the thread count (work is split over 16-row
 * weight panels, each output summed by one instruction sequence); they do
 * differ from the vector route's (matrix-vector decoding, m below the
 * threshold), as the integer AMX route's do. Exact never comes here. */

/* Tiles (qk_amx_configure_full): tmm0, tmm1, tmm6, tmm7: C of up to four
 * activation groups (16 weight rows x 16 activation rows, f32); tmm2 /
 * tmm3: A, the panel's hi / lo parts (16 rows x 32 bf16), loaded once per
 * chunk for the four; tmm4 / tmm5: B, a group's a1 / a2 parts (16 pairs x
 * 16 rows x 2 bf16). */

/* bf16 nearest-even bits of 16 floats (finite; NaN stays NaN: it keeps its
 * top bits with the quiet bit set, infinities pass unchanged) */
static inline __m256i qk_bf16_rne(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
}

static inline __m512 qk_bf16_widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Activations for tiles: per group of 16 rows and chunk j (32 elements),
 * the B tiles of a1 and a2, 1 KB each, side by side. */
typedef struct {
  const tp_qk_task *task;
  int64_t groups, chunks, kpad;
  uint16_t *tiles; /* [group][chunk][part][16 pairs][16 rows][2] */
  int lo;          /* weights have a lo part (F16) */
  volatile int failed;
} qk_amxf_ctx;

static void qk_amxf_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_amxf_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  /* dword kp of a row's 32 elements (the pair 2kp, 2kp + 1) goes to B row
   * kp, column c: dword 16 kp + c */
  const __m512i cols = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(16));
  for (int64_t g = g0; g < g1; ++g)
    for (int c = 0; c < 16 && g * 16 + c < t->m; ++c) {
      const float *a = t->a + (g * 16 + c) * t->k;
      const __m512i idx = _mm512_add_epi32(cols, _mm512_set1_epi32(c));
      for (int64_t j = 0; j < x->chunks; ++j) {
        uint16_t *tile = x->tiles + (size_t)(g * x->chunks + j) * 1024;
        __m256i p1[2], p2[2];
        for (int h = 0; h < 2; ++h) {
          const int64_t e = j * 32 + h * 16, left = t->k - e;
          const __mmask16 live = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
          const __m512 v = _mm512_maskz_loadu_ps(live, a + (left > 0 ? e : 0));
          p1[h] = qk_bf16_rne(v);
          p2[h] = qk_bf16_rne(_mm512_sub_ps(v, qk_bf16_widen(p1[h])));
        }
        const __m512i d1 = _mm512_inserti64x4(_mm512_castsi256_si512(p1[0]), p1[1], 1);
        const __m512i d2 = _mm512_inserti64x4(_mm512_castsi256_si512(p2[0]), p2[1], 1);
        _mm512_i32scatter_epi32(tile, idx, d1, 4);
        _mm512_i32scatter_epi32(tile + 512, idx, d2, 4);
      }
    }
}

/* The panel's 16 weight rows (the last repeated) as hi / lo tiles:
 * [chunk][part][16 rows][32], zero past k. */
static void qk_amxf_panel(const qk_amxf_ctx *x, int64_t n0, int nr, uint16_t *pan) {
  const tp_qk_task *t = x->task;
  for (int r = 0; r < 16; ++r) {
    const uint16_t *src = (const uint16_t *)(const void *)((const uint8_t *)t->w +
                                                           (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes);
    for (int64_t e = 0; e < x->kpad; e += 16) {
      const int64_t left = t->k - e;
      const __mmask16 live = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
      const __m256i h = _mm256_maskz_loadu_epi16(live, src + (left > 0 ? e : 0));
      uint16_t *dst = pan + (size_t)(e / 32) * 1024 + (size_t)r * 32 + (size_t)(e % 32);
      if (!x->lo) { /* bf16: the weight is its own hi */
        _mm256_storeu_si256((__m256i *)(void *)dst, h);
        continue;
      }
      /* hi: w's top 16 bits (truncation keeps 8 of the 11 significant bits
       * and leaves NaN and infinity as they are); lo = w - hi is exact and
       * fits bf16 exactly, so its top 16 bits are all of it; non-finite
       * weights keep lo = 0 */
      const __m512 w = _mm512_cvtph_ps(h);
      const __m512i top = _mm512_and_si512(_mm512_castps_si512(w), _mm512_set1_epi32((int)0xFFFF0000u));
      const __mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(w), _mm512_set1_ps(INFINITY), _CMP_LT_OQ);
      const __m512 lo = _mm512_maskz_sub_ps(fin, w, _mm512_castsi512_ps(top));
      _mm256_storeu_si256((__m256i *)(void *)dst, _mm512_cvtepi32_epi16(_mm512_srli_epi32(top, 16)));
      _mm256_storeu_si256((__m256i *)(void *)(dst + 512),
                          _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(lo), 16)));
    }
  }
}

static void qk_amxf_range(void *vctx, int64_t p0, int64_t p1) {
  qk_amxf_ctx *x = vctx;
  const tp_qk_task *t = x->task;
  uint16_t *pan = tp_temp_alloc((size_t)x->chunks * 2048 + 4096 + 64);
  if (!pan) {
    x->failed = 1;
    return;
  }
  float *cbuf = (float *)(void *)(pan + (size_t)x->chunks * 1024);
  qk_amx_configure_full();
  const int64_t a_stride = 64, b_stride = 64;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
    qk_amxf_panel(x, n0, nr, pan);
    /* the next panel, into L2 a slice per chunk through every pass (its
     * conversion above would otherwise meet the weights on demand misses) */
    int64_t pf_step = 0;
    const int64_t passes = (x->groups + 3) / 4;
    const uint8_t *pf = qk_amx_next_panel(t, n0, passes * x->chunks, &pf_step);
    for (int64_t g0 = 0; g0 < x->groups; g0 += 4) {
      const int ng = x->groups - g0 < 4 ? (int)(x->groups - g0) : 4;
      __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm6\n\ttilezero %%tmm7" ::: "memory");
      for (int64_t j = 0; j < x->chunks; ++j) {
        const uint16_t *a = pan + (size_t)j * 1024;
        __asm__ volatile("tileloadd (%0,%1,1), %%tmm2" : : "r"(a), "r"(a_stride) : "memory");
        if (x->lo) __asm__ volatile("tileloadd 1024(%0,%1,1), %%tmm3" : : "r"(a), "r"(a_stride) : "memory");
        for (int gi = 0; gi < ng; ++gi) {
          const uint16_t *b = x->tiles + (size_t)((g0 + gi) * x->chunks + j) * 1024;
          __asm__ volatile("tileloadd (%0,%1,1), %%tmm4\n\ttileloadd 1024(%0,%1,1), %%tmm5"
                           : : "r"(b), "r"(b_stride) : "memory");
          /* hi * a1, hi * a2, then lo * a1, into group gi's C */
#define QK_AMXF_TERMS(c)                                                                       \
  do {                                                                                         \
    __asm__ volatile("tdpbf16ps %%tmm4, %%tmm2, %%tmm" #c "\n\ttdpbf16ps %%tmm5, %%tmm2, %%tmm" #c ::: "memory"); \
    if (x->lo) __asm__ volatile("tdpbf16ps %%tmm4, %%tmm3, %%tmm" #c ::: "memory");             \
  } while (0)
          switch (gi) {
            case 0: QK_AMXF_TERMS(0); break;
            case 1: QK_AMXF_TERMS(1); break;
            case 2: QK_AMXF_TERMS(6); break;
            default: QK_AMXF_TERMS(7); break;
          }
#undef QK_AMXF_TERMS
        }
        qk_prefetch_slice(pf, (g0 / 4) * x->chunks + j, pf_step);
      }
      const int64_t c_stride = 64;
      __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilestored %%tmm1, 1024(%0,%1,1)\n\t"
                       "tilestored %%tmm6, 2048(%0,%1,1)\n\ttilestored %%tmm7, 3072(%0,%1,1)"
                       : : "r"(cbuf), "r"(c_stride) : "memory");
      for (int gi = 0; gi < ng; ++gi)
        for (int c = 0; c < 16 && (g0 + gi) * 16 + c < t->m; ++c)
          for (int r = 0; r < nr; ++r) {
            const float v = cbuf[gi * 256 + r * 16 + c];
            t->out[((g0 + gi) * 16 + c) * t->n + n0 + r] = t->bias ? v + t->bias[n0 + r] : v;
          }
    }
  }
  qk_amx_release();
  tp_temp_free(pan);
}

static topos_status qk_amxf_run(const tp_qk_task *t) {
  qk_amxf_ctx x;
  memset(&x, 0, sizeof x);
  x.task = t;
  x.lo = t->wtype == TOPOS_F16;
  x.kpad = (t->k + 31) / 32 * 32;
  x.chunks = x.kpad / 32;
  x.groups = (t->m + 15) / 16;
  const size_t bytes = (size_t)(x.groups * x.chunks) * 2048;
  x.tiles = tp_temp_alloc(bytes + 64);
  if (!x.tiles)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activation tiles %lld x %lld", (long long)t->m,
                   (long long)t->k);
  memset(x.tiles, 0, bytes); /* rows past m stay zero */
  tp_qk_parallel_for(t->threads, x.groups, 1, qk_amxf_prepare_groups, &x);
  tp_qk_parallel_for(t->threads, (t->n + 15) / 16, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m), qk_amxf_range,
                     &x);
  tp_temp_free(x.tiles);
  if (x.failed) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: weight panel buffer");
  return TOPOS_OK;
}
