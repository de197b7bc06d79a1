/* Products of the 32-element block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1,
 * MXFP4: qk_mxfp4_avx2.h) on AVX2 (included by qk_avx2.c after the engine
 * body). They compute the block-sum definition of the AVX-512 kernels
 * (qk_block32_avx512vnni.h): for weight row r and activation row c,
 *     acc = 0;  for each block b in order:  acc = fma(float(isum_b), dw_b * da_b, acc)
 *                                           (Q4_1 / Q5_1, then: acc = fma(m_b, s_b, acc))
 * with isum_b the exact integer sum of the block's 32 products w * qa (w =
 * q for Q8_0, q - 8 for Q4_0, q - 16 for Q5_0, q for Q4_1 / Q5_1, the
 * level for MXFP4), dw_b / da_b the weight's (MXFP4: 2^(e - 128)) and the
 * activation's (Q8_0 / Q8_1) block scales, m_b the weight's min and s_b
 * the Q8_1 activation's s. The engine body's lanes of 4 elements paid a
 * conversion, a scale product and an fma per 32 multiply-adds; here each
 * block is converted and scaled once.
 *
 * Two kernels compute it, bit for bit the same at every m and thread count:
 *  - the tile (m >= q32_mv_max_m: Q32_MV_MAX_M, MXFP4 8): lanes are 8 activation rows. Activations
 *    are repacked once per product, 4 bytes of each of 8 rows per vector;
 *    each weight row is decoded once per panel to 32 bytes per block in
 *    element order, and its 4 bytes of a step are broadcast. The nibble
 *    types' q (0..15, Q5: 0..31, MXFP4: level + 12, 0..24) is vpmaddubsw's
 *    unsigned operand: its pair sums (<= 2 * 31 * 127) add in 16 bits over
 *    8 steps (Q4: 8 * 2 * 15 * 127 = 30480) or 4 (Q5: 31496, MXFP4: 24384)
 *    without overflow, then one vpmaddwd widens them. Q8_0's two signed
 *    operands are both widened to int16 (activations once per product, 2
 *    elements of each of 8 rows per vector; weights once per panel): a step
 *    is one vpmaddwd per 16 products and an add. The sign trick (vpsignb,
 *    vpmaddubsw, vpmaddwd per 32) has as many operations but three on the
 *    pipes the multiplies share (Zen 3, session 21) against two: one
 *    thread, 256 x 2048 x 2048 58.3 -> 61.7 GMAC/s, 64 x 2048 x 2048 58.6
 *    -> 62.2. Q4_0 / Q5_0 / MXFP4's bias term (-bias * the block's qa sum)
 *    is one integer per activation row and block.
 *  - the matrix-vector kernel (m < q32_mv_max_m, decoding): lanes are 8
 *    weight rows. The nibble types' blocks of two rows meet the activation
 *    block in one vector (q32_pair_sums; Q8_0: a row per vector), the 8
 *    rows' lane sums are reduced to the 8 block sums by an exact
 *    transpose-and-add (q32_reduce_pair_sums, q32_reduce8), the rows' f16
 *    scales (MXFP4: exponent bytes) are assembled in general registers, and
 *    the float steps run 8 rows at a time.
 * The file also holds what qk_ksum_avx2.h shares: the contexts' head
 * (qk8_base), the output stores and the end of a product. */
#ifndef TP_QUANT_QK_BLOCK32_AVX2_H
#define TP_QUANT_QK_BLOCK32_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define Q32_TR 4          /* weight rows per tile */
#define Q32_MV_MAX_M 4    /* below this m, the matrix-vector kernel (q32_mv_max_m) */
#define Q32_INLINE static inline __attribute__((always_inline))

/* QK_KEEP_IN_REGISTER: qk_avx2.c */

/* A block layout: bytes, offsets of the nibbles (Q8_0: the int8 q), of the
 * fifth bits (0: none) and of the f16 min (0: none); w = q - bias. */
typedef struct {
  int64_t bytes, qs, qh, min;
  int bias;
} q32_kind;
#define Q32_Q8_0 ((q32_kind){34, 2, 0, 0, 0})
#define Q32_Q4_0 ((q32_kind){18, 2, 0, 0, 8})
#define Q32_Q5_0 ((q32_kind){22, 6, 2, 0, 16})
#define Q32_Q4_1 ((q32_kind){20, 4, 0, 2, 0})
#define Q32_Q5_1 ((q32_kind){24, 8, 4, 2, 0})
#define Q32_IS_Q8(kd) ((kd).bytes == 34)
#include "quant/qk_mxfp4_avx2.h" /* Q32_MXFP4: the nibbles as levels, an E8M0 scale */
/* a group's repacked activations per block (Q8_0's widened to int16) */
#define Q32_CELL_BYTES(kd) (Q32_IS_Q8(kd) ? 512 : 256)

/* ---- shared with qk_ksum_avx2.h ---------------------------------------- */

/* What both kernel families' contexts start with. */
typedef struct {
  const tp_qk_task *task;
  qk_act act;
  void *mem;           /* the product's buffers, one allocation */
  volatile int failed; /* a range could not allocate its panel */
} qk8_base;

