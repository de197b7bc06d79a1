/* The selective scan's and the delta rule's kernels, instantiated per ISA:
 * define TP_SCAN_ITEMS_FN (the tp_range_fn's name) and TP_SCAN_VEC and
 * include (scan_kernel.h). */
#include <stdlib.h>
#include <string.h>

#include "ops/scan_kernel.h"

#ifndef TP_SCAN_ITEMS_FN
#error "define TP_SCAN_ITEMS_FN before including scan_template.h"
#endif

/* Channels [p0, p0 + L) of head h over every token, their state columns
 * packed in buf [N, L] first: in place, one channel block's N rows lie
 * H P floats apart (16 KB in a 64-head, 64-channel block), all in the same
 * few cache sets, and the scan ran 3 times slower. buf NULL: in place (no
 * memory for the packed block). The channels past the last whole block of
 * TP_SCAN_LANES, and every block without buf, take this path. */
static void tp_scan_lanes(const tp_scan_job *j, int64_t h, int64_t p0,
                                                                int64_t L, float *buf) {
  const int64_t T = j->T, N = j->N, H = j->H, P = j->P, R = j->R, G = j->G, W = P + R, g = h / (H / G);
  float *state = j->out + T * H * P + h * P + p0;
  const float *init = j->s0 + h * P + p0;
  const int64_t stride = buf ? L : H * P; /* between the block's rows of n */
  if (!buf) buf = state;
  for (int64_t n = 0; n < N; ++n) memcpy(buf + n * stride, init + n * H * P, (size_t)L * sizeof *buf);
  for (int64_t t = 0; t < T; ++t) {
    const float *u = j->xa + (t * H + h) * W, *decay = u + P;
    const float *restrict up = u + p0;
    const float *b = j->bc + (t * 2 * G + g) * N, *c = b + G * N;
    float y[TP_SCAN_LANES];
    for (int64_t n = 0; n < N; ++n) {
      float *restrict sn = buf + n * stride;
      const float a = decay[R == 1 ? 0 : n], bn = b[n], cn = c[n];
      for (int64_t k = 0; k < L; ++k) sn[k] = sn[k] * a + bn * up[k];
      if (n == 0) {
        for (int64_t k = 0; k < L; ++k) y[k] = cn * sn[k];
      } else {
        for (int64_t k = 0; k < L; ++k) y[k] = y[k] + cn * sn[k];
      }
    }
    memcpy(j->out + (t * H + h) * P + p0, y, (size_t)L * sizeof *y);
  }
  for (int64_t n = 0; buf != state && n < N; ++n) memcpy(state + n * H * P, buf + n * L, (size_t)L * sizeof *buf);
}

/* The same for a whole block of 16 channels with the outputs and the
 * inputs held in registers across the N state entries, as TP_SCAN_NV
 * vectors of TP_SCAN_VEC floats, the instance's register width (as an
 * array, y went through memory every entry: a store-to-load chain of ~10
 * cycles, and the scan ran at a third of this speed; vectors wider than the
 * ISA's were lowered through the stack). The lanes do the scalar
 * arithmetic above, element by element: the same bits. */
#ifndef TP_SCAN_VEC
#error "define TP_SCAN_VEC (floats per vector register) before including scan_template.h"
#endif
#define TP_SCAN_NV (TP_SCAN_LANES / TP_SCAN_VEC)
typedef float tp_scan_v __attribute__((vector_size(TP_SCAN_VEC * sizeof(float)), aligned(4), may_alias));

