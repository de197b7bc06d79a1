/* AMX-INT8 route for the K-quant weights (included by
 * qk_avx512vnni.c after qk_amx_body.h and qk_ksum_avx512vnni.h), computing
 * the super-block definition of qk_ksum_avx512vnni.h — exact integers isc
 * (and imn) per super-block, then acc = fma(float(isc), d * da, acc) and,
 * for Q4_K / Q5_K, one fnmadd of float(imn) * (dmin * da) — so its bits are
 * those of the VNNI kernels at every m (decoding included) and thread count.
 *
 * The generic AMX route (qk_amx_body.h) takes one tile product per 32
 * elements (16 for Q6_K) and a float epilogue per product: 16 x 16
 * conversions, scale products and fmas, which cost more than the tiles (Q4_K
 * 512 x 2048 x 2048 at one thread: 9.8 ms, of which the epilogue ~4.0, the
 * products ~1.9, the tile stores ~1.4). Here the integer sub-block scales go
 * into the weights instead, split into digits small enough that digit times
 * q fits a byte: the panel holds one byte image of the weights per digit,
 * the tile products accumulate over the whole super-block, and the
 * epilogue runs once per super-block:
 *  - Q4_K / Q5_K (6-bit scales, q up to 15 or 31): sc = 2^s * hi + lo (s =
 *    4 or 3), images q * lo and q * hi (at most 225 or 217: unsigned bytes
 *    for tdpbusd), isc = C_lo + 2^s * C_hi; imn is four vpdpwssd per row of
 *    the activations' paired sub-block sums with the paired mins;
 *  - Q6_K (int8 scales, q - 32 in -32..31): balanced base-7 digits, below. */
#ifndef TP_QUANT_QK_AMX_KSUM_H
#define TP_QUANT_QK_AMX_KSUM_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  qk_ks_ctx ks;   /* kind, nsb, bb, the Q8_K activations, failed */
  qk_amx_act amx; /* B tiles of 64 elements and da, per group and chunk */
  int32_t *bp;    /* [group][sb][pair p][16] = B_2p (low word) | B_2p+1 << 16, B_j a sub-block's sum of qa */
} qk_aks_ctx;

/* How a type's sub-block scales go into the images: two unsigned images
 * q * lo and q * hi (Q4_K, Q5_K: tdpbusd), two signed ones (Q3_K:
 * (q - 4) * lo and (q - 4) * hi, tdpbssd), or one unsigned image q * sc
 * (Q2_K: at most 3 * 15). */
typedef enum { AKS_U2, AKS_S2, AKS_U1 } aks_mode;

/* Tiles (qk_amx_configure_full): tmm0, tmm1: C_lo, C_hi of set 0; tmm2,
 * tmm3: of set 1 (one super-block's products run while the other's are
 * stored); tmm4, tmm5: A_lo, A_hi (16 weight rows x 64 bytes); tmm6: B
 * (16 x 64). AKS_U1 uses C_lo and A_lo only. */

/* One super-block's products into set `set`: 4 chunks of 64 elements of the
 * lo and hi images (rows `stride` apart) against the 4 B tiles at b. */
#define AKS_CHUNK(op, c0, c1)                                                                 \
  "tileloadd (%0,%2,1), %%tmm4\n\ttileloadd (%1,%2,1), %%tmm5\n\ttileloadd (%3,%4,1), %%tmm6\n\t" \
  op " %%tmm6, %%tmm4, %%" c0 "\n\t" op " %%tmm6, %%tmm5, %%" c1 "\n\t"
