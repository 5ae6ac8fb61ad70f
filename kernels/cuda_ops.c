/* kernels/cuda_ops.c: the CUDA backend's op table (model/backend.h) and its device memory.
 * The ops themselves live by concept in gemm_cublaslt.c, norm_rope.cu,
 * attention.cu, elementwise.cu and logprob.cu (see cuda_kernels.h). */
#include "kernels/cuda_backend.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_kernels.h"

/* Zeroed device memory, or NULL when the device has no room (the caller reports it). */
static void *cuda_mem_alloc(size_t bytes) {
  void *p = NULL;
  if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
    (void)cudaGetLastError(); /* clear the (non-sticky) error: later checks are not to blame */
    return NULL;
  }
  CUDA_CHECK(cudaMemset(p, 0, bytes));
  return p;
}

static void cuda_mem_free(void *p) {
  if (p) CUDA_CHECK(cudaFree(p));
}

static void cuda_mem_zero(void *p, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemset(p, 0, bytes));
}

static void cuda_mem_upload(void *dst, const void *host_src, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}

static void cuda_mem_download(void *host_dst, const void *src, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* Every op but the products: fp32 in both tables (mixed precision rounds only the GEMM
 * operands; norms, RoPE, attention, SwiGLU, logprobs and residuals stay fp32). */
#define CUDA_FP32_OPS                                                                      \
  .rmsnorm_fwd = cuda_rmsnorm_fwd, .rmsnorm_bwd = cuda_rmsnorm_bwd, .rope = cuda_rope,     \
  .attention_fwd = cuda_attention_fwd, .attention_bwd = cuda_attention_bwd,                \
  .swiglu_fwd = cuda_swiglu_fwd, .swiglu_bwd = cuda_swiglu_bwd, .embed_fwd = cuda_embed_fwd, \
  .embed_bwd = cuda_embed_bwd, .bias_add = cuda_bias_add, .bias_bwd = cuda_bias_bwd,       \
  .add = cuda_add, .logprob_fwd = cuda_logprob_fwd, .logprob_bwd = cuda_logprob_bwd,       \
  .alloc = cuda_mem_alloc, .free = cuda_mem_free, .zero = cuda_mem_zero,                   \
  .upload = cuda_mem_upload, .download = cuda_mem_download

const struct backend_ops cuda_backend = {
  .name = "cuda",
  .matmul = cuda_matmul,
  CUDA_FP32_OPS,
};

/* [model] dtype = bf16 (cuda_backend.h): bf16 GEMM inputs, fp32 accumulation and outputs. */
const struct backend_ops cuda_backend_bf16 = {
  .name = "cuda-bf16",
  .matmul = cuda_matmul_mixed,
  .to_bf16 = cuda_f32_to_bf16,
  .matmul_w16 = cuda_matmul_w16,
  CUDA_FP32_OPS,
};
