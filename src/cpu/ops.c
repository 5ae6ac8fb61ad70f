/* cpu/ops.c: the CPU backend of model/backend.h.
 *
 * The readable reference path: the forward products A B^T are row-invariant
 * dot products (cpu/rowinv.c: a token's result never depends on the batch it is
 * in, so rollout and trainer logprobs agree to the bit), the other GEMMs go to
 * cpu_gemm (rlpt's blocked GEMM, or OpenBLAS's: cpu/gemm.h), everything else is a loop over rows (the exp-heavy ones, SwiGLU,
 * softmax and logprob, in AVX2 with cpu/fastmath.h's exp). Attention runs one query
 * row (or two adjacent ones, the same bits) at a time in the forward (contiguous
 * or paged keys) and recomputes the probabilities from the saved log-sum-exp in
 * the backward (no T^2 storage).
 *
 * Threads: the row loops of the larger ops, and the larger GEMMs (cpu_gemm_parallel,
 * or one single-threaded GEMM per slice), are split over as many threads as
 * OpenBLAS has (the rank's thread budget) on the rank's persistent pool
 * (cpu/thread_pool.h), so OpenBLAS's own threads stay asleep. Every output element
 * of the loops is computed by the same operations in the same order whatever the
 * thread count, so their results do not depend on it; a product's sums depend on
 * where it is cut, as they did with OpenBLAS's own threads. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/fastmath.h"
#include "cpu/gemm.h"
#include "cpu/rowinv.h"
#include "cpu/thread_pool.h"
#include "model/backend.h"

/* ---- parallel loops over rows --------------------------------------------- */

#define PAR_MIN_WORK 65536 /* (rows x cost) per thread below which a thread is not worth waking */

/* fn(arg, lo, hi) over [0, n) in contiguous slices, one per thread, at most nt
 * threads of the rank's pool and each with PAR_MIN_WORK at least (cpu/thread_pool.h: the
 * slices depend on n and the thread count only). */
static void par_for_nt(int nt, size_t n, size_t cost, void (*fn)(void *, size_t, size_t),
                       void *arg) {
  thread_pool_par_for_work(nt, n, cost, PAR_MIN_WORK, fn, arg);
}

/* par_for_nt with OpenBLAS at one thread for the call (restored after): the slices'
 * own sgemm calls then run on the slice's thread and start no second layer of
 * threads under the pool's. */
static void par_for_blas1(int nt, size_t n, size_t cost, void (*fn)(void *, size_t, size_t),
                          void *arg) {
  if (nt > 1) openblas_set_num_threads(1);
  par_for_nt(nt, n, cost, fn, arg);
  if (nt > 1) openblas_set_num_threads(nt);
}

/* par_for_nt over the BLAS thread count (the rank's thread budget). */
static void par_for(size_t n, size_t cost, void (*fn)(void *, size_t, size_t), void *arg) {
  par_for_nt(openblas_get_num_threads(), n, cost, fn, arg);
}

