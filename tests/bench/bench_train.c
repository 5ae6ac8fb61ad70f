/* bench_train.c: training throughput (forward + backward + AdamW) of the CPU
 * model, against the same step in PyTorch (bench_train_ref.py).
 *
 * Shapes: "tiny" (vocab 64, dim 256, 4 layers, 4/2 heads, ffn 688, 8 x 128
 * tokens) and "smollm" (SmolLM2-135M: vocab 49152, dim 576, 30 layers, 9/3
 * heads, ffn 1536, 4 x 256 tokens). Prints tokens/s for each, runs the PyTorch
 * script with the same thread count (OMP_WAIT_POLICY=PASSIVE) and prints the
 * ratio. Never asserts a time; exits 0 unless the model fails to run.
 *
 * usage: bench_train [--shape tiny|smollm|all] [--threads N] [--iters N] [--no-ref] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "optim.h"

struct shape {
  const char *name;
  struct model_config mc;
  int batch, seq, iters;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static struct shape shape_get(const char *name) {
  struct shape s = {.name = name};
  struct model_config *mc = &s.mc;
  if (!strcmp(name, "tiny")) {
    *mc = (struct model_config){.vocab_size = 64, .dim = 256, .layers = 4, .heads = 4,
                                .kv_heads = 2, .ffn_dim = 688, .max_seq = 128};
    s.batch = 8, s.seq = 128, s.iters = 5;
  } else {
    *mc = (struct model_config){.vocab_size = 49152, .dim = 576, .layers = 30, .heads = 9,
                                .kv_heads = 3, .ffn_dim = 1536, .max_seq = 256};
    s.batch = 4, s.seq = 256, s.iters = 2;
  }
  mc->head_dim = mc->dim / mc->heads;
  mc->rope_theta = 10000.0;
  mc->norm_eps = 1e-5;
  mc->init_std = 0.02;
  mc->tie_embeddings = 1;
  return s;
}

/* One warm-up step, then iters timed steps; returns tokens/s. */
static double bench_c(const struct shape *s, int iters) {
  int T = s->batch * s->seq;
  struct model m;
  if (model_create(&m, &s->mc, T, &cpu_backend)) return -1;
  model_init_params(&m, 1);
  struct adamw opt;
  struct adamw_hparams hp = {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                             .weight_decay = 0.0};
  if (adamw_init(&opt, (long)m.table.total)) return -1;
  int *tok = malloc(sizeof(int) * T), *cu = malloc(sizeof(int) * (s->batch + 1));
  float *lp = malloc(sizeof(float) * T), *ent = malloc(sizeof(float) * T);
  float *dlp = malloc(sizeof(float) * T);
  for (int t = 0; t < T; t++) {
    tok[t] = (int)((1103515245u * (unsigned)t + 12345u) % (unsigned)s->mc.vocab_size);
    dlp[t] = -1.0f / T;
  }
  for (int b = 0; b <= s->batch; b++) cu[b] = b * s->seq;
  double t0 = 0;
  for (int it = 0; it <= iters; it++) {
    if (it == 1) t0 = now_s();
    model_zero_grad(&m);
    model_forward(&m, tok, cu, s->batch, lp, ent, NULL);
    model_backward(&m, dlp, NULL, NULL);
    adamw_step(&opt, m.params, m.grads, &hp);
  }
  double tps = (double)T * iters / (now_s() - t0);
  free(tok); free(cu); free(lp); free(ent); free(dlp);
  adamw_free(&opt);
  model_free(&m);
  return tps;
}

/* Runs the PyTorch script and reads its "tok/s" figure; -1 when unavailable. */
static double bench_ref(const char *shape, int threads, int iters) {
  const char *src = getenv("RLPT_SOURCE_DIR");
  char cmd[2048], line[512];
  snprintf(cmd, sizeof cmd, "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d /usr/bin/python3 "
           "%s/tests/bench/bench_train_ref.py --shape %s --threads %d --iters %d 2>&1", threads,
           threads, src ? src : ".", shape, threads, iters);
  FILE *p = popen(cmd, "r");
  double tps = -1;
  if (!p) return -1;
  while (fgets(line, sizeof line, p)) {
    fputs("    [torch] ", stdout);
    fputs(line, stdout);
    char *k = strstr(line, "tok/s ");
    if (k) tps = atof(k + 6);
  }
  if (pclose(p) != 0) tps = -1;
  return tps;
}

int main(int argc, char **argv) {
  const char *which = "all";
  int threads = 2, iters = 0, ref = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc) which = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-ref")) ref = 0;
    else {
      fprintf(stderr, "usage: bench_train [--shape tiny|smollm|all] [--threads N] [--iters N] "
              "[--no-ref]\n");
      return 2;
    }
  }
  openblas_set_num_threads(threads);
  const char *names[] = {"tiny", "smollm"};
  for (int k = 0; k < 2; k++) {
    if (strcmp(which, "all") && strcmp(which, names[k])) continue;
    struct shape s = shape_get(names[k]);
    int n = iters > 0 ? iters : s.iters;
    double c = bench_c(&s, n);
    if (c < 0) return 1;
    printf("bench_train %s: rlpt %d x %d tokens, %d threads: %.0f tok/s (fwd+bwd+adamw)\n",
           s.name, s.batch, s.seq, threads, c);
    double t = ref ? bench_ref(s.name, threads, n) : -1;
    if (t > 0)
      printf("bench_train %s: torch %.0f tok/s; rlpt / torch = %.2f\n", s.name, t, c / t);
    else if (ref)
      printf("bench_train %s: PyTorch reference unavailable\n", s.name);
    fflush(stdout);
  }
  return 0;
}
