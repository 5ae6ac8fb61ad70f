/* kernels/cuda_common.cuh: helpers shared by the kernels: warp and block reductions and
 * the launch check. Blocks that call a block reduction must have a multiple of
 * 32 threads, at most 1024, and every thread must reach the call. */
#ifndef RLPT_CUDA_COMMON_CUH
#define RLPT_CUDA_COMMON_CUH

#include "kernels/cuda_check.h"

/* A kernel launch reports bad configurations only through cudaGetLastError. */
#define CUDA_LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/* Sum over the block, returned to every thread. Reuses its shared buffer, so it
 * syncs before returning (safe to call twice in a row). */
template <typename T> __device__ T block_sum(T v) {
  __shared__ T part[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T r = lane < nw ? part[lane] : (T)0;
  r = warp_sum(r);
  __syncthreads();
  return r;
}

template <typename T> __device__ T block_max(T v) {
  __shared__ T part[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T r = lane < nw ? part[lane] : part[0];
  r = warp_max(r);
  __syncthreads();
  return r;
}

#endif
