/* kernels/logprob.cu: next-token logprob, entropy and log-sum-exp over a chunk of
 * logits rows, and the backward in place (dL/dlogits). One block per row; the
 * sums run in double as in cpu/logprob.c, the exponentials in float. */
#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

#define LP_THREADS 256

__global__ void logprob_fwd_kernel(float *logprob, float *entropy, float *lse, const float *logits,
                                   const int *targets, int V) {
  int r = blockIdx.x;
  const float *z = logits + (size_t)r * V;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) mx = z[j] > mx ? z[j] : mx;
  mx = block_max(mx);
  double sum = 0.0, sz = 0.0; /* sum e^(z-mx), sum e^(z-mx) (z-mx) */
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float e = expf(z[j] - mx);
    sum += e;
    sz += (double)e * (z[j] - mx);
  }
  sum = block_sum(sum);
  sz = block_sum(sz);
  if (threadIdx.x == 0) {
    double l = log(sum);
    float ls = (float)(mx + l);
    int tg = targets[r];
    lse[r] = ls;
    entropy[r] = (float)(l - sz / sum); /* H = lse - E[z] */
    logprob[r] = tg >= 0 ? z[tg] - ls : 0.0f;
  }
}

/* z_j <- -gl p_j - ge p_j (log p_j + H) (+ gl at the target). */
__global__ void logprob_bwd_kernel(float *logits, const float *lse, const float *entropy,
                                   const int *targets, const float *dlogprob,
                                   const float *dentropy, int V) {
  int r = blockIdx.x, tg = targets[r];
  float *z = logits + (size_t)r * V;
  float gl = (dlogprob && tg >= 0) ? dlogprob[r] : 0.0f;
  float ge = dentropy ? dentropy[r] : 0.0f, H = entropy[r], l = lse[r];
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float lp = z[j] - l, p = expf(lp);
    float g = -gl * p - ge * p * (lp + H);
    if (j == tg) g += gl;
    z[j] = g;
  }
}

extern "C" {

void cuda_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                      const int *targets, int R, int V) {
  if (R <= 0) return;
  logprob_fwd_kernel<<<R, LP_THREADS>>>(logprob, entropy, lse, logits, targets, V);
  CUDA_LAUNCH_CHECK();
}

void cuda_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                      const float *dlogprob, const float *dentropy, int R, int V) {
  if (R <= 0) return;
  logprob_bwd_kernel<<<R, LP_THREADS>>>(logits, lse, entropy, targets, dlogprob, dentropy, V);
  CUDA_LAUNCH_CHECK();
}

} /* extern "C" */
