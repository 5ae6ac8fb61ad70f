/* cpu/gemm.c: a blocked fp32 GEMM for AVX2+FMA CPUs (the BLIS scheme), beside
 * OpenBLAS's (cpu/gemm.h says how one is chosen).
 *
 * op(B) is copied in blocks of KC x NC into NR-column micro-panels and op(A) in
 * blocks of MC x KC into MR-row micro-panels (k-major, zero-padded to whole
 * panels), so the transposes live in the copies and one micro-kernel serves all
 * four cases. The kernel keeps an MR x NR tile of C in 12 ymm registers: per k it
 * loads 16 floats of B and broadcasts 6 of A (12 FMAs); alone in L1 it runs at
 * about 90% of the FMA peak (Zen 3), in a whole product at 80-85%, as OpenBLAS's.
 * A B micro-panel (KC x NR, at most 20 KiB) stays in L1 while the A block (MC x KC,
 * at most 180 KiB) streams from L2; the B block sits in L3. Sizes for Zen 3 (32 KiB
 * L1d, 512 KiB L2 per core); on a busy 2-core machine KC 256-384 and MC 72-288
 * measured alike (tests/bench/bench_gemm.c). Tiles on C's edge go through a stack
 * tile. The copies live in per-thread buffers that grow and are kept, so a call
 * on the hot path allocates nothing. */
#include "cpu/gemm.h"

#include "cpu/simd.h"
#include "cpu/thread_pool.h"

#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MR 6
#define NR 16
#define KC 320  /* most k per block; blocks are balanced (576 -> 2 x 288, 1024 -> 4 x 256) */
#define MC 144  /* most rows of op(A) per block, a multiple of MR */
#define NC 4096 /* most columns of op(B) per block, a multiple of NR */

/* ---- choice of implementation -------------------------------------------- */

static enum cpu_gemm_impl gemm_impl;
static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;

/* RLPT_GEMM: a wrong value or rlpt without AVX2+FMA is said once on stderr (a library
 * call deep in a rank cannot stop the job) and the default used. */
static void gemm_choose(void) {
  const char *e = getenv("RLPT_GEMM");
  int avx2 = cpu_have_avx2(), want_blas = e && !strcmp(e, "openblas");
  gemm_impl = avx2 && !want_blas ? CPU_GEMM_RLPT : CPU_GEMM_OPENBLAS;
  if (e && *e && !want_blas && strcmp(e, "rlpt"))
    fprintf(stderr, "rlpt: RLPT_GEMM=%s: expected openblas or rlpt; using %s\n", e,
            avx2 ? "rlpt" : "openblas");
  else if (e && !strcmp(e, "rlpt") && !avx2)
    fprintf(stderr, "rlpt: RLPT_GEMM=rlpt needs AVX2 and FMA, which this CPU lacks; using openblas\n");
}

enum cpu_gemm_impl cpu_gemm_impl(void) {
  pthread_once(&gemm_once, gemm_choose);
  return gemm_impl;
}

const char *cpu_gemm_name(void) {
  return cpu_gemm_impl() == CPU_GEMM_RLPT ? "rlpt" : "openblas";
}

enum cpu_gemm_impl cpu_gemm_set_impl(enum cpu_gemm_impl impl) {
  pthread_once(&gemm_once, gemm_choose);
  gemm_impl = impl == CPU_GEMM_RLPT && cpu_have_avx2() ? CPU_GEMM_RLPT : CPU_GEMM_OPENBLAS;
  return gemm_impl;
}

#if defined(__x86_64__) && defined(__GNUC__)

/* ---- packing --------------------------------------------------------------- */

/* r[i] (8 floats of row i) -> r[q] (element q of every row): the 8 x 8 transpose of
 * unpack, shuffle and 128-bit permutes. */
