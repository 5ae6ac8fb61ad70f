/* cpu/rowinv.c: the CPU backend's row-invariant product (cpu/rowinv.h).
 *
 * C = A B^T (the forward of every linear layer, the lm_head and the attention
 * scores) is computed here rather than by OpenBLAS, with one fixed order per
 * element: c[i][j] = dot(a_i, b_j) with 8 lane sums over k (lane = k mod 8,
 * fused multiply-add, k ascending), reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
 * then the K mod 8 tail in order. That value depends on the two rows only: not
 * on M, on the tile or thread a row falls in, so a token's logits are the same
 * bits in a one-row decode step, a batch of 64 and the trainer's packed
 * forward (OpenBLAS sums in an order that depends on M, and its one-row path is
 * a GEMV with yet another order). Register tiles of 4 rows x 3 columns; a
 * panel of B columns is kept hot in L2 while every row of A passes over it, so
 * B (the weights) streams from memory once per call. Fewer than 4 rows (decode
 * steps) are bound by memory bandwidth alone: B is then read as four long
 * sequential streams per thread. Products that share A (q, k, v) can run as one
 * job of the rank's thread pool. */
#include <cblas.h>
#include <math.h>
#include <stddef.h>

#include "cpu/rowinv.h"
#include "cpu/thread_pool.h"

#define MR 4
#define NR 3
#define PANEL_BYTES (256 * 1024) /* B panel per thread: half of a 512 KiB L2 */
#define SMALL_A (128 * 1024)     /* A up to this size: panels of SMALL_PANEL columns */
#define SMALL_PANEL 12           /* a multiple of NR and of the GEMV tile's 4 */
#define STREAMS 4                /* streams_avx2's sequential streams of B */
#define MIN_WORK 32768           /* multiply-adds per thread below which one is not woken */

struct product_args {
  int M, N, K, lda, ldb, ldc, panel;
  float alpha, beta;
  const float *A, *B;
  float *C;
};

