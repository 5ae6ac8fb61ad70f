// emu.h: run the kernels of kernels/*.cu on the CPU, to check their indexing,
// bounds and synchronisation where no GPU is present (see check.sh). Each CUDA
// thread is a fiber (ucontext); a block's fibers run until they reach
// __syncthreads / a warp shuffle, then the scheduler releases the barrier; blocks
// run one after the other, so __shared__ arrays are plain statics. Device memory is
// host memory (emu_rt.cpp), filled with NaN bytes on allocation like the garbage
// cudaMalloc returns.
#pragma once
#define __DEVICE_LAUNCH_PARAMETERS_H__
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <nccl.h>
#include <cuda_bf16.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <functional>
using std::min; using std::max;
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
void __syncthreads();
void __syncwarp(unsigned m = 0xffffffffu);
uint64_t emu_exchange(uint64_t v, int src_lane);  // all 32 lanes: returns lane src's value
template <class T> T __shfl_sync(unsigned, T v, int src) {
  uint64_t b = 0; memcpy(&b, &v, sizeof v);
  uint64_t r = emu_exchange(b, src & 31); T o; memcpy(&o, &r, sizeof o); return o;
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m) {
  uint64_t b = 0; memcpy(&b, &v, sizeof v);
  uint64_t r = emu_exchange(b, (int)((threadIdx.x & 31) ^ (unsigned)m)); T o; memcpy(&o, &r, sizeof o); return o;
}
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
void emu_run(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body);
struct emu_launcher {
  dim3 g, b; size_t s;
  template <class K, class... A> void call(K k, A... a) { emu_run(g, b, s, [&] { k(a...); }); }
};
#define EMU_LAUNCH(k, ...) emu_launch_helper(k, emu_launcher{__VA_ARGS__})
template <class K> struct emu_bound { K k; emu_launcher l; template <class... A> void operator()(A... a) { l.call(k, a...); } };
template <class K> emu_bound<K> emu_launch_helper(K k, emu_launcher l) { return emu_bound<K>{k, l}; }
extern float emu_smem[];
