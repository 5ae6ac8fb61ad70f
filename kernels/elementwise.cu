/* kernels/elementwise.cu: SwiGLU, embedding, bias, residual add and the bf16 conversions.
 *
 * Accumulations over rows use no atomics, so the sums are deterministic: the
 * embedding backward gives each column to one thread that walks the tokens in
 * order (a token may repeat); column sums (bias, RMSNorm weight) go in two passes
 * over chunks of rows (cuda_colsum_accumulate). */
#include <cuda_bf16.h>
#include <stdint.h>

#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

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

__global__ void embed_bwd_kernel(float *dtable, const int *tokens, const float *dout, int T,
                                 int C) {
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

/* Column sums in two passes, deterministic: pass 1 sums each chunk of COLSUM_ROWS rows
 * of column c in row order into part[chunk][c] (one thread per column and chunk);
 * pass 2 adds the chunk sums, in chunk order, to out[c]. */
#define COLSUM_ROWS 128

__global__ void colsum_chunk_kernel(float *part, const float *a, const float *b,
                                    const float *rowscale, int T, int N) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, t0 = blockIdx.y * COLSUM_ROWS;
  if (c >= N) return;
  int t1 = min(T, t0 + COLSUM_ROWS);
  float s = 0.0f;
  for (int t = t0; t < t1; t++) {
    float v = a[(size_t)t * N + c];
    if (b) v *= b[(size_t)t * N + c];
    if (rowscale) v *= rowscale[t];
    s += v;
  }
  part[(size_t)blockIdx.y * N + c] = s;
}

__global__ void colsum_final_kernel(float *out, const float *part, int nchunks, int N) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= N) return;
  float s = 0.0f;
  for (int k = 0; k < nchunks; k++) s += part[(size_t)k * N + c];
  out[c] += s;
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

void cuda_colsum_accumulate(float *out, const float *a, const float *b, const float *rowscale,
                            int T, int N) {
  if (T <= 0 || N <= 0) return;
  int nchunks = (T + COLSUM_ROWS - 1) / COLSUM_ROWS;
  float *part;
  CUDA_CHECK(cudaMallocAsync((void **)&part, sizeof(float) * (size_t)nchunks * N, 0));
  dim3 grid((N + 127) / 128, nchunks);
  colsum_chunk_kernel<<<grid, 128>>>(part, a, b, rowscale, T, N);
  CUDA_LAUNCH_CHECK();
  colsum_final_kernel<<<(N + 127) / 128, 128>>>(out, part, nchunks, N);
  CUDA_LAUNCH_CHECK();
  CUDA_CHECK(cudaFreeAsync(part, 0));
}

void cuda_bias_bwd(float *db, const float *dy, int T, int N) {
  cuda_colsum_accumulate(db, dy, NULL, NULL, T, N);
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
