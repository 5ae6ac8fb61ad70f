/* cpu/test_ops.c: the CPU backend ops against naive loops.
 *
 * matmul (GEMM and the GEMV paths, every transpose) against a triple loop;
 * attention against a naive O(T^2) double-precision reference, including the
 * KV-cache form (queries = the last rows, keys = the whole sequence) which
 * must give the same rows as the full packed call; RoPE inverse property;
 * rmsnorm, swiglu and logprob/entropy backward against central differences.
 * Tolerances: 1e-5 absolute for forward ops (fp32 vs double on O(1) values),
 * 2e-3 absolute + 1e-2 relative for the finite-difference checks (step 1e-3,
 * accumulated in double). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "testutil.h"
#include "util/rng.h"

static const struct backend_ops *ops = &cpu_backend;

#define FD_H 1e-3f
#define FD_OK(fd, an) (fabs((fd) - (an)) <= 2e-3 + 1e-2 * fabs(an))

static void fill(struct rng_seq *s, float *x, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * (float)rng_seq_normal(s);
}

static double maxdiff(const float *a, const double *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

/* ---- matmul ----------------------------------------------------------- */

static void test_matmul(struct rng_seq *s) {
  int shapes[][3] = {{5, 7, 3}, {1, 6, 4}, {6, 1, 4}, {1, 1, 5}};
  for (int k = 0; k < 4; k++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        int M = shapes[k][0], N = shapes[k][1], K = shapes[k][2];
        float A[64], B[64], C[64];
        double R[64];
        fill(s, A, 64, 1.0f);
        fill(s, B, 64, 1.0f);
        fill(s, C, 64, 1.0f);
        int lda = ta ? M : K, ldb = tb ? K : N;
        for (int i = 0; i < M; i++)
          for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int p = 0; p < K; p++)
              acc += (double)(ta ? A[p * lda + i] : A[i * lda + p]) *
                     (tb ? B[j * ldb + p] : B[p * ldb + j]);
            R[i * N + j] = 0.5 * acc + 2.0 * C[i * N + j];
          }
        ops->matmul(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 2.0f, C, N);
        CHECK_MSG(maxdiff(C, R, (size_t)M * N) < 1e-5, "matmul %dx%dx%d ta %d tb %d", M, N, K, ta,
                  tb);
      }
}

/* ---- attention -------------------------------------------------------- */

/* Naive causal GQA attention, double accumulation, one sequence whose queries
 * are its last nq of nk positions. */
static void attn_naive(double *out, const float *q, const float *k, const float *v, int nq,
                       int nk, int H, int KVH, int D) {
  double *p = malloc(sizeof(double) * nk);
  for (int h = 0; h < H; h++) {
    int kh = h / (H / KVH);
    for (int i = 0; i < nq; i++) {
      int last = nk - nq + i;
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= last; j++) {
        double d = 0;
        for (int c = 0; c < D; c++) d += (double)q[(i * H + h) * D + c] * k[(j * KVH + kh) * D + c];
        p[j] = d / sqrt((double)D);
        mx = fmax(mx, p[j]);
      }
      for (int j = 0; j <= last; j++) sum += (p[j] = exp(p[j] - mx));
      for (int c = 0; c < D; c++) {
        double acc = 0;
        for (int j = 0; j <= last; j++) acc += p[j] / sum * v[(j * KVH + kh) * D + c];
        out[(i * H + h) * D + c] = acc;
      }
    }
  }
  free(p);
}

