/* cpu/ops.c: the CPU backend of model/backend.h: its op table (cpu_backend, at the end)
 * and the ops that are not attention (cpu/attention.c) or the next-token logprob
 * (cpu/logprob.c).
 *
 * The readable reference path: the forward products A B^T are row-invariant
 * dot products (cpu/rowinv.c: a token's result never depends on the batch it is
 * in, so rollout and trainer logprobs agree to the bit), the other GEMMs go to
 * cpu_gemm (rlpt's blocked GEMM, or OpenBLAS's: cpu/gemm.h), everything else is a
 * loop over rows (the exp-heavy ones, SwiGLU, softmax and logprob, in AVX2 with
 * cpu/fastmath.h's exp), split over the rank's threads as cpu/ops_internal.h says. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu/fastmath.h"
#include "cpu/gemm.h"
#include "cpu/ops_internal.h"
#include "cpu/rowinv.h"
#include "cpu/simd.h"
#include "model/backend.h"

/* ---- GEMM -----------------------------------------------------------------
 * A larger product is split over the rank's pool: with rlpt's GEMM by
 * cpu_gemm_parallel (the operand every slice needs packed once, shared), else (and
 * where that declines) each slice one single-threaded cpu_gemm, rather than handed
 * to OpenBLAS's own threads: the pool's workers are already awake from the op
 * before, while OpenBLAS's threads and the pool's would take turns waking and
 * spinning (two pools on two cores), and OpenBLAS's two-thread path measures
 * 25-80 GFLOP/s on the tiny model's shapes against 65-135 for the split (1024 x 688
 * x 256 and the like, a busy 2-core machine). The split is along the longer of C's
 * sides: every slice packs the whole of the operand along the other side, so that
 * copy is the smaller one. */

#define MM_TILE 16              /* slices start on a multiple of sgemm's register tile */
#define MM_SPLIT_FLOP (1 << 23) /* smaller products stay on one thread */

struct mm_args {
  int ta, tb, M, N, K, lda, ldb, ldc, by_cols;
  float alpha, beta;
  const float *A, *B;
  float *C;
};

/* Tiles [t0, t1) of C's rows (by_cols = 0) or columns, MM_TILE each. */
static void mm_slice(void *p, size_t t0, size_t t1) {
  const struct mm_args *a = p;
  int lo = (int)t0 * MM_TILE, hi = (int)t1 * MM_TILE, M = a->M, N = a->N;
  const float *A = a->A, *B = a->B;
  float *C = a->C;
  if (a->by_cols) {
    hi = hi < N ? hi : N;
    B += a->tb ? (size_t)lo * a->ldb : (size_t)lo;
    C += lo, N = hi - lo;
  } else {
    hi = hi < M ? hi : M;
    A += a->ta ? (size_t)lo : (size_t)lo * a->lda;
    C += (size_t)lo * a->ldc, M = hi - lo;
  }
  cpu_gemm(a->ta, a->tb, M, N, a->K, a->alpha, A, a->lda, B, a->ldb, a->beta, C, a->ldc);
}

/* Every tile is worth a thread here (cost PAR_MIN_WORK): the caller split only products
 * of at least MM_SPLIT_FLOP. */
static void mm_split(int nt, const struct mm_args *a) {
  int side = a->by_cols ? a->N : a->M;
  par_for_blas1(nt, (size_t)(side + MM_TILE - 1) / MM_TILE, PAR_MIN_WORK, mm_slice, (void *)a);
}

void cpu_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
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
  int nt = openblas_get_num_threads();
  int by_cols = N > M;
  if (nt > 1 && (by_cols ? N : M) >= 2 * MM_TILE && 2.0 * M * N * K >= MM_SPLIT_FLOP) {
    if (cpu_gemm_parallel(nt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    mm_split(nt, &(struct mm_args){.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda,
                                   .ldb = ldb, .ldc = ldc, .by_cols = by_cols, .alpha = alpha,
                                   .beta = beta, .A = A, .B = B, .C = C});
    return;
  }
  cpu_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}


/* ---- normalisation ------------------------------------------------------ */

struct rms_args {
  float *out, *rstd_out, *dx, *dw;
  const float *x, *w, *dout, *rstd;
  int C, T_rows;
  float eps;
};

/* sum_i x[i] y[i] z[i] (z NULL: sum_i x[i] y[i]) in the order of rowinv_dot_plain: 8 lane
 * sums (x y z as (x y) z, fused into the lane's add), reduced ((l0+l4)+(l2+l6))+((l1+l5)+
 * (l3+l7)), then the tail in order. One serial sum over the row would be the norms' whole
 * cost (a 3-4 cycle add per element); the AVX2 twin below gives the same bits. */
static float dot3_plain(const float *x, const float *y, const float *z, int n) {
  int n8 = n & ~7;
  float l[8] = {0};
  for (int i = 0; i < n8; i += 8)
    for (int c = 0; c < 8; c++) l[c] = fmaf(x[i + c] * y[i + c], z ? z[i + c] : 1.0f, l[c]);
  float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  for (int i = n8; i < n; i++) s = fmaf(x[i] * y[i], z ? z[i] : 1.0f, s);
  return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static float dot3_avx2(const float *x, const float *y, const float *z, int n) {
  __m256 c = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  for (int i = 0; i < (n & ~7); i += 8) {
    __m256 xy = _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
    c = _mm256_fmadd_ps(xy, z ? _mm256_loadu_ps(z + i) : one, c);
  }
  float s = rowinv_hsum(c);
  for (int i = n & ~7; i < n; i++) s = fmaf(x[i] * y[i], z ? z[i] : 1.0f, s);
  return s;
}
#endif

float cpu_dot3(const float *x, const float *y, const float *z, int n, int avx2) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) return dot3_avx2(x, y, z, n);
#endif
  (void)avx2;
  return dot3_plain(x, y, z, n);
}