/* Tile output: f[r][g] holds weight row n0 + r (kept when r < nr) for the 8
 * activation rows of group g0 + g (g < ng) in its lanes, plus the bias. */
static void qk8_store_tile(const tp_qk_task *t, int64_t n0, int nr, int64_t g0, int ng, const __m256 (*f)[2]) {
  for (int g = 0; g < ng; ++g) {
    const int64_t c0 = (g0 + g) * 8;
    const int used = (int)(t->m - c0 < 8 ? t->m - c0 : 8);
    if (nr == 4 && used == 8) { /* 4 rows x 8 lanes -> 8 outputs rows of 4: a transpose, 8 stores */
      const __m256 t0 = _mm256_unpacklo_ps(f[0][g], f[1][g]), t1 = _mm256_unpackhi_ps(f[0][g], f[1][g]);
      const __m256 t2 = _mm256_unpacklo_ps(f[2][g], f[3][g]), t3 = _mm256_unpackhi_ps(f[2][g], f[3][g]);
      const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                           _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
      for (int c = 0; c < 8; ++c) { /* u[c % 4]: lanes c (low half) and c + 4 (high) */
        __m128 v = c < 4 ? _mm256_castps256_ps128(u[c]) : _mm256_extractf128_ps(u[c - 4], 1);
        if (t->bias) v = _mm_add_ps(v, _mm_loadu_ps(t->bias + n0)); /* the same adds */
        _mm_storeu_ps(t->out + (c0 + c) * t->n + n0, v);
      }
      continue;
    }
    for (int r = 0; r < nr; ++r) {
      float lane[8];
      _mm256_storeu_ps(lane, f[r][g]);
      for (int c = 0; c < used; ++c) t->out[(c0 + c) * t->n + n0 + r] = t->bias ? lane[c] + t->bias[n0 + r] : lane[c];
    }
  }
}

static const int qk8_rows_in_order[8] = {0, 1, 2, 3, 4, 5, 6, 7};

/* Matrix-vector output: activation row c; lane l holds weight row n0 +
 * row_of[l] (kept when below nr), plus the bias. */
static inline void qk8_store_rows(const tp_qk_task *t, int64_t c, int64_t n0, int nr, const int row_of[8], __m256 f) {
  if (nr == 8) { /* a full panel: lanes to row order, one store (the same adds) */
    if (row_of != qk8_rows_in_order) {
      int32_t lane_of[8];
      for (int l = 0; l < 8; ++l) lane_of[row_of[l]] = l;
      f = _mm256_permutevar8x32_ps(f, _mm256_loadu_si256((const __m256i *)(const void *)lane_of));
    }
    if (t->bias) f = _mm256_add_ps(f, _mm256_loadu_ps(t->bias + n0));
    _mm256_storeu_ps(t->out + c * t->n + n0, f);
    return;
  }
  float lane[8];
  _mm256_storeu_ps(lane, f);
  for (int l = 0; l < 8; ++l) {
    const int r = row_of[l];
    if (r < nr) t->out[c * t->n + n0 + r] = t->bias ? lane[l] + t->bias[n0 + r] : lane[l];
  }
}

/* The tiles' activations, lane l of a group: `steps` 4-byte steps from qa
 * (NULL: a row past m, zeros) into dst[32 * s + 4 * l]. */
static inline void qk8_repack_lane(int8_t *dst, const int8_t *qa, int64_t l, int steps) {
  for (int s = 0; s < steps; ++s) {
    if (qa) memcpy(dst + 32 * s + 4 * l, qa + 4 * s, 4);
    else memset(dst + 32 * s + 4 * l, 0, 4);
  }
}

/* The Q8_0 tile's activations, lane l of a group: a block's 32 int8 of qa
 * (NULL: zeros) widened to int16, two per 4-byte step, into dst[16 * s + 2 * l]. */
static inline void qk8_repack_lane16(int16_t *dst, const int8_t *qa, int64_t l) {
  for (int s = 0; s < 16; ++s) {
    dst[16 * s + 2 * l] = qa ? qa[2 * s] : 0;
    dst[16 * s + 2 * l + 1] = qa ? qa[2 * s + 1] : 0;
  }
}

/* The 8 rows of the matrix-vector panel at row n0 (a short last panel
 * repeats its last row); returns the real rows' count. */
