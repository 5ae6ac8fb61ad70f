/* bench/bench_generate.c: generated tokens/s of the rollout engine (rollout/engine.h) on the CPU
 * model, at 1, 16 and 64 sequences per forward, against PyTorch KV-cached decoding
 * (bench_generate_ref.py) on the same work with the same thread count.
 *
 * Work per batch size B: max(B, 8) samples, G = 8 per prompt with prefix sharing
 * (each prompt of P = 32 tokens is prefilled once), N new tokens each (--new; 64 for
 * tiny, 8 for smollm so that the PyTorch batch-1 run, a slow one-row GEMM there, stays
 * within minutes), no EOS (every sample runs to N), temperature 1. Timings include the
 * prefill; at batch 1 a second figure leaves it out (decode only: minus a run with one
 * new token per sample). On a shared machine the tokens per CPU-second (process CPU time, all
 * threads) are the fairer figure; spinning BLAS threads count as CPU time.
 * Shapes: "tiny" (vocab 64, dim 256, 4 layers, 4/2 heads, ffn 688) and "smollm"
 * (SmolLM2-135M: vocab 49152, dim 576, 30 layers, 9/3 heads, ffn 1536, tied
 * embeddings). Also prints the batch-1 memory-bandwidth
 * bound: every weight is read once per generated token, so tokens/s <= BW / bytes,
 * with BW measured here right before the batch-1 run (a STREAM-like read of a 512 MB
 * buffer by the bench's threads, four sequential streams each as the decode GEMV
 * reads: bench_read.h; wall GB/s and GB per CPU-second, the latter the fair
 * one on a shared machine) and, for scale, a fixed 30 GB/s (this VM's measured bandwidth). Never asserts a time;
 * exits 0 unless the engine fails.
 *
 * usage: bench_generate [--shape tiny|smollm|all] [--threads N] [--new N] [--batch B] [--no-ref]
 * (--batch: only that batch size, rlpt only: for profiling) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_prompts.h"
#include "bench_read.h"
#include "cpu/thread_pool.h"
#include "deck/config.h"
#include "model/model.h"
#include "rollout/engine.h"

#define BENCH_G 8
#define BENCH_PROMPT 32
#define BENCH_BW 30e9 /* bytes/s of a fixed batch-1 bound, for scale */
#define BW_BYTES ((size_t)512 << 20)

static const int BATCHES[] = { 1, 16, 64 };
#define N_BATCHES 3

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---- memory bandwidth: one pass over a buffer the caches cannot hold -------------- */

/* Blocks [lo, hi) of 64 floats as four sequential streams, as the decode GEMV reads
 * (bench_read.h: one stream per thread would understate the bound). */
static void bw_read(void *p, size_t lo, size_t hi) {
  bench_read_streams(p, lo, hi, BENCH_READ_STREAMS);
}

/* Read bandwidth of `threads` threads (a thread pool like the rank's) over BW_BYTES:
 * best of 3 passes, wall bytes/s; *per_cpu gets bytes per CPU-second of the same
 * pass (all threads). -1 on failure. */
static double bw_measure(int threads, double *per_cpu) {
  size_t n = BW_BYTES / sizeof(float);
  float *x = aligned_alloc((size_t)2 << 20, BW_BYTES);  /* huge pages, as the model's weights */
#ifdef MADV_HUGEPAGE
  if (x) madvise(x, BW_BYTES, MADV_HUGEPAGE);
#endif
  struct thread_pool *pool = threads >= 1 ? thread_pool_create(threads - 1, 0) : NULL;
  if (!x || !pool) { free(x); thread_pool_free(pool); return -1; }
  for (size_t i = 0; i < n; i++) x[i] = 1.0f;
  double best = -1;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    thread_pool_run(pool, threads, n / 64, bw_read, x);
    double wall = BW_BYTES / (clock_s(CLOCK_MONOTONIC) - t0);
    if (wall > best) best = wall, *per_cpu = BW_BYTES / (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
  }
  thread_pool_free(pool);
  free(x);
  return best;
}

static struct model_config shape_get(const char *name) {
  struct model_config mc;
  if (!strcmp(name, "tiny"))
    mc = (struct model_config){ .vocab_size = 64, .dim = 256, .layers = 4, .heads = 4,
                                .kv_heads = 2, .ffn_dim = 688, .max_seq = 256 };
  else
    mc = (struct model_config){ .vocab_size = 49152, .dim = 576, .layers = 30, .heads = 9,
                                .kv_heads = 3, .ffn_dim = 1536, .max_seq = 256 };
  mc.head_dim = mc.dim / mc.heads;
  mc.rope_theta = 10000.0;
  mc.norm_eps = 1e-5;
  mc.init_std = 0.02;
  mc.tie_embeddings = 1;
  return mc;
}

