/* cpu_ops.c: the CPU backend of backend.h.
 *
 * The readable reference path: GEMMs go to OpenBLAS, everything else is a
 * plain loop over rows. Attention runs per (sequence, head) with BLAS GEMMs on
 * the score matrix and recomputes the probabilities from the saved
 * log-sum-exp in the backward (no T^2 storage).
 *
 * Threads: the row loops of the larger elementwise ops are split over as many
 * threads as OpenBLAS has (the rank's thread budget), by fork-join with
 * pthreads created per call: nothing persists and nothing spins between calls,
 * so no second pool competes with BLAS's. Every output element is computed by
 * the same operations in the same order whatever the thread count, so results
 * do not depend on it. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* ---- fork-join over rows -------------------------------------------------- */

#define PAR_MIN_WORK 65536 /* (rows x cost) per thread below which a thread is not worth starting */

struct par_task {
  void (*fn)(void *arg, size_t lo, size_t hi);
  void *arg;
  size_t lo, hi;
};

static void *par_run(void *p) {
  struct par_task *t = p;
  t->fn(t->arg, t->lo, t->hi);
  return NULL;
}

/* fn(arg, lo, hi) over [0, n) in contiguous slices, one per thread, at most nt threads. */
static void par_for_nt(int nt, size_t n, size_t cost, void (*fn)(void *, size_t, size_t),
                       void *arg) {
  enum { MAXT = 64 };
  size_t by_work = n * cost / PAR_MIN_WORK; /* each thread gets at least PAR_MIN_WORK */
  if (nt > MAXT) nt = MAXT;
  if ((size_t)nt > n) nt = (int)n;
  if ((size_t)nt > by_work) nt = (int)by_work;
  if (nt <= 1) {
    fn(arg, 0, n);
    return;
  }
  struct par_task task[MAXT];
  pthread_t tid[MAXT];
  int started[MAXT] = {0};
  for (int i = 0; i < nt; i++)
    task[i] = (struct par_task){fn, arg, n * i / nt, n * (i + 1) / nt};
  for (int i = 1; i < nt; i++) started[i] = pthread_create(&tid[i], NULL, par_run, &task[i]) == 0;
  par_run(&task[0]);
  for (int i = 1; i < nt; i++) {
    if (started[i]) pthread_join(tid[i], NULL);
    else par_run(&task[i]); /* no thread to be had: do its slice here */
  }
}

/* par_for_nt over the BLAS thread count (the rank's thread budget). */
static void par_for(size_t n, size_t cost, void (*fn)(void *, size_t, size_t), void *arg) {
  par_for_nt(openblas_get_num_threads(), n, cost, fn, arg);
}

static void cpu_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc) {
  if (M == 1) {
    /* C[1,N] = a[1,K] op(B): a GEMV on B; a's stride is lda when A is stored [K,1]. */
    int inca = ta ? lda : 1;
    if (tb) cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, B, ldb, A, inca, beta, C, 1);
    else cblas_sgemv(CblasRowMajor, CblasTrans, K, N, alpha, B, ldb, A, inca, beta, C, 1);
    return;
  }
  if (N == 1) {
    /* C[M,1] = op(A)[M,K] b[K]; b's stride is ldb when B is stored [K,1]. */
    int incb = tb ? 1 : ldb;
    if (ta) cblas_sgemv(CblasRowMajor, CblasTrans, K, M, alpha, A, lda, B, incb, beta, C, ldc);
    else cblas_sgemv(CblasRowMajor, CblasNoTrans, M, K, alpha, A, lda, B, incb, beta, C, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- normalisation ------------------------------------------------------ */

struct rms_args {
  float *out, *rstd_out, *dx, *dw;
  const float *x, *w, *dout, *rstd;
  int C, T_rows;
  float eps;
};

static void rms_fwd_rows(void *p, size_t t0, size_t t1) {
  const struct rms_args *a = p;
  int C = a->C;
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C;
    float *ot = a->out + t * C;
    float ss = 0.0f;
    for (int i = 0; i < C; i++) ss += xt[i] * xt[i];
    float r = 1.0f / sqrtf(ss / C + a->eps);
    for (int i = 0; i < C; i++) ot[i] = xt[i] * r * a->w[i];
    a->rstd_out[t] = r;
  }
}

static void cpu_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int T, int C,
                            float eps) {
  struct rms_args a = {.out = out, .rstd_out = rstd, .x = x, .w = w, .C = C, .eps = eps};
  par_for((size_t)T, (size_t)C, rms_fwd_rows, &a);
}