static inline int qk8_panel_rows(const tp_qk_task *t, int64_t n0, const uint8_t *rows[8]) {
  const int nr = (int)(t->n - n0 < 8 ? t->n - n0 : 8);
  for (int r = 0; r < 8; ++r) rows[r] = (const uint8_t *)t->w + (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes;
  return nr;
}

/* The matrix-vector kernels fetch the panel two on as they read one, in
 * address order (its 8 rows are one run of 8 * row_bytes): per unit of
 * their loop (block or super-block, `unit_bytes` of a row), `step` bytes
 * of it, at `lines` points at most a line apart (packed rows: Q4_0 144
 * bytes in 3, Q8_0 272 in 5, Q4_K 1152 in 18; a constant unit_bytes makes
 * the fetch loop a straight run). qk8_fetch_plan also fetches the range's
 * first two panels, which nothing fetched ahead. */
typedef struct {
  int64_t step, lines;
} qk8_fetch;

Q32_INLINE qk8_fetch qk8_fetch_plan(const tp_qk_task *t, int64_t unit_bytes, int64_t p0) {
  const int64_t first = p0 * 8, rows = t->n - first < 16 ? t->n - first : 16;
  qk_prefetch_slice((const uint8_t *)t->w + (size_t)first * t->row_bytes, 0, rows * (int64_t)t->row_bytes);
  const int64_t step = 8 * unit_bytes;
  return (qk8_fetch){step, (step + 63) / 64};
}

/* The panel two on from row n0, or NULL where it runs past the tensor. */
static inline const uint8_t *qk8_panel_ahead(const tp_qk_task *t, int64_t n0) {
  return n0 + 24 <= t->n ? (const uint8_t *)t->w + (size_t)(n0 + 16) * t->row_bytes : NULL;
}

/* Lines l0 .. l1 - 1 of unit u's part of the panel ahead (NULL: none). */
Q32_INLINE void qk8_fetch_lines(const uint8_t *ahead, const qk8_fetch *plan, int64_t u, int64_t l0, int64_t l1) {
  if (!ahead) return;
  for (int64_t l = l0; l < l1; ++l) _mm_prefetch((const char *)(ahead + plan->step * u + 64 * l), _MM_HINT_T0);
}

/* Frees what a begin and the ranges took; the status of the product. */
static topos_status qk8_end(qk8_base *b) {
  const tp_qk_task *t = b->task;
  tp_temp_free(b->mem);
  qk_act_free(&b->act);
  if (b->failed)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: kernel buffers for %lld x %lld", (long long)t->m,
                   (long long)t->k);
  return TOPOS_OK;
}

/* The start of a begin: t's activations quantized into b (0: out of
 * memory), or, with `same` (the activations of a begun product of t's
 * weight type over the same rows), borrowed: not quantized again, and left
 * for that product's end to free. */
static int qk8_begin(const tp_qk_task *t, qk8_base *b, const qk_act *same) {
  b->task = t;
  if (same) {
    b->act = *same;
    b->act.mem = NULL, b->act.qn = NULL; /* owned by `same` */
    return 1;
  }
  tp_qk_traits tr;
  tp_qk_traits_of(t->wtype, &tr);
  return qk_act_prepare(&tr, t->a, t->m, t->k, &b->act, t->threads);
}

/* ---- the 32-element block types ------------------------------------------ */

typedef struct {
  qk8_base b;
  q32_kind kind;
  int64_t nb, groups;  /* blocks per row; groups of 8 activation rows (tile) */
  int32_t *corr;       /* [m][nb]: -bias * the block's qa sum (matrix-vector) */
  float *da, *sa;      /* [m][nb]: the activation block's d and Q8_1 s (matrix-vector) */
  int8_t *au;          /* tile: [group][block][step][8 rows][4] = qa (Q8_0: [16 steps][8 rows][2] int16) */
  float *gda, *gsa;    /* tile: [group][block][8] */
  int32_t *gcorr;      /* tile: [group][block][8] */
} qk_q32_ctx;

Q32_INLINE uint32_t q32_le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* Byte i of `spread` holding the byte of bits that element i's bit is in
 * (bit i % 8) -> 0x10 where that bit is set, else 0. */
Q32_INLINE __m256i q32_spread_0x10(__m256i spread) {
  const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel), _mm256_set1_epi8(0x10));
}

/* Bits 0..31 of `bits` -> 32 bytes of 0x10 (bit set) or 0, element order. */
Q32_INLINE __m256i q32_bits_0x10(uint32_t bits) {
  return q32_spread_0x10(_mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                             _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                                               0x0101010101010101ll, 0)));
}

/* A block's 32 weights in element order: Q8_0's signed w, the other types'
 * unsigned q (the 16 nibble bytes in both halves, the upper half shifted
 * down a nibble; Q5's fifth bits as 0x10; MXFP4's level + 12). */
Q32_INLINE __m256i q32_elems(const uint8_t *blk, const q32_kind kd) {
  if (Q32_IS_Q8(kd)) return _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
  const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(blk + kd.qs)));
  __m256i q = _mm256_and_si256(_mm256_srlv_epi64(x, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
  if (Q32_IS_MX(kd)) q = q32_mx_levels(q);
  if (kd.qh) {
    uint32_t bits;
    memcpy(&bits, blk + kd.qh, 4);
    q = _mm256_or_si256(q, q32_bits_0x10(bits));
  }
  return q;
}

/* 8 lane sums of w * qa over a block (w: q32_elems, a: 32 int8 qa); the
 * integers are exact (Q8_0: |w| * (qa with w's sign), pairs <= 2 * 128 * 127). */
Q32_INLINE __m256i q32_dot(__m256i w, __m256i a, const q32_kind kd) {
  const __m256i p = Q32_IS_Q8(kd) ? _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w))
                                  : _mm256_maddubs_epi16(w, a);
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* ---- matrix-vector: 8 weight rows per panel, lanes are rows ----------- */