/* Sequences longer than the CPU op's 64-row query blocks, so block edges are crossed. */
static void test_attention(struct rng_seq *s) {
  enum { H = 4, KVH = 2, D = 8, T = 217 };
  const int cu[] = {0, 6, 7, 147, 217};
  size_t nq = (size_t)T * H * D, nk = (size_t)T * KVH * D;
  float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk);
  float *v = malloc(sizeof(float) * nk), *out = malloc(sizeof(float) * nq);
  float *lse = malloc(sizeof(float) * T * H), *scratch = malloc(sizeof(float) * attn_scratch_floats(140, 140));
  double *ref = malloc(sizeof(double) * nq);
  fill(s, q, nq, 1.0f);
  fill(s, k, nk, 1.0f);
  fill(s, v, nk, 1.0f);
  struct attn_batch b = {.nseq = 4, .cu_q = cu, .cu_kv = cu, .max_q = 140, .max_kv = 140};
  ops->attention_fwd(out, lse, q, k, v, &b, H, KVH, D, 1.0f / sqrtf(D), scratch);
  for (int sq = 0; sq < 4; sq++) {
    int n = cu[sq + 1] - cu[sq];
    attn_naive(ref + cu[sq] * H * D, q + cu[sq] * H * D, k + cu[sq] * KVH * D,
               v + cu[sq] * KVH * D, n, n, H, KVH, D);
  }
  CHECK_NEAR(maxdiff(out, ref, nq), 0.0, 1e-5);

  /* KV-cache form: the last 70 queries of sequence 2 (positions 70..139) against
   * all its 140 keys must reproduce those rows of the packed call. */
  const int cq[] = {0, 70}, ck[] = {0, 140};
  struct attn_batch bc = {.nseq = 1, .cu_q = cq, .cu_kv = ck, .max_q = 70, .max_kv = 140};
  float *out2 = malloc(sizeof(float) * 70 * H * D), *lse2 = malloc(sizeof(float) * 70 * H);
  ops->attention_fwd(out2, lse2, q + 77 * H * D, k + 7 * KVH * D, v + 7 * KVH * D, &bc, H, KVH, D,
                     1.0f / sqrtf(D), scratch);
  double m = 0;
  for (int i = 0; i < 70 * H * D; i++) m = fmax(m, fabs(out2[i] - out[77 * H * D + i]));
  CHECK_NEAR(m, 0.0, 1e-6);
  free(q); free(k); free(v); free(out); free(lse); free(scratch); free(ref); free(out2); free(lse2);
}

/* attention_bwd against central differences of L = sum G * out, on sequences
 * crossing the query-block edge, with GQA. */
static double attn_loss(const float *q, const float *k, const float *v, const float *G,
                        const struct attn_batch *b, float *out, float *lse, float *scr, int T) {
  enum { H = 4, KVH = 2, D = 4 };
  ops->attention_fwd(out, lse, q, k, v, b, H, KVH, D, 0.5f, scr);
  double L = 0;
  for (int i = 0; i < T * H * D; i++) L += (double)G[i] * out[i];
  return L;
}

static void test_attention_bwd(struct rng_seq *s) {
  enum { H = 4, KVH = 2, D = 4, T = 80 };
  const int cu[] = {0, 70, 80};
  struct attn_batch b = {.nseq = 2, .cu_q = cu, .cu_kv = cu, .max_q = 70, .max_kv = 70};
  size_t nq = (size_t)T * H * D, nk = (size_t)T * KVH * D;
  float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk);
  float *v = malloc(sizeof(float) * nk), *out = malloc(sizeof(float) * nq);
  float *G = malloc(sizeof(float) * nq), *lse = malloc(sizeof(float) * T * H);
  float *dq = malloc(sizeof(float) * nq), *dk = malloc(sizeof(float) * nk);
  float *dv = malloc(sizeof(float) * nk), *scr = malloc(sizeof(float) * attn_scratch_floats(70, 70));
  fill(s, q, nq, 1.0f);
  fill(s, k, nk, 1.0f);
  fill(s, v, nk, 1.0f);
  fill(s, G, nq, 1.0f);
  attn_loss(q, k, v, G, &b, out, lse, scr, T);
  ops->attention_bwd(dq, dk, dv, G, out, lse, q, k, v, &b, H, KVH, D, 0.5f, scr);
  float *xs[3] = {q, k, v}, *ds[3] = {dq, dk, dv};
  size_t ns[3] = {nq, nk, nk};
  for (int w = 0; w < 3; w++)
    for (int r = 0; r < 12; r++) {
      size_t i = rng_seq_below(s, ns[w]);
      float keep = xs[w][i];
      xs[w][i] = keep + FD_H;
      double lp = attn_loss(q, k, v, G, &b, out, lse, scr, T);
      xs[w][i] = keep - FD_H;
      double lm = attn_loss(q, k, v, G, &b, out, lse, scr, T);
      xs[w][i] = keep;
      double fd = (lp - lm) / (2 * FD_H);
      CHECK_MSG(FD_OK(fd, ds[w][i]), "attention d%c[%zu]: %g vs %g", "qkv"[w], i, ds[w][i], fd);
    }
  free(q); free(k); free(v); free(out); free(G); free(lse); free(dq); free(dk); free(dv); free(scr);
}

/* ---- rope ------------------------------------------------------------- */

