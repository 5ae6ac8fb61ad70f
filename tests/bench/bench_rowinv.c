/* bench/bench_rowinv.c: the memory bandwidth a batch-1 decode step's weight products get
 * (the row-invariant GEMV of cpu/rowinv.c, M = 1) on the SmolLM2-135M shapes, beside
 * two plain reads of the same 538 MB (bench_read.h): one sequential stream per thread
 * and four per thread (as the GEMV reads, and as bench_generate's bound reads). On a
 * CPU whose prefetcher tracks several streams a core, one stream leaves bandwidth
 * unused, so only the four-stream read bounds the GEMV (on the 2-core VM: one stream
 * ~70% of four per CPU-second, two ~85%, eight no more than four).
 *
 * A token's products: 30 layers of q, k, v, o, gate, up, down and the tied lm_head,
 * run once as 7 calls per layer and once as 4 (q/k/v and gate/up through
 * matmul_rowinv_shared, one thread-pool job each). Figures are GB/s wall and GB per
 * CPU-second (process CPU time: fair on a shared machine), best of --reps passes, the
 * four measurements alternating within each pass. Never asserts a time.
 *
 * usage: bench_rowinv [--threads N] [--reps R] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_read.h"
#include "cpu/thread_pool.h"
#include "model/backend.h"
#include "util/huge_alloc.h"

#define LAYERS 30
#define DIM 576
#define KVD 192
#define FFN 1536
#define VOCAB 49152
#define LAYER_FLOATS ((size_t)DIM * DIM * 2 + (size_t)KVD * DIM * 2 + (size_t)FFN * DIM * 3)
#define TOTAL_FLOATS (LAYER_FLOATS * LAYERS + (size_t)VOCAB * DIM)

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void read_one(void *x, size_t lo, size_t hi) { bench_read_streams(x, lo, hi, 1); }
static void read_four(void *x, size_t lo, size_t hi) {
  bench_read_streams(x, lo, hi, BENCH_READ_STREAMS);
}

/* One token's weight products from W (layer by layer, then the lm_head). */
static void token_products(const float *W, const float *x, float *y, int shared) {
  const struct backend_ops *o = &cpu_backend;
  for (int l = 0; l < LAYERS; l++) {
    const float *q = W + LAYER_FLOATS * l, *k = q + DIM * DIM, *v = k + KVD * DIM;
    const float *wo = v + KVD * DIM, *g = wo + DIM * DIM, *u = g + FFN * DIM, *d = u + FFN * DIM;
    if (shared) {
      struct rowinv_product qkv[3] = {{.N = DIM, .B = q, .C = y},
                                      {.N = KVD, .B = k, .C = y + DIM},
                                      {.N = KVD, .B = v, .C = y + DIM + KVD}};
      o->matmul_rowinv_shared(1, DIM, x, DIM, 3, qkv);
    } else {
      o->matmul_rowinv(1, DIM, DIM, 1.0f, x, DIM, q, DIM, 0.0f, y, DIM);
      o->matmul_rowinv(1, KVD, DIM, 1.0f, x, DIM, k, DIM, 0.0f, y + DIM, KVD);
      o->matmul_rowinv(1, KVD, DIM, 1.0f, x, DIM, v, DIM, 0.0f, y + DIM + KVD, KVD);
    }
    o->matmul_rowinv(1, DIM, DIM, 1.0f, x, DIM, wo, DIM, 0.0f, y, DIM);
    if (shared) {
      struct rowinv_product gu[2] = {{.N = FFN, .B = g, .C = y}, {.N = FFN, .B = u, .C = y + FFN}};
      o->matmul_rowinv_shared(1, DIM, x, DIM, 2, gu);
    } else {
      o->matmul_rowinv(1, FFN, DIM, 1.0f, x, DIM, g, DIM, 0.0f, y, FFN);
      o->matmul_rowinv(1, FFN, DIM, 1.0f, x, DIM, u, DIM, 0.0f, y + FFN, FFN);
    }
    o->matmul_rowinv(1, DIM, FFN, 1.0f, x, FFN, d, FFN, 0.0f, y, DIM);
  }
  o->matmul_rowinv(1, VOCAB, DIM, 1.0f, x, DIM, W + LAYER_FLOATS * LAYERS, DIM, 0.0f, y, VOCAB);
}

int main(int argc, char **argv) {
  int threads = 2, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_rowinv [--threads N] [--reps R]\n");
      return 2;
    }
  }
  if (threads < 1 || reps < 1) {
    fprintf(stderr, "bench_rowinv: --threads and --reps must be >= 1\n");
    return 2;
  }
  openblas_set_num_threads(threads);
  float *W = huge_floats(TOTAL_FLOATS), *x = huge_floats(FFN), *y = huge_floats(VOCAB);
  if (!W || !x || !y) {
    fprintf(stderr, "bench_rowinv: out of memory for %zu MB of weights\n", TOTAL_FLOATS * 4 >> 20);
    return 1;
  }
  for (size_t i = 0; i < TOTAL_FLOATS; i++) W[i] = 1e-3f * (float)(i % 89);
  for (int i = 0; i < FFN; i++) x[i] = 1e-2f * (float)(i % 7);
  const char *name[4] = {"read, 1 stream per thread", "read, 4 streams per thread",
                         "GEMV token, 7 calls per layer", "GEMV token, shared q/k/v, gate/up"};
  double wall[4] = {0}, cpu[4] = {0}, bytes = 4.0 * (double)TOTAL_FLOATS;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 4; k++) {
      double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
      if (k < 2) thread_pool_par_for(threads, TOTAL_FLOATS / 64, k ? read_four : read_one, W);
      else token_products(W, x, y, k == 3);
      double w = bytes / (clock_s(CLOCK_MONOTONIC) - t0), c = bytes / (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
      if (w > wall[k]) wall[k] = w;
      if (c > cpu[k]) cpu[k] = c;
    }
  printf("bench_rowinv: %.0f MB of weights per token (SmolLM2-135M), %d threads, best of %d\n",
         bytes / 1e6, threads, reps);
  for (int k = 0; k < 4; k++)
    printf("bench_rowinv: %-34s %5.1f GB/s wall (%3.0f%% of the 4-stream read), %5.1f GB per "
           "CPU-s (%3.0f%%) = %.1f tok/s, %.1f tok per CPU-s\n", name[k], wall[k] / 1e9,
           100 * wall[k] / wall[1], cpu[k] / 1e9, 100 * cpu[k] / cpu[1], wall[k] / bytes, cpu[k] / bytes);
  free(W);
  free(x);
  free(y);
  return 0;
}