/* The matrix-vector kernel's lanes hold the panel's rows in this order: the
 * order the reduction of row pairs leaves them in (q32_reduce_pairs). */
static const int q32_lane_row[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/* v[i]: rows 2i and 2i + 1's 4 lane sums each ([row 2i | row 2i + 1]) ->
 * lane l: the total of row q32_lane_row[l]. Exact integer adds. */
Q32_INLINE __m256i q32_reduce_pairs(const __m256i v[4]) {
  /* per 128-bit half: rows 0, 0, 2, 2 | 1, 1, 3, 3 (and 4..7) */
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  return _mm256_hadd_epi32(h01, h23);
}

/* t[l]: 8 lane sums each -> lane l: their total (Q8_0 and Q6_K, whose
 * products leave no room to add two rows in 16 bits). In two steps, so
 * callers can pair rows as they make them (8 live vectors leave few
 * registers for the work): h[i] = vphaddd of t[2i], t[2i + 1], then
 * q32_reduce_halves(h); q32_reduce8 does both. */
Q32_INLINE __m256i q32_reduce_halves(const __m256i h[4]) {
  /* per 128-bit half: t 0..3 (4..7), each the half's 4 lanes summed */
  const __m256i lo = _mm256_hadd_epi32(h[0], h[1]), hi = _mm256_hadd_epi32(h[2], h[3]);
  return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x21), _mm256_blend_epi32(lo, hi, 0xF0));
}
Q32_INLINE __m256i q32_reduce8(const __m256i t[8]) {
  const __m256i h[4] = {_mm256_hadd_epi32(t[0], t[1]), _mm256_hadd_epi32(t[2], t[3]), _mm256_hadd_epi32(t[4], t[5]),
                        _mm256_hadd_epi32(t[6], t[7])};
  return q32_reduce_halves(h);
}

/* Two rows' 16-bit pair sums of w * qa over block b0 / b1 of a nibble type
 * as [row 0 | row 1], 8 each. The 16 qs bytes of both rows share one
 * vector: their low nibbles meet the activations' elements 0..15 (alo, in
 * both halves), their high nibbles 16..31 (ahi); each sum adds two
 * vpmaddubsw pair sums: |sum| <= 2 * 2 * 15 * 128 = 7680 (Q4), 15872 (Q5),
 * 12288 (MXFP4's level + 12 <= 24). */
Q32_INLINE __m256i q32_pair_sums(const uint8_t *b0, const uint8_t *b1, __m256i alo, __m256i ahi, const q32_kind kd) {
  const __m256i x = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(b0 + kd.qs))),
      _mm_loadu_si128((const __m128i *)(const void *)(b1 + kd.qs)), 1);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i lo = _mm256_and_si256(x, nib), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
  if (Q32_IS_MX(kd)) lo = q32_mx_levels(lo), hi = q32_mx_levels(hi);
  if (kd.qh) { /* bit i of qh is element i: 0..15 go with lo, 16..31 with hi */
    uint32_t h0, h1;
    memcpy(&h0, b0 + kd.qh, 4);
    memcpy(&h1, b1 + kd.qh, 4);
    /* both rows' bits in every qword, one broadcast for both vectors: lo's
     * byte i takes byte i / 8 of h0 (low half) or of h1 (high half), hi's
     * byte 2 + i / 8 */
    const __m256i both = _mm256_set1_epi64x((long long)((uint64_t)h1 << 32 | h0));
    const __m256i at_lo = _mm256_setr_epi64x(0, 0x0101010101010101ll, 0x0404040404040404ll, 0x0505050505050505ll);
    const __m256i at_hi = _mm256_setr_epi64x(0x0202020202020202ll, 0x0303030303030303ll, 0x0606060606060606ll,
                                             0x0707070707070707ll);
    lo = _mm256_or_si256(lo, q32_spread_0x10(_mm256_shuffle_epi8(both, at_lo)));
    hi = _mm256_or_si256(hi, q32_spread_0x10(_mm256_shuffle_epi8(both, at_hi)));
  }
  return _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi));
}

/* v[i]: rows 2i and 2i + 1's pair sums (q32_pair_sums) -> lane l: the
 * block sum of row q32_lane_row[l], as q32_reduce_pairs leaves it. The
 * first vphaddw halves the 16-bit sums' count (per 128-bit half: rows 0, 2
 * | 1, 3, 4 sums each); Q4's sums stay in 16 bits through a second
 * (|sum| <= 4 * 7680 = 30720), Q5's and MXFP4's widen after the first (2 *
 * 15872 and 2 * 12288 > 32767 would not). Exact integer adds either way. */
Q32_INLINE __m256i q32_reduce_pair_sums(const __m256i v[4], const q32_kind kd) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i h01 = _mm256_hadd_epi16(v[0], v[1]), h23 = _mm256_hadd_epi16(v[2], v[3]);
  if (!Q32_WIDE(kd)) return _mm256_madd_epi16(_mm256_hadd_epi16(h01, h23), ones);
  return _mm256_hadd_epi32(_mm256_madd_epi16(h01, ones), _mm256_madd_epi16(h23, ones));
}

