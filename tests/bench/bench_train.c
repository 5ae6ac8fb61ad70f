/* bench_train.c: training throughput (forward + backward + AdamW) of the CPU
 * model, against the same step in PyTorch (bench_train_ref.py).
 *
 * Shapes: "tiny" (vocab 64, dim 256, 4 layers, 4/2 heads, ffn 688, 8 x 128
 * tokens) and "smollm" (SmolLM2-135M: vocab 49152, dim 576, 30 layers, 9/3
 * heads, ffn 1536, 4 x 256 tokens). Prints tokens/s for each, runs the PyTorch
 * script with the same thread count (OMP_WAIT_POLICY=PASSIVE) and prints the
 * ratio. Never asserts a time; exits 0 unless the model fails to run.
 *
 * --profile times every op of the timed steps through a wrapping ops table and
 * prints where a step goes (GEMMs by shape with their GFLOP/s, the other ops,
 * zeroing, AdamW, and the rest of the model code between ops).
 *
 * --gemm-ab ROUNDS instead times the step with rlpt's GEMM and with OpenBLAS's
 * (cpu/gemm.h) in alternate steps of one model, ROUNDS each, and prints the median
 * of each (wall and CPU seconds): on a busy machine both see the same load.
 *
 * usage: bench_train [--shape tiny|smollm|all] [--threads N] [--iters N] [--no-ref]
 *                    [--profile] [--gemm-ab ROUNDS] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/gemm.h"
#include "model/model.h"
#include "train/optim.h"

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

/* the process's CPU seconds: on a busy machine, what the step cost at 1 thread
 * (at more threads it includes waiting threads that spin) */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* ---- --profile ----------------------------------------------------------- */

/* The ops table has no context pointer, so the wrappers below add into this one
 * record; the benchmark runs one model at a time. */
struct prof_row {
  char name[64];
  double s, flop;
  long calls;
};
static struct {
  struct prof_row row[96];
  int n, on;
} prof;

static void prof_add(const char *name, double s, double flop) {
  if (!prof.on) return;
  int i = 0;
  while (i < prof.n && strcmp(prof.row[i].name, name)) i++;
  if (i == prof.n) {
    if (prof.n == 96) return;
    snprintf(prof.row[prof.n++].name, sizeof prof.row[0].name, "%s", name);
  }
  prof.row[i].s += s;
  prof.row[i].flop += flop;
  prof.row[i].calls++;
}

static void p_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
  char name[64];
  double t = now_s();
  cpu_backend.matmul(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  snprintf(name, sizeof name, "gemm %c%c M%d N%d K%d%s", ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K,
           beta != 0.0f ? " +=" : "");
  prof_add(name, now_s() - t, 2.0 * M * N * K);
}

/* a wrapper per op: time the cpu_backend call under the op's name */
#define PROF_WRAP(op, params, args) \
  static void p_##op params {       \
    double t0_ = now_s();           \
    cpu_backend.op args;            \
    prof_add(#op, now_s() - t0_, 0);\
  }
PROF_WRAP(rmsnorm_fwd, (float *o, float *r, const float *x, const float *w, int T, int C, float e),
          (o, r, x, w, T, C, e))
PROF_WRAP(rmsnorm_bwd, (float *dx, float *dw, const float *d, const float *x, const float *w,
          const float *r, int T, int C), (dx, dw, d, x, w, r, T, C))
PROF_WRAP(rope, (float *x, const int *p, const float *c, const float *s, int T, int nh, int D,
          int inv), (x, p, c, s, T, nh, D, inv))
PROF_WRAP(attention_fwd, (float *o, float *l, const float *q, const float *k, const float *v,
          const struct attn_batch *b, int H, int KVH, int D, float sc, float *s),
          (o, l, q, k, v, b, H, KVH, D, sc, s))
PROF_WRAP(attention_bwd, (float *dq, float *dk, float *dv, const float *d, const float *o,
          const float *l, const float *q, const float *k, const float *v,
          const struct attn_batch *b, int H, int KVH, int D, float sc, float *s),
          (dq, dk, dv, d, o, l, q, k, v, b, H, KVH, D, sc, s))
PROF_WRAP(swiglu_fwd, (float *h, const float *g, const float *u, size_t n), (h, g, u, n))
PROF_WRAP(swiglu_bwd, (float *dg, float *du, float *h, const float *dh, const float *g,
          const float *u, size_t n), (dg, du, h, dh, g, u, n))