CPU_AVX2 static inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) {
    __m256 a = t[4 * h], b = t[4 * h + 1], c = t[4 * h + 2], d = t[4 * h + 3];
    u[4 * h] = _mm256_shuffle_ps(a, c, 0x44), u[4 * h + 1] = _mm256_shuffle_ps(a, c, 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(b, d, 0x44), u[4 * h + 3] = _mm256_shuffle_ps(b, d, 0xEE);
  }
  for (int q = 0; q < 4; q++) {
    r[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
    r[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
  }
}

/* dst[p*w + i] = src[i*ld + p] for i < rows, p < kc (rows <= 8; w = 6 with rows = 6,
 * or w = 16 with two calls of 8 rows): 8 k at a time through transpose8. With w = 6
 * the first 7 stores write 8 floats, the last 2 being overwritten by the next store;
 * the eighth writes 6, so nothing lands past the panel. */
CPU_AVX2 static void pack_rows_t(const float *src, size_t ld, int rows, int kc, float *dst,
                                  int w) {
  int p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; i++)
      r[i] = i < rows ? _mm256_loadu_ps(src + (size_t)i * ld + p) : _mm256_setzero_ps();
    transpose8(r);
    for (int q = 0; q < 7; q++) _mm256_storeu_ps(dst + (size_t)(p + q) * w, r[q]);
    float *d7 = dst + (size_t)(p + 7) * w;
    if (w >= 8) {
      _mm256_storeu_ps(d7, r[7]);
    } else {
      _mm_storeu_ps(d7, _mm256_castps256_ps128(r[7]));
      _mm_storel_pi((__m64 *)(d7 + 4), _mm256_extractf128_ps(r[7], 1));
    }
  }
  for (; p < kc; p++)
    for (int i = 0; i < rows; i++) dst[(size_t)p * w + i] = src[(size_t)i * ld + p];
}

/* op(A)[i0 + i, k0 + p] for i < mc, p < kc into MR-row panels: panel r holds
 * rows r*MR.. as dst[r*MR*kc + p*MR + i], rows past mc zero. A^T is read a row at
 * a time across all panels (one sequential stream), A by transposes of 6 rows. */
CPU_AVX2 static void pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc,
                             float *dst) {
  int full = mc / MR * MR;
  if (ta) {
    for (int p0 = 0; p0 < kc; p0 += 8) { /* 8 rows at a time: 192 bytes a panel */
      int p1 = p0 + 8 < kc ? p0 + 8 : kc;
      for (int ir = 0; ir < full; ir += MR)
        for (int p = p0; p < p1; p++) {
          const float *s = A + (size_t)(k0 + p) * lda + i0 + ir;
          float *d = dst + (size_t)ir * kc + (size_t)p * MR;
          _mm_storeu_ps(d, _mm_loadu_ps(s));
          _mm_storel_pi((__m64 *)(d + 4), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(s + 4)));
        }
    }
    float *d = dst + (size_t)full * kc;
    for (int p = 0; p < kc && full < mc; p++)
      for (int i = 0; i < MR; i++)
        d[(size_t)p * MR + i] = full + i < mc ? A[(size_t)(k0 + p) * lda + i0 + full + i] : 0.0f;
    return;
  }
  for (int ir = 0; ir < full; ir += MR)
    pack_rows_t(A + (size_t)(i0 + ir) * lda + k0, (size_t)lda, MR, kc, dst + (size_t)ir * kc, MR);
  if (full == mc) return;
  float *d = dst + (size_t)full * kc;
  for (int p = 0; p < kc; p++)
    for (int i = 0; i < MR; i++)
      d[(size_t)p * MR + i] = full + i < mc ? A[(size_t)(i0 + full + i) * lda + k0 + p] : 0.0f;
}

/* op(B)[k0 + p, j0 + j] for p < kc, j < nc into NR-column panels: panel r holds
 * columns r*NR.. as dst[r*NR*kc + p*NR + j], columns past nc zero. B is read a row
 * at a time across all panels, B^T by transposes of 8 rows. */
CPU_AVX2 static void pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc,
                             float *dst) {
  int full = nc / NR * NR;
  if (!tb) {
    for (int p = 0; p < kc; p++) {
      const float *s = B + (size_t)(k0 + p) * ldb + j0;
      float *d = dst + (size_t)p * NR;
      for (int jr = 0; jr < full; jr += NR, d += (size_t)NR * kc) {
        _mm256_store_ps(d, _mm256_loadu_ps(s + jr));
        _mm256_store_ps(d + 8, _mm256_loadu_ps(s + jr + 8));
      }
      for (int j = 0; j < NR && full < nc; j++) d[j] = full + j < nc ? s[full + j] : 0.0f;
    }
    return;
  }
  for (int jr = 0; jr < full; jr += NR)
    for (int h = 0; h < NR; h += 8)
      pack_rows_t(B + (size_t)(j0 + jr + h) * ldb + k0, (size_t)ldb, 8, kc,
                  dst + (size_t)jr * kc + h, NR);
  if (full == nc) return;
  float *d = dst + (size_t)full * kc;
  for (int p = 0; p < kc; p++)
    for (int j = 0; j < NR; j++)
      d[(size_t)p * NR + j] = full + j < nc ? B[(size_t)(j0 + full + j) * ldb + k0 + p] : 0.0f;
}

