/* bench/bench_gemm.c: GFLOP/s of the CPU backend's matmul for every GEMM shape of one
 * training step (forward, dX and dW of each linear layer and of the lm_head
 * chunks), with rlpt's GEMM and with OpenBLAS's (cpu/gemm.h) side by side: the same
 * pool split over --threads, the two run alternately, best of --reps each; the
 * ratio is rlpt's GFLOP/s over OpenBLAS's. The first rows are a 1536^3 NN product
 * at one thread and at --threads, set against the machine's FMA peak.
 *
 * Default shape: SmolLM2-135M training step (4 x 256 tokens, dim 576, kv 192,
 * ffn 1536, vocab 49152, --chunk logit rows per chunk, default 256 as the model's
 * MODEL_LOGIT_CHUNK). Rows named "fused" are the one-GEMM forms of q/k/v and
 * gate/up; "dW NN" is dW computed from a transposed copy of dy (the copy's time
 * included). Never asserts a time.
 *
 * --ab ROUNDS instead times alternatives against each other (forward, dX and dW
 * together, through the backend's matmul with the GEMM RLPT_GEMM picks), alternated
 * ROUNDS times: q/k/v and gate/up as separate GEMMs, as one
 * GEMM split/merged by copies, gate/up kept transposed (no copies), and the
 * lm_head's products over the step's rows in chunks of 128 and 256 rows.
 *
 * usage: bench_gemm [--threads N] [--reps N] [--tokens T] [--chunk R] [--ab ROUNDS]
 *                   [--cpu] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/gemm.h"
#include "model/backend.h"

/* --cpu: time by the process's CPU time instead of the wall clock, which a busy
 * machine inflates (at 1 thread it is the work alone; at 2 it includes OpenBLAS's
 * waiting threads) */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(bench_clock, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static float *buf(size_t n) {
  float *p = aligned_alloc(64, ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63);
  if (!p) { fprintf(stderr, "bench_gemm: out of memory\n"); exit(1); }
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
  return p;
}

static void gemm(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc) {
  cpu_backend.matmul(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* One timed product (dyT: the dW NN form's copy buffer, else NULL). */
struct shape_run {
  int ta, tb, M, N, K;
  float beta;
  const float *A, *B;
  float *C, *dyT;
};

/* C[M,N] = op(A) op(B) (+ C), or dW[out,in] += dy^T x through a transposed copy of
 * dy [T,out] and an NN GEMM when s->dyT (M = out, N = in, K = T). */
static void shape_once(const struct shape_run *s) {
  if (s->dyT) {
    for (int i = 0; i < s->K; i++)
      for (int o = 0; o < s->M; o++) s->dyT[(size_t)o * s->K + i] = s->A[(size_t)i * s->M + o];
    gemm(0, 0, s->M, s->N, s->K, s->dyT, s->K, s->B, s->N, 1.0f, s->C, s->N);
    return;
  }
  gemm(s->ta, s->tb, s->M, s->N, s->K, s->A, s->ta ? s->M : s->K, s->B, s->tb ? s->K : s->N,
       s->beta, s->C, s->N);
}

/* Best of reps seconds of the product with each GEMM, t[0] rlpt and t[1] OpenBLAS,
 * alternated so that a busy machine hits both (rlpt's time is 0 without AVX2+FMA). */
static void time_pair(const struct shape_run *s, int reps, double t[2]) {
  static const enum cpu_gemm_impl impl[2] = {CPU_GEMM_RLPT, CPU_GEMM_OPENBLAS};
  t[0] = t[1] = 1e30;
  for (int r = 0; r <= reps; r++)
    for (int i = 0; i < 2; i++) {
      if (cpu_gemm_set_impl(impl[i]) != impl[i]) { t[i] = 0; continue; }
      double t0 = now_s();
      shape_once(s);
      t0 = now_s() - t0;
      if (r > 0 && t0 < t[i]) t[i] = t0; /* r = 0 warms up */
    }
  cpu_gemm_set_impl(impl[0]);
}

/* One row: GFLOP/s of each and their ratio, ms per step (n products a step). */
static void print_row(const char *name, const char *pass, const struct shape_run *s, double fl,
                      const double t[2], int n) {
  printf("%-16s %-6s %6d %6d %6d %8.1f %8.1f %6.2f %8.1f %8.1f\n", name, pass, s->M, s->N, s->K,
         t[0] > 0 ? fl / t[0] * 1e-9 : 0.0, fl / t[1] * 1e-9, t[0] > 0 ? t[1] / t[0] : 0.0,
         1e3 * t[0] * n, 1e3 * t[1] * n);
}


/* ---- A/B: the same work two ways, alternated so a busy machine hits both ---- */

/* rows [T, w0 + w1 (+ w2)] <-> separate [T, wi] buffers */
static void split_cols(float *dst[3], const int w[3], const float *src, int T, int dir) {
  int ld = w[0] + w[1] + w[2];
  for (int t = 0; t < T; t++) {
    int c = 0;
    for (int i = 0; i < 3; i++) {
      if (!w[i]) continue;
      float *a = dst[i] + (size_t)t * w[i];
      float *b = (float *)src + (size_t)t * ld + c;
      if (dir) memcpy(b, a, sizeof(float) * w[i]);
      else memcpy(a, b, sizeof(float) * w[i]);
      c += w[i];
    }
  }
}

struct ab_ctx {
  int T, C, w[3];        /* outputs of the projection(s): widths of the parts */
  float *x, *W, *dW, *out[3], *dout[3], *fused, *dx;
};

/* forward + dX + dW of the parts as separate GEMMs */
static void ab_separate(struct ab_ctx *c) {
  int T = c->T, C = c->C;
  size_t off = 0;
  for (int i = 0; i < 3 && c->w[i]; off += (size_t)c->w[i] * C, i++) {
    gemm(0, 1, T, c->w[i], C, c->x, C, c->W + off, C, 0.0f, c->out[i], c->w[i]);
    gemm(0, 0, T, C, c->w[i], c->dout[i], c->w[i], c->W + off, C, i ? 1.0f : 0.0f, c->dx, C);
    gemm(1, 0, c->w[i], C, T, c->dout[i], c->w[i], c->x, C, 1.0f, c->dW + off, C);
  }
}

/* the same as one GEMM each over [T, sum w], split/merged by copies */
static void ab_fused(struct ab_ctx *c) {
  int T = c->T, C = c->C, N = c->w[0] + c->w[1] + c->w[2];
  gemm(0, 1, T, N, C, c->x, C, c->W, C, 0.0f, c->fused, N);
  split_cols(c->out, c->w, c->fused, T, 0);
  split_cols(c->dout, c->w, c->fused, T, 1);
  gemm(0, 0, T, C, N, c->fused, N, c->W, C, 0.0f, c->dx, C);
  gemm(1, 0, N, C, T, c->fused, N, c->x, C, 1.0f, c->dW, C);
}

/* gate/up kept transposed ([2F, T], gate^T then up^T): no copies */
static void ab_transposed(struct ab_ctx *c) {
  int T = c->T, C = c->C, N = c->w[0] + c->w[1] + c->w[2];
  gemm(0, 1, N, T, C, c->W, C, c->x, C, 0.0f, c->fused, T);
  gemm(1, 0, T, C, N, c->fused, T, c->W, C, 0.0f, c->dx, C);
  gemm(0, 0, N, C, T, c->fused, T, c->x, C, 1.0f, c->dW, C);
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median seconds of each variant over n alternated rounds */
static void ab_run(const char *what, struct ab_ctx *c, void (*fa)(struct ab_ctx *),
                   void (*fb)(struct ab_ctx *), const char *na, const char *nb, int n) {
  double ta[64], tb[64];
  n = n > 64 ? 64 : n;
  fa(c), fb(c);
  for (int r = 0; r < n; r++) {
    double t = now_s();
    fa(c);
    ta[r] = now_s() - t, t = now_s();
    fb(c);
    tb[r] = now_s() - t;
  }
  qsort(ta, (size_t)n, sizeof ta[0], dcmp);
  qsort(tb, (size_t)n, sizeof tb[0], dcmp);
  printf("A/B %-14s %s %.2f ms, %s %.2f ms: %s/%s = %.3f (median of %d)\n", what, na,
         1e3 * ta[n / 2], nb, 1e3 * tb[n / 2], nb, na, tb[n / 2] / ta[n / 2], n);
}

/* lm_head GEMMs of T rows at R rows a chunk: logits (recomputed in the backward but
 * the last chunk), dX, dW accumulated */
static int head_rows;
static struct { float *E, *dE, *xf, *dxf, *logits; } head;

static void head_pass(struct ab_ctx *c) {
  const int C = 576, V = 49152, R = head_rows;
  int nchunk = (c->T + R - 1) / R;
  for (int k = 0; k < 2 * nchunk - 1; k++)
    gemm(0, 1, R, V, C, head.xf, C, head.E, C, 0.0f, head.logits, V);
  for (int k = 0; k < nchunk; k++) {
    gemm(0, 0, R, C, V, head.logits, V, head.E, C, 0.0f, head.dxf + (size_t)k * R * C, C);
    gemm(1, 0, V, C, R, head.logits, V, head.xf, C, 1.0f, head.dE, C);
  }
}

static void head_a(struct ab_ctx *c) { head_rows = 128; head_pass(c); }
static void head_b(struct ab_ctx *c) { head_rows = 256; head_pass(c); }

static void ab_all(int T, int rounds) {
  const int C = 576, KV = 192, F = 1536;
  struct ab_ctx c = {.T = T, .C = C};
  size_t wide = (size_t)T * 2 * F;
  c.x = buf((size_t)T * C), c.W = buf((size_t)2 * F * C), c.dW = buf((size_t)2 * F * C);
  c.fused = buf(wide), c.dx = buf((size_t)T * C);
  for (int i = 0; i < 3; i++) c.out[i] = buf(wide), c.dout[i] = buf(wide);
  c.w[0] = C, c.w[1] = KV, c.w[2] = KV;
  ab_run("qkv", &c, ab_separate, ab_fused, "separate", "fused+copy", rounds);
  c.w[0] = F, c.w[1] = F, c.w[2] = 0;
  ab_run("gate/up", &c, ab_separate, ab_fused, "separate", "fused+copy", rounds);
  ab_run("gate/up", &c, ab_separate, ab_transposed, "separate", "transposed", rounds);
  head.E = buf((size_t)49152 * C), head.dE = buf((size_t)49152 * C), head.xf = buf((size_t)T * C);
  head.dxf = buf((size_t)T * C), head.logits = buf((size_t)256 * 49152);
  ab_run("lm_head", &c, head_a, head_b, "128 rows", "256 rows", rounds / 3 + 1);
  free(head.E); free(head.dE); free(head.xf); free(head.dxf); free(head.logits);
  free(c.x); free(c.W); free(c.dW); free(c.fused); free(c.dx);
  for (int i = 0; i < 3; i++) free(c.out[i]), free(c.dout[i]);
}

struct lin { const char *name; int out, in, count; };

int main(int argc, char **argv) {
  int threads = 2, reps = 3, T = 1024, R = 256, ab = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) T = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) R = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ab") && i + 1 < argc) ab = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cpu")) bench_clock = CLOCK_PROCESS_CPUTIME_ID;
    else {
      fprintf(stderr, "usage: bench_gemm [--threads N] [--reps N] [--tokens T] [--chunk R] [--ab ROUNDS] [--cpu]\n");
      return 2;
    }
  }
  openblas_set_num_threads(threads);
  if (ab > 0) {
    ab_all(T, ab);
    return 0;
  }
  const int C = 576, KV = 192, F = 1536, V = 49152, L = 30;
  /* per layer; count: how many such GEMMs a step runs per layer (x L) */
  const struct lin lins[] = {
    {"q", C, C, 1}, {"k,v", KV, C, 2}, {"o", C, C, 1}, {"gate,up", F, C, 2}, {"down", C, F, 1},
    {"qkv fused", C + 2 * KV, C, 0}, {"gate|up fused", 2 * F, C, 0},
  };
  size_t big = (size_t)V * C;
  float *A = buf((size_t)T * 2 * F), *B = buf(big), *Cm = buf(big), *dyT = buf((size_t)T * 2 * F);
  printf("bench_gemm: %d threads, T = %d, best of %d; GEMM rlpt vs OpenBLAS (RLPT_GEMM default "
         "here: %s)\n", threads, T, reps, cpu_gemm_name());
  printf("%-16s %-6s %6s %6s %6s %8s %8s %6s %8s %8s\n", "layer", "pass", "M", "N", "K",
         "rlpt", "openblas", "ratio", "rlpt", "openblas");
  printf("%-16s %-6s %6s %6s %6s %8s %8s %6s %8s %8s\n", "", "", "", "", "", "GFLOP/s", "GFLOP/s",
         "", "ms/step", "ms/step");
  /* a large square product, at one thread and at --threads: set against the FMA peak */
  double t[2];
  for (int nt = 1; nt <= threads; nt += threads > 1 ? threads - 1 : 1) {
    int n = 1536;
    openblas_set_num_threads(nt);
    struct shape_run sq = {.ta = 0, .tb = 0, .M = n, .N = n, .K = n, .beta = 0.0f, .A = A, .B = B,
                          .C = Cm, .dyT = NULL};
    time_pair(&sq, reps, t);
    char name[32];
    snprintf(name, sizeof name, "square %d thr", nt);
    print_row(name, "NN", &sq, 2.0 * n * n * n, t, 0);
  }
  openblas_set_num_threads(threads);
  double total[2] = {0, 0}, total_flop = 0;
  for (size_t i = 0; i < sizeof lins / sizeof lins[0]; i++) {
    const struct lin *l = &lins[i];
    double fl = 2.0 * T * l->out * l->in;
    int n = l->count * L;
    const struct shape_run runs[4] = {
      {0, 1, T, l->out, l->in, 0.0f, A, B, Cm, NULL},
      {0, 0, T, l->in, l->out, 0.0f, A, B, Cm, NULL},
      {1, 0, l->out, l->in, T, 1.0f, A, B, Cm, NULL},
      {0, 0, l->out, l->in, T, 1.0f, A, B, Cm, dyT},
    };
    const char *pass[] = {"fwd NT", "dX NN", "dW TN", "dW NN*"};
    for (int p = 0; p < 4; p++) {
      time_pair(&runs[p], reps, t);
      print_row(l->name, pass[p], &runs[p], fl, t, n);
      if (n && p < 3) total[0] += t[0] * n, total[1] += t[1] * n;
    }
    if (n) total_flop += 3 * fl * n;
  }
  /* lm_head: logits of a chunk, its dX, its dW accumulated (tied embedding) */
  int nchunk = (T + R - 1) / R;
  double fl = 2.0 * R * V * C;
  const struct shape_run head_runs[3] = {
    {0, 1, R, V, C, 0.0f, A, B, Cm, NULL},
    {0, 0, R, C, V, 0.0f, Cm, B, A, NULL},
    {1, 0, V, C, R, 1.0f, Cm, A, B, NULL},
  };
  const char *head_pass[] = {"fwd NT", "dX NN", "dW TN"};
  for (int p = 0; p < 3; p++) {
    int n = p == 0 ? 2 * nchunk - 1 : nchunk;
    time_pair(&head_runs[p], reps, t);
    print_row("lm_head chunk", head_pass[p], &head_runs[p], fl, t, n);
    total[0] += t[0] * n, total[1] += t[1] * n;
  }
  total_flop += fl * (4 * nchunk - 1);
  printf("step GEMMs as the model runs them (fwd, dX, dW TN; lm_head logits recomputed but the last "
         "chunk):\n");
  const char *who[2] = {"rlpt", "openblas"};
  for (int i = 0; i < 2; i++)
    if (total[i] > 0)
      printf("  %-8s %.3f s, %.1f GFLOP/s average, %.0f tok/s if nothing else ran\n", who[i],
             total[i], total_flop / total[i] * 1e-9, T / total[i]);
  if (total[0] > 0) printf("  step GEMM time openblas/rlpt = %.3f\n", total[1] / total[0]);
  free(A); free(B); free(Cm); free(dyT);
  return 0;
}
