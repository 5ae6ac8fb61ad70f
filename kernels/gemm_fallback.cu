/* kernels/gemm_fallback.cu: a plain tiled GEMM for the shapes cuBLASLt's heuristic
 * returns no algorithm for (odd alignments, degenerate leading dimensions).
 * Row-major, the conventions of backend_ops.matmul, A and B in fp32 or bf16, fp32
 * accumulation and output. Simple and obviously correct, not fast: one 16x16
 * output tile per block, K in steps of 16 through shared memory. */
#include <stdint.h>

#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

#define FB_TILE 16

template <typename T> __device__ __forceinline__ float fb_load(const T *p, size_t i);
template <> __device__ __forceinline__ float fb_load<float>(const float *p, size_t i) {
  return p[i];
}
template <> __device__ __forceinline__ float fb_load<uint16_t>(const uint16_t *p, size_t i) {
  return __uint_as_float((uint32_t)p[i] << 16); /* bf16 is the upper half of an fp32 */
}

/* op(A)[m,k] = ta ? A[k*lda + m] : A[m*lda + k]; op(B)[k,n] = tb ? B[n*ldb + k] : B[k*ldb + n] */
template <typename T>
__global__ void gemm_fallback_kernel(int ta, int tb, int M, int N, int K, float alpha, const T *A,
                                     int lda, const T *B, int ldb, float beta, float *C, int ldc) {
  __shared__ float As[FB_TILE][FB_TILE + 1], Bs[FB_TILE][FB_TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int m = blockIdx.y * FB_TILE + ty, n = blockIdx.x * FB_TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += FB_TILE) {
    int ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (m < M && ka < K)
                     ? fb_load(A, ta ? (size_t)ka * lda + m : (size_t)m * lda + ka) : 0.0f;
    Bs[ty][tx] = (kb < K && n < N)
                     ? fb_load(B, tb ? (size_t)n * ldb + kb : (size_t)kb * ldb + n) : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < FB_TILE; kk++) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (m < M && n < N) {
    float *c = C + (size_t)m * ldc + n;
    *c = beta != 0.0f ? alpha * acc + beta * *c : alpha * acc; /* beta = 0: C may be garbage */
  }
}

extern "C" void cuda_gemm_fallback(int bf16, int ta, int tb, int M, int N, int K, float alpha,
                                   const void *A, int lda, const void *B, int ldb, float beta,
                                   float *C, int ldc) {
  dim3 block(FB_TILE, FB_TILE), grid((N + FB_TILE - 1) / FB_TILE, (M + FB_TILE - 1) / FB_TILE);
  if (grid.y > 65535)
    cuda_fail("rlpt", "matmul", "too many rows for the fallback GEMM", "split the GEMM",
              __FILE__, __LINE__);
  if (bf16)
    gemm_fallback_kernel<uint16_t><<<grid, block>>>(ta, tb, M, N, K, alpha, (const uint16_t *)A,
                                                    lda, (const uint16_t *)B, ldb, beta, C, ldc);
  else
    gemm_fallback_kernel<float><<<grid, block>>>(ta, tb, M, N, K, alpha, (const float *)A, lda,
                                                 (const float *)B, ldb, beta, C, ldc);
  CUDA_LAUNCH_CHECK();
}