PROF_WRAP(embed_fwd, (float *o, const int *t, const float *w, int T, int C), (o, t, w, T, C))
PROF_WRAP(embed_bwd, (float *d, const int *t, const float *g, int T, int C), (d, t, g, T, C))
PROF_WRAP(bias_add, (float *y, const float *b, int T, int N), (y, b, T, N))
PROF_WRAP(bias_bwd, (float *db, const float *dy, int T, int N), (db, dy, T, N))
PROF_WRAP(add, (float *y, const float *x, size_t n), (y, x, n))
PROF_WRAP(logprob_fwd, (float *lp, float *e, float *l, const float *z, const int *t, int R, int V),
          (lp, e, l, z, t, R, V))
PROF_WRAP(logprob_bwd, (float *z, const float *l, const float *e, const int *t, const float *dl,
          const float *de, int R, int V), (z, l, e, t, dl, de, R, V))

static const struct backend_ops prof_backend = {
  .name = "cpu-profiled", .matmul = p_matmul, .rmsnorm_fwd = p_rmsnorm_fwd,
  .rmsnorm_bwd = p_rmsnorm_bwd, .rope = p_rope, .attention_fwd = p_attention_fwd,
  .attention_bwd = p_attention_bwd, .swiglu_fwd = p_swiglu_fwd, .swiglu_bwd = p_swiglu_bwd,
  .embed_fwd = p_embed_fwd, .embed_bwd = p_embed_bwd, .bias_add = p_bias_add,
  .bias_bwd = p_bias_bwd, .add = p_add, .logprob_fwd = p_logprob_fwd,
  .logprob_bwd = p_logprob_bwd,
};

static int prof_cmp(const void *a, const void *b) {
  double x = ((const struct prof_row *)a)->s, y = ((const struct prof_row *)b)->s;
  return (x < y) - (x > y);
}

/* Rows by time per step, ops and the phases of the step ([bracketed]) together;
 * what [forward] and [backward] spend outside the ops is the model's own code
 * (copies, zeroing, loops). */
static void prof_print(int iters) {
  double step = 0, fb = 0, ops = 0;
  qsort(prof.row, (size_t)prof.n, sizeof prof.row[0], prof_cmp);
  for (int i = 0; i < prof.n; i++) {
    const struct prof_row *r = &prof.row[i];
    if (r->name[0] != '[') ops += r->s;
    else step += r->s;
    if (!strcmp(r->name, "[forward]") || !strcmp(r->name, "[backward]")) fb += r->s;
  }
  printf("  profile per step: %.3f s\n", step / iters);
  for (int i = 0; i < prof.n; i++) {
    const struct prof_row *r = &prof.row[i];
    int phase = r->name[0] == '[';
    printf("  %8.1f ms %5.1f%%  %5ld calls", 1e3 * r->s / iters, 100 * r->s / step,
           phase ? 1 : r->calls / iters);
    if (r->flop > 0) printf("  %6.1f GFLOP/s", r->flop / r->s * 1e-9);
    else printf("%17s", "");
    printf("  %s\n", r->name);
  }
  printf("  %8.1f ms %5.1f%%  model code between the ops\n", 1e3 * (fb - ops) / iters,
         100 * (fb - ops) / step);
}

/* One warm-up step, then iters timed steps; returns tokens/s and sets *cpu_step to
 * the CPU seconds a timed step took. exact: the model's row-invariant products
 * (model/model.h; the RL step's fused old-logprob pass) or the faster ones (SFT, and RL
 * updates whose old logprobs came from their own pass). */