static void store_c(const struct product_args *g, int i, int j, float s) {
  float *c = g->C + (size_t)i * g->ldc + j;
  *c = g->beta == 0.0f ? g->alpha * s : g->alpha * s + g->beta * *c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Four elements of column j, rows i0..i0+3, from their accumulators. */
CPU_AVX2 static inline void finish4(const struct product_args *g, int i0, int j, __m256 a,
                                    __m256 b, __m256 c, __m256 d) {
  float s[4];
  _mm_storeu_ps(s, rowinv_hsum4(a, b, c, d));
  for (int r = 0; r < 4; r++) {
    const float *ar = g->A + (size_t)(i0 + r) * g->lda, *bj = g->B + (size_t)j * g->ldb;
    for (int k = g->K & ~7; k < g->K; k++) s[r] = fmaf(ar[k], bj[k], s[r]);
    store_c(g, i0 + r, j, s[r]);
  }
}

/* The tail k = K8 .. K-1 of one element, in order, then the store. */
CPU_AVX2 static inline void finish(const struct product_args *g, int i, int j, __m256 acc) {
  const float *a = g->A + (size_t)i * g->lda, *b = g->B + (size_t)j * g->ldb;
  float s = rowinv_hsum(acc);
  for (int k = g->K & ~7; k < g->K; k++) s = fmaf(a[k], b[k], s);
  store_c(g, i, j, s);
}

#define VLD(x, r) _mm256_loadu_ps(x + (size_t)(r) * ld##x + k)
#define VFMA(c, x, y) c = _mm256_fmadd_ps(x, y, c)

/* 4 rows x 3 columns: 12 accumulators, 3 B vectors, 1 A vector = the 16 registers. */
/* pf: when not NULL, the same three rows of B one panel ahead, fetched into L1 while
 * this tile computes (the first row block of a panel reads B from memory). */
CPU_AVX2 static void tile_4x3(const struct product_args *g, int i0, int j0, const float *pf) {
  const float *A = g->A + (size_t)i0 * g->lda, *B = g->B + (size_t)j0 * g->ldb;
  size_t ldA = (size_t)g->lda, ldB = (size_t)g->ldb;
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
  __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
  for (int k = 0; k < (g->K & ~7); k += 8) {
    if (pf && !(k & 15))
      for (int c = 0; c < NR; c++) _mm_prefetch((const char *)(pf + c * ldB + k), _MM_HINT_T0);
    __m256 b0 = VLD(B, 0), b1 = VLD(B, 1), b2 = VLD(B, 2), a;
    a = VLD(A, 0); VFMA(c00, a, b0); VFMA(c01, a, b1); VFMA(c02, a, b2);
    a = VLD(A, 1); VFMA(c10, a, b0); VFMA(c11, a, b1); VFMA(c12, a, b2);
    a = VLD(A, 2); VFMA(c20, a, b0); VFMA(c21, a, b1); VFMA(c22, a, b2);
    a = VLD(A, 3); VFMA(c30, a, b0); VFMA(c31, a, b1); VFMA(c32, a, b2);
  }
  finish4(g, i0, j0, c00, c10, c20, c30);
  finish4(g, i0, j0 + 1, c01, c11, c21, c31);
  finish4(g, i0, j0 + 2, c02, c12, c22, c32);
}

/* 1 row x 4 columns: a decode step's GEMV, four independent streams of B. */
CPU_AVX2 static void tile_1x4(const struct product_args *g, int i0, int j0) {
  const float *A = g->A + (size_t)i0 * g->lda, *B = g->B + (size_t)j0 * g->ldb;
  size_t ldA = 0, ldB = (size_t)g->ldb;
  __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
  for (int k = 0; k < (g->K & ~7); k += 8) {
    __m256 a = VLD(A, 0);
    VFMA(c0, a, VLD(B, 0)); VFMA(c1, a, VLD(B, 1));
    VFMA(c2, a, VLD(B, 2)); VFMA(c3, a, VLD(B, 3));
  }
  finish(g, i0, j0, c0); finish(g, i0, j0 + 1, c1);
  finish(g, i0, j0 + 2, c2); finish(g, i0, j0 + 3, c3);
}

CPU_AVX2 static void tile_1x1(const struct product_args *g, int i0, int j0) {
  const float *a = g->A + (size_t)i0 * g->lda, *b = g->B + (size_t)j0 * g->ldb;
  store_c(g, i0, j0, rowinv_dot_avx2(a, b, g->K));
}

/* Columns [j0, j1) of a product with fewer than MR rows (a decode step's GEMV):
 * B read as STREAMS long sequential streams, one per quarter of the range, a row
 * of each in flight (four columns: j, j + len, j + 2 len, j + 3 len). A column's
 * weights are read once, its rows of C computed while they sit in L1. Short streams
 * (the four adjacent rows of a 1 x 4 tile) keep the hardware prefetcher restarting
 * every 2 KiB: 13-16 GB per CPU-second against 19-22 for long ones, SmolLM2 shapes. */
CPU_AVX2 static void streams_avx2(const struct product_args *g, int j0, int j1) {
  int len = (j1 - j0) / STREAMS;
  size_t ldA = 0, ldB = (size_t)len * g->ldb; /* VLD(B, s): stream s */
  for (int j = j0; j < j0 + len; j++) {
    const float *B = g->B + (size_t)j * g->ldb;
    for (int i = 0; i < g->M; i++) {
      const float *A = g->A + (size_t)i * g->lda;
      __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
      for (int k = 0; k < (g->K & ~7); k += 8) {
        __m256 a = VLD(A, 0);
        VFMA(c0, a, VLD(B, 0)); VFMA(c1, a, VLD(B, 1));
        VFMA(c2, a, VLD(B, 2)); VFMA(c3, a, VLD(B, 3));
      }
      finish(g, i, j, c0); finish(g, i, j + len, c1);
      finish(g, i, j + 2 * len, c2); finish(g, i, j + 3 * len, c3);
    }
  }
  for (int j = j0 + STREAMS * len; j < j1; j++)
    for (int i = 0; i < g->M; i++) tile_1x1(g, i, j);
}

/* Columns [j0, j1) against every row of A, a panel at a time. */
CPU_AVX2 static void cols_avx2(const struct product_args *g, int j0, int j1) {
  if (g->M < MR) {
    streams_avx2(g, j0, j1);
    return;
  }
  for (int p0 = j0; p0 < j1; p0 += g->panel) {
    int p1 = p0 + g->panel < j1 ? p0 + g->panel : j1, jn = p1 - (p1 - p0) % NR;
    int i = 0;
    for (; i + MR <= g->M; i += MR) {
      for (int j = p0; j < jn; j += NR) {
        int ahead = i == 0 && j + g->panel + NR <= j1;
        tile_4x3(g, i, j, ahead ? g->B + (size_t)(j + g->panel) * g->ldb : NULL);
      }
      for (int j = jn; j < p1; j++)
        for (int r = 0; r < MR; r++) tile_1x1(g, i + r, j);
    }
    for (; i < g->M; i++) { /* one-row tiles (a decode step's GEMV) */
      int j = p0;
      for (; j + 4 <= p1; j += 4) tile_1x4(g, i, j);
      for (; j < p1; j++) tile_1x1(g, i, j);
    }
  }
}
#endif

static void cols_plain(const struct product_args *g, int j0, int j1) {
  for (int i = 0; i < g->M; i++)
    for (int j = j0; j < j1; j++)
      store_c(g, i, j, rowinv_dot_plain(g->A + (size_t)i * g->lda, g->B + (size_t)j * g->ldb,
                                        g->K));
}

static void cols(void *p, size_t j0, size_t j1) {
  const struct product_args *g = p;
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_have_avx2()) { cols_avx2(g, (int)j0, (int)j1); return; }
#endif
  cols_plain(g, (int)j0, (int)j1);
}

