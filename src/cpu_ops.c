/* cpu_ops.c: the CPU backend of backend.h.
 *
 * The readable reference path: GEMMs go to OpenBLAS (which owns the threads;
 * nothing here starts a thread pool of its own, so no second pool spins beside
 * BLAS), everything else is a plain loop over rows. Attention runs per
 * (sequence, head) with BLAS GEMMs on the score matrix and recomputes the
 * probabilities from the saved log-sum-exp in the backward (no T^2 storage). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "backend.h"

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

static void cpu_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int T, int C,
                            float eps) {
  for (int t = 0; t < T; t++) {
    const float *xt = x + (size_t)t * C;
    float *ot = out + (size_t)t * C;
    float ss = 0.0f;
    for (int i = 0; i < C; i++) ss += xt[i] * xt[i];
    float r = 1.0f / sqrtf(ss / C + eps);
    for (int i = 0; i < C; i++) ot[i] = xt[i] * r * w[i];
    rstd[t] = r;
  }
}

/* y = x r w with r = (mean x^2 + eps)^-1/2:
 * dx_i = r w_i dy_i - x_i r^3 / C * sum_j dy_j w_j x_j;  dw_i += dy_i x_i r. */
static void cpu_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                            const float *rstd, int T, int C) {
  for (int t = 0; t < T; t++) {
    const float *xt = x + (size_t)t * C, *dy = dout + (size_t)t * C;
    float *dxt = dx + (size_t)t * C;
    float r = rstd[t], dot = 0.0f;
    for (int i = 0; i < C; i++) dot += dy[i] * w[i] * xt[i];
    float k = dot * r * r * r / C;
    for (int i = 0; i < C; i++) {
      dxt[i] += r * w[i] * dy[i] - xt[i] * k;
      dw[i] += dy[i] * xt[i] * r;
    }
  }
}

/* ---- rotary position embedding ------------------------------------------ */

static void cpu_rope(float *x, const int *pos, const float *cos_tab, const float *sin_tab, int T,
                     int nh, int D, int inverse) {
  int half = D / 2;
  float sgn = inverse ? -1.0f : 1.0f;
  for (int t = 0; t < T; t++) {
    const float *c = cos_tab + (size_t)pos[t] * half, *s = sin_tab + (size_t)pos[t] * half;
    for (int h = 0; h < nh; h++) {
      float *xh = x + ((size_t)t * nh + h) * D;
      for (int i = 0; i < half; i++) {
        float a = xh[i], b = xh[i + half], si = sgn * s[i];
        xh[i] = a * c[i] - b * si;
        xh[i + half] = b * c[i] + a * si;
      }
    }
  }
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

static void cpu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                              const float *lse, const float *q, const float *k, const float *v,
                              const struct attn_batch *b, int H, int KVH, int D, float scale,
                              float *scratch) {
  int group = H / KVH, qs = H * D, ks = KVH * D;
  for (int s = 0; s < b->nseq; s++) {
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0;
    int k0 = b->cu_kv[s], nk = b->cu_kv[s + 1] - k0;
    memset(dk + (size_t)k0 * ks, 0, sizeof(float) * nk * ks);
    memset(dv + (size_t)k0 * ks, 0, sizeof(float) * nk * ks);
    for (int h = 0; h < H; h++) {
      size_t ko = (size_t)k0 * ks + (h / group) * D;
      for (int i0 = 0; i0 < nq; i0 += ATTN_QBLOCK) {
        int nb = nq - i0 < ATTN_QBLOCK ? nq - i0 : ATTN_QBLOCK, first = nk - nq + i0;
        struct attn_blk blk = {nb, first, first + nb, qs, ks, D, scale};
        size_t qo = (size_t)(q0 + i0) * qs + h * D;
        attn_block_bwd(&blk, dq + qo, dk + ko, dv + ko, dout + qo, out + qo,
                       lse + (size_t)(q0 + i0) * H + h, H, q + qo, k + ko, v + ko, scratch);
      }
    }
  }
}

/* ---- MLP, embedding, elementwise ---------------------------------------- */

static void cpu_swiglu_fwd(float *h, const float *gate, const float *up, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
    h[i] = g * sg * up[i]; /* same expression as the backward's recompute: bitwise equal */
  }
}

/* silu(g) = g s(g); silu'(g) = s(g) (1 + g (1 - s(g))). */
static void cpu_swiglu_bwd(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                           const float *up, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = gate[i], u = up[i], d = dh[i], sg = 1.0f / (1.0f + expf(-g));
    if (h) h[i] = g * sg * u;
    dgate[i] = d * u * sg * (1.0f + g * (1.0f - sg));
    dup[i] = d * g * sg;
  }
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

static void cpu_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                            const int *targets, int R, int V) {
  for (int r = 0; r < R; r++) {
    const float *z = logits + (size_t)r * V;
    float mx = z[0];
    for (int j = 1; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    double sum = 0.0, sz = 0.0; /* sum e^(z-mx), sum e^(z-mx) (z-mx) */
    for (int j = 0; j < V; j++) {
      float e = expf(z[j] - mx);
      sum += e;
      sz += (double)e * (z[j] - mx);
    }
    double l = log(sum);
    lse[r] = (float)(mx + l);
    entropy[r] = (float)(l - sz / sum); /* H = lse - E[z] */
    logprob[r] = targets[r] >= 0 ? z[targets[r]] - lse[r] : 0.0f;
  }
}

static void cpu_logprob_bwd(float *logits, const float *lse, const float *entropy,
                            const int *targets, const float *dlogprob, const float *dentropy, int R,
                            int V) {
  for (int r = 0; r < R; r++) {
    float *z = logits + (size_t)r * V;
    float gl = (dlogprob && targets[r] >= 0) ? dlogprob[r] : 0.0f;
    float ge = dentropy ? dentropy[r] : 0.0f, H = entropy[r], l = lse[r];
    for (int j = 0; j < V; j++) {
      float lp = z[j] - l, p = expf(lp);
      z[j] = -gl * p - ge * p * (lp + H);
    }
    if (targets[r] >= 0) z[targets[r]] += gl;
  }
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