static double bench_c(const struct shape *s, int iters, int profile, int exact,
                      double *cpu_step) {
  int T = s->batch * s->seq;
  struct model m;
  if (model_create(&m, &s->mc, T, profile ? &prof_backend : &cpu_backend)) return -1;
  model_init_params(&m, 1);
  m.exact = exact;
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
  double t0 = 0, c0 = 0;
  for (int it = 0; it <= iters; it++) {
    if (it == 1) t0 = now_s(), c0 = cpu_s();
    prof.on = profile && it > 0;
    double t = now_s();
    model_zero_grad(&m);
    prof_add("[zero_grad]", now_s() - t, 0), t = now_s();
    model_forward(&m, tok, cu, s->batch, lp, ent, NULL);
    prof_add("[forward]", now_s() - t, 0), t = now_s();
    model_backward(&m, dlp, NULL, NULL);
    prof_add("[backward]", now_s() - t, 0), t = now_s();
    adamw_step(&opt, m.params, m.grads, &hp);
    prof_add("[adamw]", now_s() - t, 0);
  }
  double tps = (double)T * iters / (now_s() - t0);
  *cpu_step = (cpu_s() - c0) / iters;
  prof.on = 0;
  if (profile) prof_print(iters);
  prof.n = 0;
  free(tok); free(cu); free(lp); free(ent); free(dlp);
  adamw_free(&opt);
  model_free(&m);
  return tps;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --gemm-ab: one warm-up step each, then rounds x (rlpt step, OpenBLAS step); prints
 * the median wall and CPU seconds of each. 0, or -1 when the model fails. */
static int bench_gemm_ab(const struct shape *s, int rounds) {
  int T = s->batch * s->seq;
  struct model m;
  if (model_create(&m, &s->mc, T, &cpu_backend)) return -1;
  model_init_params(&m, 1);
  m.exact = 0;
  int *tok = malloc(sizeof(int) * T), *cu = malloc(sizeof(int) * (s->batch + 1));
  float *lp = malloc(sizeof(float) * T), *ent = malloc(sizeof(float) * T);
  float *dlp = malloc(sizeof(float) * T);
  double wall[2][64], cpu[2][64];
  rounds = rounds > 64 ? 64 : rounds;
  for (int t = 0; t < T; t++) {
    tok[t] = (int)((1103515245u * (unsigned)t + 12345u) % (unsigned)s->mc.vocab_size);
    dlp[t] = -1.0f / T;
  }
  for (int b = 0; b <= s->batch; b++) cu[b] = b * s->seq;
  static const enum cpu_gemm_impl impl[2] = {CPU_GEMM_RLPT, CPU_GEMM_OPENBLAS};
  for (int r = -1; r < rounds; r++)
    for (int i = 0; i < 2; i++) {
      cpu_gemm_set_impl(impl[i]);
      double t = now_s(), c = cpu_s();
      model_zero_grad(&m);
      model_forward(&m, tok, cu, s->batch, lp, ent, NULL);
      model_backward(&m, dlp, NULL, NULL);
      if (r >= 0) wall[i][r] = now_s() - t, cpu[i][r] = cpu_s() - c;
    }
  for (int i = 0; i < 2; i++) {
    qsort(wall[i], (size_t)rounds, sizeof(double), dcmp);
    qsort(cpu[i], (size_t)rounds, sizeof(double), dcmp);
  }
  int h = rounds / 2;
  printf("bench_train %s: GEMM A/B over %d alternate steps (fwd+bwd, medians): rlpt %.0f tok/s, "
         "%.3f CPU s/step; openblas %.0f tok/s, %.3f CPU s/step; rlpt/openblas tok/s %.3f, "
         "CPU %.3f\n", s->name, rounds, T / wall[0][h], cpu[0][h], T / wall[1][h], cpu[1][h],
         wall[1][h] / wall[0][h], cpu[1][h] / cpu[0][h]);
  cpu_gemm_set_impl(CPU_GEMM_RLPT);
  free(tok); free(cu); free(lp); free(ent); free(dlp);
  model_free(&m);
  return 0;
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
  int threads = 2, iters = 0, ref = 1, profile = 0, ab = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc) which = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-ref")) ref = 0;
    else if (!strcmp(argv[i], "--profile")) profile = 1;
    else if (!strcmp(argv[i], "--gemm-ab") && i + 1 < argc) ab = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_train [--shape tiny|smollm|all] [--threads N] [--iters N] "
              "[--no-ref] [--profile] [--gemm-ab ROUNDS]\n");
      return 2;
    }
  }
  openblas_set_num_threads(threads);
  const char *names[] = {"tiny", "smollm"};
  for (int k = 0; k < 2; k++) {
    if (strcmp(which, "all") && strcmp(which, names[k])) continue;
    struct shape s = shape_get(names[k]);
    int n = iters > 0 ? iters : s.iters;
    if (ab > 0) {
      if (bench_gemm_ab(&s, ab)) return 1;
      fflush(stdout);
      continue;
    }
    double cpu, cpux;
    double c = bench_c(&s, n, profile, 0, &cpu);
    if (c < 0) return 1;
    printf("bench_train %s: rlpt %d x %d tokens, %d threads: %.0f tok/s (fwd+bwd+adamw), "
           "%.3f CPU s/step\n", s.name, s.batch, s.seq, threads, c, cpu);
    double cx = bench_c(&s, n, 0, 1, &cpux);
    if (cx < 0) return 1;
    printf("bench_train %s: rlpt with row-invariant forward products (RL fused pass): %.0f tok/s "
           "(%.2f of the above), %.3f CPU s/step\n", s.name, cx, cx / c, cpux);
    double t = ref ? bench_ref(s.name, threads, n) : -1;
    if (t > 0)
      printf("bench_train %s: torch %.0f tok/s; rlpt / torch = %.2f\n", s.name, t, c / t);
    else if (ref)
      printf("bench_train %s: PyTorch reference unavailable\n", s.name);
    fflush(stdout);
  }
  return 0;
}
