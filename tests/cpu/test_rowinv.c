/* cpu/test_rowinv.c: every element of the CPU backend's row-invariant product
 * (cpu/rowinv.c, model/backend.h's matmul_rowinv) has the bits of the one documented
 * summation order (cpu/rowinv.h), whichever kernel computes it.
 *
 * The reference is rowinv_dot_plain, the scalar statement of that order (8 fused
 * multiply-add lanes, the fixed reduction, the tail in order), times alpha plus
 * beta C. Exact equality (memcmp), no tolerance: the order is the contract. The
 * shapes reach every path: M = 1..3 (the decode GEMV: long streams of B, with
 * N mod 4 leftovers and N < 4), M = 4..9 (4 x 3 tiles plus one-row tails), N
 * large enough that the columns split over 2 threads, K a multiple of 8 and not,
 * strides wider than the matrix (padding of C must stay untouched), beta 0 and 1;
 * and matmul_rowinv_shared, several products over one A in one job. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/rowinv.h"
#include "model/backend.h"
#include "testutil.h"

#define PAD 3 /* extra floats per row of A, B and C */

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* One product against the reference; returns the number of differing elements of C
 * (padding included). */
static int check_product(int M, int N, int K, float beta, unsigned seed) {
  int lda = K + PAD, ldb = K + PAD, ldc = N + PAD;
  size_t na = (size_t)M * lda, nb = (size_t)N * ldb, nc = (size_t)M * ldc;
  float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
  float *C = malloc(sizeof(float) * nc), *ref = malloc(sizeof(float) * nc);
  if (!A || !B || !C || !ref) {
    free(A); free(B); free(C); free(ref);
    return -1;
  }
  for (size_t i = 0; i < na; i++) A[i] = frand(&seed);
  for (size_t i = 0; i < nb; i++) B[i] = frand(&seed);
  for (size_t i = 0; i < nc; i++) C[i] = ref[i] = frand(&seed);
  const float alpha = 0.75f;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = rowinv_dot_plain(A + (size_t)i * lda, B + (size_t)j * ldb, K), *r = ref + (size_t)i * ldc + j;
      *r = beta == 0.0f ? alpha * s : alpha * s + beta * *r;
    }
  cpu_backend.matmul_rowinv(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  int bad = 0;
  for (size_t i = 0; i < nc; i++) bad += memcmp(C + i, ref + i, sizeof(float)) != 0;
  free(A); free(B); free(C); free(ref);
  return bad;
}

/* matmul_rowinv_shared: count products over one A give the reference bits (a thread's
 * slice spans two products; count 5 runs as two jobs). Returns differing elements. */
static int check_shared(int M, int K, int count, const int *N, unsigned seed) {
  size_t na = (size_t)M * K, nb = 0, nc = 0;
  for (int c = 0; c < count; c++) nb += (size_t)N[c] * K, nc += (size_t)M * N[c];
  float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
  float *C = malloc(sizeof(float) * nc), *ref = malloc(sizeof(float) * nc);
  struct rowinv_product p[8];
  if (!A || !B || !C || !ref || count > 8) {
    free(A); free(B); free(C); free(ref);
    return -1;
  }
  for (size_t i = 0; i < na; i++) A[i] = frand(&seed);
  for (size_t i = 0; i < nb; i++) B[i] = frand(&seed);
  for (size_t i = 0; i < nc; i++) C[i] = 7.0f; /* beta 0: must be overwritten */
  size_t ob = 0, oc = 0;
  for (int c = 0; c < count; c++) {
    p[c] = (struct rowinv_product){.N = N[c], .B = B + ob, .C = C + oc};
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N[c]; j++)
        ref[oc + (size_t)i * N[c] + j] = rowinv_dot_plain(A + (size_t)i * K, B + ob + (size_t)j * K, K);
    ob += (size_t)N[c] * K, oc += (size_t)M * N[c];
  }
  cpu_backend.matmul_rowinv_shared(M, K, A, K, count, p);
  int bad = 0;
  for (size_t i = 0; i < nc; i++) bad += memcmp(C + i, ref + i, sizeof(float)) != 0;
  free(A); free(B); free(C); free(ref);
  return bad;
}

int main(void) {
  static const int Ms[] = {1, 2, 3, 4, 5, 9};
  static const int Ns[] = {1, 3, 4, 5, 7, 37, 192, 1001};
  static const int Ks[] = {8, 13, 64, 100};
  for (int threads = 1; threads <= 2; threads++) {
    openblas_set_num_threads(threads);
    int bad = 0, products = 0;
    for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
      for (size_t n = 0; n < sizeof Ns / sizeof *Ns; n++)
        for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
          for (int b = 0; b < 2; b++) {
            int d = check_product(Ms[m], Ns[n], Ks[k], (float)b, 1u + (unsigned)(m * 977 + n * 31 + k));
            CHECK_MSG(d == 0, "M=%d N=%d K=%d beta=%d, %d thread(s): %d elements differ", Ms[m],
                      Ns[n], Ks[k], b, threads, d);
            bad += d != 0;
            products++;
          }
    /* the decode GEMV of the SmolLM2 shapes: K = 576 and 1536, split over the threads */
    int big[][2] = {{192, 576}, {576, 576}, {576, 1536}, {1536, 576}};
    for (int s = 0; s < 4; s++) {
      int d = check_product(1, big[s][0], big[s][1], 0.0f, 99u + (unsigned)s);
      CHECK_MSG(d == 0, "M=1 N=%d K=%d, %d thread(s): %d elements differ", big[s][0], big[s][1],
                threads, d);
      bad += d != 0;
      products++;
    }
    /* shared: q, k, v of SmolLM2 (M = 1, a decode step; M = 5, a few rows), and five
     * odd-sized products (two jobs) */
    static const int qkv[] = {576, 192, 192}, odd[] = {5, 37, 1, 64, 129};
    for (int M = 1; M <= 5; M += 4) {
      int d = check_shared(M, 576, 3, qkv, 5u + (unsigned)M);
      CHECK_MSG(d == 0, "shared q/k/v M=%d, %d thread(s): %d elements differ", M, threads, d);
      bad += d != 0;
      d = check_shared(M, 45, 5, odd, 6u + (unsigned)M);
      CHECK_MSG(d == 0, "shared x5 M=%d, %d thread(s): %d elements differ", M, threads, d);
      bad += d != 0;
      products += 2;
    }
    printf("%d thread(s): %d of %d products differ from the reference order\n", threads, bad,
           products);
  }
  return TEST_RESULT("test_rowinv");
}
