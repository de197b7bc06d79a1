/* STREAM-style read bandwidth, the ceiling decode is measured against (bench
 * llm, bench-qmatmul). */
#ifndef TOPOS_BENCH_STREAM_H
#define TOPOS_BENCH_STREAM_H

/* Bytes per second reading a 256 MiB buffer (on 2 MiB pages where the system
 * grants them) split in equal parts over `threads` threads: the best of 5
 * passes, with the widest vector loads this CPU runs (honouring
 * TOPOS_DISABLE_ISA). 0 when the buffer cannot be had. */
double tp_bench_stream_read(int threads);

#endif