/* Up to SHARED_MAX products run as one pool job (one wake-up of the workers): the
 * threads split the concatenation of their columns, product i owning columns
 * [n0[i], n0[i+1]). A slice that spans two products runs a piece of each. */
#define SHARED_MAX 4

struct product_job {
  int count;
  size_t n0[SHARED_MAX + 1];
  struct product_args g[SHARED_MAX];
};

static void job_cols(void *p, size_t j0, size_t j1) {
  const struct product_job *job = p;
  for (int i = 0; i < job->count; i++) {
    size_t lo = j0 > job->n0[i] ? j0 : job->n0[i], hi = j1 < job->n0[i + 1] ? j1 : job->n0[i + 1];
    if (lo < hi) cols((void *)&job->g[i], lo - job->n0[i], hi - job->n0[i]);
  }
}

/* Columns of B per panel (cols_avx2) for M rows of A of length K. */
static int panel_cols(int M, int K) {
  int panel = PANEL_BYTES / (int)(sizeof(float) * (K > 0 ? K : 1));
  panel = panel < NR ? NR : panel - panel % NR;
  /* A small A (a decode step's rows) stays in L2 anyway: then every row passes over
   * a few columns of B right after they arrive from memory, while they sit in L1 */
  return (size_t)M * K * sizeof(float) <= SMALL_A ? SMALL_PANEL : panel;
}

/* The job's columns over the rank's threads: a thread per >= MIN_WORK multiply-adds.
 * Waking a pool worker that still polls costs a few us, one that sleeps 15-40 us. */
static void job_run(struct product_job *job) {
  size_t n = job->n0[job->count], mk = (size_t)job->g[0].M * (size_t)job->g[0].K;
  thread_pool_par_for_work(openblas_get_num_threads(), n, mk + 64, MIN_WORK, job_cols, job);
}

/* C[M,N] = alpha A[M,K] B[N,K]^T + beta C, columns split over the threads. */
void rowinv_gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc) {
  struct product_job job = {
    .count = 1,
    .n0 = {0, (size_t)N},
    .g = {{.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc, .panel = panel_cols(M, K),
           .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C}},
  };
  job_run(&job);
}

void rowinv_gemm_shared(int M, int K, const float *A, int lda, int count,
                        const struct rowinv_product *out) {
  for (int c0 = 0; c0 < count; c0 += SHARED_MAX) {
    struct product_job job = {.count = 0};
    for (int c = c0; c < count && job.count < SHARED_MAX; c++, job.count++) {
      const struct rowinv_product *o = &out[c];
      job.g[job.count] = (struct product_args){
        .M = M, .N = o->N, .K = K, .lda = lda, .ldb = K, .ldc = o->N, .panel = panel_cols(M, K),
        .alpha = 1.0f, .beta = 0.0f, .A = A, .B = o->B, .C = o->C};
      job.n0[job.count + 1] = job.n0[job.count] + (size_t)o->N;
    }
    job_run(&job);
  }
}