#define AKS_CHUNK1(c0) "tileloadd (%0,%2,1), %%tmm4\n\ttileloadd (%3,%4,1), %%tmm6\n\ttdpbusd %%tmm6, %%tmm4, %%" c0 "\n\t"
static inline __attribute__((always_inline)) void aks_products(int set, const uint8_t *lo, const uint8_t *hi,
                                                               int64_t stride, const int8_t *b, const aks_mode mode) {
  const int64_t bstride = 64;
  if (set == 0) __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1" ::: "memory");
  else __asm__ volatile("tilezero %%tmm2\n\ttilezero %%tmm3" ::: "memory");
  for (int c = 0; c < 4; ++c) {
    const uint8_t *l = lo + 64 * c, *h = hi + 64 * c;
    const int8_t *bc = b + 1024 * c;
    if (mode == AKS_U2 && set == 0)
      __asm__ volatile(AKS_CHUNK("tdpbusd", "tmm0", "tmm1") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
    else if (mode == AKS_U2)
      __asm__ volatile(AKS_CHUNK("tdpbusd", "tmm2", "tmm3") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
    else if (mode == AKS_S2 && set == 0)
      __asm__ volatile(AKS_CHUNK("tdpbssd", "tmm0", "tmm1") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
    else if (mode == AKS_S2)
      __asm__ volatile(AKS_CHUNK("tdpbssd", "tmm2", "tmm3") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
    else if (set == 0)
      __asm__ volatile(AKS_CHUNK1("tmm0") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
    else
      __asm__ volatile(AKS_CHUNK1("tmm2") : : "r"(l), "r"(h), "r"(stride), "r"(bc), "r"(bstride) : "memory");
  }
}
#undef AKS_CHUNK1
#undef AKS_CHUNK

static inline __attribute__((always_inline)) void aks_store(int set, int32_t *c, const aks_mode mode) {
  const int64_t stride = 64;
  if (mode == AKS_U1 && set == 0)
    __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
  else if (mode == AKS_U1)
    __asm__ volatile("tilestored %%tmm2, (%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
  else if (set == 0)
    __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilestored %%tmm1, 1024(%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
  else
    __asm__ volatile("tilestored %%tmm2, (%0,%1,1)\n\ttilestored %%tmm3, 1024(%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
}

/* A panel row's per-super-block factors: d, dmin and the paired mins. */
typedef struct {
  float *d, *dmin;
  int32_t *mnp; /* [sb][pair p] = m_2p | m_2p+1 << 16 (8 pairs a super-block; Q4_K / Q5_K use 4) */
} aks_row;

/* c * i for c, i < 16 (at most 225: a byte), the product table of the
 * images: row c is the vpshufb table of the factor c. */
static const uint8_t aks_mul[16][16] = {
#define AKS_ROW(c) {0 * c, 1 * c, 2 * c, 3 * c, 4 * c, 5 * c, 6 * c, 7 * c, 8 * c, 9 * c, 10 * c, 11 * c, 12 * c, 13 * c, 14 * c, 15 * c}
    AKS_ROW(0),  AKS_ROW(1),  AKS_ROW(2),  AKS_ROW(3),  AKS_ROW(4),  AKS_ROW(5),  AKS_ROW(6),  AKS_ROW(7),
    AKS_ROW(8),  AKS_ROW(9),  AKS_ROW(10), AKS_ROW(11), AKS_ROW(12), AKS_ROW(13), AKS_ROW(14), AKS_ROW(15)
#undef AKS_ROW
};

/* [table of a, twice | table of b, twice]: vpshufb's 128-bit lanes. */
static inline __m512i aks_tables(int a, int b) {
  const __m256i ta = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)aks_mul[a]));
  const __m256i tb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)aks_mul[b]));
  return _mm512_inserti64x4(_mm512_castsi256_si512(ta), tb, 1);
}

/* Sub-blocks j and j + 1 of one image: q * f for the nibbles v ([j | j + 1],
 * 32 bytes each) and factors f_j, f_j+1; Q5_K's fifth bits (five: their
 * 64-bit mask) add 16 * f where set. */
static inline __m512i aks_image(__m512i v, int fa, int fb, int five, uint64_t bits) {
  __m512i p = _mm512_shuffle_epi8(aks_tables(fa, fb), v);
  if (five) {
    const __m512i add = _mm512_inserti64x4(_mm512_set1_epi8((char)(16 * fa)), _mm256_set1_epi8((char)(16 * fb)), 1);
    p = _mm512_mask_add_epi8(p, (__mmask64)bits, p, add);
  }
  return p;
}

/* One row's super-blocks into its lo and hi images (element order) and
 * factors. The 32 qs bytes c hold sub-block 2c in their low nibbles and
 * 2c + 1 in their high ones; Q5_K's bit 4 of sub-block j is bit j of qh[l]. */
static void aks_decode_row(const uint8_t *src, int64_t nsb, int64_t bb, int five, uint8_t *lo, uint8_t *hi,
                           aks_row *out) {
  const int shift = five ? 3 : 4, mask = (1 << shift) - 1;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t *blk = src + sb * bb, *qs = blk + (five ? 48 : 16);
    out->d[sb] = qk_f16(blk);
    out->dmin[sb] = qk_f16(blk + 2);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) qk_scale_min_k4(j, blk + 4, &sc[j], &mn[j]);
    for (int p = 0; p < 4; ++p) out->mnp[8 * sb + p] = mn[2 * p] | mn[2 * p + 1] << 16;
    uint32_t fifth[8] = {0};
    if (five) {
      const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16));
      for (int j = 0; j < 8; ++j) /* bit j of each byte to its top bit */
        fifth[j] = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(qh, 7 - j));
    }
    for (int c = 0; c < 2; ++c) { /* 64 qs bytes: sub-blocks 4c .. 4c + 3 */
      const __m512i x = _mm512_loadu_si512(qs + 64 * c);
      const __m512i ql = _mm512_and_si512(x, nib), qh4 = _mm512_and_si512(_mm512_srli_epi16(x, 4), nib);
      const __m512i a = _mm512_shuffle_i64x2(ql, qh4, _MM_SHUFFLE(1, 0, 1, 0)); /* [4c | 4c + 1] */
      const __m512i b = _mm512_shuffle_i64x2(ql, qh4, _MM_SHUFFLE(3, 2, 3, 2)); /* [4c + 2 | 4c + 3] */
      const int j = 4 * c;
      const uint64_t ma = (uint64_t)fifth[j] | (uint64_t)fifth[j + 1] << 32;
      const uint64_t mb = (uint64_t)fifth[j + 2] | (uint64_t)fifth[j + 3] << 32;
      uint8_t *l = lo + 256 * sb + 128 * c, *h = hi + 256 * sb + 128 * c;
      _mm512_storeu_si512(l, aks_image(a, sc[j] & mask, sc[j + 1] & mask, five, ma));
      _mm512_storeu_si512(l + 64, aks_image(b, sc[j + 2] & mask, sc[j + 3] & mask, five, mb));
      _mm512_storeu_si512(h, aks_image(a, sc[j] >> shift, sc[j + 1] >> shift, five, ma));
      _mm512_storeu_si512(h + 64, aks_image(b, sc[j + 2] >> shift, sc[j + 3] >> shift, five, mb));
    }
  }
}