/* ---- GEMM -----------------------------------------------------------------
 * A larger product is split over the rank's pool: with rlpt's GEMM by
 * cpu_gemm_parallel (the operand every slice needs packed once, shared), else (and
 * where that declines) each slice one single-threaded cpu_gemm, rather than handed
 * to OpenBLAS's own threads: the pool's workers are already awake from the op
 * before, while OpenBLAS's threads and the pool's took turns waking and spinning
 * (two pools on two cores), and OpenBLAS's two-thread path measured 25-80 GFLOP/s on the tiny model's shapes against 65-135 for the
 * split (1024 x 688 x 256 and the like, a busy 2-core machine). The split is
 * along the longer of C's sides: every slice packs the whole of the operand
 * along the other side, so that copy is the smaller one. */

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
  int nt = openblas_get_num_threads();
  int by_cols = N > M;
  if (nt > 1 && (by_cols ? N : M) >= 2 * MM_TILE && 2.0 * M * N * K >= MM_SPLIT_FLOP) {
    if (cpu_gemm_parallel(nt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    mm_split(nt, &(struct mm_args){ta, tb, M, N, K, lda, ldb, ldc, by_cols, alpha, beta, A, B, C});
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

/* sum_i x[i] y[i] z[i] (z NULL: sum_i x[i] y[i]) in the order of rd_dot_plain: 8 lane
 * sums (x y z as (x y) z, fused into the lane's add), reduced ((l0+l4)+(l2+l6))+((l1+l5)+
 * (l3+l7)), then the tail in order. The row's one serial sum was the norms' whole cost
 * (a 3-4 cycle add per element); the AVX2 twin below gives the same bits. */
static float rms_dot_plain(const float *x, const float *y, const float *z, int n) {
  int n8 = n & ~7;
  float l[8] = {0};
  for (int i = 0; i < n8; i += 8)
    for (int c = 0; c < 8; c++) l[c] = fmaf(x[i + c] * y[i + c], z ? z[i + c] : 1.0f, l[c]);
  float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  for (int i = n8; i < n; i++) s = fmaf(x[i] * y[i], z ? z[i] : 1.0f, s);
  return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
RD_AVX2 static float rms_dot_avx2(const float *x, const float *y, const float *z, int n) {
  __m256 c = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  for (int i = 0; i < (n & ~7); i += 8) {
    __m256 xy = _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
    c = _mm256_fmadd_ps(xy, z ? _mm256_loadu_ps(z + i) : one, c);
  }
  float s = rd_hsum(c);
  for (int i = n & ~7; i < n; i++) s = fmaf(x[i] * y[i], z ? z[i] : 1.0f, s);
  return s;
}
#endif

static float rms_dot(const float *x, const float *y, const float *z, int n, int avx2) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) return rms_dot_avx2(x, y, z, n);
#endif
  (void)avx2;
  return rms_dot_plain(x, y, z, n);
}

static void rms_fwd_rows(void *p, size_t t0, size_t t1) {
  const struct rms_args *a = p;
  int C = a->C, avx2 = rd_have_avx2();
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C;
    float *ot = a->out + t * C;
    float ss = rms_dot(xt, xt, NULL, C, avx2);
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
  int C = a->C, avx2 = rd_have_avx2();
  for (size_t t = t0; t < t1; t++) {
    const float *xt = a->x + t * C, *dy = a->dout + t * C;
    float *dxt = a->dx + t * C;
    float r = a->rstd[t], dot = rms_dot(dy, a->w, xt, C, avx2);
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

/* ---- exp over a row ------------------------------------------------------ */

/* x[j] = exp(x[j] - m) for j < n, eight at a time where AVX2 is there; the tail
 * (and other CPUs) take fast_expf, the same bits as a lane of fast_exp8. */
#if defined(__x86_64__) && defined(__GNUC__)
FM_AVX2 static int exp_shift_avx2(float *x, int n, float m) {
  __m256 mv = _mm256_set1_ps(m);
  int j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(x + j, fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv)));
  if (j < n) { /* the tail through a padded vector: the same bits as fast_expf */
    float t[8] = {0};
    memcpy(t, x + j, sizeof(float) * (size_t)(n - j));
    _mm256_storeu_ps(t, fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(t), mv)));
    memcpy(x + j, t, sizeof(float) * (size_t)(n - j));
  }
  return n;
}

/* max(-inf, x[0..n)) eight lanes at a time (the plain loop's ties aside, the same
 * value: a max does not depend on the order). The plain loop here carried its
 * running max through memory, a quarter of the attention forward. */
FM_AVX2 static float row_max_avx2(const float *x, int n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + j), m);
  float l[8], r = -INFINITY;
  _mm256_storeu_ps(l, m);
  for (int c = 0; c < 8; c++) r = l[c] > r ? l[c] : r;
  for (; j < n; j++) r = x[j] > r ? x[j] : r;
  return r;
}
#endif

static void exp_shift_row(float *x, int n, float m, int avx2) {
  int j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) j = exp_shift_avx2(x, n, m);
#endif
  (void)avx2;
  for (; j < n; j++) x[j] = fast_expf(x[j] - m);
}

/* ---- attention ----------------------------------------------------------- */

/* The forward runs one query row at a time with a fixed order, so a query's
 * output is the same bits whether it came in a one-row decode step, against
 * keys read in place from a paged KV cache, or in the trainer's packed batch:
 * scores are rowdot_gemm's dot products (the backward recomputes them with the
 * same matmul), softmax over keys 0..pos, and out = sum_j p_j v_j over j
 * ascending. Rows of one (sequence, head) pair share a thread. */

/* Where one sequence's key/value rows of one head live: row j at k/v + off(j). */
struct attn_src {
  const float *k, *v;
  const int *table; /* NULL: contiguous rows of stride ks; else a paged block table */
  int block_size, ks;
  size_t block_stride;
};