static void rms_fwd_rows(void *p, size_t t0, size_t t1) {
  const struct rms_args *a = p;
  int C = a->C, avx2 = cpu_have_avx2();
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C;
    float *ot = a->out + t * C;
    float ss = cpu_dot3(xt, xt, NULL, C, avx2);
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
  int C = a->C, avx2 = cpu_have_avx2();
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C, *dy = a->dout + t * C;
    float *dxt = a->dx + t * C;
    float r = a->rstd[t], dot = cpu_dot3(dy, a->w, xt, C, avx2);
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
  struct rope_args a = {.x = x, .pos = pos, .cos_tab = cos_tab, .sin_tab = sin_tab, .nh = nh,
                        .D = D, .sgn = inverse ? -1.0f : 1.0f};
  par_for((size_t)T, (size_t)nh * D, rope_rows, &a);
}


/* ---- MLP, embedding, elementwise ---------------------------------------- */

struct swiglu_args {
  float *h, *dgate, *dup;
  const float *gate, *up, *dh;
};

/* The element functions below and their AVX2 twins run the same operations in
 * the same order (fast_exp8 lanes are fast_expf's bits), so an element's value
 * does not depend on whether it fell in a vector or in a slice's tail. The
 * forward's h and the backward's recompute of it are the same expression. */
static inline float swiglu_sig(float g) { return 1.0f / (1.0f + fast_expf(-g)); }

#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static inline __m256 swiglu_sig8(__m256 g) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, fast_exp8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)))));
}

/* Elements [i0, i0 + 8k) of the slice; returns where the scalar tail starts. */
CPU_AVX2 static size_t swiglu_fwd_avx2(const struct swiglu_args *a, size_t i0, size_t i1) {
  size_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 g = _mm256_loadu_ps(a->gate + i);
    __m256 h = _mm256_mul_ps(_mm256_mul_ps(g, swiglu_sig8(g)), _mm256_loadu_ps(a->up + i));
    _mm256_storeu_ps(a->h + i, h);
  }
  return i;
}

CPU_AVX2 static size_t swiglu_bwd_avx2(const struct swiglu_args *a, size_t i0, size_t i1) {
  __m256 one = _mm256_set1_ps(1.0f);
  size_t i = i0;
  for (; i + 8 <= i1; i += 8) { /* dh may alias dgate: d is read before the stores */
    __m256 g = _mm256_loadu_ps(a->gate + i), u = _mm256_loadu_ps(a->up + i);
    __m256 d = _mm256_loadu_ps(a->dh + i), sg = swiglu_sig8(g);
    if (a->h) _mm256_storeu_ps(a->h + i, _mm256_mul_ps(_mm256_mul_ps(g, sg), u));
    __m256 dsilu = _mm256_add_ps(one, _mm256_mul_ps(g, _mm256_sub_ps(one, sg)));
    _mm256_storeu_ps(a->dgate + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(d, u), sg), dsilu));
    _mm256_storeu_ps(a->dup + i, _mm256_mul_ps(_mm256_mul_ps(d, g), sg));
  }
  return i;
}
#endif

static void swiglu_fwd_range(void *p, size_t i0, size_t i1) {
  const struct swiglu_args *a = p;
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_have_avx2()) i0 = swiglu_fwd_avx2(a, i0, i1);
#endif
  for (size_t i = i0; i < i1; i++) {
    float g = a->gate[i];
    a->h[i] = g * swiglu_sig(g) * a->up[i];
  }
}

static void cpu_swiglu_fwd(float *h, const float *gate, const float *up, size_t n) {
  struct swiglu_args a = {.h = h, .gate = gate, .up = up};
  par_for(n, 8, swiglu_fwd_range, &a);
}

/* silu(g) = g s(g); silu'(g) = s(g) (1 + g (1 - s(g))). */
static void swiglu_bwd_range(void *p, size_t i0, size_t i1) {
  const struct swiglu_args *a = p;
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_have_avx2()) i0 = swiglu_bwd_avx2(a, i0, i1);
#endif
  for (size_t i = i0; i < i1; i++) {
    float g = a->gate[i], u = a->up[i], d = a->dh[i], sg = swiglu_sig(g);
    if (a->h) a->h[i] = g * sg * u;
    a->dgate[i] = d * u * sg * (1.0f + g * (1.0f - sg));
    a->dup[i] = d * g * sg;
  }
}

static void cpu_swiglu_bwd(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                           const float *up, size_t n) {
  struct swiglu_args a = {.h = h, .dgate = dgate, .dup = dup, .gate = gate, .up = up, .dh = dh};
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

const struct backend_ops cpu_backend = {
  .name = "cpu",
  .matmul = cpu_matmul,
  .matmul_rowinv = rowinv_gemm,
  .matmul_rowinv_shared = rowinv_gemm_shared,
  .rmsnorm_fwd = cpu_rmsnorm_fwd,
  .rmsnorm_bwd = cpu_rmsnorm_bwd,
  .rope = cpu_rope,
  .attention_fwd = cpu_attention_fwd,
  .attention_paged_fwd = cpu_attention_paged_fwd,
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