/* (i - 4) * f for i = 0..7 (then zeros), f = -4..7: Q3_K's signed image
 * factors (lo digits 0..7, hi digits -4..3), row f + 4 the vpshufb table. */
#define AKS3_ROW(f) {-4 * (f), -3 * (f), -2 * (f), -(f), 0, (f), 2 * (f), 3 * (f), 0, 0, 0, 0, 0, 0, 0, 0}
static const int8_t aks3_mul[12][16] = {AKS3_ROW(-4), AKS3_ROW(-3), AKS3_ROW(-2), AKS3_ROW(-1),
                                        AKS3_ROW(0),  AKS3_ROW(1),  AKS3_ROW(2),  AKS3_ROW(3),
                                        AKS3_ROW(4),  AKS3_ROW(5),  AKS3_ROW(6),  AKS3_ROW(7)};
#undef AKS3_ROW

/* Four 16-byte tables as the 128-bit lanes of one vector (lane i: t_i). */
static inline __m512i aks_lanes4(const void *t0, const void *t1, const void *t2, const void *t3) {
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)t0));
  v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)t1), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)t2), 2);
  return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)t3), 3);
}

/* One Q2_K or Q3_K row: element order (ks_q23_vec: a 128-bit lane of run v
 * is sub-block 4v + lane), an image byte is q times its sub-block's factor
 * by one vpshufb per 64 elements. Q2_K: lo = q * sc (the 4-bit scale),
 * d, dmin and the 8 pairs of 4-bit mins; Q3_K (sc = 8 hi + lo, lo 0..7,
 * hi -4..3): lo = (q - 4) * lo and hi = (q - 4) * hi as signed bytes
 * (within -28..21), isc = C_lo + 8 C_hi, and d. */