static inline size_t attn_off(const struct attn_src *s, int j) {
  if (!s->table) return (size_t)j * s->ks;
  return (size_t)s->table[j / s->block_size] * s->block_stride +
         (size_t)(j % s->block_size) * s->ks;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* S[j] = scale * dot(q, k_j) for j = 0..last: rd_dot_avx2's order, four keys reduced at once. */
RD_AVX2 static void attn_scores_avx2(float *S, const float *q, const struct attn_src *s, int last,
                                     int D, float scale) {
  int j = 0;
  /* eight keys: eight independent FMA chains (four leave the loop waiting on FMA latency) */
  for (; j + 8 <= last + 1 && D % 8 == 0; j += 8) {
    const float *kr[8];
    for (int r = 0; r < 8; r++) kr[r] = s->k + attn_off(s, j + r);
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int k = 0; k < D; k += 8) {
      __m256 qv = _mm256_loadu_ps(q + k);
      c0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[0] + k), c0);
      c1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[1] + k), c1);
      c2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[2] + k), c2);
      c3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[3] + k), c3);
      c4 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[4] + k), c4);
      c5 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[5] + k), c5);
      c6 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[6] + k), c6);
      c7 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[7] + k), c7);
    }
    __m256 sv = _mm256_set_m128(rd_hsum4(c4, c5, c6, c7), rd_hsum4(c0, c1, c2, c3));
    _mm256_storeu_ps(S + j, _mm256_mul_ps(_mm256_set1_ps(scale), sv));
  }
  for (; j + 4 <= last + 1; j += 4) {
    const float *k0 = s->k + attn_off(s, j), *k1 = s->k + attn_off(s, j + 1);
    const float *k2 = s->k + attn_off(s, j + 2), *k3 = s->k + attn_off(s, j + 3);
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    for (int k = 0; k < (D & ~7); k += 8) {
      __m256 qv = _mm256_loadu_ps(q + k);
      c0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + k), c0);
      c1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + k), c1);
      c2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + k), c2);
      c3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + k), c3);
    }
    float t[4];
    const float *kr[4] = {k0, k1, k2, k3};
    _mm_storeu_ps(t, rd_hsum4(c0, c1, c2, c3));
    for (int r = 0; r < 4; r++) {
      for (int k = D & ~7; k < D; k++) t[r] = fmaf(q[k], kr[r][k], t[r]);
      S[j + r] = scale * t[r];
    }
  }
  for (; j <= last; j++) S[j] = scale * rd_dot_avx2(q, s->k + attn_off(s, j), D);
}

/* out[d] = sum_j p_j v_j[d], j ascending from 0, a fused multiply-add per term as
 * the plain loop below computes it; p_j = S[j] * inv. Columns 64, 32 or 8 at a
 * time: 64 (a whole head of SmolLM2) keeps eight independent sums in flight and
 * reads each v row once. */
RD_AVX2 static void attn_pv_avx2(float *out, const float *S, float inv,
                                 const struct attn_src *s, int last, int D) {
  int d = 0;
  for (; d + 64 <= D; d += 64) {
    __m256 o[8];
    for (int c = 0; c < 8; c++) o[c] = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S[j] * inv);
      for (int c = 0; c < 8; c++)
        o[c] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * c), o[c]);
    }
    for (int c = 0; c < 8; c++) _mm256_storeu_ps(out + d + 8 * c, o[c]);
  }
  for (; d + 32 <= D; d += 32) {
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S[j] * inv);
      o0 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v), o0);
      o1 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8), o1);
      o2 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 16), o2);
      o3 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 24), o3);
    }
    _mm256_storeu_ps(out + d, o0);
    _mm256_storeu_ps(out + d + 8, o1);
    _mm256_storeu_ps(out + d + 16, o2);
    _mm256_storeu_ps(out + d + 24, o3);
  }
  for (; d + 8 <= D; d += 8) {
    __m256 o = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++)
      o = _mm256_fmadd_ps(_mm256_set1_ps(S[j] * inv), _mm256_loadu_ps(s->v + attn_off(s, j) + d),
                          o);
    _mm256_storeu_ps(out + d, o);
  }
  for (; d < D; d++) {
    float o = 0.0f;
    for (int j = 0; j <= last; j++) o = fmaf(S[j] * inv, s->v[attn_off(s, j) + d], o);
    out[d] = o;
  }
}

/* Two query rows at positions last and last + 1 (S0, S1) in one pass over the
 * keys: each k row loaded once feeds both (the one-row kernel issued a load per
 * fused multiply-add). Every score is attn_scores_avx2's: lane sums over D, then
 * rd_hsum4's reduction, the D mod 8 tail and the scale in the same order. */