/* The f16 at offset `at` of the 8 rows (in lane order), widened: words
 * gathered in general registers (the vector ports stay with the dots). */
Q32_INLINE __m256 q32_f16x8(const uint8_t *const rows[8], int64_t at) {
  uint64_t lo = 0, hi = 0;
  for (int r = 0; r < 4; ++r) {
    lo |= (uint64_t)q32_le16(rows[r] + at) << (16 * r);
    hi |= (uint64_t)q32_le16(rows[4 + r] + at) << (16 * r);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

/* Q4_1 / Q5_1: the f16 d and min (adjacent: one dword per row) of the 8
 * rows at offset `at`, widened into *d and *m. */
Q32_INLINE void q32_f16x8_dm(const uint8_t *const rows[8], int64_t at, __m256 *d, __m256 *m) {
  uint64_t u[4];
  for (int i = 0; i < 4; ++i) {
    uint32_t lo, hi;
    memcpy(&lo, rows[2 * i] + at, 4);
    memcpy(&hi, rows[2 * i + 1] + at, 4);
    u[i] = (uint64_t)hi << 32 | lo;
  }
  /* [d m] of 4 rows per vector -> [4 d | 4 m] */
  const __m128i split = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const __m128i x = _mm_shuffle_epi8(_mm_set_epi64x((long long)u[1], (long long)u[0]), split);
  const __m128i y = _mm_shuffle_epi8(_mm_set_epi64x((long long)u[3], (long long)u[2]), split);
  *d = _mm256_cvtph_ps(_mm_unpacklo_epi64(x, y));
  *m = _mm256_cvtph_ps(_mm_unpackhi_epi64(x, y));
}

/* Per activation row and block: the bias term, d and s (matrix-vector). */
static int q32_mv_prepare(qk_q32_ctx *x) {
  const qk_act *act = &x->b.act;
  const int64_t m = act->m, nb = x->nb, lanes = act->kpad / 4;
  x->b.mem = tp_temp_alloc((size_t)(m * nb) * (sizeof(int32_t) + 2 * sizeof(float)));
  if (!x->b.mem) return 0;
  x->corr = (int32_t *)x->b.mem;
  x->da = (float *)(void *)(x->corr + m * nb);
  x->sa = x->da + m * nb;
  for (int64_t c = 0; c < m; ++c)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t l = c * lanes + 8 * b;
      int32_t s = 0;
      if (x->kind.bias)
        for (int i = 0; i < 8; ++i) s += act->init[l + i];
      x->corr[c * nb + b] = s;
      x->da[c * nb + b] = act->d[l];
      x->sa[c * nb + b] = x->kind.min ? act->g[l] * 8.0f : 0.0f; /* Q8_1's s, kept as s / 8 per lane (exact) */
    }
  return 1;
}

Q32_INLINE void q32_mv_panels(qk_q32_ctx *x, int64_t p0, int64_t p1, const q32_kind kd) {
  const tp_qk_task *t = x->b.task;
  const qk_act *act = &x->b.act;
  const int64_t nb = x->nb, kpad = act->kpad;
  const qk8_fetch plan = qk8_fetch_plan(t, kd.bytes, p0);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 8;
    const uint8_t *rows[8], *lanes[8];
    const int nr = qk8_panel_rows(t, n0, rows);
    const uint8_t *ahead = qk8_panel_ahead(t, n0);
    for (int l = 0; l < 8; ++l) lanes[l] = rows[q32_lane_row[l]];
    for (int64_t c = 0; c < t->m; ++c) {
      const int8_t *aq = act->q + c * kpad;
      const int32_t *corr = x->corr + c * nb;
      const float *da = x->da + c * nb, *sa = x->sa + c * nb;
      __m256 f = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t at = b * kd.bytes;
        if (c == 0) qk8_fetch_lines(ahead, &plan, b, 0, plan.lines);
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(aq + 32 * b));
        const __m256i alo = _mm256_permute2x128_si256(a, a, 0x00), ahi = _mm256_permute2x128_si256(a, a, 0x11);
        __m256i isum;
        if (Q32_IS_Q8(kd)) {
          __m256i t8[8];
#pragma GCC unroll 8
          for (int l = 0; l < 8; ++l) t8[l] = q32_dot(q32_elems(lanes[l] + at, kd), a, kd);
          isum = q32_reduce8(t8);
        } else {
          __m256i v[4];
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) v[i] = q32_pair_sums(rows[2 * i] + at, rows[2 * i + 1] + at, alo, ahi, kd);
          isum = q32_reduce_pair_sums(v, kd);
        }
        if (kd.bias) isum = _mm256_add_epi32(isum, _mm256_set1_epi32(corr[b]));
        __m256 dw, mw = _mm256_setzero_ps();
        if (kd.min == 2) q32_f16x8_dm(lanes, at, &dw, &mw);
        else if (Q32_IS_MX(kd)) dw = q32_e8m0x8(lanes, at);
        else dw = q32_f16x8(lanes, at);
        f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(da[b])), f);
        if (kd.min) f = _mm256_fmadd_ps(mw, _mm256_set1_ps(sa[b]), f);
      }
      qk8_store_rows(t, c, n0, nr, q32_lane_row, f);
    }
  }
}

