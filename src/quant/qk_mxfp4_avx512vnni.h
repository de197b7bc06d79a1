/* MXFP4 weights (gpt-oss's experts) in the AVX-512 VNNI block-sum family
 * (included by qk_block32_avx512vnni.h, whose pieces it uses): a
 * matrix-vector kernel for m < QK_C (decoding) and the rows' decoder for
 * the family's tile (m >= QK_C: q80_tile over the levels in Q8_0's layout).
 * Both give that family's definition with MXFP4's block scale:
 *     acc = 0;  for each block b in order:  acc = fma(float(isum_b), dw_b * da_b, acc)
 * with isum_b the exact integer dot of the block's 32 levels (the doubled
 * E2M1 values, tp_mxfp4_level) and the Q8_0 activation's 32 values, dw_b =
 * 2^(e_b - 128) (tp_e8m0_half) and da_b the activation's f16 scale —
 * also the AMX tiles' definition (qk_amx_body.h: a chunk is a block, the
 * scale product and fma the same), so the rows of a prompt and of decoding
 * agree bit for bit on every route of this file.
 *
 * Lanes are 16 weight rows, four blocks per step as the nibble types' steps
 * (q4_rows / q4_tail): each row's four blocks of qs are packed into one
 * vector (q4_pack, 16 bytes at 17 j + 1); one byte shuffle per half turns
 * the nibbles into level + 12 (0..24, vpdpbusd's unsigned operand), and the
 * step's init term, -12 times the activations' sums (q4_steps_arrange with
 * bias 12), makes each lane sum exact in levels. A block's 16 exponents (one
 * byte per row, 17 bytes apart in a row) come by one dword gather over the
 * rows, widened to f32 scales in registers (qk_e8m0_half16).
 *
 * Measured (bench-qmatmul --fast-only, Sapphire Rapids, one thread, shared
 * machine): 1 x 2880 x 2880 in 178-182 us where the engine body's tiles took
 * 573 (Q4_0's kernel 163-170); 1 x 4096 x 4096 380-392 us (Q4_0 367-382).
 * Exponents from one more 64-byte load per row, an in-lane shuffle to its
 * dword and a transpose like the sums' cost 186-192 us; without exponents
 * at all (wrong, for the bound) 151 us. */
#ifndef TP_QUANT_QK_MXFP4_AVX512VNNI_H
#define TP_QUANT_QK_MXFP4_AVX512VNNI_H

#include "quant/mxfp4.h"

#define MX_BLOCK 17 /* e, then 16 bytes of nibbles */
#define B32_MXFP4 ((b32_kind){MX_BLOCK, 1, 0, TP_MXFP4_BIAS, 0, 0})

/* A row for the tile: Q8_0's layout with the 32 levels as int8 (the f16 d
 * slot unused) and the blocks' scales in dw. */
static void mx_decode_row(const uint8_t *src, int64_t nb, uint8_t *dst, float *dw) {
  const __m128i lut = _mm_setr_epi8(TP_MXFP4_LEVELS), m = _mm_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b, src += MX_BLOCK, dst += Q80_BLOCK) {
    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + 1));
    dw[b] = tp_e8m0_half(src[0]);
    dst[0] = dst[1] = 0;
    _mm_storeu_si128((__m128i *)(void *)(dst + 2), _mm_shuffle_epi8(lut, _mm_and_si128(x, m)));
    _mm_storeu_si128((__m128i *)(void *)(dst + 18), _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(x, 4), m)));
  }
}

/* Constants of a range: the level table (+ bias) in every 128-bit lane, the nibble mask. */
typedef struct {
  __m512i lut, nib;
} mx_consts;

static inline mx_consts mx_consts_make(void) {
  mx_consts k;
  k.lut = _mm512_broadcast_i32x4(_mm_add_epi8(_mm_setr_epi8(TP_MXFP4_LEVELS), _mm_set1_epi8(TP_MXFP4_BIAS)));
  k.nib = _mm512_set1_epi8(0x0F);
  return k;
}

/* One row's step over nq blocks at span: its lane sums (lane 4j + i: 8
 * products of block j). Loads stay inside the nq blocks. */
static inline __attribute__((always_inline)) __m512i mx_row(const uint8_t *span, int nq, const mx_consts *k,
                                                            __m512i init, __m512i alo, __m512i ahi) {
  const __m512i q = q4_pack(span, MX_BLOCK, 1, nq);
  const __m512i lo = _mm512_shuffle_epi8(k->lut, _mm512_and_si512(q, k->nib));
  const __m512i hi = _mm512_shuffle_epi8(k->lut, _mm512_and_si512(_mm512_srli_epi16(q, 4), k->nib));
  return qk_dpbusd(qk_dpbusd(init, lo, alo), hi, ahi);
}

