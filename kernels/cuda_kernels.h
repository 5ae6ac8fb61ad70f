/* kernels/cuda_kernels.h: the launchers in the .cu files of kernels/ that cuda_ops.c puts into the
 * backend table (same signatures and semantics as struct backend_ops; every
 * pointer is device memory). Internal to kernels/. */
#ifndef RLPT_CUDA_KERNELS_H
#define RLPT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "model/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gemm_cublaslt.c */
void cuda_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);
/* cuda_backend_bf16's products: A (and B in cuda_matmul_mixed) rounded to bf16 in scratch,
 * then bf16 GEMM with fp32 accumulation and output; matmul's conventions. */
void cuda_matmul_mixed(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc);
void cuda_matmul_w16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc);

/* gemm_fallback.cu: A, B fp32 (bf16 = 0) or bf16 (bf16 = 1), C fp32; matmul's conventions. */
void cuda_gemm_fallback(int bf16, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                        int lda, const void *B, int ldb, float beta, float *C, int ldc);

/* norm_rope.cu */
void cuda_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int T, int C,
                      float eps);
void cuda_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                      const float *rstd, int T, int C);
void cuda_rope(float *x, const int *pos, const float *cos_tab, const float *sin_tab, int T, int nh,
               int D, int inverse);

/* attention.cu */
void cuda_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch);
void cuda_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch);

/* elementwise.cu */
void cuda_swiglu_fwd(float *h, const float *gate, const float *up, size_t n);
void cuda_swiglu_bwd(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                     const float *up, size_t n);
void cuda_embed_fwd(float *out, const int *tokens, const float *table, int T, int C);
void cuda_embed_bwd(float *dtable, const int *tokens, const float *dout, int T, int C);
void cuda_bias_add(float *y, const float *b, int T, int N);
void cuda_bias_bwd(float *db, const float *dy, int T, int N);
void cuda_add(float *y, const float *x, size_t n);
/* out[N] += sum_t a[t,c] (* b[t,c] when b) (* rowscale[t] when rowscale), deterministic. */
void cuda_colsum_accumulate(float *out, const float *a, const float *b, const float *rowscale,
                            int T, int N);

/* logprob.cu */
void cuda_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                      const int *targets, int R, int V);
void cuda_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                      const float *dlogprob, const float *dentropy, int R, int V);

/* Grid size for n elements at `threads` per block, capped for grid-stride loops. */
static inline unsigned cuda_grid_for(size_t n, unsigned threads) {
  size_t g = (n + threads - 1) / threads;
  return (unsigned)(g < 1 ? 1 : g > 65535u * 16u ? 65535u * 16u : g);
}

#ifdef __cplusplus
}
#endif

#endif
