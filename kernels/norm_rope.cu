/* kernels/norm_rope.cu: RMSNorm forward/backward and rotary position embedding.
 *
 * RMSNorm: one block per row for the row reductions; the weight gradient is a
 * column sum over rows (cuda_colsum_accumulate: deterministic, no atomics). */
#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

#define NORM_THREADS 256

/* out[T,C] = x r w, r = rsqrt(mean(x^2) + eps) kept in rstd[T]. One block per row. */
__global__ void rmsnorm_fwd_kernel(float *out, float *rstd, const float *x, const float *w, int C,
                                   float eps) {
  const float *xt = x + (size_t)blockIdx.x * C;
  float *ot = out + (size_t)blockIdx.x * C;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) ss += xt[i] * xt[i];
  ss = block_sum(ss);
  float r = 1.0f / sqrtf(ss / C + eps);
  for (int i = threadIdx.x; i < C; i += blockDim.x) ot[i] = xt[i] * r * w[i];
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

/* dx_i += r w_i dy_i - x_i r^3 / C * sum_j dy_j w_j x_j. One block per row. */
__global__ void rmsnorm_bwd_dx_kernel(float *dx, const float *dout, const float *x, const float *w,
                                      const float *rstd, int C) {
  size_t o = (size_t)blockIdx.x * C;
  float r = rstd[blockIdx.x], dot = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) dot += dout[o + i] * w[i] * x[o + i];
  dot = block_sum(dot);
  float k = dot * r * r * r / C;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    dx[o + i] += r * w[i] * dout[o + i] - x[o + i] * k;
}

/* One thread per (row, head, pair i < D/2): rotate (x_i, x_{i+D/2}) by pos[t]. */
__global__ void rope_kernel(float *x, const int *pos, const float *cos_tab, const float *sin_tab,
                            int T, int nh, int D, float sgn) {
  int half = D / 2;
  size_t n = (size_t)T * nh * half;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x) {
    int i = (int)(e % half);
    size_t th = e / half; /* t * nh + h */
    int t = (int)(th / nh);
    float *xh = x + th * D;
    size_t po = (size_t)pos[t] * half + i;
    float c = cos_tab[po], s = sgn * sin_tab[po], a = xh[i], b = xh[i + half];
    xh[i] = a * c - b * s;
    xh[i + half] = b * c + a * s;
  }
}

extern "C" {

void cuda_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int T, int C,
                      float eps) {
  if (T <= 0) return;
  rmsnorm_fwd_kernel<<<T, NORM_THREADS>>>(out, rstd, x, w, C, eps);
  CUDA_LAUNCH_CHECK();
}

void cuda_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                      const float *rstd, int T, int C) {
  if (T <= 0) return;
  rmsnorm_bwd_dx_kernel<<<T, NORM_THREADS>>>(dx, dout, x, w, rstd, C);
  CUDA_LAUNCH_CHECK();
  cuda_colsum_accumulate(dw, dout, x, rstd, T, C); /* dw_i += sum_t dy_ti x_ti r_t */
}

void cuda_rope(float *x, const int *pos, const float *cos_tab, const float *sin_tab, int T, int nh,
               int D, int inverse) {
  size_t n = (size_t)T * nh * (D / 2);
  if (!n) return;
  rope_kernel<<<cuda_grid_for(n, 256), 256>>>(x, pos, cos_tab, sin_tab, T, nh, D,
                                              inverse ? -1.0f : 1.0f);
  CUDA_LAUNCH_CHECK();
}

} /* extern "C" */