/* y = x r w with r = (mean x^2 + eps)^-1/2:
 * dx_i = r w_i dy_i - x_i r^3 / C * sum_j dy_j w_j x_j   (rows in parallel) */
static void rms_bwd_rows(void *p, size_t t0, size_t t1) {
  const struct rms_args *a = p;
  int C = a->C;
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C, *dy = a->dout + t * C;
    float *dxt = a->dx + t * C;
    float r = a->rstd[t], dot = 0.0f;
    for (int i = 0; i < C; i++) dot += dy[i] * a->w[i] * xt[i];
    float k = dot * r * r * r / C;
    for (int i = 0; i < C; i++) dxt[i] += r * a->w[i] * dy[i] - xt[i] * k;
  }
}

/* dw_i += sum_t dy_ti x_ti r_t   (columns in parallel, rows in order) */
static void rms_bwd_cols(void *p, size_t i0, size_t i1) {
  const struct rms_args *a = p;
  int C = a->C;
  for (size_t t = 0; t < (size_t)a->T_rows; t++) {
    const float *xt = a->x + t * C, *dy = a->dout + t * C;
    float r = a->rstd[t];
    for (size_t i = i0; i < i1; i++) a->dw[i] += dy[i] * xt[i] * r;
  }
}

static void cpu_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                            const float *rstd, int T, int C) {
  struct rms_args a = {.dx = dx, .dw = dw, .dout = dout, .x = x, .w = w, .rstd = rstd,
                       .C = C, .T_rows = T};
  par_for((size_t)T, (size_t)C, rms_bwd_rows, &a);
  par_for((size_t)C, (size_t)T, rms_bwd_cols, &a);
}

/* ---- rotary position embedding ------------------------------------------ */

struct rope_args {
  float *x;
  const int *pos;
  const float *cos_tab, *sin_tab;
  int nh, D;
  float sgn;
};

static void rope_rows(void *p, size_t t0, size_t t1) {
  const struct rope_args *a = p;
  int half = a->D / 2;
  for (size_t t = t0; t < t1; t++) {
    const float *c = a->cos_tab + (size_t)a->pos[t] * half;
    const float *s = a->sin_tab + (size_t)a->pos[t] * half;
    for (int h = 0; h < a->nh; h++) {
      float *xh = a->x + (t * a->nh + h) * a->D;
      for (int i = 0; i < half; i++) {
        float x1 = xh[i], x2 = xh[i + half], si = a->sgn * s[i];
        xh[i] = x1 * c[i] - x2 * si;
        xh[i + half] = x2 * c[i] + x1 * si;
      }
    }
  }
}

static void cpu_rope(float *x, const int *pos, const float *cos_tab, const float *sin_tab, int T,
                     int nh, int D, int inverse) {
  struct rope_args a = {x, pos, cos_tab, sin_tab, nh, D, inverse ? -1.0f : 1.0f};
  par_for((size_t)T, (size_t)nh * D, rope_rows, &a);
}

/* ---- attention ----------------------------------------------------------- */

/* Attention runs per (sequence, head, block of ATTN_QBLOCK query rows): a block
 * whose last query sits at position p only computes scores against keys
 * 0..p, which skips most of the masked upper triangle for long sequences. */
#define ATTN_QBLOCK 64

/* One block: nb query rows (row stride qs) whose row 0 sits at position
 * `first`, against the klim = first + nb visible keys (row stride ks). */
struct attn_blk {
  int nb, first, klim, qs, ks, D;
  float scale;
};