/* One generation: its response tokens, wall seconds and process CPU seconds (all threads). */
struct gen_time {
  double tokens, wall, cpu;
};

/* Generated tokens per wall second of B concurrent sequences (and per CPU second of the
 * process, all threads, in *cpu_tps: the fairer figure on a shared machine); -1 on failure.
 * gt (may be NULL) gets the raw figures. */
static double bench_c(struct model *m, int B, int n_new, double *cpu_tps, struct gen_time *gt) {
  int n_req = B > BENCH_G ? B : BENCH_G, n_prompts = n_req / BENCH_G;
  struct config cfg;
  bench_rollout_config(&cfg, m, B, n_new, n_req, BENCH_PROMPT, 2);
  cfg.rollout.prefix_sharing = 1;
  int *tok = malloc(sizeof(int) * (size_t)n_prompts * BENCH_PROMPT);
  struct rollout_prompt *p = malloc(sizeof *p * (size_t)n_prompts);
  if (!tok || !p) {
    free(tok);
    free(p);
    return -1;
  }
  bench_prompts_fill(tok, p, n_prompts, BENCH_PROMPT, m->cfg.vocab_size);
  struct rollout_engine *re = NULL;
  struct sample_batch b;
  struct gen_stats st;
  sample_batch_init(&b);
  char err[512] = "";
  double tps = -1;
  if (rollout_create(&re, m, &cfg, NULL, err, sizeof err) == 0) {
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (rollout_generate(re, p, n_prompts, BENCH_G, 0, 0, &b, &st, err, sizeof err) == 0) {
      struct gen_time g = {.tokens = (double)sample_batch_resp_tokens(&b),
                           .wall = clock_s(CLOCK_MONOTONIC) - t0,
                           .cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0};
      *cpu_tps = g.tokens / g.cpu;
      tps = g.tokens / g.wall;
      if (gt) *gt = g;
    }
  }
  if (tps < 0) fprintf(stderr, "bench_generate: %s\n", err);
  rollout_free(re);
  sample_batch_free(&b);
  free(tok);
  free(p);
  return tps;
}

/* Runs the PyTorch script; fills tps[N_BATCHES] and cpu[N_BATCHES] from its
 * "batch B: tok/s X cpu Y" lines. */
static int bench_ref(const char *shape, int threads, int n_new, double *tps, double *cpu) {
  const char *src = getenv("RLPT_SOURCE_DIR");
  char cmd[2048], line[512];
  snprintf(cmd, sizeof cmd, "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d /usr/bin/python3 "
           "%s/tests/bench/bench_generate_ref.py --shape %s --threads %d --new %d --prompt %d "
           "--group %d 2>&1", threads, threads, src ? src : ".", shape, threads, n_new, BENCH_PROMPT, BENCH_G);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    fputs("    [torch] ", stdout);
    fputs(line, stdout);
    int B;
    double x, y;
    if (sscanf(line, "batch %d: tok/s %lf cpu %lf", &B, &x, &y) == 3)
      for (int k = 0; k < N_BATCHES; k++)
        if (BATCHES[k] == B) tps[k] = x, cpu[k] = y;
  }
  return pclose(f) == 0 ? 0 : -1;
}

