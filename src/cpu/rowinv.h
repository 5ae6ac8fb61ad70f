/* cpu/rowinv.h: the CPU backend's row-invariant product C = A B^T (cpu/rowinv.c)
 * and the dot-product order it fixes, which the attention scores of cpu/attention.c
 * share.
 *
 * The order of one element dot(a, b) over K: 8 lane sums (lane = k mod 8, fused
 * multiply-add, k ascending), reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
 * then the K mod 8 tail in order with fused multiply-adds. rowinv_dot_avx2 and
 * rowinv_dot_plain compute exactly that; rowinv_hsum is the reduction of one lane
 * vector, rowinv_hsum4 that of four at once. */
#ifndef RLPT_CPU_ROWINV_H
#define RLPT_CPU_ROWINV_H

#include <math.h>

#include "cpu/simd.h"
#include "model/backend.h"

/* C[M,N] = alpha A[M,K] B[N,K]^T + beta C, every element in the order above, so a
 * row of C has the same bits whatever M is and whichever rows share the call;
 * columns split over the rank's thread pool. model/backend.h's matmul_rowinv. */
void rowinv_gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc);
/* count rowinv_gemm products sharing A, run as one job per 4 (model/backend.h's
 * matmul_rowinv_shared). */
void rowinv_gemm_shared(int M, int K, const float *A, int lda, int count,
                        const struct rowinv_product *out);

/* The order without AVX2/FMA (other CPUs): lanes as plain arrays. */
static inline float rowinv_dot_plain(const float *a, const float *b, int K) {
  int K8 = K & ~7;
  float l[8] = {0};
  for (int k = 0; k < K8; k += 8)
    for (int x = 0; x < 8; x++) l[x] = fmaf(a[k + x], b[k + x], l[x]);
  float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  for (int k = K8; k < K; k++) s = fmaf(a[k], b[k], s);
  return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static inline float rowinv_hsum(__m256 v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* l_i + l_i+4 */
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));                               /* + l_i+2 */
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

/* rowinv_hsum of four vectors at once (lane i of the result is the sum of v[i]), in the
 * same order: l_i + l_i+4 per vector, a 4 x 4 transpose, then (x0 + x2) + (x1 + x3). */
CPU_AVX2 static inline __m128 rowinv_hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
#define ROWINV_HALF(v) _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))
  __m128 x0 = ROWINV_HALF(a), x1 = ROWINV_HALF(b), x2 = ROWINV_HALF(c), x3 = ROWINV_HALF(d);
#undef ROWINV_HALF
  _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
  return _mm_add_ps(_mm_add_ps(x0, x2), _mm_add_ps(x1, x3));
}

/* One element in the order above. */
CPU_AVX2 static inline float rowinv_dot_avx2(const float *A, const float *B, int K) {
  __m256 c = _mm256_setzero_ps();
  for (int k = 0; k < (K & ~7); k += 8)
    c = _mm256_fmadd_ps(_mm256_loadu_ps(A + k), _mm256_loadu_ps(B + k), c);
  float s = rowinv_hsum(c);
  for (int k = K & ~7; k < K; k++) s = fmaf(A[k], B[k], s);
  return s;
}
#endif

#endif