static void attn_block_fwd(const struct attn_blk *b, float *out, float *lse, int lse_stride,
                           const float *q, const float *k, const float *v, float *S) {
  int nk = b->klim;
  cpu_matmul(0, 1, b->nb, nk, b->D, b->scale, q, b->qs, k, b->ks, 0.0f, S, nk);
  for (int i = 0; i < b->nb; i++) {
    float *row = S + (size_t)i * nk;
    int last = b->first + i;
    float mx = row[0];
    for (int j = 1; j <= last; j++) mx = row[j] > mx ? row[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j <= last; j++) {
      row[j] = expf(row[j] - mx);
      sum += row[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j <= last; j++) row[j] *= inv;
    for (int j = last + 1; j < nk; j++) row[j] = 0.0f;
    lse[(size_t)i * lse_stride] = mx + logf(sum);
  }
  /* O[nb, D] = P V */
  cpu_matmul(0, 0, b->nb, b->D, nk, 1.0f, S, nk, v, b->ks, 0.0f, out, b->qs);
}

static void cpu_attention_fwd(float *out, float *lse, const float *q, const float *k,
                              const float *v, const struct attn_batch *b, int H, int KVH, int D,
                              float scale, float *scratch) {
  int group = H / KVH;
  for (int s = 0; s < b->nseq; s++) {
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0;
    int k0 = b->cu_kv[s], nk = b->cu_kv[s + 1] - k0;
    for (int h = 0; h < H; h++) {
      size_t ko = (size_t)k0 * KVH * D + (h / group) * D;
      for (int i0 = 0; i0 < nq; i0 += ATTN_QBLOCK) {
        int nb = nq - i0 < ATTN_QBLOCK ? nq - i0 : ATTN_QBLOCK, first = nk - nq + i0;
        struct attn_blk blk = {nb, first, first + nb, H * D, KVH * D, D, scale};
        size_t qo = (size_t)(q0 + i0) * H * D + h * D;
        attn_block_fwd(&blk, out + qo, lse + (size_t)(q0 + i0) * H + h, H, q + qo, k + ko, v + ko,
                       scratch);
      }
    }
  }
}

/* P = exp(S - lse) under the causal mask, recomputed from the forward's lse. */
static void attn_probs(const struct attn_blk *b, float *S, const float *lse, int lse_stride) {
  for (int i = 0; i < b->nb; i++) {
    float *row = S + (size_t)i * b->klim, l = lse[(size_t)i * lse_stride];
    int last = b->first + i;
    for (int j = 0; j <= last; j++) row[j] = expf(row[j] - l);
    for (int j = last + 1; j < b->klim; j++) row[j] = 0.0f;
  }
}

/* dS = P * (dP - rowsum(dO * O)) * scale, in place over dP. */
static void attn_dscores(const struct attn_blk *b, float *dP, const float *P, const float *dout,
                         const float *out) {
  for (int i = 0; i < b->nb; i++) {
    const float *doi = dout + (size_t)i * b->qs, *oi = out + (size_t)i * b->qs;
    float d = 0.0f;
    for (int c = 0; c < b->D; c++) d += doi[c] * oi[c];
    float *dp = dP + (size_t)i * b->klim;
    const float *p = P + (size_t)i * b->klim;
    for (int j = 0; j < b->klim; j++) dp[j] = p[j] * (dp[j] - d) * b->scale;
  }
}

/* Backward of one block: dQ rows written, dK/dV rows 0..klim accumulated. */
static void attn_block_bwd(const struct attn_blk *b, float *dq, float *dk, float *dv,
                           const float *dout, const float *out, const float *lse, int lse_stride,
                           const float *q, const float *k, const float *v, float *scratch) {
  int nb = b->nb, nk = b->klim, D = b->D;
  float *P = scratch, *dP = scratch + (size_t)nb * nk;
  cpu_matmul(0, 1, nb, nk, D, b->scale, q, b->qs, k, b->ks, 0.0f, P, nk);
  attn_probs(b, P, lse, lse_stride);
  /* dV += P^T dO;  dP = dO V^T */
  cpu_matmul(1, 0, nk, D, nb, 1.0f, P, nk, dout, b->qs, 1.0f, dv, b->ks);
  cpu_matmul(0, 1, nb, nk, D, 1.0f, dout, b->qs, v, b->ks, 0.0f, dP, nk);
  attn_dscores(b, dP, P, dout, out);
  /* dQ = dS K;  dK += dS^T Q */
  cpu_matmul(0, 0, nb, D, nk, 1.0f, dP, nk, k, b->ks, 0.0f, dq, b->qs);
  cpu_matmul(1, 0, nk, D, nb, 1.0f, dP, nk, q, b->qs, 1.0f, dk, b->ks);
}

struct attn_bwd_args {
  float *dq, *dk, *dv;
  const float *dout, *out, *lse, *q, *k, *v;
  const struct attn_batch *b;
  int H, KVH, D;
  float scale;
};

/* Units u = s * KVH + g: sequence s, key/value head g and the H/KVH query heads
 * that read it. A unit owns its dK/dV columns (every head of the group adds
 * into them), so units run in parallel without sharing an output. */
static void attn_bwd_units(void *p, size_t u0, size_t u1) {
  const struct attn_bwd_args *a = p;
  const struct attn_batch *b = a->b;
  int H = a->H, KVH = a->KVH, D = a->D, group = H / KVH, qs = H * D, ks = KVH * D;
  int qb = b->max_q < ATTN_QBLOCK ? b->max_q : ATTN_QBLOCK;
  float *scratch = malloc(sizeof(float) * 2 * (size_t)(qb > 0 ? qb : 1) * (size_t)b->max_kv);
  if (!scratch) abort(); /* 2 x 64 x max_seq floats: the backward has no error path */
  for (size_t u = u0; u < u1; u++) {
    int s = (int)(u / KVH), g = (int)(u % KVH);
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0;
    int k0 = b->cu_kv[s], nk = b->cu_kv[s + 1] - k0;
    size_t ko = (size_t)k0 * ks + (size_t)g * D;
    for (int j = 0; j < nk; j++) {
      memset(a->dk + ko + (size_t)j * ks, 0, sizeof(float) * D);
      memset(a->dv + ko + (size_t)j * ks, 0, sizeof(float) * D);
    }
    for (int h = g * group; h < (g + 1) * group; h++)
      for (int i0 = 0; i0 < nq; i0 += ATTN_QBLOCK) {
        int nb = nq - i0 < ATTN_QBLOCK ? nq - i0 : ATTN_QBLOCK, first = nk - nq + i0;
        struct attn_blk blk = {nb, first, first + nb, qs, ks, D, a->scale};
        size_t qo = (size_t)(q0 + i0) * qs + (size_t)h * D;
        attn_block_bwd(&blk, a->dq + qo, a->dk + ko, a->dv + ko, a->dout + qo, a->out + qo,
                       a->lse + (size_t)(q0 + i0) * H + h, H, a->q + qo, a->k + ko, a->v + ko,
                       scratch);
      }
  }
  free(scratch);
}

/* The (sequence, kv head) units are split over the rank's threads, and the
 * small GEMMs inside a unit run on the unit's thread: BLAS is set to one thread
 * for the duration (so it starts no second layer of threads under ours) and
 * restored after. Each unit does the same operations whatever the thread count. */
static void cpu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                              const float *lse, const float *q, const float *k, const float *v,
                              const struct attn_batch *b, int H, int KVH, int D, float scale,
                              float *scratch) {
  (void)scratch; /* one block's scratch; the units allocate their own */
  struct attn_bwd_args a = {dq, dk, dv, dout, out, lse, q, k, v, b, H, KVH, D, scale};
  int nt = openblas_get_num_threads();
  size_t cost = (size_t)b->max_q * (size_t)b->max_kv * (size_t)D * (size_t)(H / KVH) + 64;
  if (nt > 1) openblas_set_num_threads(1);
  par_for_nt(nt, (size_t)b->nseq * (size_t)KVH, cost, attn_bwd_units, &a);
  if (nt > 1) openblas_set_num_threads(nt);
}

