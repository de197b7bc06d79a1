/* STREAM-style read: sum every 64-bit word of a buffer far larger than the
 * caches. The loads are the widest the CPU has: a scalar loop (what gcc
 * makes of plain C at the baseline ISA) drew 11.0 GB/s from one core of an
 * Emerald Rapids Xeon where 512-bit loads drew 19.9 and the decoding
 * kernels themselves 13.9, so a scalar "bound" flattered decode by ~1.8x. */
#define _GNU_SOURCE
#include "bench/stream.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/cpu.h"
#include "tools/cli.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SB_X86 1
#endif

typedef struct sb_part {
  const uint64_t *p;
  size_t n; /* words, a multiple of 32 */
  uint64_t sum;
} sb_part;

static uint64_t sb_sum_scalar(const uint64_t *p, size_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  return s0 + s1 + s2 + s3;
}

#ifdef SB_X86
__attribute__((target("avx2"))) static uint64_t sb_sum_avx2(const uint64_t *p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 16) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(p + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(p + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(p + i + 12)));
  }
  uint64_t lanes[4];
  _mm256_storeu_si256((__m256i *)lanes,
                      _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

__attribute__((target("avx512f"))) static uint64_t sb_sum_avx512(const uint64_t *p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 24));
  }
  return (uint64_t)_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}
#endif

static void *sb_read(void *arg) {
  sb_part *part = arg;
#ifdef SB_X86
  if (tp_cpu_has_avx512_set())
    part->sum = sb_sum_avx512(part->p, part->n);
  else if (tp_cpu_has_avx2_set())
    part->sum = sb_sum_avx2(part->p, part->n);
  else
#endif
    part->sum = sb_sum_scalar(part->p, part->n);
  return NULL;
}

double tp_bench_stream_read(int threads) {
  const size_t words = (size_t)256 << 17; /* 256 MiB */
  /* On 2 MiB pages where the system grants them, as the model's mapping asks
   * for (io/gguf_reader.c): on 4 KiB pages the read ran 15 % slower (14.9
   * against 17.5 GB/s, one thread, Sapphire Rapids). */
  const size_t huge = (size_t)2 << 20;
  uint64_t *buf = aligned_alloc(huge, words * sizeof *buf);
  if (!buf) return 0;
#ifdef MADV_HUGEPAGE
  madvise(buf, words * sizeof *buf, MADV_HUGEPAGE); /* a hint: where refused, 4 KiB pages */
#endif
  for (size_t i = 0; i < words; ++i) buf[i] = i;
  if (threads < 1) threads = 1;
  if (threads > 16) threads = 16;
  const size_t per = words / (size_t)threads / 32 * 32;
  double best = 1e30;
  uint64_t sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    sb_part parts[16];
    pthread_t tid[16];
    int made[16] = {0};
    double t0 = tp_cli_now();
    for (int t = 0; t < threads; ++t) parts[t] = (sb_part){buf + per * (size_t)t, per, 0};
    for (int t = 1; t < threads; ++t)
      made[t] = pthread_create(&tid[t], NULL, sb_read, &parts[t]) == 0;
    for (int t = 0; t < threads; ++t)
      if (!made[t]) sb_read(&parts[t]); /* the caller's part, and any thread refused */
    for (int t = 1; t < threads; ++t)
      if (made[t]) pthread_join(tid[t], NULL);
    double dt = tp_cli_now() - t0;
    for (int t = 0; t < threads; ++t) sink += parts[t].sum;
    if (dt < best) best = dt;
  }
  free(buf);
  if (sink == 42) fprintf(stderr, " "); /* keeps the sums alive */
  return (double)(per * (size_t)threads * sizeof(uint64_t)) / best;
}