static void aks_decode_q23_row(const uint8_t *src, int64_t nsb, int64_t bb, int three, uint8_t *lo, uint8_t *hi,
                               aks_row *out) {
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t *blk = src + sb * bb;
    int8_t sc[16];
    ks_q23_factors(blk, three, sc, &out->d[sb], &out->dmin[sb], out->mnp + 8 * sb);
    for (int v = 0; v < 4; ++v) {
      const __m512i q = ks_q23_vec(blk, v, three);
      const int8_t *f = sc + 4 * v;
      uint8_t *l = lo + 256 * sb + 64 * v, *h = hi + 256 * sb + 64 * v;
      if (three) {
        _mm512_storeu_si512(l, _mm512_shuffle_epi8(aks_lanes4(aks3_mul[(f[0] & 7) + 4], aks3_mul[(f[1] & 7) + 4],
                                                              aks3_mul[(f[2] & 7) + 4], aks3_mul[(f[3] & 7) + 4]), q));
        _mm512_storeu_si512(h, _mm512_shuffle_epi8(aks_lanes4(aks3_mul[(f[0] >> 3) + 4], aks3_mul[(f[1] >> 3) + 4],
                                                              aks3_mul[(f[2] >> 3) + 4], aks3_mul[(f[3] >> 3) + 4]), q));
      } else {
        _mm512_storeu_si512(l, _mm512_shuffle_epi8(aks_lanes4(aks_mul[f[0]], aks_mul[f[1]], aks_mul[f[2]], aks_mul[f[3]]), q));
      }
    }
  }
}

/* The panel at row n0 (nr real rows, the last repeated): the images [16][k]
 * and the rows' factors. */
static void aks_decode_panel(const qk_aks_ctx *x, int64_t n0, int nr, uint8_t *lo, uint8_t *hi, aks_row rw[16]) {
  const tp_qk_task *t = x->ks.task;
  const int64_t k = t->k;
  const ks_kind kd = x->ks.kind;
  for (int r = 0; r < 16; ++r) {
    const int64_t row = n0 + (r < nr ? r : nr - 1);
    const uint8_t *src = (const uint8_t *)t->w + (size_t)row * t->row_bytes;
    uint8_t *l = lo + (size_t)r * (size_t)k, *h = hi + (size_t)r * (size_t)k;
    if (kd == KS_Q2_K || kd == KS_Q3_K) aks_decode_q23_row(src, x->ks.nsb, x->ks.bb, kd == KS_Q3_K, l, h, &rw[r]);
    else aks_decode_row(src, x->ks.nsb, x->ks.bb, kd == KS_Q5_K, l, h, &rw[r]);
  }
}

/* The float steps of super-block sb for one group: isc from the stored
 * C_lo (and C_hi: cb), imn (MINP pairs: 4, 8, or 0 for none) from the
 * activations' pair sums (bp: this group's and super-block's MINP x 16)
 * and the rows' paired mins. */
static inline __attribute__((always_inline)) void aks_epilogue(const aks_row rw[16], int64_t sb, const int32_t *cb,
                                                               const int32_t *bp, __m512 da, int shift,
                                                               __m512 acc[16], const aks_mode mode, const int MINP) {
  __m512i b[8];
  for (int p = 0; p < MINP; ++p) b[p] = _mm512_loadu_si512(bp + 16 * p);
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r) {
    __m512i isc = _mm512_load_si512((const void *)(cb + 16 * r));
    if (mode != AKS_U1)
      isc = _mm512_add_epi32(isc, _mm512_slli_epi32(_mm512_load_si512((const void *)(cb + 256 + 16 * r)), (unsigned)shift));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc), _mm512_mul_ps(_mm512_set1_ps(rw[r].d[sb]), da), acc[r]);
    if (MINP) {
      const int32_t *mp = rw[r].mnp + 8 * sb;
      __m512i imn = _mm512_setzero_si512();
      for (int p = 0; p < MINP; ++p) imn = qk_dpwssd(imn, b[p], _mm512_set1_epi32(mp[p]));
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imn), _mm512_mul_ps(_mm512_set1_ps(rw[r].dmin[sb]), da), acc[r]);
    }
  }
}