static void test_rope(struct rng_seq *s) {
  enum { T = 5, NH = 3, D = 8, P = 16 };
  float cs[P * D / 2], sn[P * D / 2], x[T * NH * D], x0[T * NH * D];
  for (int p = 0; p < P; p++)
    for (int i = 0; i < D / 2; i++) {
      double f = p * pow(10000.0, -2.0 * i / D);
      cs[p * D / 2 + i] = (float)cos(f);
      sn[p * D / 2 + i] = (float)sin(f);
    }
  const int pos[T] = {0, 1, 2, 9, 15};
  fill(s, x, T * NH * D, 1.0f);
  memcpy(x0, x, sizeof x);
  ops->rope(x, pos, cs, sn, T, NH, D, 0);
  /* row at position 0 is unchanged; position 9, head 1, pair 2 by formula */
  for (int i = 0; i < NH * D; i++) CHECK_NEAR(x[i], x0[i], 1e-7);
  int base = (3 * NH + 1) * D;
  double f = 9 * pow(10000.0, -2.0 * 2 / D);
  CHECK_NEAR(x[base + 2], x0[base + 2] * cos(f) - x0[base + 6] * sin(f), 1e-5);
  CHECK_NEAR(x[base + 6], x0[base + 6] * cos(f) + x0[base + 2] * sin(f), 1e-5);
  ops->rope(x, pos, cs, sn, T, NH, D, 1);
  double m = 0;
  for (int i = 0; i < T * NH * D; i++) m = fmax(m, fabs(x[i] - x0[i]));
  CHECK_NEAR(m, 0.0, 1e-5);
}

/* ---- backward ops against central differences ------------------------- */


/* L = sum_i g_i * rmsnorm(x)_i for a fixed random g. */
static double rms_loss(const float *x, const float *w, const float *g, int C) {
  float out[16], r;
  ops->rmsnorm_fwd(out, &r, x, w, 1, C, 1e-5f);
  double L = 0;
  for (int i = 0; i < C; i++) L += (double)g[i] * out[i];
  return L;
}

static void test_rmsnorm_bwd(struct rng_seq *s) {
  enum { C = 16 };
  float x[C], w[C], g[C], out[C], r, dx[C] = {0}, dw[C] = {0};
  fill(s, x, C, 1.0f);
  fill(s, w, C, 1.0f);
  fill(s, g, C, 1.0f);
  ops->rmsnorm_fwd(out, &r, x, w, 1, C, 1e-5f);
  ops->rmsnorm_bwd(dx, dw, g, x, w, &r, 1, C);
  for (int i = 0; i < C; i++) {
    float *ps[2] = {&x[i], &w[i]};
    float an[2] = {dx[i], dw[i]};
    for (int k = 0; k < 2; k++) {
      float keep = *ps[k];
      *ps[k] = keep + FD_H;
      double lp = rms_loss(x, w, g, C);
      *ps[k] = keep - FD_H;
      double lm = rms_loss(x, w, g, C);
      *ps[k] = keep;
      double fd = (lp - lm) / (2 * FD_H);
      CHECK_MSG(FD_OK(fd, an[k]), "rmsnorm d%s[%d]: %g vs %g", k ? "w" : "x", i, an[k], fd);
    }
  }
}

static void test_swiglu_bwd(struct rng_seq *s) {
  enum { N = 32 };
  float g[N], u[N], dh[N], dg[N], du[N], hp, hm;
  fill(s, g, N, 2.0f);
  fill(s, u, N, 1.0f);
  fill(s, dh, N, 1.0f);
  float h[N], h2[N], d2[N];
  ops->swiglu_fwd(h, g, u, N);
  memcpy(d2, dh, sizeof d2);
  ops->swiglu_bwd(d2, du, h2, d2, g, u, N); /* dh aliasing dgate, h recomputed */
  for (int i = 0; i < N; i++) CHECK_NEAR(h2[i], h[i], 0.0);
  ops->swiglu_bwd(dg, du, NULL, dh, g, u, N);
  for (int i = 0; i < N; i++) CHECK_NEAR(d2[i], dg[i], 0.0);
  for (int i = 0; i < N; i++) {
    float a = g[i] + FD_H, b = g[i] - FD_H;
    ops->swiglu_fwd(&hp, &a, &u[i], 1);
    ops->swiglu_fwd(&hm, &b, &u[i], 1);
    CHECK(FD_OK(dh[i] * ((double)hp - hm) / (2 * FD_H), dg[i]));
    a = u[i] + FD_H, b = u[i] - FD_H;
    ops->swiglu_fwd(&hp, &g[i], &a, 1);
    ops->swiglu_fwd(&hm, &g[i], &b, 1);
    CHECK(FD_OK(dh[i] * ((double)hp - hm) / (2 * FD_H), du[i]));
  }
}

/* L = sum_r a_r logprob_r + b_r entropy_r over R rows of V logits. */
static double lp_loss(const float *z, const int *tg, const float *a, const float *b, int R, int V) {
  float lp[4], ent[4], lse[4];
  ops->logprob_fwd(lp, ent, lse, z, tg, R, V);
  double L = 0;
  for (int r = 0; r < R; r++) L += (double)a[r] * lp[r] + (double)b[r] * ent[r];
  return L;
}