RD_AVX2 static void attn_scores2_avx2(float *S0, float *S1, const float *q0, const float *q1,
                                      const struct attn_src *s, int last, int D, float scale) {
  int j = 0, D8 = D & ~7;
  for (; j + 4 <= last + 1; j += 4) {
    const float *kr[4];
    for (int r = 0; r < 4; r++) kr[r] = s->k + attn_off(s, j + r);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int k = 0; k < D8; k += 8) {
      __m256 x = _mm256_loadu_ps(q0 + k), y = _mm256_loadu_ps(q1 + k);
      __m256 w0 = _mm256_loadu_ps(kr[0] + k), w1 = _mm256_loadu_ps(kr[1] + k);
      __m256 w2 = _mm256_loadu_ps(kr[2] + k), w3 = _mm256_loadu_ps(kr[3] + k);
      /* in registers: GCC otherwise folds each load into both FMAs (two loads) */
      __asm__("" : "+x"(w0), "+x"(w1), "+x"(w2), "+x"(w3));
      a0 = _mm256_fmadd_ps(x, w0, a0), b0 = _mm256_fmadd_ps(y, w0, b0);
      a1 = _mm256_fmadd_ps(x, w1, a1), b1 = _mm256_fmadd_ps(y, w1, b1);
      a2 = _mm256_fmadd_ps(x, w2, a2), b2 = _mm256_fmadd_ps(y, w2, b2);
      a3 = _mm256_fmadd_ps(x, w3, a3), b3 = _mm256_fmadd_ps(y, w3, b3);
    }
    float t0[4], t1[4];
    _mm_storeu_ps(t0, rd_hsum4(a0, a1, a2, a3));
    _mm_storeu_ps(t1, rd_hsum4(b0, b1, b2, b3));
    for (int r = 0; r < 4; r++) {
      for (int k = D8; k < D; k++) {
        t0[r] = fmaf(q0[k], kr[r][k], t0[r]);
        t1[r] = fmaf(q1[k], kr[r][k], t1[r]);
      }
      S0[j + r] = scale * t0[r];
      S1[j + r] = scale * t1[r];
    }
  }
  for (; j <= last; j++) {
    S0[j] = scale * rd_dot_avx2(q0, s->k + attn_off(s, j), D);
    S1[j] = scale * rd_dot_avx2(q1, s->k + attn_off(s, j), D);
  }
  S1[last + 1] = scale * rd_dot_avx2(q1, s->k + attn_off(s, last + 1), D);
}

/* attn_pv_avx2 for the two rows of attn_scores2_avx2 (D a multiple of 32): 32
 * columns of both at a time, each v row loaded once for the two; every output is
 * the same chain of fused multiply-adds over j ascending. */
RD_AVX2 static void attn_pv2_avx2(float *o0, float *o1, const float *S0, const float *S1,
                                  float inv0, float inv1, const struct attn_src *s, int last,
                                  int D) {
  for (int d = 0; d + 32 <= D; d += 32) {
    __m256 a[4], b[4];
    for (int c = 0; c < 4; c++) a[c] = b[c] = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S0[j] * inv0), r = _mm256_set1_ps(S1[j] * inv1);
      for (int c = 0; c < 4; c++) {
        __m256 w = _mm256_loadu_ps(v + 8 * c);
        __asm__("" : "+x"(w)); /* one load for both rows (see attn_scores2_avx2) */
        a[c] = _mm256_fmadd_ps(p, w, a[c]);
        b[c] = _mm256_fmadd_ps(r, w, b[c]);
      }
    }
    const float *v = s->v + attn_off(s, last + 1) + d;
    __m256 r = _mm256_set1_ps(S1[last + 1] * inv1);
    for (int c = 0; c < 4; c++) {
      _mm256_storeu_ps(o0 + d + 8 * c, a[c]);
      _mm256_storeu_ps(o1 + d + 8 * c, _mm256_fmadd_ps(r, _mm256_loadu_ps(v + 8 * c), b[c]));
    }
  }
}

/* attn_row_fwd (below) for queries at positions last and last + 1 at once, the
 * same bits: the two serial sums run side by side in their own orders. */
static void attn_rows2_fwd(float *lse, float *out0, float *out1, const float *q0, const float *q1,
                           const struct attn_src *s, int last, int D, float scale, float *S0,
                           float *S1) {
  attn_scores2_avx2(S0, S1, q0, q1, s, last, D, scale);
  float mx0 = row_max_avx2(S0, last + 1), mx1 = row_max_avx2(S1, last + 2);
  exp_shift_row(S0, last + 1, mx0, 1);
  exp_shift_row(S1, last + 2, mx1, 1);
  float sum0 = 0.0f, sum1 = 0.0f;
  for (int j = 0; j <= last; j++) sum0 += S0[j], sum1 += S1[j];
  sum1 += S1[last + 1];
  float inv0 = 1.0f / sum0, inv1 = 1.0f / sum1;
  if (D % 32 == 0) {
    attn_pv2_avx2(out0, out1, S0, S1, inv0, inv1, s, last, D);
  } else {
    attn_pv_avx2(out0, S0, inv0, s, last, D);
    attn_pv_avx2(out1, S1, inv1, s, last + 1, D);
  }
  lse[0] = mx0 + logf(sum0);
  lse[1] = mx1 + logf(sum1);
}
#endif

