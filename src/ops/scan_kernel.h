/* Internal: the selective scan's work (ops/scan.c) and its kernel instances:
 * scan_template.h compiled once for the baseline ISA (scan.c) and once with
 * AVX2 (scan_avx2.c, chosen at run time). Both do the same float operations
 * in the same order per element, so their bits are the same. */
#ifndef TP_OPS_SCAN_KERNEL_H
#define TP_OPS_SCAN_KERNEL_H

#include <stdint.h>

/* channels of one head scanned together (scan_template.h) */
#define TP_SCAN_LANES 16

/* ssm_scan: xa [T, H, P + R], bc [T, 2, G, N] (B, C); delta_scan (delta):
 * xa = vab [T, H, P + R + 1] (v, R decays, beta), bc = qk [T, 2, G, N] (q,
 * k); R = 1 or N decays; out [T + N, H, P], the state rows from T */
typedef struct tp_scan_job {
  const float *s0; /* the state before the chunk [N, H, P] (read, not copied: each block
                    * packs its rows from here and leaves its final state in out) */
  const float *xa, *bc;
  float *out;
  int64_t T, N, H, P, R, G;
  int delta;
} tp_scan_job;

/* tp_range_fn over work items [i0, i1) of a tp_scan_job (either op): item
 * i is head i / blocks, channels [16 (i % blocks), +16) (blocks = ceil(P /
 * 16)) */
void tp_scan_items_base(void *job, int64_t i0, int64_t i1);
void tp_scan_items_avx2(void *job, int64_t i0, int64_t i1);

#endif
