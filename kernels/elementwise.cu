/* elementwise.cu: SwiGLU, embedding, bias, residual add and the bf16 conversions.
 *
 * Accumulations over rows (embedding and bias backward) give each output column
 * to one thread that walks the rows in order: no atomics, so the sums are
 * deterministic and in the CPU backend's order. */
#include <cuda_bf16.h>
#include <stdint.h>

#include "cuda_backend.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

#define EW_THREADS 256

__global__ void swiglu_fwd_kernel(float *h, const float *gate, const float *up, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
    h[i] = g * sg * up[i];
  }
}

/* dh may alias dgate: each element is read before it is written. */
__global__ void swiglu_bwd_kernel(float *dgate, float *dup, float *h, const float *dh,
                                  const float *gate, const float *up, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float g = gate[i], u = up[i], d = dh[i], sg = 1.0f / (1.0f + expf(-g));
    if (h) h[i] = g * sg * u;
    dgate[i] = d * u * sg * (1.0f + g * (1.0f - sg));
    dup[i] = d * g * sg;
  }
}

__global__ void embed_fwd_kernel(float *out, const int *tokens, const float *table, int T, int C) {
  size_t n = (size_t)T * C;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t t = i / C, c = i % C;
    out[i] = table[(size_t)tokens[t] * C + c];
  }
}

__global__ void embed_bwd_kernel(float *dtable, const int *tokens, const float *dout, int T, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int t = 0; t < T; t++) dtable[(size_t)tokens[t] * C + c] += dout[(size_t)t * C + c];
}

__global__ void bias_add_kernel(float *y, const float *b, int T, int N) {
  size_t n = (size_t)T * N;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] += b[i % N];
}

__global__ void bias_bwd_kernel(float *db, const float *dy, int T, int N) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= N) return;
  float s = db[c];
  for (int t = 0; t < T; t++) s += dy[(size_t)t * N + c];
  db[c] = s;
}

__global__ void add_kernel(float *y, const float *x, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] += x[i];
}

__global__ void f32_to_bf16_kernel(uint16_t *dst, const float *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
}

__global__ void bf16_to_f32_kernel(float *dst, const uint16_t *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __bfloat162float(__ushort_as_bfloat16(src[i]));
}

extern "C" {

void cuda_swiglu_fwd(float *h, const float *gate, const float *up, size_t n) {
  if (!n) return;
  swiglu_fwd_kernel<<<cuda_grid_for(n, EW_THREADS), EW_THREADS>>>(h, gate, up, n);
  CUDA_LAUNCH_CHECK();
}

void cuda_swiglu_bwd(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                     const float *up, size_t n) {
  if (!n) return;
  swiglu_bwd_kernel<<<cuda_grid_for(n, EW_THREADS), EW_THREADS>>>(dgate, dup, h, dh, gate, up, n);
  CUDA_LAUNCH_CHECK();
}

void cuda_embed_fwd(float *out, const int *tokens, const float *table, int T, int C) {
  if (T <= 0 || C <= 0) return;
  embed_fwd_kernel<<<cuda_grid_for((size_t)T * C, EW_THREADS), EW_THREADS>>>(out, tokens, table,
                                                                              T, C);
  CUDA_LAUNCH_CHECK();
}

void cuda_embed_bwd(float *dtable, const int *tokens, const float *dout, int T, int C) {
  if (T <= 0 || C <= 0) return;
  embed_bwd_kernel<<<(C + 127) / 128, 128>>>(dtable, tokens, dout, T, C);
  CUDA_LAUNCH_CHECK();
}

void cuda_bias_add(float *y, const float *b, int T, int N) {
  if (T <= 0 || N <= 0) return;
  bias_add_kernel<<<cuda_grid_for((size_t)T * N, EW_THREADS), EW_THREADS>>>(y, b, T, N);
  CUDA_LAUNCH_CHECK();
}

void cuda_bias_bwd(float *db, const float *dy, int T, int N) {
  if (T <= 0 || N <= 0) return;
  bias_bwd_kernel<<<(N + 127) / 128, 128>>>(db, dy, T, N);
  CUDA_LAUNCH_CHECK();
}

void cuda_add(float *y, const float *x, size_t n) {
  if (!n) return;
  add_kernel<<<cuda_grid_for(n, EW_THREADS), EW_THREADS>>>(y, x, n);
  CUDA_LAUNCH_CHECK();
}

void cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t n) {
  if (!n) return;
  f32_to_bf16_kernel<<<cuda_grid_for(n, EW_THREADS), EW_THREADS>>>(dst, src, n);
  CUDA_LAUNCH_CHECK();
}

void cuda_bf16_to_f32(float *dst, const uint16_t *src, size_t n) {
  if (!n) return;
  bf16_to_f32_kernel<<<cuda_grid_for(n, EW_THREADS), EW_THREADS>>>(dst, src, n);
  CUDA_LAUNCH_CHECK();
}

} /* extern "C" */