/* ---- MLP, embedding, elementwise ---------------------------------------- */

struct swiglu_args {
  float *h, *dgate, *dup;
  const float *gate, *up, *dh;
};

static void swiglu_fwd_range(void *p, size_t i0, size_t i1) {
  const struct swiglu_args *a = p;
  for (size_t i = i0; i < i1; i++) {
    float g = a->gate[i], sg = 1.0f / (1.0f + expf(-g));
    a->h[i] = g * sg * a->up[i]; /* same expression as the backward's recompute: bitwise equal */
  }
}

static void cpu_swiglu_fwd(float *h, const float *gate, const float *up, size_t n) {
  struct swiglu_args a = {.h = h, .gate = gate, .up = up};
  par_for(n, 8, swiglu_fwd_range, &a);
}

/* silu(g) = g s(g); silu'(g) = s(g) (1 + g (1 - s(g))). */
static void swiglu_bwd_range(void *p, size_t i0, size_t i1) {
  const struct swiglu_args *a = p;
  for (size_t i = i0; i < i1; i++) {
    float g = a->gate[i], u = a->up[i], d = a->dh[i], sg = 1.0f / (1.0f + expf(-g));
    if (a->h) a->h[i] = g * sg * u;
    a->dgate[i] = d * u * sg * (1.0f + g * (1.0f - sg));
    a->dup[i] = d * g * sg;
  }
}