static inline void tp_scan_block(const tp_scan_job *j, int64_t h, int64_t p0, float *buf) {
  const int64_t T = j->T, N = j->N, H = j->H, P = j->P, R = j->R, G = j->G, W = P + R, g = h / (H / G);
  float *state = j->out + T * H * P + h * P + p0;
  const float *init = j->s0 + h * P + p0;
  for (int64_t n = 0; n < N; ++n) memcpy(buf + n * TP_SCAN_LANES, init + n * H * P, TP_SCAN_LANES * sizeof *buf);
  for (int64_t t = 0; t < T; ++t) {
    const float *u = j->xa + (t * H + h) * W, *decay = u + P;
    const float *b = j->bc + (t * 2 * G + g) * N, *c = b + G * N;
    const tp_scan_v *uv = (const tp_scan_v *)(u + p0);
    tp_scan_v *s = (tp_scan_v *)buf, ui[TP_SCAN_NV], y[TP_SCAN_NV];
    for (int v = 0; v < TP_SCAN_NV; ++v) { /* entry 0 seeds the sums */
      ui[v] = uv[v];
      s[v] = s[v] * decay[0] + b[0] * ui[v];
      y[v] = c[0] * s[v];
    }
    for (int64_t n = 1; n < N; ++n) {
      const float a = decay[R == 1 ? 0 : n], bn = b[n], cn = c[n];
      s += TP_SCAN_NV;
      for (int v = 0; v < TP_SCAN_NV; ++v) {
        const tp_scan_v sv = s[v] * a + bn * ui[v];
        s[v] = sv;
        y[v] = y[v] + cn * sv;
      }
    }
    tp_scan_v *out = (tp_scan_v *)(j->out + (t * H + h) * P + p0);
    for (int v = 0; v < TP_SCAN_NV; ++v) out[v] = y[v];
  }
  for (int64_t n = 0; n < N; ++n) memcpy(state + n * H * P, buf + n * TP_SCAN_LANES, TP_SCAN_LANES * sizeof *buf);
}

/* The gated delta rule's channels [p0, p0 + L) of head h (value channels:
 * the state's columns) over every token, the block's state packed in buf
 * [N, L] as the scan's (buf NULL: in place). Per token, with a[i] the decay
 * (one per head, R = 1, or one per key entry, R = N), beta, q and k the
 * head's group's rows:
 *   s[i] = s[i] a[i]; kv = k[0] s[0] + k[1] s[1] + ...   (ascending i)
 *   d = (v - kv) beta; s[i] = s[i] + k[i] d; y = q[0] s[0] + q[1] s[1] + ...
 * two passes over the block; each channel's arithmetic is its own. */
static void tp_delta_lanes(const tp_scan_job *j, int64_t h, int64_t p0, int64_t L, float *buf) {
  const int64_t T = j->T, N = j->N, H = j->H, P = j->P, R = j->R, G = j->G, g = h / (H / G);
  float *state = j->out + T * H * P + h * P + p0;
  const float *init = j->s0 + h * P + p0;
  const int64_t stride = buf ? L : H * P;
  if (!buf) buf = state;
  for (int64_t n = 0; n < N; ++n) memcpy(buf + n * stride, init + n * H * P, (size_t)L * sizeof *buf);
  for (int64_t t = 0; t < T; ++t) {
    const float *v = j->xa + (t * H + h) * (P + R + 1), *decay = v + P, beta = v[P + R];
    const float *q = j->bc + (t * 2 * G + g) * N, *k = q + G * N;
    float kv[TP_SCAN_LANES], d[TP_SCAN_LANES], y[TP_SCAN_LANES];
    for (int64_t n = 0; n < N; ++n) {
      float *restrict sn = buf + n * stride;
      const float a = decay[R == 1 ? 0 : n];
      for (int64_t c = 0; c < L; ++c) {
        sn[c] = sn[c] * a;
        kv[c] = n == 0 ? k[n] * sn[c] : kv[c] + k[n] * sn[c];
      }
    }
    for (int64_t c = 0; c < L; ++c) d[c] = (v[p0 + c] - kv[c]) * beta;
    for (int64_t n = 0; n < N; ++n) {
      float *restrict sn = buf + n * stride;
      for (int64_t c = 0; c < L; ++c) {
        sn[c] = sn[c] + k[n] * d[c];
        y[c] = n == 0 ? q[n] * sn[c] : y[c] + q[n] * sn[c];
      }
    }
    memcpy(j->out + (t * H + h) * P + p0, y, (size_t)L * sizeof *y);
  }
  for (int64_t n = 0; buf != state && n < N; ++n) memcpy(state + n * H * P, buf + n * L, (size_t)L * sizeof *buf);
}