/* One query at position `last` against keys 0..last: out[D] written, returns the
 * log-sum-exp of the scaled scores. S: last + 1 floats of scratch. */
static float attn_row_fwd(float *out, const float *q, const struct attn_src *s, int last, int D,
                          float scale, float *S, int avx2) {
  float mx;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) {
    attn_scores_avx2(S, q, s, last, D, scale);
    mx = row_max_avx2(S, last + 1);
  } else
#endif
  {
    mx = -INFINITY;
    for (int j = 0; j <= last; j++) {
      S[j] = scale * rd_dot_plain(q, s->k + attn_off(s, j), D);
      mx = S[j] > mx ? S[j] : mx;
    }
  }
  float sum = 0.0f;
  exp_shift_row(S, last + 1, mx, avx2);
  for (int j = 0; j <= last; j++) sum += S[j];
  float inv = 1.0f / sum;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) {
    attn_pv_avx2(out, S, inv, s, last, D);
    return mx + logf(sum);
  }
#endif
  memset(out, 0, sizeof(float) * D);
  for (int j = 0; j <= last; j++) {
    const float *vj = s->v + attn_off(s, j);
    float p = S[j] * inv;
    for (int d = 0; d < D; d++) out[d] = fmaf(p, vj[d], out[d]);
  }
  return mx + logf(sum);
}

struct attn_fwd_args {
  float *out, *lse;
  const float *q, *k, *v;
  const struct attn_batch *b;
  const struct attn_paged *pg; /* NULL: k, v are contiguous rows laid out by b->cu_kv */
  int H, KVH, D;
  float scale;
};

/* Units u = s * H + h: every query row of sequence s, head h. */
static void attn_fwd_units(void *p, size_t u0, size_t u1) {
  const struct attn_fwd_args *a = p;
  const struct attn_batch *b = a->b;
  int H = a->H, D = a->D, ks = a->KVH * D, avx2 = rd_have_avx2();
  size_t kv = (size_t)(b->max_kv > 0 ? b->max_kv : 1);
  float *S = malloc(sizeof(float) * 2 * kv);
  if (!S) abort(); /* a few KiB: the forward has no error path to report through */
  for (size_t u = u0; u < u1; u++) {
    int s = (int)(u / H), h = (int)(u % H);
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0, nk = b->cu_kv[s + 1] - b->cu_kv[s];
    size_t ho = (size_t)(h / (H / a->KVH)) * D;
    struct attn_src src = {a->k + ho, a->v + ho, NULL, 1, ks, 0};
    if (a->pg) {
      src.table = a->pg->tables[s];
      src.block_size = a->pg->block_size;
      src.block_stride = a->pg->block_stride;
    } else {
      src.k += (size_t)b->cu_kv[s] * ks;
      src.v += (size_t)b->cu_kv[s] * ks;
    }
    int i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    for (; avx2 && i + 2 <= nq; i += 2) { /* query pairs: one pass over k and v for two */
      size_t r = (size_t)(q0 + i), o = r * H * D + (size_t)h * D;
      float l2[2];
      attn_rows2_fwd(l2, a->out + o, a->out + o + (size_t)H * D, a->q + o, a->q + o + (size_t)H * D,
                     &src, nk - nq + i, D, a->scale, S, S + kv);
      a->lse[r * H + h] = l2[0];
      a->lse[(r + 1) * H + h] = l2[1];
    }
#endif
    for (; i < nq; i++) {
      size_t r = (size_t)(q0 + i);
      a->lse[r * H + h] = attn_row_fwd(a->out + r * H * D + h * D, a->q + r * H * D + h * D,
                                       &src, nk - nq + i, D, a->scale, S, avx2);
    }
  }
  free(S);
}

static void attn_fwd_run(const struct attn_fwd_args *a) {
  const struct attn_batch *b = a->b;
  size_t cost = (size_t)b->max_q * (size_t)b->max_kv * (size_t)a->D + 64;
  par_for((size_t)b->nseq * (size_t)a->H, cost, attn_fwd_units, (void *)a);
}

static void cpu_attention_fwd(float *out, float *lse, const float *q, const float *k,
                              const float *v, const struct attn_batch *b, int H, int KVH, int D,
                              float scale, float *scratch) {
  (void)scratch;
  struct attn_fwd_args a = {out, lse, q, k, v, b, NULL, H, KVH, D, scale};
  attn_fwd_run(&a);
}