static void cpu_swiglu_bwd(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                           const float *up, size_t n) {
  struct swiglu_args a = {h, dgate, dup, gate, up, dh};
  par_for(n, 8, swiglu_bwd_range, &a);
}

static void cpu_embed_fwd(float *out, const int *tokens, const float *table, int T, int C) {
  for (int t = 0; t < T; t++)
    memcpy(out + (size_t)t * C, table + (size_t)tokens[t] * C, sizeof(float) * C);
}

static void cpu_embed_bwd(float *dtable, const int *tokens, const float *dout, int T, int C) {
  for (int t = 0; t < T; t++) {
    float *d = dtable + (size_t)tokens[t] * C;
    const float *g = dout + (size_t)t * C;
    for (int i = 0; i < C; i++) d[i] += g[i];
  }
}

static void cpu_bias_add(float *y, const float *b, int T, int N) {
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) y[(size_t)t * N + i] += b[i];
}

static void cpu_bias_bwd(float *db, const float *dy, int T, int N) {
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) db[i] += dy[(size_t)t * N + i];
}

static void cpu_add(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* ---- next-token logprob and entropy -------------------------------------- */

struct logprob_args {
  float *logprob, *entropy, *lse, *logits;
  const float *logits_in, *lse_in, *entropy_in, *dlogprob, *dentropy;
  const int *targets;
  int V;
};

static void logprob_fwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V;
  for (size_t r = r0; r < r1; r++) {
    const float *z = a->logits_in + r * V;
    float mx = z[0];
    for (int j = 1; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    double sum = 0.0, sz = 0.0; /* sum e^(z-mx), sum e^(z-mx) (z-mx) */
    for (int j = 0; j < V; j++) {
      float e = expf(z[j] - mx);
      sum += e;
      sz += (double)e * (z[j] - mx);
    }
    double l = log(sum);
    a->lse[r] = (float)(mx + l);
    a->entropy[r] = (float)(l - sz / sum); /* H = lse - E[z] */
    a->logprob[r] = a->targets[r] >= 0 ? z[a->targets[r]] - a->lse[r] : 0.0f;
  }
}

static void cpu_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                            const int *targets, int R, int V) {
  struct logprob_args a = {.logprob = logprob, .entropy = entropy, .lse = lse,
                           .logits_in = logits, .targets = targets, .V = V};
  par_for((size_t)R, (size_t)V * 8, logprob_fwd_rows, &a);
}

static void logprob_bwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V;
  for (size_t r = r0; r < r1; r++) {
    float *z = a->logits + r * V;
    int tg = a->targets[r];
    float gl = (a->dlogprob && tg >= 0) ? a->dlogprob[r] : 0.0f;
    float ge = a->dentropy ? a->dentropy[r] : 0.0f, H = a->entropy_in[r], l = a->lse_in[r];
    for (int j = 0; j < V; j++) {
      float lp = z[j] - l, pj = expf(lp);
      z[j] = -gl * pj - ge * pj * (lp + H);
    }
    if (tg >= 0) z[tg] += gl;
  }
}

static void cpu_logprob_bwd(float *logits, const float *lse, const float *entropy,
                            const int *targets, const float *dlogprob, const float *dentropy, int R,
                            int V) {
  struct logprob_args a = {.logits = logits, .lse_in = lse, .entropy_in = entropy,
                           .dlogprob = dlogprob, .dentropy = dentropy, .targets = targets, .V = V};
  par_for((size_t)R, (size_t)V * 8, logprob_bwd_rows, &a);
}

const struct backend_ops cpu_backend = {
  .name = "cpu",
  .matmul = cpu_matmul,
  .rmsnorm_fwd = cpu_rmsnorm_fwd,
  .rmsnorm_bwd = cpu_rmsnorm_bwd,
  .rope = cpu_rope,
  .attention_fwd = cpu_attention_fwd,
  .attention_bwd = cpu_attention_bwd,
  .swiglu_fwd = cpu_swiglu_fwd,
  .swiglu_bwd = cpu_swiglu_bwd,
  .embed_fwd = cpu_embed_fwd,
  .embed_bwd = cpu_embed_bwd,
  .bias_add = cpu_bias_add,
  .bias_bwd = cpu_bias_bwd,
  .add = cpu_add,
  .logprob_fwd = cpu_logprob_fwd,
  .logprob_bwd = cpu_logprob_bwd,
};
