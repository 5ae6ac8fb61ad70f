/* bench_ckpt.c: checkpoint write and read throughput for the SmolLM2-135M shape
 * (vocab 49152, dim 576, 30 layers, 9/3 heads, ffn 1536, tied) with AdamW
 * state (params + m + v = 3 x 538 MB), beside a plain sequential fwrite+fsync
 * (and fread) of the same bytes to the same directory on rank 0.
 *
 * ckpt_write's time includes everything a checkpoint costs: CRC of every
 * tensor, the collective MPI-IO write, closing, re-opening and verifying (a
 * full read-back with CRCs), fsync and rename. ckpt_read is rank 0's validated
 * read (CRCs) plus the broadcast to the other ranks. Reads come from the page
 * cache when the machine has the memory; the figures say so. Prints figures,
 * asserts nothing about time.
 *
 *   mpirun -n P bench_ckpt [DIR] [layers]   (defaults: bench_ckpt_dir, 30) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/ckpt.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n, float scale) {
  float *x = malloc(sizeof(float) * n);
  for (size_t i = 0; x && i < n; i++) x[i] = scale * (float)((i * 2654435761u) % 1000) * 1e-3f;
  return x;
}

/* Rank 0: fwrite + fsync of the three buffers, then fread them back; seconds. */
static void plain_io(const char *dir, float *const bufs[3], size_t n, double *tw, double *tr) {
  char path[4096];
  snprintf(path, sizeof path, "%s/plain.bin", dir);
  double t0 = now_s();
  FILE *f = fopen(path, "wb");
  for (int i = 0; f && i < 3; i++)
    if (fwrite(bufs[i], sizeof(float), n, f) != n) fprintf(stderr, "bench_ckpt: fwrite failed\n");
  if (f) {
    fflush(f);
    fsync(fileno(f));
    fclose(f);
  }
  *tw = now_s() - t0;
  float *back = malloc(sizeof(float) * n);
  t0 = now_s();
  f = fopen(path, "rb");
  for (int i = 0; f && back && i < 3; i++)
    if (fread(back, sizeof(float), n, f) != n) fprintf(stderr, "bench_ckpt: fread failed\n");
  if (f) fclose(f);
  *tr = now_s() - t0;
  free(back);
  unlink(path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *dir = argc > 1 ? argv[1] : "bench_ckpt_dir";
  struct ckpt_state st;
  memset(&st, 0, sizeof st);
  st.mc = (struct model_config){.vocab_size = 49152, .dim = 576, .layers = argc > 2 ? atoi(argv[2]) : 30,
                                .heads = 9, .kv_heads = 3, .ffn_dim = 1536, .max_seq = 2048,
                                .head_dim = 64, .rope_theta = 100000.0, .norm_eps = 1e-5,
                                .init_std = 0.02, .tie_embeddings = 1};
  size_t n = model_param_count(&st.mc);
  st.step = 1;
  st.params = filled(n, 0.02f);
  st.has_optim = 1;
  st.adam_m = filled(n, 1e-3f);
  st.adam_v = filled(n, 1e-6f);
  st.adam_t = 1;
  st.lr = 1e-5;
  st.deck = "[bench]\n";
  st.used_keys = "";
  double bytes = 3.0 * sizeof(float) * (double)n, mb = bytes / 1e6;
  struct ckpt_write_opts o = {.keep_last = 1};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  int rc = ckpt_write(dir, &st, &o, MPI_COMM_WORLD);
  double tw = now_s() - t0;
  char path[4096];
  ckpt_step_path(dir, st.step, path, sizeof path);
  struct ckpt_state back;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = now_s();
  int rc2 = rc ? rc : ckpt_read(path, &back, &st.mc, MPI_COMM_WORLD);
  double tr = now_s() - t0;
  if (!rc2) ckpt_state_free(&back);
  if (rank == 0 && !rc && !rc2) {
    double pw, pr;
    float *const bufs[3] = {st.params, st.adam_m, st.adam_v};
    plain_io(dir, bufs, n, &pw, &pr);
    printf("bench_ckpt: SmolLM2-135M shape, %zu params x 3 (params, m, v) = %.0f MB, %d rank(s)\n",
           n, mb, size);
    printf("  ckpt_write  %7.2f s  %7.0f MB/s   (CRC + collective write + verify read + fsync)\n",
           tw, mb / tw);
    printf("  fwrite+fsync%7.2f s  %7.0f MB/s   ratio ckpt/plain time %.2fx\n", pw, mb / pw, tw / pw);
    printf("  ckpt_read   %7.2f s  %7.0f MB/s   (rank 0 read + CRC check + broadcast)\n", tr, mb / tr);
    printf("  fread       %7.2f s  %7.0f MB/s   ratio ckpt/plain time %.2fx (page cache)\n", pr,
           mb / pr, tr / pr);
  }
  if (rank == 0 && !rc) unlink(path);
  free(st.params);
  free(st.adam_m);
  free(st.adam_v);
  MPI_Finalize();
  return rc || rc2;
}
