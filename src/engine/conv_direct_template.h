/* The f32 kernels of patterns conv_forward and conv_wgrad (see
 * patterns_conv_direct.c for what they replace and why the bits are the
 * composed formula's), compiled once per ISA file with TP_CD_SUFFIX defined.
 * Compiler vectors of 8 or 16 floats (AVX-512: one register; AVX2, SSE:
 * two or four); a multiply then an add, each rounded (-ffp-contract=off).
 *
 * Geometry: unit steps and dilations. Patch element (p, i), p = (b, oy, ox),
 * i = (c, kh, kw), is x[b, c, oy+kh-top, ox+kw-left], +0 outside x. */
#include <stdlib.h>
#include <string.h>

#include "engine/conv_direct.h"

#define TP_CD_CAT_(a, b) a##b
#define TP_CD_CAT(a, b) TP_CD_CAT_(a, b)

typedef float TP_CD_CAT(tp_cd_v16_, TP_CD_SUFFIX) __attribute__((vector_size(64)));
typedef int32_t TP_CD_CAT(tp_cd_m16_, TP_CD_SUFFIX) __attribute__((vector_size(64)));

#define TP_CD_FR 16
#define TP_CD_FNAME TP_CD_CAT(tp_cd_forward_f32_r16_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_FR
#undef TP_CD_FNAME
#define TP_CD_FR 8
#define TP_CD_FNAME TP_CD_CAT(tp_cd_forward_f32_r8_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_FR
#undef TP_CD_FNAME

int TP_CD_CAT(tp_cd_forward_f32_, TP_CD_SUFFIX)(const tp_cd_args *q, int64_t b0, int64_t b1) {
  return q->F <= 8 ? TP_CD_CAT(tp_cd_forward_f32_r8_, TP_CD_SUFFIX)(q, b0, b1)
                   : TP_CD_CAT(tp_cd_forward_f32_r16_, TP_CD_SUFFIX)(q, b0, b1);
}

#define TP_CD_WL 16
#define TP_CD_RB 24
#define TP_CD_WNAME TP_CD_CAT(tp_cd_wgrad_f32_w16_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_RB
#undef TP_CD_WNAME
#define TP_CD_RB 12
#define TP_CD_WNAME TP_CD_CAT(tp_cd_wgrad_f32_w16s_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_WL
#undef TP_CD_RB
#undef TP_CD_WNAME
#define TP_CD_WL 8
#define TP_CD_RB 12
#define TP_CD_WNAME TP_CD_CAT(tp_cd_wgrad_f32_w8_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_RB
#undef TP_CD_WNAME
#define TP_CD_RB 5
#define TP_CD_WNAME TP_CD_CAT(tp_cd_wgrad_f32_w8s_, TP_CD_SUFFIX)
#include "engine/conv_direct_kernels.h"
#undef TP_CD_WL
#undef TP_CD_RB
#undef TP_CD_WNAME

/* rows [i0, i1) in blocks of q->wgrad_rows (TP_CD_WGRAD_ROWS) */
int TP_CD_CAT(tp_cd_wgrad_f32_, TP_CD_SUFFIX)(const tp_cd_args *q, int64_t i0, int64_t i1) {
  if (q->F <= 8)
    return q->wgrad_rows == 5 ? TP_CD_CAT(tp_cd_wgrad_f32_w8s_, TP_CD_SUFFIX)(q, i0, i1)
                              : TP_CD_CAT(tp_cd_wgrad_f32_w8_, TP_CD_SUFFIX)(q, i0, i1);
  return q->wgrad_rows == 12 ? TP_CD_CAT(tp_cd_wgrad_f32_w16s_, TP_CD_SUFFIX)(q, i0, i1)
                             : TP_CD_CAT(tp_cd_wgrad_f32_w16_, TP_CD_SUFFIX)(q, i0, i1);
}