static inline __attribute__((always_inline)) void aks_range(void *vctx, int64_t p0, int64_t p1, const aks_mode mode,
                                                            const int MINP) {
  qk_aks_ctx *x = vctx;
  const tp_qk_task *t = x->ks.task;
  const qk_amx_act *aa = &x->amx;
  const int64_t nsb = x->ks.nsb, k = t->k;
  const int shift = x->ks.kind == KS_Q4_K ? 4 : 3; /* Q5_K, Q3_K: 8 hi + lo */
  const size_t img = (size_t)16 * (size_t)k, facts = (size_t)(16 * nsb) * 10 * sizeof(float);
  uint8_t *mem = tp_temp_alloc(2 * img + facts + 1024 * sizeof(int32_t) + 64);
  if (!mem) {
    x->ks.failed = 1;
    return;
  }
  uint8_t *lo = mem, *hi = lo + img;
  aks_row rw[16];
  for (int r = 0; r < 16; ++r) {
    float *f = (float *)(void *)(hi + img) + (size_t)(r * nsb) * 10;
    rw[r] = (aks_row){f, f + nsb, (int32_t *)(void *)(f + 2 * nsb)};
  }
  int32_t *cbuf = (int32_t *)(void *)(((uintptr_t)(hi + img + facts) + 63) & ~(uintptr_t)63);
  qk_amx_configure_full();
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
    aks_decode_panel(x, n0, nr, lo, hi, rw);
    /* the next panel, a slice per super-block through every group (as the
     * generic route fetches its next panel) */
    int64_t pf_step = 0;
    const uint8_t *pf = qk_amx_next_panel(t, n0, aa->groups * nsb, &pf_step);
    for (int64_t g = 0; g < aa->groups; ++g) {
      __m512 acc[16];
      for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
      const size_t cell0 = (size_t)(g * aa->chunks); /* chunks = 4 * nsb */
      aks_products(0, lo, hi, k, aa->tiles + cell0 * 1024, mode);
      /* super-block s's tiles are stored an iteration after their products
       * were issued, and its float steps run an iteration later still */
      for (int64_t s = 0; s <= nsb; ++s) {
        if (s < nsb) aks_store((int)(s & 1), cbuf + (s & 1) * 512, mode);
        if (s + 1 < nsb)
          aks_products((int)((s + 1) & 1), lo + 256 * (s + 1), hi + 256 * (s + 1), k,
                       aa->tiles + (cell0 + 4 * (size_t)(s + 1)) * 1024, mode);
        if (s < nsb) qk_prefetch_slice(pf, g * nsb + s, pf_step);
        if (s == 0) continue;
        const int64_t sb = s - 1;
        const __m512 da = _mm512_loadu_ps(aa->d + (cell0 + 4 * (size_t)sb) * 16);
        const int32_t *bp = MINP ? x->bp + (g * nsb + sb) * 128 : NULL; /* Q3_K has no sums */
        aks_epilogue(rw, sb, cbuf + (sb & 1) * 512, bp, da, shift, acc, mode, MINP);
      }
      qk_amx_write(t, g, n0, nr, acc);
    }
  }
  qk_amx_release();
  tp_temp_free(mem);
}
static void aks_range_k45(void *x, int64_t p0, int64_t p1) { aks_range(x, p0, p1, AKS_U2, 4); }
static void aks_range_q2(void *x, int64_t p0, int64_t p1) { aks_range(x, p0, p1, AKS_U1, 8); }
static void aks_range_q3(void *x, int64_t p0, int64_t p1) { aks_range(x, p0, p1, AKS_S2, 0); }

/* The activations' sub-block sums B_j (rows past m: 0), paired as words for
 * vpdpwssd, a group of 16 rows per call (Q4_K / Q5_K: 8 sub-blocks of 32,
 * 4 pairs; Q2_K: 16 of 16, 8 pairs). |B_j| <= 32 * 128: a word. */
static void aks_pairs_groups(void *vctx, int64_t g0, int64_t g1) {
  qk_aks_ctx *x = vctx;
  const qk_act *act = &x->ks.act;
  const int64_t nsb = x->ks.nsb;
  /* the group's 16 rows side by side: 4 bytes of each by one gather (rows
   * past m masked off: they read 0), summed by vpdpbusd against ones */
  const __m512i qoff = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32((int)act->kpad));
  const __m512i ones = _mm512_set1_epi8(1), low = _mm512_set1_epi32(0xFFFF);
  const int len = ks_subs16(x->ks.kind) ? 16 : 32, pairs = 128 / len;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t valid = act->m - 16 * g < 16 ? act->m - 16 * g : 16;
    const __mmask16 mask = (__mmask16)((1u << valid) - 1u);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      int32_t *bp = x->bp + (g * nsb + sb) * 128;
      const int8_t *q = act->q + 16 * g * act->kpad + 256 * sb;
      for (int pr = 0; pr < pairs; ++pr) {
        __m512i b[2];
        for (int h = 0; h < 2; ++h) {
          b[h] = _mm512_setzero_si512();
          for (int t = 0; t < len / 4; ++t)
            b[h] = qk_dpbusd(b[h], ones,
                             _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, qoff, q + len * (2 * pr + h) + 4 * t, 1));
        }
        _mm512_storeu_si512((void *)(bp + 16 * pr), _mm512_or_si512(_mm512_and_si512(b[0], low), _mm512_slli_epi32(b[1], 16)));
      }
    }
  }
}

