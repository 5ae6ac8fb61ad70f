/* bench_read.h: a plain read of a buffer the caches cannot hold, the memory-bandwidth
 * reference of the rollout benchmarks (bench_generate's batch-1 bound, bench_rowinv).
 *
 * A thread's share [lo, hi) of 64-float blocks is read as `streams` sequential streams
 * (its contiguous parts, side by side). On a CPU whose prefetcher tracks several
 * streams per core, one stream leaves bandwidth unused (on the 2-core VM: ~70% of four
 * per CPU-second, two ~85%, eight no more than four), so a bound for a kernel that
 * reads several streams (the decode GEMV, cpu/rowinv.c) needs BENCH_READ_STREAMS. */
#ifndef RLPT_BENCH_READ_H
#define RLPT_BENCH_READ_H

#include <stddef.h>

#define BENCH_READ_STREAMS 4

static inline void bench_read_streams(const float *x, size_t lo, size_t hi, int streams) {
  size_t part = (hi - lo) / (size_t)streams * 64;
  const float *p = x + lo * 64;
  float acc[BENCH_READ_STREAMS][16] = {{0}}; /* 16 lanes per stream: vectorised loads */
  for (size_t i = 0; i < part; i += 16)
    for (int s = 0; s < streams; s++)
      for (int l = 0; l < 16; l++) acc[s][l] += p[(size_t)s * part + i + l];
  volatile float sum = 0.0f; /* keeps the reads */
  for (int s = 0; s < streams; s++)
    for (int l = 0; l < 16; l++) sum += acc[s][l];
}

#endif