static void test_logprob(struct rng_seq *s) {
  enum { R = 3, V = 9 };
  float z[R * V], d[R * V], lp[R], ent[R], lse[R], a[R], b[R];
  const int tg[R] = {4, -1, 0};
  fill(s, z, R * V, 2.0f);
  fill(s, a, R, 1.0f);
  fill(s, b, R, 1.0f);
  ops->logprob_fwd(lp, ent, lse, z, tg, R, V);
  for (int r = 0; r < R; r++) {
    double sum = 0, h = 0;
    for (int j = 0; j < V; j++) sum += exp((double)z[r * V + j]);
    for (int j = 0; j < V; j++) {
      double p = exp((double)z[r * V + j]) / sum;
      h -= p * log(p);
    }
    CHECK_NEAR(lse[r], log(sum), 1e-5);
    CHECK_NEAR(ent[r], h, 1e-5);
    CHECK_NEAR(lp[r], tg[r] >= 0 ? z[r * V + tg[r]] - log(sum) : 0.0, 1e-5);
  }
  memcpy(d, z, sizeof z);
  ops->logprob_bwd(d, lse, ent, tg, a, b, R, V);
  for (int i = 0; i < R * V; i++) {
    float keep = z[i];
    z[i] = keep + FD_H;
    double lpp = lp_loss(z, tg, a, b, R, V);
    z[i] = keep - FD_H;
    double lpm = lp_loss(z, tg, a, b, R, V);
    z[i] = keep;
    double fd = (lpp - lpm) / (2 * FD_H);
    CHECK_MSG(FD_OK(fd, d[i]), "logprob dz[%d]: %g vs %g", i, d[i], fd);
  }
}

/* The elementwise ops split rows over OpenBLAS's thread count: results must be
 * bitwise the same with 1 and 3 threads (sizes above the parallel threshold). */
enum { ET = 1024, EC = 256, EV = 700, EF = ET * EC }; /* >= 3 threads' work each */

struct ew_out {
  float out[EF], rstd[ET], dx[EF], dw[EC], dg[EF], du[EF], h[EF];
  float lp[ET], ent[ET], lse[ET], z[ET * EV];
};

static void run_elementwise(const struct rng_seq *seed, int threads, struct ew_out *r) {
  static float x[EF], w[EC], g[EF], cs[64 * 16], sn[64 * 16], a[ET], b[ET];
  int pos[ET], tg[ET];
  struct rng_seq s = *seed; /* the same inputs for every thread count */
  openblas_set_num_threads(threads);
  fill(&s, x, EF, 1.0f);
  fill(&s, w, EC, 1.0f);
  fill(&s, g, EF, 1.0f);
  fill(&s, cs, 64 * 16, 1.0f);
  fill(&s, sn, 64 * 16, 1.0f);
  fill(&s, a, ET, 1.0f);
  fill(&s, b, ET, 1.0f);
  fill(&s, r->z, ET * EV, 3.0f);
  for (int t = 0; t < ET; t++) pos[t] = t % 64, tg[t] = t % 5 ? (t * 7) % EV : -1;
  memset(r->dx, 0, sizeof r->dx);
  memset(r->dw, 0, sizeof r->dw);
  ops->rmsnorm_fwd(r->out, r->rstd, x, w, ET, EC, 1e-5f);
  ops->rmsnorm_bwd(r->dx, r->dw, g, x, w, r->rstd, ET, EC);
  ops->swiglu_bwd(r->dg, r->du, r->h, g, x, r->out, EF);
  ops->rope(r->out, pos, cs, sn, ET, 8, 32, 0);
  ops->logprob_fwd(r->lp, r->ent, r->lse, r->z, tg, ET, EV);
  ops->logprob_bwd(r->z, r->lse, r->ent, tg, a, b, ET, EV);
}

static void test_thread_invariance(struct rng_seq *s) {
  struct ew_out *one = calloc(1, sizeof *one), *three = calloc(1, sizeof *three);
  run_elementwise(s, 1, one);
  run_elementwise(s, 3, three);
  openblas_set_num_threads(1);
  CHECK(memcmp(one, three, sizeof *one) == 0);
  free(one);
  free(three);
}

int main(void) {
  struct rng_seq s;
  rng_seq_init(&s, 3, RNG_STREAM_TEST, 0, 0);
  test_matmul(&s);
  test_attention(&s);
  test_attention_bwd(&s);
  test_rope(&s);
  test_rmsnorm_bwd(&s);
  test_swiglu_bwd(&s);
  test_logprob(&s);
  test_thread_invariance(&s);
  return TEST_RESULT("test_ops");
}