/* ---- Q6_K: int8 scales against q - 32 ------------------------------------
 * A 16-element sub-block's scale sc (-128..127) splits into balanced base-7
 * digits, sc = 49 a + 7 b + c with a, b, c in -3..3, so the three images
 * (q - 32) * c, * b, * a stay within +-96 (signed bytes for tdpbssd), and
 *     isc = C_c + 7 * (C_b + 7 * C_a)     (exact: |isc| < 2^28)
 * against the activations' signed bytes: the super-block definition of
 * Q6_K (no min term). Three tile products per 64 elements, float steps once
 * per super-block where the generic route ran them every 16 elements. */

/* Balanced base-7 digits of sc = (int8)i: bytes c, b, a. */
#define AKS6_BAL(s) (((((s) % 7) + 7) % 7 + 3) % 7 - 3)
#define AKS6_HI(s) (((s) - AKS6_BAL(s)) / 7)
#define AKS6_ENTRY(s)                                                                       \
  ((uint32_t)(uint8_t)AKS6_BAL(s) | (uint32_t)(uint8_t)AKS6_BAL(AKS6_HI(s)) << 8 |          \
   (uint32_t)(uint8_t)((AKS6_HI(s) - AKS6_BAL(AKS6_HI(s))) / 7) << 16)
#define AKS6_E(i) AKS6_ENTRY((i) < 128 ? (i) : (i) - 256)
#define AKS6_E4(i) AKS6_E(i), AKS6_E((i) + 1), AKS6_E((i) + 2), AKS6_E((i) + 3)
#define AKS6_E16(i) AKS6_E4(i), AKS6_E4((i) + 4), AKS6_E4((i) + 8), AKS6_E4((i) + 12)
#define AKS6_E64(i) AKS6_E16(i), AKS6_E16((i) + 16), AKS6_E16((i) + 32), AKS6_E16((i) + 48)
static const uint32_t aks6_digits[256] = {AKS6_E64(0), AKS6_E64(64), AKS6_E64(128), AKS6_E64(192)};
#undef AKS6_E64
#undef AKS6_E16
#undef AKS6_E4
#undef AKS6_E
#undef AKS6_ENTRY
#undef AKS6_HI
#undef AKS6_BAL

/* x * f bytewise for x in -32..31 and per-byte factors f in -3..3 (x2, x3:
 * 2x and 3x, precomputed). */
static inline __m512i aks6_times(__m512i x, __m512i x2, __m512i x3, __m512i f) {
  const __m512i af = _mm512_abs_epi8(f);
  __m512i r = _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(af, _mm512_set1_epi8(1)), x);
  r = _mm512_mask_mov_epi8(r, _mm512_cmpeq_epi8_mask(af, _mm512_set1_epi8(2)), x2);
  r = _mm512_mask_mov_epi8(r, _mm512_cmpeq_epi8_mask(af, _mm512_set1_epi8(3)), x3);
  return _mm512_mask_sub_epi8(r, _mm512_movepi8_mask(f), _mm512_setzero_si512(), r);
}

/* One Q6_K row: its three images (image i at img + i * istride: digits c,
 * b, a) and d. */