static void cpu_attention_paged_fwd(float *out, float *lse, const float *q,
                                    const struct attn_paged *kv, const struct attn_batch *b, int H,
                                    int KVH, int D, float scale) {
  struct attn_fwd_args a = {out, lse, q, kv->k, kv->v, b, kv, H, KVH, D, scale};
  attn_fwd_run(&a);
}

/* The backward runs per (sequence, head, block of ATTN_QBLOCK query rows): a
 * block whose last query sits at position p only computes scores against keys
 * 0..p, which skips most of the masked upper triangle for long sequences. */
#define ATTN_QBLOCK 32 /* vs 64: 17% fewer score elements at T = 128, 10% at 256;
                          * 0.85-0.9x the time on both shapes (more, smaller calls) */

/* One block: the query rows of the `group` heads that share a key/value head,
 * gathered into rows = group x nb contiguous rows (position-major: row r is head
 * r mod group of query r / group, at position first + r / group, so a position's
 * group heads, adjacent in q, dout and dq, move as one copy), against the klim =
 * first + nb visible keys (row stride ks). Stacking the heads makes each of the
 * five products one call of group x the size (OpenBLAS's packing overhead on
 * these small blocks was a third of the backward). */
struct attn_blk {
  int nb, group, rows, first, klim, ks, D;
  float scale;
};

/* P = exp(S - lse) under the causal mask, recomputed from the forward's lse. */
static void attn_probs(const struct attn_blk *b, float *S, const float *lse) {
  int avx2 = rd_have_avx2();
  for (int i = 0; i < b->rows; i++) {
    float *row = S + (size_t)i * b->klim;
    int last = b->first + i / b->group;
    exp_shift_row(row, last + 1, lse[i], avx2);
    for (int j = last + 1; j < b->klim; j++) row[j] = 0.0f;
  }
}

/* dS = P * (dP - delta) * scale, in place over dP; delta = rowsum(dO * O). */
static void attn_dscores(const struct attn_blk *b, float *dP, const float *P, const float *delta) {
  for (int i = 0; i < b->rows; i++) {
    float d = delta[i];
    float *dp = dP + (size_t)i * b->klim;
    const float *p = P + (size_t)i * b->klim;
    for (int j = 0; j < b->klim; j++) dp[j] = p[j] * (dp[j] - d) * b->scale;
  }
}

/* The gathered rows of one block (each [rows, D]), their lse and delta, and the
 * block's two score tiles. */
struct attn_bufs {
  float *q, *dout, *dq, *lse, *delta, *P, *dP;
};

/* Backward of one block: g->dq written, dK/dV rows 0..klim accumulated. */
static void attn_block_bwd(const struct attn_blk *b, const struct attn_bufs *g, float *dk,
                           float *dv, const float *k, const float *v) {
  int M = b->rows, nk = b->klim, D = b->D;
  cpu_matmul(0, 1, M, nk, D, b->scale, g->q, D, k, b->ks, 0.0f, g->P, nk);
  attn_probs(b, g->P, g->lse);
  /* dV += P^T dO;  dP = dO V^T */
  cpu_matmul(1, 0, nk, D, M, 1.0f, g->P, nk, g->dout, D, 1.0f, dv, b->ks);
  cpu_matmul(0, 1, M, nk, D, 1.0f, g->dout, D, v, b->ks, 0.0f, g->dP, nk);
  attn_dscores(b, g->dP, g->P, g->delta);
  /* dQ = dS K;  dK += dS^T Q */
  cpu_matmul(0, 0, M, D, nk, 1.0f, g->dP, nk, k, b->ks, 0.0f, g->dq, D);
  cpu_matmul(1, 0, nk, D, M, 1.0f, g->dP, nk, g->q, D, 1.0f, dk, b->ks);
}

struct attn_bwd_args {
  float *dq, *dk, *dv;
  const float *dout, *out, *lse, *q, *k, *v;
  const struct attn_batch *b;
  int H, KVH, D;
  float scale;
};

/* Rows t0 .. t0+nb-1 of heads h0 .. h0+group-1 into the block's buffers, with
 * each row's delta = dot(dO, O) read in place (scatter = 0), or the block's dQ
 * back to them (scatter = 1). */
