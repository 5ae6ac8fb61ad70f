/* cpu_gemm.c: a blocked fp32 GEMM for AVX2+FMA CPUs (the BLIS scheme), beside
 * OpenBLAS's (cpu_gemm.h says how one is chosen).
 *
 * op(B) is copied in blocks of KC x NC into NR-column micro-panels and op(A) in
 * blocks of MC x KC into MR-row micro-panels (k-major, zero-padded to whole
 * panels), so the transposes live in the copies and one micro-kernel serves all
 * four cases. The kernel keeps an MR x NR tile of C in 12 ymm registers: per k it
 * loads 16 floats of B and broadcasts 6 of A (12 FMAs). A B micro-panel (KC x NR,
 * 16 KiB at KC = 256) stays in L1 while the A block (MC x KC, 144 KiB) streams
 * from L2; the B block sits in L3. Sizes: Zen 3 (32 KiB L1d, 512 KiB L2 per core),
 * measured with tests/bench/bench_gemm.c. Tiles on C's edge go through a stack
 * tile. The copies live in per-thread buffers that grow and are kept, so a call
 * on the hot path allocates nothing. */
#include "cpu_gemm.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MR 6
#define NR 16
#ifndef KC
#define KC 256  /* most k per block; blocks are balanced (576 -> 3 x 192) */
#endif
#ifndef MC
#define MC 144  /* most rows of op(A) per block, a multiple of MR */
#endif
#ifndef NC
#define NC 4096 /* most columns of op(B) per block, a multiple of NR */
#endif

/* ---- choice of implementation -------------------------------------------- */

static int have_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

static enum cpu_gemm_impl gemm_impl;
static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;

static void gemm_choose(void) {
  const char *e = getenv("RLPT_GEMM");
  gemm_impl = have_avx2() && !(e && !strcmp(e, "openblas")) ? CPU_GEMM_RLPT : CPU_GEMM_OPENBLAS;
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
  gemm_impl = impl == CPU_GEMM_RLPT && have_avx2() ? CPU_GEMM_RLPT : CPU_GEMM_OPENBLAS;
  return gemm_impl;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GEMM_AVX2 __attribute__((target("avx2,fma")))

/* ---- packing --------------------------------------------------------------- */

/* r[i] (8 floats of row i) -> r[q] (element q of every row): the 8 x 8 transpose of
 * unpack, shuffle and 128-bit permutes. */
GEMM_AVX2 static inline void transpose8(__m256 r[8]) {
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

/* dst[p*w + i] = src[i*ld + p] for i < rows, p < kc (rows <= 8, w = 6 or 16 of which
 * these are the first rows): 8 k at a time through transpose8. Each store writes 8
 * floats, the 8 - rows past w's rows being overwritten by the next k's store or the
 * scalar tail; past the last k it writes up to 2 floats of slack (pack_room). */
GEMM_AVX2 static void pack_rows_t(const float *src, size_t ld, int rows, int kc, float *dst,
                                  int w) {
  int p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; i++)
      r[i] = i < rows ? _mm256_loadu_ps(src + (size_t)i * ld + p) : _mm256_setzero_ps();
    transpose8(r);
    for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (size_t)(p + q) * w, r[q]);
  }
  for (; p < kc; p++)
    for (int i = 0; i < rows; i++) dst[(size_t)p * w + i] = src[(size_t)i * ld + p];
}

/* op(A)[i0 + i, k0 + p] for i < mc, p < kc into MR-row panels: panel r holds
 * rows r*MR.. as dst[r*MR*kc + p*MR + i], rows past mc zero. */
GEMM_AVX2 static void pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc,
                             float *dst) {
  for (int ir = 0; ir < mc; ir += MR, dst += (size_t)MR * kc) {
    int mr = mc - ir < MR ? mc - ir : MR;
    if (!ta && mr == MR) {
      pack_rows_t(A + (size_t)(i0 + ir) * lda + k0, (size_t)lda, MR, kc, dst, MR);
      continue;
    }
    for (int p = 0; p < kc; p++) {
      float *d = dst + (size_t)p * MR;
      for (int i = 0; i < mr; i++)
        d[i] = ta ? A[(size_t)(k0 + p) * lda + i0 + ir + i] : A[(size_t)(i0 + ir + i) * lda + k0 + p];
      for (int i = mr; i < MR; i++) d[i] = 0.0f;
    }
  }
}

/* op(B)[k0 + p, j0 + j] for p < kc, j < nc into NR-column panels: panel r holds
 * columns r*NR.. as dst[r*NR*kc + p*NR + j], columns past nc zero. */
GEMM_AVX2 static void pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc,
                             float *dst) {
  for (int jr = 0; jr < nc; jr += NR, dst += (size_t)NR * kc) {
    int nr = nc - jr < NR ? nc - jr : NR;
    if (tb && nr == NR) {
      for (int h = 0; h < NR; h += 8)
        pack_rows_t(B + (size_t)(j0 + jr + h) * ldb + k0, (size_t)ldb, 8, kc, dst + h, NR);
      continue;
    }
    for (int p = 0; p < kc; p++) {
      float *d = dst + (size_t)p * NR;
      if (!tb && nr == NR) {
        const float *s = B + (size_t)(k0 + p) * ldb + j0 + jr;
        _mm256_store_ps(d, _mm256_loadu_ps(s));
        _mm256_store_ps(d + 8, _mm256_loadu_ps(s + 8));
        continue;
      }
      for (int j = 0; j < nr; j++)
        d[j] = tb ? B[(size_t)(j0 + jr + j) * ldb + k0 + p] : B[(size_t)(k0 + p) * ldb + j0 + jr + j];
      for (int j = nr; j < NR; j++) d[j] = 0.0f;
    }
  }
}

/* ---- micro-kernel ---------------------------------------------------------- */

/* c[MR, NR] (row stride ldc) = alpha a-panel b-panel + beta c over kc; beta = 0 does
 * not read c. */
GEMM_AVX2 static void kernel_6x16(int kc, const float *a, const float *b, float *c, size_t ldc,
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
GEMM_AVX2 static void tile(int kc, const float *a, const float *b, float *c, int ldc, int mr,
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
GEMM_AVX2 static void macro_kernel(int mc, int nc, int kc, const float *pa, const float *pb,
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
/* The blocked GEMM; 0 when its buffers cannot be had. */
static int blocked_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc) {
  int kb = block_of(K, KC, 1), mb = block_of(M, MC, MR), nb = block_of(N, NC, NR);
  /* pack_a may write 2 floats past its panels (pack_rows_t) */
  float *pa = pack_room(&buf_a, (size_t)mb * kb + 8), *pb = pack_room(&buf_b, (size_t)nb * kb);
  if (!pa || !pb) return 0;
  for (int jc = 0; jc < N; jc += nb) {
    int nc = N - jc < nb ? N - jc : nb;
    for (int pc = 0; pc < K; pc += kb) {
      int kc = K - pc < kb ? K - pc : kb;
      float bk = pc ? 1.0f : beta;
      pack_b(tb, B, ldb, pc, kc, jc, nc, pb);
      for (int ic = 0; ic < M; ic += mb) {
        int mc = M - ic < mb ? M - ic : mb;
        pack_a(ta, A, lda, ic, mc, pc, kc, pa);
        macro_kernel(mc, nc, kc, pa, pb, C + (size_t)ic * ldc + jc, ldc, alpha, bk);
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
  if (cpu_gemm_impl() == CPU_GEMM_RLPT &&
      blocked_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
#endif
  blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