static void aks6_decode_row(const uint8_t *src, int64_t nsb, int64_t bb, size_t istride, uint8_t *img, float *d) {
  const __m512i b32 = _mm512_set1_epi8(32);
  /* byte b of 128-bit lane l: l (the sub-block's place in a 64-element run) */
  const __m512i lanes = _mm512_set_epi64(0x0303030303030303ll, 0x0303030303030303ll, 0x0202020202020202ll,
                                         0x0202020202020202ll, 0x0101010101010101ll, 0x0101010101010101ll, 0, 0);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t *blk = src + sb * bb;
    d[sb] = qk_f16(blk + 208);
    /* the 16 scales' digits, one byte plane per image */
    const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192)));
    const __m512i dg = _mm512_i32gather_epi32(idx, (const void *)aks6_digits, 4);
    const __m512i planes[3] = {_mm512_broadcast_i32x4(_mm512_cvtepi32_epi8(dg)),
                               _mm512_broadcast_i32x4(_mm512_cvtepi32_epi8(_mm512_srli_epi32(dg, 8))),
                               _mm512_broadcast_i32x4(_mm512_cvtepi32_epi8(_mm512_srli_epi32(dg, 16)))};
    for (int h = 0; h < 2; ++h) {
      __m512i q[2];
      mv_q6k_chunks(blk + 64 * h, blk + 128 + 32 * h, &q[0], &q[1]); /* elements 128h + 0..63, + 64..127 */
      for (int u = 0; u < 2; ++u) {
        const int v = 2 * h + u; /* elements 64v .. 64v + 63: sub-blocks 4v .. 4v + 3 */
        const __m512i x = _mm512_sub_epi8(q[u], b32);
        const __m512i x2 = _mm512_add_epi8(x, x), x3 = _mm512_add_epi8(x2, x);
        const __m512i spread = _mm512_add_epi8(lanes, _mm512_set1_epi8((char)(4 * v)));
        for (int i = 0; i < 3; ++i) {
          const __m512i f = _mm512_shuffle_epi8(planes[i], spread); /* each byte: its sub-block's digit */
          _mm512_storeu_si512(img + (size_t)i * istride + (size_t)(256 * sb + 64 * v), aks6_times(x, x2, x3, f));
        }
      }
    }
  }
}

/* Tiles (qk_amx_configure_full): tmm0-2: C_c, C_b, C_a; tmm3-5: A of the
 * three images (rows k apart, images 16k apart); tmm6: B. One C set: a
 * super-block's stores are issued before the next one's products (the tile
 * unit runs in order). */
static inline void aks6_products(const uint8_t *img, int64_t k, const int8_t *b) {
  const int64_t bstride = 64;
  __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2" ::: "memory");
  for (int c = 0; c < 4; ++c) {
    const uint8_t *i0 = img + 64 * c, *i1 = i0 + 16 * k, *i2 = i1 + 16 * k;
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm6" : : "r"(b + 1024 * c), "r"(bstride) : "memory");
    __asm__ volatile("tileloadd (%0,%3,1), %%tmm3\n\ttileloadd (%1,%3,1), %%tmm4\n\ttileloadd (%2,%3,1), %%tmm5\n\t"
                     "tdpbssd %%tmm6, %%tmm3, %%tmm0\n\ttdpbssd %%tmm6, %%tmm4, %%tmm1\n\ttdpbssd %%tmm6, %%tmm5, %%tmm2"
                     : : "r"(i0), "r"(i1), "r"(i2), "r"(k) : "memory");
  }
}

static inline void aks6_store(int32_t *c) {
  const int64_t stride = 64;
  __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilestored %%tmm1, 1024(%0,%1,1)\n\t"
                   "tilestored %%tmm2, 2048(%0,%1,1)" : : "r"(c), "r"(stride) : "memory");
}