/* The same for a whole block of 16 channels, in registers as tp_scan_block's */
static inline void tp_delta_block(const tp_scan_job *j, int64_t h, int64_t p0, float *buf) {
  const int64_t T = j->T, N = j->N, H = j->H, P = j->P, R = j->R, G = j->G, g = h / (H / G);
  float *state = j->out + T * H * P + h * P + p0;
  const float *init = j->s0 + h * P + p0;
  for (int64_t n = 0; n < N; ++n) memcpy(buf + n * TP_SCAN_LANES, init + n * H * P, TP_SCAN_LANES * sizeof *buf);
  for (int64_t t = 0; t < T; ++t) {
    const float *v = j->xa + (t * H + h) * (P + R + 1), *decay = v + P, beta = v[P + R];
    const float *q = j->bc + (t * 2 * G + g) * N, *k = q + G * N;
    const tp_scan_v *vv = (const tp_scan_v *)(v + p0);
    tp_scan_v *s = (tp_scan_v *)buf, kv[TP_SCAN_NV], d[TP_SCAN_NV], y[TP_SCAN_NV];
    for (int c = 0; c < TP_SCAN_NV; ++c) { /* entry 0 seeds the sums */
      s[c] = s[c] * decay[0];
      kv[c] = k[0] * s[c];
    }
    for (int64_t n = 1; n < N; ++n) {
      tp_scan_v *sn = s + n * TP_SCAN_NV;
      const float a = decay[R == 1 ? 0 : n];
      for (int c = 0; c < TP_SCAN_NV; ++c) {
        const tp_scan_v sv = sn[c] * a;
        sn[c] = sv;
        kv[c] = kv[c] + k[n] * sv;
      }
    }
    for (int c = 0; c < TP_SCAN_NV; ++c) {
      d[c] = (vv[c] - kv[c]) * beta;
      s[c] = s[c] + k[0] * d[c];
      y[c] = q[0] * s[c];
    }
    for (int64_t n = 1; n < N; ++n) {
      tp_scan_v *sn = s + n * TP_SCAN_NV;
      for (int c = 0; c < TP_SCAN_NV; ++c) {
        const tp_scan_v sv = sn[c] + k[n] * d[c];
        sn[c] = sv;
        y[c] = y[c] + q[n] * sv;
      }
    }
    tp_scan_v *out = (tp_scan_v *)(j->out + (t * H + h) * P + p0);
    for (int c = 0; c < TP_SCAN_NV; ++c) out[c] = y[c];
  }
  for (int64_t n = 0; n < N; ++n) memcpy(state + n * H * P, buf + n * TP_SCAN_LANES, TP_SCAN_LANES * sizeof *buf);
}

/* The packed block lives on the stack up to 512 state entries (32 KB), else
 * on the heap; without memory the block is scanned in place (the same bits). */
void TP_SCAN_ITEMS_FN(void *ctx, int64_t i0, int64_t i1) {
  const tp_scan_job *j = ctx;
  const int64_t blocks = (j->P + TP_SCAN_LANES - 1) / TP_SCAN_LANES;
  float local[512 * TP_SCAN_LANES], *heap = j->N > 512 ? malloc((size_t)(j->N * TP_SCAN_LANES) * sizeof *heap) : NULL;
  float *buf = j->N <= 512 ? local : heap;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t h = i / blocks, p0 = i % blocks * TP_SCAN_LANES;
    const int64_t L = p0 + TP_SCAN_LANES <= j->P ? TP_SCAN_LANES : j->P - p0;
    if (j->delta) {
      if (buf && L == TP_SCAN_LANES) tp_delta_block(j, h, p0, buf);
      else tp_delta_lanes(j, h, p0, L, buf);
    } else {
      if (buf && L == TP_SCAN_LANES) tp_scan_block(j, h, p0, buf);
      else tp_scan_lanes(j, h, p0, L, buf);
    }
  }
  free(heap);
}
