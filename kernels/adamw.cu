/* kernels/adamw.cu: the optimizer step on the device: AdamW fused over the flat
 * parameter buffer (fp32 master weights and moments, optional bf16 working
 * copy), the global gradient norm and the clipping scale.
 *
 * The step uses the scalars of train/optim.c's adamw_step, formed the same way in
 * double on the host, so the update matches the CPU optimizer to rounding. The
 * norm reduces in double in a fixed order (fixed grid, then one block), so it is
 * the same number on every run. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

#define OPT_THREADS 256
#define NORM_BLOCKS 1024 /* fixed: the reduction order must not depend on n */

__global__ void adamw_kernel(float *p, uint16_t *p_bf16, const float *g, float *m, float *v,
                             size_t n, float decay, float b1, float c1, float b2, float c2,
                             float step_size, float inv_sqrt_bc2, float eps) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float gi = g[i];
    float mi = b1 * m[i] + c1 * gi;
    float vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) * inv_sqrt_bc2 + eps;
    float pi = p[i] * decay - step_size * mi / denom;
    p[i] = pi;
    if (p_bf16) p_bf16[i] = __bfloat16_as_ushort(__float2bfloat16_rn(pi));
  }
}

/* partial[blockIdx.x] = sum of squares of a grid-stride slice, in double. */
__global__ void sumsq_partial_kernel(double *partial, const float *g, size_t n) {
  double s = 0.0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    s += (double)g[i] * (double)g[i];
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sumsq_final_kernel(double *out, const double *partial, int np) {
  double s = 0.0;
  for (int i = threadIdx.x; i < np; i += blockDim.x) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

__global__ void scale_kernel(float *x, size_t n, float s) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    x[i] *= s;
}

extern "C" {

void cuda_adamw_step(float *p, uint16_t *p_bf16, const float *g, float *m, float *v, size_t n,
                     long t, double lr, double beta1, double beta2, double eps, double wd) {
  if (!n) return;
  double bc1 = 1.0 - pow(beta1, (double)t), bc2 = 1.0 - pow(beta2, (double)t);
  adamw_kernel<<<cuda_grid_for(n, OPT_THREADS), OPT_THREADS>>>(
      p, p_bf16, g, m, v, n, (float)(1.0 - lr * wd), (float)beta1, (float)(1.0 - beta1),
      (float)beta2, (float)(1.0 - beta2), (float)(lr / bc1), (float)(1.0 / sqrt(bc2)), (float)eps);
  CUDA_LAUNCH_CHECK();
}

double cuda_sumsq(const float *g, size_t n) {
  double *buf, host = 0.0;
  CUDA_CHECK(cudaMallocAsync((void **)&buf, sizeof(double) * (NORM_BLOCKS + 1), 0));
  sumsq_partial_kernel<<<NORM_BLOCKS, OPT_THREADS>>>(buf + 1, g, n);
  CUDA_LAUNCH_CHECK();
  sumsq_final_kernel<<<1, OPT_THREADS>>>(buf, buf + 1, NORM_BLOCKS);
  CUDA_LAUNCH_CHECK();
  CUDA_CHECK(cudaMemcpy(&host, buf, sizeof host, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFreeAsync(buf, 0));
  return host;
}

void cuda_scale(float *x, size_t n, float s) {
  if (!n) return;
  scale_kernel<<<cuda_grid_for(n, OPT_THREADS), OPT_THREADS>>>(x, n, s);
  CUDA_LAUNCH_CHECK();
}

} /* extern "C" */