static void attn_gather(const struct attn_bwd_args *a, const struct attn_blk *blk,
                        const struct attn_bufs *g, int t0, int h0, int scatter) {
  int D = a->D, H = a->H, G = blk->group, avx2 = rd_have_avx2();
  size_t qs = (size_t)H * D, span = sizeof(float) * (size_t)G * D;
  for (int i = 0; i < blk->nb; i++) {
    size_t t = (size_t)(t0 + i), o = t * qs + (size_t)h0 * D, r = (size_t)i * G;
    if (scatter) {
      memcpy(a->dq + o, g->dq + r * D, span);
      continue;
    }
    memcpy(g->q + r * D, a->q + o, span);
    memcpy(g->dout + r * D, a->dout + o, span);
    memcpy(g->lse + r, a->lse + t * H + h0, sizeof(float) * G);
    for (int h = 0; h < G; h++)
      g->delta[r + h] = rms_dot(a->dout + o + (size_t)h * D, a->out + o + (size_t)h * D, NULL,
                                D, avx2);
  }
}

/* Units u = s * KVH + g: sequence s, key/value head g and the H/KVH query heads
 * that read it. A unit owns its dK/dV columns (every head of the group adds
 * into them), so units run in parallel without sharing an output. */
static void attn_bwd_units(void *p, size_t u0, size_t u1) {
  const struct attn_bwd_args *a = p;
  const struct attn_batch *b = a->b;
  int H = a->H, KVH = a->KVH, D = a->D, group = H / KVH, ks = KVH * D;
  int qb = b->max_q < ATTN_QBLOCK ? b->max_q : ATTN_QBLOCK;
  size_t rows = (size_t)group * (size_t)(qb > 0 ? qb : 1), kv = (size_t)(b->max_kv > 0 ? b->max_kv : 1);
  float *buf = malloc(sizeof(float) * rows * (2 * kv + 3 * (size_t)D + 2));
  if (!buf) abort(); /* 2 x 3 x 64 x max_seq floats and the rows: the backward has no error path */
  struct attn_bufs g = {buf, buf + rows * D, buf + 2 * rows * D, buf + 3 * rows * D,
                        buf + 3 * rows * D + rows, buf + 3 * rows * D + 2 * rows, NULL};
  g.dP = g.P + rows * kv;
  for (size_t u = u0; u < u1; u++) {
    int s = (int)(u / KVH), kh = (int)(u % KVH);
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0;
    int k0 = b->cu_kv[s], nk = b->cu_kv[s + 1] - k0;
    size_t ko = (size_t)k0 * ks + (size_t)kh * D;
    for (int j = 0; j < nk; j++) {
      memset(a->dk + ko + (size_t)j * ks, 0, sizeof(float) * D);
      memset(a->dv + ko + (size_t)j * ks, 0, sizeof(float) * D);
    }
    for (int i0 = 0; i0 < nq; i0 += ATTN_QBLOCK) {
      int nb = nq - i0 < ATTN_QBLOCK ? nq - i0 : ATTN_QBLOCK, first = nk - nq + i0;
      struct attn_blk blk = {nb, group, group * nb, first, first + nb, ks, D, a->scale};
      attn_gather(a, &blk, &g, q0 + i0, kh * group, 0);
      attn_block_bwd(&blk, &g, a->dk + ko, a->dv + ko, a->k + ko, a->v + ko);
      attn_gather(a, &blk, &g, q0 + i0, kh * group, 1);
    }
  }
  free(buf);
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
  par_for_blas1(nt, (size_t)b->nseq * (size_t)KVH, cost, attn_bwd_units, &a);
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
FM_AVX2 static inline __m256 swiglu_sig8(__m256 g) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, fast_exp8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)))));
}

/* Elements [i0, i0 + 8k) of the slice; returns where the scalar tail starts. */
FM_AVX2 static size_t swiglu_fwd_avx2(const struct swiglu_args *a, size_t i0, size_t i1) {
  size_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 g = _mm256_loadu_ps(a->gate + i);
    __m256 h = _mm256_mul_ps(_mm256_mul_ps(g, swiglu_sig8(g)), _mm256_loadu_ps(a->up + i));
    _mm256_storeu_ps(a->h + i, h);
  }
  return i;
}