/* The integer half of a step over blocks b .. b + nq - 1 (av: the step's
 * activation vectors): per four rows their exact block sums; per block the
 * 16 rows' exponents, each in the low byte of a dword gathered at its
 * block's start (offs: the rows' offsets from rows[0]; a dword stays inside
 * the 17-byte block). */
static inline __attribute__((always_inline)) void mx_rows(const uint8_t *const rows[16], int64_t b, int nq,
                                                          const uint8_t *av, const mx_consts *k, const b32_ahead *ahead,
                                                          __m512i offs, __m512i sums[4], __m512i heads[4]) {
  const __m512i alo = _mm512_loadu_si512(av), ahi = _mm512_loadu_si512(av + 64), iv = _mm512_loadu_si512(av + 128);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i s[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      if (ahead->by_address) b32_fetch_ahead(ahead, b / 4, 4 * i + r, 4 * MX_BLOCK);
      else b32_fetch_row(ahead, 4 * i + r, b * MX_BLOCK);
      s[r] = mx_row(rows[4 * i + r] + b * MX_BLOCK, nq, k, iv, alo, ahi);
    }
    sums[i] = q4_quad_sums(s);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j)
    heads[j] = j < nq ? _mm512_i32gather_epi32(offs, (const void *)(rows[0] + (b + j) * MX_BLOCK), 1) : offs;
}

/* The float half: the blocks' terms, in order, into *f. */
static inline __attribute__((always_inline)) void mx_tail(const __m512i sums[4], const __m512i heads[4], int64_t b,
                                                          int nq, const float *da, __m512 *f) {
  __m512i bs[4];
  q4_lanes_transpose(sums, bs);
#pragma GCC unroll 4
  for (int j = 0; j < nq; ++j) {
    const __m512 dw = qk_e8m0_half16(_mm512_and_si512(heads[j], _mm512_set1_epi32(0xFF)));
    *f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(bs[j]), _mm512_mul_ps(dw, _mm512_set1_ps(da[8 * (b + j)])), *f);
  }
}

static void b32_mv_range_mxfp4(void *vx, int64_t p0, int64_t p1) {
  qk_q80_ctx *x = vx;
  const tp_qk_task *t = x->task;
  const qk_act *act = &x->act;
  const int64_t nb = x->nb, lanes = act->kpad / 4, nsteps = (nb + 3) / 4;
  const mx_consts k = mx_consts_make();
  b32_prefetch_first_panels(t, p0);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16;
    const uint8_t *base, *rows[16];
    const int nr = b16_panel(t, n0, &base, rows);
    /* rows[r]'s offset (a short panel repeats its last row); int32: k is gatherable (qk_kernel_of) */
    const __m512i r16 = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i offs =
        _mm512_mullo_epi32(_mm512_min_epi32(r16, _mm512_set1_epi32(nr - 1)), _mm512_set1_epi32((int)t->row_bytes));
    const b32_ahead ahead = {n0 + 32 < t->n ? base + (size_t)32 * t->row_bytes : NULL,
                             (const uint8_t *)t->w + (size_t)t->n * t->row_bytes, (int64_t)t->row_bytes,
                             x->by_address};
    const b32_ahead none = {NULL, NULL, 0, 0};
    for (int64_t c = 0; c < t->m; ++c) {
      const float *da = act->d + c * lanes;
      const uint8_t *av = x->steps + (size_t)(c * nsteps) * Q4_STEP_BYTES;
      const b32_ahead *pf = c == 0 ? &ahead : &none;
      __m512 f = _mm512_setzero_ps();
      __m512i s0[4], h0[4], s1[4], h1[4];
      /* pipelined as the nibble types' steps: a step's rows, then the
       * previous step's float terms; full steps with nq a constant 4 */
      if (nb >= 4) mx_rows(rows, 0, 4, av, &k, pf, offs, s0, h0);
      else mx_rows(rows, 0, (int)nb, av, &k, &none, offs, s0, h0);
      int64_t b = 4;
      for (; b + 4 <= nb; b += 4) {
        av += Q4_STEP_BYTES;
        mx_rows(rows, b, 4, av, &k, pf, offs, s1, h1);
        mx_tail(s0, h0, b - 4, 4, da, &f);
        for (int i = 0; i < 4; ++i) s0[i] = s1[i], h0[i] = h1[i];
      }
      if (b < nb) {
        av += Q4_STEP_BYTES;
        mx_rows(rows, b, (int)(nb - b), av, &k, &none, offs, s1, h1);
        mx_tail(s0, h0, b - 4, 4, da, &f);
        mx_tail(s1, h1, b, (int)(nb - b), da, &f);
      } else {
        mx_tail(s0, h0, b - 4, nb < 4 ? (int)nb : 4, da, &f);
      }
      b16_store(t, c, n0, nr, f);
    }
  }
}

#endif