/* ---- micro-kernel ---------------------------------------------------------- */

/* c[MR, NR] (row stride ldc) = alpha a-panel b-panel + beta c over kc; beta = 0 does
 * not read c. */
CPU_AVX2 static void kernel_6x16(int kc, const float *a, const float *b, float *c, size_t ldc,
                                  float alpha, float beta) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int r = 0; r < MR; r++) { /* C's rows are wanted after the loop: fetch them meanwhile */
    _mm_prefetch((const char *)(c + (size_t)r * ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + (size_t)r * ldc + NR - 1), _MM_HINT_T0);
  }
#define ROW(r, x0, x1)                                                                            \
  do {                                                                                            \
    __m256 ar = _mm256_broadcast_ss(a + r);                                                       \
    x0 = _mm256_fmadd_ps(ar, b0, x0);                                                             \
    x1 = _mm256_fmadd_ps(ar, b1, x1);                                                             \
  } while (0)
#pragma GCC unroll 4
  for (int p = 0; p < kc; p++) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    ROW(0, c00, c01); ROW(1, c10, c11); ROW(2, c20, c21);
    ROW(3, c30, c31); ROW(4, c40, c41); ROW(5, c50, c51);
    a += MR, b += NR;
  }
#undef ROW
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#define OUT(r, x0, x1)                                                                            \
  do {                                                                                            \
    float *cr = c + (size_t)(r) * ldc;                                                            \
    if (beta == 0.0f) {                                                                           \
      _mm256_storeu_ps(cr, _mm256_mul_ps(va, x0));                                                \
      _mm256_storeu_ps(cr + 8, _mm256_mul_ps(va, x1));                                            \
    } else {                                                                                      \
      _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, x0, _mm256_mul_ps(vb, _mm256_loadu_ps(cr))));      \
      _mm256_storeu_ps(cr + 8,                                                                    \
                       _mm256_fmadd_ps(va, x1, _mm256_mul_ps(vb, _mm256_loadu_ps(cr + 8))));      \
    }                                                                                             \
  } while (0)
  OUT(0, c00, c01); OUT(1, c10, c11); OUT(2, c20, c21);
  OUT(3, c30, c31); OUT(4, c40, c41); OUT(5, c50, c51);
#undef OUT
}

/* One MR x NR tile of C, of which mr x nr lie inside C: whole tiles straight, edge
 * tiles through a stack tile. */
CPU_AVX2 static void tile(int kc, const float *a, const float *b, float *c, int ldc, int mr,
                           int nr, float alpha, float beta) {
  if (mr == MR && nr == NR) {
    kernel_6x16(kc, a, b, c, (size_t)ldc, alpha, beta);
    return;
  }
  float t[MR * NR] __attribute__((aligned(32)));
  kernel_6x16(kc, a, b, t, NR, alpha, 0.0f);
  for (int i = 0; i < mr; i++) {
    float *cr = c + (size_t)i * ldc;
    const float *tr = t + i * NR;
    if (beta == 0.0f)
      for (int j = 0; j < nr; j++) cr[j] = tr[j];
    else
      for (int j = 0; j < nr; j++) cr[j] = tr[j] + beta * cr[j];
  }
}

/* C block [mc, nc] += the packed A block times the packed B block (beta for the first
 * k block, 1 after). */
CPU_AVX2 static void macro_kernel(int mc, int nc, int kc, const float *pa, const float *pb,
                                   float *C, int ldc, float alpha, float beta) {
  for (int jr = 0; jr < nc; jr += NR) {
    int nr = nc - jr < NR ? nc - jr : NR;
    const float *b = pb + (size_t)jr * kc;
    for (int ir = 0; ir < mc; ir += MR) {
      int mr = mc - ir < MR ? mc - ir : MR;
      tile(kc, pa + (size_t)ir * kc, b, C + (size_t)ir * ldc + jr, ldc, mr, nr, alpha, beta);
    }
  }
}
#endif

/* ---- per-thread buffers and the block loops ------------------------------- */

struct pack_buf {
  float *p;
  size_t cap; /* floats */
};

static _Thread_local struct pack_buf buf_a, buf_b;