static void q32_mv_q8_0(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_Q8_0); }
static void q32_mv_q4_0(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_Q4_0); }
static void q32_mv_q5_0(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_Q5_0); }
static void q32_mv_q4_1(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_Q4_1); }
static void q32_mv_q5_1(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_Q5_1); }
static void q32_mv_mxfp4(void *x, int64_t p0, int64_t p1) { q32_mv_panels(x, p0, p1, Q32_MXFP4); }

/* ---- tile: Q32_TR weight rows x two groups of 8 activation rows -------- */

/* The activations as the tile reads them, a group of 8 rows per call. */
static void q32_tile_prepare_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_q32_ctx *x = vctx;
  const qk_act *act = &x->b.act;
  const int64_t m = act->m, nb = x->nb, kpad = act->kpad, lanes = kpad / 4;
  const int q8 = Q32_IS_Q8(x->kind);
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      int8_t *dst = x->au + (size_t)(g * nb + b) * Q32_CELL_BYTES(x->kind);
      const size_t cell = (size_t)(g * nb + b) * 8;
      for (int64_t l = 0; l < 8; ++l) {
        const int64_t c = 8 * g + l;
        /* a part-filled last group: zero rows (qa NULL), their outputs dropped */
        const int8_t *qa = c < m ? act->q + c * kpad + 32 * b : NULL;
        if (q8) qk8_repack_lane16((int16_t *)(void *)dst, qa, l);
        else qk8_repack_lane(dst, qa, l, 8);
        if (!qa) {
          x->gda[cell + l] = x->gsa[cell + l] = 0.0f;
          x->gcorr[cell + l] = 0;
          continue;
        }
        int32_t corr = 0;
        if (x->kind.bias)
          for (int i = 0; i < 8; ++i) corr += act->init[c * lanes + 8 * b + i];
        x->gcorr[cell + l] = corr;
        x->gda[cell + l] = act->d[c * lanes + 8 * b];
        x->gsa[cell + l] = x->kind.min ? act->g[c * lanes + 8 * b] * 8.0f : 0.0f;
      }
    }
}

static int q32_tile_prepare(qk_q32_ctx *x) {
  const int64_t nb = x->nb;
  x->groups = (x->b.act.m + 7) / 8;
  const size_t cells = (size_t)(x->groups * nb);
  x->b.mem = tp_temp_alloc(cells * (size_t)Q32_CELL_BYTES(x->kind) + cells * 8 * (2 * sizeof(float) + sizeof(int32_t)));
  if (!x->b.mem) return 0;
  x->gda = (float *)x->b.mem;
  x->gsa = x->gda + cells * 8;
  x->gcorr = (int32_t *)(void *)(x->gsa + cells * 8);
  x->au = (int8_t *)(void *)(x->gcorr + cells * 8);
  tp_qk_parallel_for(x->b.task->threads, x->groups, 1, q32_tile_prepare_groups, x);
  return 1;
}

/* One block of the tile's integer sums, acc[r][v] += the block's products of
 * weight row r with activation group v < NG (a0, a1: the groups' cells; NG
 * 1 or 2, a constant). Q8_0: 16 steps of 2 int16 elements, one vpmaddwd
 * each (|sum| <= 32 * 128 * 127, exact); w[r]: 64 bytes per block. */
Q32_INLINE void q32_tile_block_q8(__m256i acc[Q32_TR][2], const uint8_t *const w[Q32_TR], int64_t b,
                                  const int8_t *a0, const int8_t *a1, const int NG) {
#pragma GCC unroll 16
  for (int s = 0; s < 16; ++s) {
    const __m256i u0 = _mm256_loadu_si256((const __m256i *)(const void *)(a0 + 32 * s));
    const __m256i u1 = NG > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(a1 + 32 * s)) : u0;
#pragma GCC unroll 4
    for (int r = 0; r < Q32_TR; ++r) {
      int32_t wd;
      memcpy(&wd, w[r] + 64 * b + 4 * s, 4);
      const __m256i wb = _mm256_set1_epi32(wd);
      acc[r][0] = QK_DPWSSD(acc[r][0], wb, u0);
      if (NG > 1) acc[r][1] = QK_DPWSSD(acc[r][1], wb, u1);
    }
  }
}

/* The nibble types: 8 steps of 4 elements (w[r]: 32 bytes per block), the
 * vpmaddubsw pair sums added in 16 bits and widened every `flush` steps. */
Q32_INLINE void q32_tile_block_nibbles(__m256i acc[Q32_TR][2], const uint8_t *const w[Q32_TR], int64_t b,
                                       const int8_t *a0, const int8_t *a1, int flush, const int NG) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i p16[Q32_TR][2];
  for (int r = 0; r < Q32_TR; ++r) p16[r][0] = p16[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const __m256i u0 = _mm256_loadu_si256((const __m256i *)(const void *)(a0 + 32 * s));
    const __m256i u1 = NG > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(a1 + 32 * s)) : u0;