FM_AVX2 static size_t swiglu_bwd_avx2(const struct swiglu_args *a, size_t i0, size_t i1) {
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
  if (rd_have_avx2()) i0 = swiglu_fwd_avx2(a, i0, i1);
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
  if (rd_have_avx2()) i0 = swiglu_bwd_avx2(a, i0, i1);
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

/* One row's max, sum e^(z-mx) and sum e^(z-mx) (z-mx): the sums in double, in
 * eight lanes plus the tail, reduced in a fixed order (the row is one thread's). */
struct lse_sums {
  float mx;
  double sum, sz;
};

#if defined(__x86_64__) && defined(__GNUC__)
FM_AVX2 static double lp_hsum4d(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

FM_AVX2 static struct lse_sums lse_sums_avx2(const float *z, int V) {
  int V8 = V & ~7;
  __m256 m8 = _mm256_set1_ps(-INFINITY);
  for (int j = 0; j < V8; j += 8) m8 = _mm256_max_ps(_mm256_loadu_ps(z + j), m8);
  float m[8], mx = -INFINITY;
  _mm256_storeu_ps(m, m8);
  for (int l = 0; l < 8; l++) mx = m[l] > mx ? m[l] : mx;
  for (int j = V8; j < V; j++) mx = z[j] > mx ? z[j] : mx;
  __m256 mv = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, t0 = s0, t1 = s0;
  for (int j = 0; j < V8; j += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(z + j), mv), e = fast_exp8(x);
    __m256d e0 = _mm256_cvtps_pd(_mm256_castps256_ps128(e));
    __m256d e1 = _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1));
    s0 = _mm256_add_pd(s0, e0), s1 = _mm256_add_pd(s1, e1);
    t0 = _mm256_add_pd(t0, _mm256_mul_pd(e0, _mm256_cvtps_pd(_mm256_castps256_ps128(x))));
    t1 = _mm256_add_pd(t1, _mm256_mul_pd(e1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  }
  struct lse_sums r = {mx, lp_hsum4d(_mm256_add_pd(s0, s1)), lp_hsum4d(_mm256_add_pd(t0, t1))};
  for (int j = V8; j < V; j++) {
    float x = z[j] - mx, e = fast_expf(x);
    r.sum += e;
    r.sz += (double)e * x;
  }
  return r;
}
#endif

static struct lse_sums lse_sums_plain(const float *z, int V) {
  struct lse_sums r = {z[0], 0.0, 0.0};
  for (int j = 1; j < V; j++) r.mx = z[j] > r.mx ? z[j] : r.mx;
  for (int j = 0; j < V; j++) {
    float x = z[j] - r.mx, e = fast_expf(x);
    r.sum += e;
    r.sz += (double)e * x;
  }
  return r;
}

static void logprob_fwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V, avx2 = rd_have_avx2();
  for (size_t r = r0; r < r1; r++) {
    const float *z = a->logits_in + r * V;
    struct lse_sums q;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2) q = lse_sums_avx2(z, V);
    else
#endif
      q = lse_sums_plain(z, V);
    (void)avx2;
    double l = log(q.sum);
    a->lse[r] = (float)(q.mx + l);
    a->entropy[r] = (float)(l - q.sz / q.sum); /* H = lse - E[z] */
    a->logprob[r] = a->targets[r] >= 0 ? z[a->targets[r]] - a->lse[r] : 0.0f;
  }
}

static void cpu_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                            const int *targets, int R, int V) {
  struct logprob_args a = {.logprob = logprob, .entropy = entropy, .lse = lse,
                           .logits_in = logits, .targets = targets, .V = V};
  par_for((size_t)R, (size_t)V * 8, logprob_fwd_rows, &a);
}

/* z[j] <- -gl p_j - ge p_j (lp_j + H), lp_j = z[j] - l, p_j = e^lp_j: the AVX2
 * loop and the scalar tail compute the same expression. */
#if defined(__x86_64__) && defined(__GNUC__)
FM_AVX2 static int logprob_grad_avx2(float *z, int V, float l, float gl, float ge, float H) {
  __m256 lv = _mm256_set1_ps(l), ngl = _mm256_set1_ps(-gl), gev = _mm256_set1_ps(ge);
  __m256 Hv = _mm256_set1_ps(H);
  int j = 0;
  for (; j + 8 <= V; j += 8) {
    __m256 lp = _mm256_sub_ps(_mm256_loadu_ps(z + j), lv), pj = fast_exp8(lp);
    __m256 t = _mm256_mul_ps(_mm256_mul_ps(gev, pj), _mm256_add_ps(lp, Hv));
    _mm256_storeu_ps(z + j, _mm256_sub_ps(_mm256_mul_ps(ngl, pj), t));
  }
  return j;
}
#endif

static void logprob_bwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V, avx2 = rd_have_avx2();
  for (size_t r = r0; r < r1; r++) {
    float *z = a->logits + r * V;
    int tg = a->targets[r], j = 0;
    float gl = (a->dlogprob && tg >= 0) ? a->dlogprob[r] : 0.0f;
    float ge = a->dentropy ? a->dentropy[r] : 0.0f, H = a->entropy_in[r], l = a->lse_in[r];
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2) j = logprob_grad_avx2(z, V, l, gl, ge, H);
#endif
    (void)avx2;
    for (; j < V; j++) {
      float lp = z[j] - l, pj = fast_expf(lp);
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
  .matmul_rowinv = rowdot_gemm,
  .matmul_rowinv_shared = rowdot_gemm_shared,
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
