/* cpu/fastmath.h: an exp for the CPU ops' inner loops (softmax, sigmoid, logprob)
 * that vectorises: fast_expf (scalar) and fast_exp8 (AVX2, eight lanes) run the
 * same IEEE operations in the same order, so a lane of fast_exp8 is the same
 * bits as fast_expf on that input; a loop may take its tail with the scalar
 * one and stay independent of where a thread's slice ends.
 *
 * Method: x clamped to [-104, 88.75] (below: the result rounds to 0, above: inf),
 * n = round(x log2 e) by the 1.5 * 2^23 trick, r = x - n ln2 in two fused steps
 * (Cody-Waite), e^r by Cephes' degree-6 polynomial on |r| <= ln2 / 2, then times
 * 2^(n >> 1) and 2^(n - (n >> 1)) (two factors keep each power normal, so
 * subnormal results and n = 128 come out right). Max error about 2 ulp against
 * expf on the normal range (cpu/test_fastmath.c). NaN in, NaN out. */
#ifndef RLPT_CPU_FASTMATH_H
#define RLPT_CPU_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/simd.h"

#define FM_LO (-104.0f)
#define FM_HI 88.75f
#define FM_LOG2E 1.44269504088896341f
#define FM_SHIFT 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer */
#define FM_LN2_HI 0.693359375f
#define FM_LN2_LO (-2.12194440e-4f)
#define FM_P0 1.9875691500e-4f
#define FM_P1 1.3981999507e-3f
#define FM_P2 8.3334519073e-3f
#define FM_P3 4.1665795894e-2f
#define FM_P4 1.6666665459e-1f
#define FM_P5 5.0000001201e-1f

static inline float fm_pow2i(int32_t n) { /* 2^n for n in [-126, 127] */
  uint32_t bits = (uint32_t)(n + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline float fast_expf(float x) {
  float xc = x > FM_LO ? x : FM_LO; /* the operand order of _mm256_max_ps / min_ps */
  xc = xc < FM_HI ? xc : FM_HI;
  float n = fmaf(xc, FM_LOG2E, FM_SHIFT) - FM_SHIFT;
  float r = fmaf(n, -FM_LN2_HI, xc);
  r = fmaf(n, -FM_LN2_LO, r);
  float p = fmaf(FM_P0, r, FM_P1);
  p = fmaf(p, r, FM_P2);
  p = fmaf(p, r, FM_P3);
  p = fmaf(p, r, FM_P4);
  p = fmaf(p, r, FM_P5);
  float y = fmaf(p, r * r, r) + 1.0f;
  int32_t ni = (int32_t)n, a = ni >> 1; /* arithmetic shift: floor(n / 2), as srai */
  y = y * fm_pow2i(a) * fm_pow2i(ni - a);
  return x != x ? x : y;
}

#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static inline __m256 fm_pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

CPU_AVX2 static inline __m256 fast_exp8(__m256 x) {
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(FM_LO)), _mm256_set1_ps(FM_HI));
  __m256 shift = _mm256_set1_ps(FM_SHIFT);
  __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(FM_LOG2E), shift), shift);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-FM_LN2_HI), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-FM_LN2_LO), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(FM_P0), r, _mm256_set1_ps(FM_P1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FM_P2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FM_P3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FM_P4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FM_P5));
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  __m256i ni = _mm256_cvtps_epi32(n), a = _mm256_srai_epi32(ni, 1);
  y = _mm256_mul_ps(_mm256_mul_ps(y, fm_pow2i8(a)), fm_pow2i8(_mm256_sub_epi32(ni, a)));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
#endif

#endif