#pragma GCC unroll 4
    for (int r = 0; r < Q32_TR; ++r) {
      int32_t wd;
      memcpy(&wd, w[r] + 32 * b + 4 * s, 4);
      const __m256i wb = _mm256_set1_epi32(wd);
      p16[r][0] = _mm256_add_epi16(p16[r][0], _mm256_maddubs_epi16(wb, u0));
      QK_KEEP_IN_REGISTER(p16[r][0]);
      if (NG > 1) {
        p16[r][1] = _mm256_add_epi16(p16[r][1], _mm256_maddubs_epi16(wb, u1));
        QK_KEEP_IN_REGISTER(p16[r][1]);
      }
      if ((s + 1) % flush == 0) {
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(p16[r][0], ones));
        if (NG > 1) acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(p16[r][1], ones));
        p16[r][0] = p16[r][1] = _mm256_setzero_si256();
      }
    }
  }
}

/* f[r][v] for weight rows w[r] (decoded: q32_tile_block_*) and activation
 * groups g0 .. g0 + NG - 1 (NG 1 or 2, a constant: a single group, as a
 * mixture's expert with at most 8 rows has, does half the products; f[r][1]
 * is then left as it was). */
Q32_INLINE void q32_tile_ng(const qk_q32_ctx *x, const uint8_t *const w[Q32_TR], const float *dw, const float *mw,
                            int64_t g0, const q32_kind kd, __m256 f[Q32_TR][2], const int NG) {
  const int64_t nb = x->nb;
  for (int r = 0; r < Q32_TR; ++r) f[r][0] = f[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const size_t cell0 = (size_t)(g0 * nb + b), cell1 = NG > 1 ? cell0 + (size_t)nb : cell0;
    __m256i acc[Q32_TR][2];
    for (int r = 0; r < Q32_TR; ++r) { /* the bias correction, where the type has one */
      acc[r][0] = kd.bias ? _mm256_loadu_si256((const __m256i *)(const void *)(x->gcorr + 8 * cell0)) : _mm256_setzero_si256();
      acc[r][1] = kd.bias && NG > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(x->gcorr + 8 * cell1))
                                    : acc[r][0];
    }
    const int8_t *a0 = x->au + Q32_CELL_BYTES(kd) * cell0, *a1 = x->au + Q32_CELL_BYTES(kd) * cell1;
    if (Q32_IS_Q8(kd)) q32_tile_block_q8(acc, w, b, a0, a1, NG);
    else q32_tile_block_nibbles(acc, w, b, a0, a1, Q32_WIDE(kd) ? 4 : 8, NG); /* steps whose pair sums add in 16 bits */
    const __m256 d0 = _mm256_loadu_ps(x->gda + 8 * cell0), d1 = NG > 1 ? _mm256_loadu_ps(x->gda + 8 * cell1) : d0;
#pragma GCC unroll 4
    for (int r = 0; r < Q32_TR; ++r) {
      const __m256 sw = _mm256_set1_ps(dw[r * nb + b]);
      f[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][0]), _mm256_mul_ps(sw, d0), f[r][0]);
      if (NG > 1) f[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][1]), _mm256_mul_ps(sw, d1), f[r][1]);
    }
    if (kd.min) {
      const __m256 s0 = _mm256_loadu_ps(x->gsa + 8 * cell0), s1 = NG > 1 ? _mm256_loadu_ps(x->gsa + 8 * cell1) : s0;
#pragma GCC unroll 4
      for (int r = 0; r < Q32_TR; ++r) {
        const __m256 mv = _mm256_set1_ps(mw[r * nb + b]);
        f[r][0] = _mm256_fmadd_ps(mv, s0, f[r][0]);
        if (NG > 1) f[r][1] = _mm256_fmadd_ps(mv, s1, f[r][1]);
      }
    }
  }
}

Q32_INLINE void q32_tile(const qk_q32_ctx *x, const uint8_t *const w[Q32_TR], const float *dw, const float *mw,
                         int64_t g0, int ng, const q32_kind kd, __m256 f[Q32_TR][2]) {
  if (ng > 1) q32_tile_ng(x, w, dw, mw, g0, kd, f, 2);
  else q32_tile_ng(x, w, dw, mw, g0, kd, f, 1);
}