static int bench_shape(const char *name, int threads, int n_new, int only, int ref) {
  struct model_config mc = shape_get(name);
  struct model m;
  /* one step: every prompt's prefill (64 / G of them) plus one decode row per sequence */
  int budget = BATCHES[N_BATCHES - 1] + BENCH_PROMPT * BATCHES[N_BATCHES - 1] / BENCH_G;
  if (model_create(&m, &mc, budget, &cpu_backend)) return 1;
  model_init_params(&m, 1);
  double bytes = 4.0 * (double)m.table.total;
  printf("bench_generate %s: %.1fM parameters, %d threads, prompt %d, G %d, %d new tokens; "
         "batch-1 bandwidth bound %.0f tok/s (%.0f MB of weights per token at %.0f GB/s)\n", name,
         m.table.total / 1e6, threads, BENCH_PROMPT, BENCH_G, n_new, BENCH_BW / bytes, bytes / 1e6,
         BENCH_BW / 1e9);
  double c[N_BATCHES], cc[N_BATCHES], t[N_BATCHES] = { -1, -1, -1 }, tc[N_BATCHES] = { -1, -1, -1 };
  double bw = -1, bw_cpu = -1, dec = -1, dec_cpu = -1;
  for (int k = 0; k < N_BATCHES; k++) {
    if (only && BATCHES[k] != only) {
      c[k] = cc[k] = -1;
      continue;
    }
    if (BATCHES[k] == 1) {
      bw = bw_measure(threads, &bw_cpu);
      printf("bench_generate %s: memory read bandwidth, %d threads: %.1f GB/s wall, %.1f GB per "
             "CPU-s -> batch-1 bound %.1f tok/s wall, %.1f tok per CPU-s\n", name, threads,
             bw / 1e9, bw_cpu / 1e9, bw / bytes, bw_cpu / bytes);
    }
    struct gen_time full, first;
    if ((c[k] = bench_c(&m, BATCHES[k], n_new, &cc[k], &full)) < 0) {
      model_free(&m);
      return 1;
    }
    printf("bench_generate %s: batch %2d: rlpt %.1f tok/s wall, %.1f tok per CPU-s\n", name,
           BATCHES[k], c[k], cc[k]);
    /* decode alone, as llama.cpp's tg figure: minus a run of the same prompts with one new
     * token each (the prefill and every sample's first token) */
    double dummy;
    if (BATCHES[k] == 1 && n_new > 1 && bench_c(&m, 1, 1, &dummy, &first) > 0 && full.wall > first.wall) {
      dec = (full.tokens - first.tokens) / (full.wall - first.wall);
      dec_cpu = (full.tokens - first.tokens) / (full.cpu - first.cpu);
      printf("bench_generate %s: batch  1 decode only (minus a 1-new-token run: the prefill and "
             "first tokens): rlpt %.1f tok/s wall, %.1f tok per CPU-s\n", name, dec, dec_cpu);
    }
    fflush(stdout);
  }
  model_free(&m);
  if (ref && bench_ref(name, threads, n_new, t, tc) != 0)
    printf("bench_generate %s: PyTorch reference failed\n", name);
  for (int k = 0; k < N_BATCHES && ref; k++)
    if (t[k] > 0)
      printf("bench_generate %s: batch %2d: wall rlpt %.1f / torch %.1f tok/s = %.2f; per CPU-s "
             "rlpt %.1f / torch %.1f = %.2f\n", name, BATCHES[k], c[k], t[k], c[k] / t[k], cc[k],
             tc[k], cc[k] / tc[k]);
  if (c[0] > 0 && bw > 0 && (!only || only == 1))
    printf("bench_generate %s: batch 1 at %.0f%% of the measured bandwidth bound (wall), %.0f%% "
           "per CPU-second; %.0f%% of the %.0f GB/s bound (wall)\n", name, 100.0 * c[0] / (bw / bytes),
           100.0 * cc[0] / (bw_cpu / bytes), 100.0 * c[0] / (BENCH_BW / bytes), BENCH_BW / 1e9);
  if (dec > 0 && bw > 0)
    printf("bench_generate %s: batch 1 decode only at %.0f%% of the measured bandwidth bound (wall), "
           "%.0f%% per CPU-second; %.0f%% of the %.0f GB/s bound (wall)\n", name, 100.0 * dec / (bw / bytes),
           100.0 * dec_cpu / (bw_cpu / bytes), 100.0 * dec / (BENCH_BW / bytes), BENCH_BW / 1e9);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  const char *which = "all";
  int threads = 2, n_new = 0, ref = 1, only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc) which = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--new") && i + 1 < argc) n_new = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) only = atoi(argv[++i]), ref = 0;
    else if (!strcmp(argv[i], "--no-ref")) ref = 0;
    else {
      fprintf(stderr, "usage: bench_generate [--shape tiny|smollm|all] [--threads N] [--new N] "
              "[--batch B] [--no-ref]\n");
      return 2;
    }
  }
  openblas_set_num_threads(threads);
  const char *names[] = { "tiny", "smollm" };
  const int default_new[] = { 64, 8 };
  for (int k = 0; k < 2; k++) {
    if (strcmp(which, "all") && strcmp(which, names[k])) continue;
    if (bench_shape(names[k], threads, n_new > 0 ? n_new : default_new[k], only, ref)) return 1;
  }
  return 0;
}