/* b->p with room for n floats (64-byte aligned), grown and kept; NULL when out of memory. */
static float *pack_room(struct pack_buf *b, size_t n) {
  if (n <= b->cap) return b->p;
  size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
  float *p = aligned_alloc(64, bytes);
  if (!p) return NULL;
  free(b->p);
  b->p = p, b->cap = bytes / sizeof(float);
  return p;
}

/* Block size for n in parts of at most max, as even as whole units allow. */
static int block_of(int n, int max, int unit) {
  int parts = (n + max - 1) / max, b = (n + parts - 1) / parts;
  return (b + unit - 1) / unit * unit;
}

static void blas_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* C = beta C (alpha = 0 or K = 0): BLAS reads neither A nor B then. */
static void scale_c(int M, int N, float beta, float *C, int ldc) {
  for (int i = 0; i < M; i++) {
    float *c = C + (size_t)i * ldc;
    if (beta == 0.0f) memset(c, 0, sizeof(float) * (size_t)N);
    else
      for (int j = 0; j < N; j++) c[j] *= beta;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* One product and its blocking. sa / sb: op(A) / op(B) packed whole and shared by the
 * threads (cpu_gemm_parallel), or NULL: each thread packs its own blocks. */
struct gemm_job {
  int ta, tb, M, N, K, lda, ldb, ldc, kb, mb, nb;
  float alpha, beta;
  const float *A, *B;
  float *C, *sa, *sb;
};

static struct gemm_job gemm_job_make(int ta, int tb, int M, int N, int K, float alpha,
                                     const float *A, int lda, const float *B, int ldb, float beta,
                                     float *C, int ldc) {
  return (struct gemm_job){.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb,
                           .ldc = ldc, .kb = block_of(K, KC, 1), .mb = block_of(M, MC, MR),
                           .nb = block_of(N, NC, NR), .alpha = alpha, .beta = beta, .A = A,
                           .B = B, .C = C, .sa = NULL, .sb = NULL};
}

/* Offset in a wholly packed operand of its block starting at row/column x0 (of n,
 * padded to unit) and at k = pc: the blocks of x0 hold x0 * K floats before them. */
static size_t shared_off(int x0, int K, int pc, int n, int unit) {
  return (size_t)x0 * K + (size_t)pc * (size_t)((n + unit - 1) / unit * unit);
}

/* C[m0:m1, n0:n1] of the job, blocks on the job's grid; a shared operand spans its
 * whole side (m0 = 0, m1 = M for sa). 0 when a buffer cannot be had. */
static int gemm_range(const struct gemm_job *g, int m0, int m1, int n0, int n1) {
  int K = g->K, kb = g->kb, mb = g->mb, nb = g->nb;
  float *pa = g->sa ? NULL : pack_room(&buf_a, (size_t)mb * kb);
  float *pb = g->sb ? NULL : pack_room(&buf_b, (size_t)nb * kb);
  if ((!g->sa && !pa) || (!g->sb && !pb)) return 0;
  for (int jc = n0; jc < n1; jc += nb) {
    int nc = n1 - jc < nb ? n1 - jc : nb;
    for (int pc = 0; pc < K; pc += kb) {
      int kc = K - pc < kb ? K - pc : kb;
      const float *b = g->sb ? g->sb + shared_off(jc, K, pc, nc, NR) : pb;
      if (!g->sb) pack_b(g->tb, g->B, g->ldb, pc, kc, jc, nc, pb);
      for (int ic = m0; ic < m1; ic += mb) {
        int mc = m1 - ic < mb ? m1 - ic : mb;
        const float *a = g->sa ? g->sa + shared_off(ic, K, pc, mc, MR) : pa;
        if (!g->sa) pack_a(g->ta, g->A, g->lda, ic, mc, pc, kc, pa);
        macro_kernel(mc, nc, kc, a, b, g->C + (size_t)ic * g->ldc + jc, g->ldc, g->alpha,
                     pc ? 1.0f : g->beta);
      }
    }
  }
  return 1;
}
#endif

void cpu_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (alpha == 0.0f || K <= 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_gemm_impl() == CPU_GEMM_RLPT) {
    struct gemm_job g = gemm_job_make(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (gemm_range(&g, 0, M, 0, N)) return;
  }
#endif
  blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- threads: one shared copy of the operand along C's shorter side ----------
 * C is cut along its longer side into nt slices of whole MR rows or NR columns.
 * The operand every slice needs whole (op(B) when C is cut by rows, op(A) by
 * columns; the smaller one) is packed once, by all threads in a first pool job,
 * into a buffer of the caller's; each slice then packs only its own part of the
 * other operand. Two wake-ups of the pool instead of one, and half the copying of
 * the shared operand per thread. A shared copy larger than SHARE_MAX floats would
 * no longer stay in the caches while the slices read it (the lm_head's dX, K =
 * vocab): such products are left to the caller's split, where each slice packs
 * block by block. */
#define SHARE_MAX (1 << 20)

#if defined(__x86_64__) && defined(__GNUC__)
static _Thread_local struct pack_buf buf_shared;

struct gemm_par {
  struct gemm_job g;
  int by_cols;
};

/* Pack job: units [u0, u1) of the shared operand (NR columns of op(B), or MR rows of
 * op(A)), block by block on the job's grid. */
static void share_units(void *p, size_t u0, size_t u1) {
  const struct gemm_par *q = p;
  const struct gemm_job *g = &q->g;
  int unit = q->by_cols ? MR : NR, side = q->by_cols ? g->M : g->N;
  int blk = q->by_cols ? g->mb : g->nb, lo = (int)u0 * unit, hi = (int)u1 * unit;
  hi = hi < side ? hi : side;
  for (int x0 = lo / blk * blk; x0 < hi; x0 += blk) {
    int n = side - x0 < blk ? side - x0 : blk;
    int s0 = lo > x0 ? lo : x0, s1 = hi < x0 + n ? hi : x0 + n;
    for (int pc = 0; pc < g->K; pc += g->kb) {
      int kc = g->K - pc < g->kb ? g->K - pc : g->kb;
      if (q->by_cols)
        pack_a(g->ta, g->A, g->lda, s0, s1 - s0, pc, kc,
               g->sa + shared_off(x0, g->K, pc, n, MR) + (size_t)(s0 - x0) * kc);
      else
        pack_b(g->tb, g->B, g->ldb, pc, kc, s0, s1 - s0,
               g->sb + shared_off(x0, g->K, pc, n, NR) + (size_t)(s0 - x0) * kc);
    }
  }
}

/* Compute job: units [u0, u1) of C's longer side. */
static void slice_units(void *p, size_t u0, size_t u1) {
  const struct gemm_par *q = p;
  const struct gemm_job *g = &q->g;
  int unit = q->by_cols ? NR : MR, side = q->by_cols ? g->N : g->M;
  int lo = (int)u0 * unit, hi = (int)u1 * unit;
  hi = hi < side ? hi : side;
  if (lo >= hi) return;
  if (q->by_cols ? gemm_range(g, 0, g->M, lo, hi) : gemm_range(g, lo, hi, 0, g->N)) return;
  /* no memory for this thread's buffers: OpenBLAS does its slice */
  const float *a = g->A, *b = g->B;
  float *c = g->C;
  int m = g->M, n = g->N;
  if (q->by_cols) b += g->tb ? (size_t)lo * g->ldb : (size_t)lo, c += lo, n = hi - lo;
  else a += g->ta ? (size_t)lo : (size_t)lo * g->lda, c += (size_t)lo * g->ldc, m = hi - lo;
  blas_gemm(g->ta, g->tb, m, n, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
}
#endif

int cpu_gemm_parallel(int nt, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                      int lda, const float *B, int ldb, float beta, float *C, int ldc) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_gemm_impl() != CPU_GEMM_RLPT || M <= 0 || N <= 0 || K <= 0 || alpha == 0.0f) return 0;
  struct gemm_par q = {.g = gemm_job_make(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
                       .by_cols = N > M};
  int short_side = q.by_cols ? M : N, unit = q.by_cols ? MR : NR;
  size_t shared = (size_t)((short_side + unit - 1) / unit * unit) * (size_t)K;
  float *s = shared <= SHARE_MAX ? pack_room(&buf_shared, shared) : NULL;
  if (!s) return 0;
  if (q.by_cols) q.g.sa = s;
  else q.g.sb = s;
  thread_pool_par_for(nt, (size_t)((short_side + unit - 1) / unit), share_units, &q);
  int long_unit = q.by_cols ? NR : MR, long_side = q.by_cols ? N : M;
  thread_pool_par_for(nt, (size_t)((long_side + long_unit - 1) / long_unit), slice_units, &q);
  return 1;
#else
  (void)nt, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
  (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  return 0;
#endif
}