Q32_INLINE void q32_tile_panels(qk_q32_ctx *x, int64_t p0, int64_t p1, const q32_kind kd) {
  const tp_qk_task *t = x->b.task;
  const int64_t nb = x->nb;
  const int q8 = Q32_IS_Q8(kd);
  /* per row: d, min, then the decoded blocks (Q8_0: w as int16), one cache
   * line more than they need apart: at 32 * nb bytes (4 KiB once K is a
   * multiple of 4096) the tile's 4-8 weight streams would share one L1 set
   * (Q8_0 at K = 4096: 50 against 58 GMAC/s) */
  const size_t drs = (size_t)nb * (q8 ? 64 : 32) + 64;
  float *dw = tp_temp_alloc((size_t)(Q32_TR * nb) * 2 * sizeof(float) + (size_t)Q32_TR * drs);
  if (!dw) {
    x->b.failed = 1;
    return;
  }
  float *mw = dw + Q32_TR * nb;
  uint8_t *dec = (uint8_t *)(void *)(mw + Q32_TR * nb);
  uint8_t *w[Q32_TR];
  for (int r = 0; r < Q32_TR; ++r) w[r] = dec + (size_t)r * drs;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * Q32_TR;
    const int nr = (int)(t->n - n0 < Q32_TR ? t->n - n0 : Q32_TR);
    for (int r = 0; r < Q32_TR; ++r) {
      const uint8_t *row = (const uint8_t *)t->w + (size_t)(n0 + (r < nr ? r : nr - 1)) * t->row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t *blk = row + b * kd.bytes;
        const __m256i q = q32_elems(blk, kd);
        if (q8) {
          _mm256_storeu_si256((__m256i *)(void *)(w[r] + 64 * b), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
          _mm256_storeu_si256((__m256i *)(void *)(w[r] + 64 * b + 32), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)));
        } else {
          _mm256_storeu_si256((__m256i *)(void *)(w[r] + 32 * b), q);
        }
        dw[r * nb + b] = Q32_IS_MX(kd) ? tp_e8m0_half(blk[0]) : QK_F16_TO_F32((uint16_t)q32_le16(blk));
        mw[r * nb + b] = kd.min ? QK_F16_TO_F32((uint16_t)q32_le16(blk + kd.min)) : 0.0f;
      }
    }
    for (int64_t g0 = 0; g0 < x->groups; g0 += 2) {
      const int ng = x->groups - g0 >= 2 ? 2 : 1;
      __m256 f[Q32_TR][2];
      q32_tile(x, (const uint8_t *const *)w, dw, mw, g0, ng, kd, f);
      qk8_store_tile(t, n0, nr, g0, ng, (const __m256(*)[2])f);
    }
  }
  tp_temp_free(dw);
}

static void q32_tile_q8_0(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_Q8_0); }
static void q32_tile_q4_0(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_Q4_0); }
static void q32_tile_q5_0(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_Q5_0); }
static void q32_tile_q4_1(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_Q4_1); }
static void q32_tile_q5_1(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_Q5_1); }
static void q32_tile_mxfp4(void *x, int64_t p0, int64_t p1) { q32_tile_panels(x, p0, p1, Q32_MXFP4); }

/* Below this m the matrix-vector kernel runs, from it the tile (the same
 * bits either way). MXFP4 from 8: its tile's 16-bit sums widen every 4
 * steps and an 8-row group of m = 4 is half empty, while its matrix-vector
 * kernel costs about m times its m = 1 (AVX2 cap on Sapphire Rapids, one
 * thread, m x 2880 x 2880, matrix-vector against tile: m = 4 786 against
 * 1440 us, 7 1386 against 1455, 8 1598 against 1461; the engine body
 * before this kernel 1337 at m = 4). */
static inline int64_t q32_mv_max_m(topos_dtype w) { return w == TOPOS_MXFP4 ? 8 : Q32_MV_MAX_M; }

/* Whether the block-sum kernels serve the task. */
static int qk_q32_serves(const tp_qk_task *t) {
  const topos_dtype w = t->wtype;
  return (w == TOPOS_Q8_0 || w == TOPOS_Q4_0 || w == TOPOS_Q5_0 || w == TOPOS_Q4_1 || w == TOPOS_Q5_1 ||
          w == TOPOS_MXFP4) &&
         t->k % 32 == 0;
}

/* x for weights of t's type (qk_q32_serves) with t's activations prepared
 * for the kernel m calls for; *mv / *tile: the range functions. 0: out of
 * memory. qk8_end frees it. */
static int qk_q32_begin(const tp_qk_task *t, qk_q32_ctx *x, tp_qk_range_fn *mv, tp_qk_range_fn *tile,
                        const qk_act *same) {
  memset(x, 0, sizeof *x);
  switch (t->wtype) {
    case TOPOS_Q4_0: x->kind = Q32_Q4_0, *mv = q32_mv_q4_0, *tile = q32_tile_q4_0; break;
    case TOPOS_Q5_0: x->kind = Q32_Q5_0, *mv = q32_mv_q5_0, *tile = q32_tile_q5_0; break;
    case TOPOS_Q4_1: x->kind = Q32_Q4_1, *mv = q32_mv_q4_1, *tile = q32_tile_q4_1; break;
    case TOPOS_Q5_1: x->kind = Q32_Q5_1, *mv = q32_mv_q5_1, *tile = q32_tile_q5_1; break;
    case TOPOS_MXFP4: x->kind = Q32_MXFP4, *mv = q32_mv_mxfp4, *tile = q32_tile_mxfp4; break;
    default: x->kind = Q32_Q8_0, *mv = q32_mv_q8_0, *tile = q32_tile_q8_0; break;
  }
  x->nb = t->k / 32;
  if (!qk8_begin(t, &x->b, same)) return 0;
  if (t->m < q32_mv_max_m(t->wtype) ? q32_mv_prepare(x) : q32_tile_prepare(x)) return 1;
  qk_act_free(&x->b.act);
  return 0;
}

#endif