static void aks6_range(void *vctx, int64_t p0, int64_t p1) {
  qk_aks_ctx *x = vctx;
  const tp_qk_task *t = x->ks.task;
  const qk_amx_act *aa = &x->amx;
  const int64_t nsb = x->ks.nsb, k = t->k;
  const size_t img = (size_t)16 * (size_t)k; /* one image of the panel: [16][k] */
  uint8_t *mem = tp_temp_alloc(3 * img + (size_t)(16 * nsb) * sizeof(float) + 2 * 768 * sizeof(int32_t) + 64);
  if (!mem) {
    x->ks.failed = 1;
    return;
  }
  float *d = (float *)(void *)(mem + 3 * img);
  int32_t *cbuf = (int32_t *)(void *)(((uintptr_t)(d + 16 * nsb) + 63) & ~(uintptr_t)63);
  qk_amx_configure_full();
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const int nr = (int)(t->n - n0 < 16 ? t->n - n0 : 16);
    /* image i of row r at mem + i * 16k + r * k: rows k apart per image */
    for (int r = 0; r < 16; ++r) {
      const int64_t row = n0 + (r < nr ? r : nr - 1);
      aks6_decode_row((const uint8_t *)t->w + (size_t)row * t->row_bytes, nsb, x->ks.bb, img,
                      mem + (size_t)r * (size_t)k, d + r * nsb);
    }
    int64_t pf_step = 0;
    const uint8_t *pf = qk_amx_next_panel(t, n0, aa->groups * nsb, &pf_step);
    for (int64_t g = 0; g < aa->groups; ++g) {
      __m512 acc[16];
      for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
      const size_t cell0 = (size_t)(g * aa->chunks);
      aks6_products(mem, k, aa->tiles + cell0 * 1024);
      for (int64_t s = 0; s <= nsb; ++s) {
        if (s < nsb) aks6_store(cbuf + (s & 1) * 768);
        if (s + 1 < nsb) aks6_products(mem + 256 * (s + 1), k, aa->tiles + (cell0 + 4 * (size_t)(s + 1)) * 1024);
        if (s < nsb) qk_prefetch_slice(pf, g * nsb + s, pf_step);
        if (s == 0) continue;
        const int64_t sb = s - 1;
        const int32_t *cb = cbuf + (sb & 1) * 768;
        const __m512 da = _mm512_loadu_ps(aa->d + (cell0 + 4 * (size_t)sb) * 16);
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) {
          const __m512i cc = _mm512_load_si512((const void *)(cb + 16 * r));
          const __m512i cbv = _mm512_load_si512((const void *)(cb + 256 + 16 * r));
          const __m512i ca = _mm512_load_si512((const void *)(cb + 512 + 16 * r));
          const __m512i t7 = _mm512_add_epi32(cbv, _mm512_sub_epi32(_mm512_slli_epi32(ca, 3), ca)); /* C_b + 7 C_a */
          const __m512i isc = _mm512_add_epi32(cc, _mm512_sub_epi32(_mm512_slli_epi32(t7, 3), t7));
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc), _mm512_mul_ps(_mm512_set1_ps(d[r * nsb + sb]), da), acc[r]);
        }
      }
      qk_amx_write(t, g, n0, nr, acc);
    }
  }
  qk_amx_release();
  tp_temp_free(mem);
}

/* t: K-quant weights, k % 256 == 0, AMX granted. */
static topos_status qk_aks_run(const tp_qk_task *t) {
  qk_aks_ctx x;
  memset(&x, 0, sizeof x);
  tp_qk_traits tr;
  tp_qk_traits_of(t->wtype, &tr);
  tr.has_min = 0; /* the min term is taken in integers (bp) */
  x.ks.task = t;
  x.ks.kind = ks_kind_of(t->wtype, &x.ks.bb);
  x.ks.nsb = t->k / 256;
  const int six = x.ks.kind == KS_Q6_K, mins = ks_has_min(x.ks.kind);
  if (!qk_act_prepare(&tr, t->a, t->m, t->k, &x.ks.act, t->threads))
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activations %lld x %lld", (long long)t->m, (long long)t->k);
  topos_status st = TOPOS_OK;
  if (!qk_amx_act_prepare(&x.ks.act, &tr, 64, t->threads, &x.amx)) {
    st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activation tiles %lld x %lld", (long long)t->m, (long long)t->k);
  } else if (mins && !(x.bp = tp_temp_alloc((size_t)(x.amx.groups * x.ks.nsb * 128) * sizeof(int32_t)))) {
    st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: activation sums %lld x %lld", (long long)t->m, (long long)t->k);
  } else {
    if (mins) tp_qk_parallel_for(t->threads, x.amx.groups, 1, aks_pairs_groups, &x);
    tp_qk_parallel_for(t->threads, (t->n + 15) / 16, 1 + ((int64_t)1 << 16) / (16 * t->k * t->m),
                       six                          ? aks6_range
                       : x.ks.kind == KS_Q2_K ? aks_range_q2
                       : x.ks.kind == KS_Q3_K ? aks_range_q3
                                              : aks_range_k45,
                       &x);
    if (x.ks.failed) st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul: weight panel buffer");
  }
  tp_temp_free(x.bp);
  tp_temp_free(x.amx.mem);
  qk_act_free(&x.ks.act);
  return st;
}


#endif
