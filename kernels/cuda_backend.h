/* kernels/cuda_backend.h: the CUDA backend of model/backend.h and the device-only extras the
 * trainer and the rollout engine use beside it.
 *
 * Every pointer an op takes is device memory: tensors, and also the int arrays
 * (tokens, targets, positions, attn_batch's cu_q/cu_kv). The scalars of struct
 * attn_batch (nseq, max_q, max_kv) are read on the host. Allocate through the
 * table's alloc/free/zero/upload/download. All work is queued on the default
 * stream, in order; download() waits for it.
 *
 * The ops of cuda_backend are fp32 and match cpu/ops.c to ~1e-6 relative
 * (tests/kernels/test_gpu_ops.c); GEMMs use cuBLASLt with fp32 compute (no TF32).
 * cuda_backend_bf16 differs only in its products (tests/kernels/test_gpu_bf16.c). bf16 values
 * are passed as uint16_t (the upper half of an fp32) so that C callers need no CUDA types. */
#ifndef RLPT_CUDA_BACKEND_H
#define RLPT_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "model/backend.h"
#include "rollout/kv_cache.h"
#include "rollout/sampling.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct backend_ops cuda_backend;
/* The same ops for [model] dtype = bf16, mixed precision as in Megatron: the model keeps a
 * bf16 working copy of its fp32 weights (to_bf16 at each upload) and every product takes
 * bf16 inputs with fp32 accumulation and output: the weight products through matmul_w16,
 * the weight-gradient products dW = dy^T x through matmul, which rounds both fp32
 * operands. Everything else is fp32 as in cuda_backend; the master weights, gradients
 * and AdamW moments stay fp32. */
extern const struct backend_ops cuda_backend_bf16;

/* C[M,N] (fp32) = alpha op(A) op(B) + beta C with A, B in bf16, fp32 accumulation
 * (the [model] dtype = bf16 path). Same conventions as backend_ops.matmul. */
void cuda_matmul_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta, float *C,
                      int ldc);
/* Release the cuBLASLt handle, its plan cache and workspace (before cudaDeviceReset). */
void cuda_gemm_release(void);

/* dst[n] = bf16(src[n]), round to nearest even (NaN stays NaN). */
void cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t n);
/* dst[n] = src[n] widened to fp32 (exact). */
void cuda_bf16_to_f32(float *dst, const uint16_t *src, size_t n);

/* Decode attention over the paged KV cache (rollout/kv_cache.h layout) for one layer: one
 * query row per sequence. q, out [nseq, H*D]; lse [nseq, H] (may be NULL);
 * kv_data the device copy of the pool ([n_blocks][kv_block_floats(L)]);
 * tables [nseq, max_blocks] block ids; kv_len[nseq] cached keys of each sequence,
 * the current token's included (its K/V already written). D <= 128. */
void cuda_attention_decode_paged(float *out, float *lse, const float *q, const float *kv_data,
                                 const struct kv_layout *L, int layer, const int *tables,
                                 int max_blocks, const int *kv_len, int nseq, int H, float scale);

/* The paged pool in device memory (kv_paged.cu), for one layer of a step whose sequence s
 * has block ids tables[s * max_blocks ...] and kv_len = cu_kv[s+1] - cu_kv[s] positions.
 * cuda_kv_store: new rows k_new, v_new [rows = cu_q[nseq], kv_heads*head_dim] (sequence s:
 * rows cu_q[s] .. cu_q[s+1]-1, its last q_len positions) into their slots, as kv_scatter
 * does on the host. cuda_kv_gather: every position 0 .. kv_len-1 into contiguous rows
 * k_out, v_out [rows = cu_kv[nseq], kv_heads*head_dim] laid out by cu_kv, as kv_gather.
 * Both copy bits; rows is the host's copy of the last offset. cuda_kv_copy: bytes within
 * device memory (a copy-on-write block; struct kv_storage's copy). */
void cuda_kv_store(float *kv_data, const struct kv_layout *L, int layer, const int *tables,
                   int max_blocks, const int *cu_q, const int *cu_kv, int nseq, int rows,
                   const float *k_new, const float *v_new);
void cuda_kv_gather(float *k_out, float *v_out, const float *kv_data, const struct kv_layout *L,
                    int layer, const int *tables, int max_blocks, const int *cu_kv, int nseq,
                    int rows);
void cuda_kv_copy(void *dst, const void *src, size_t bytes);

/* One AdamW update over n parameters, the arithmetic of train/optim.h's adamw_step (the
 * caller keeps t and passes the step count after the increment). p, m, v fp32;
 * p_bf16, when not NULL, receives bf16(p) (the working copy of a bf16 model). */
void cuda_adamw_step(float *p, uint16_t *p_bf16, const float *g, float *m, float *v, size_t n,
                     long t, double lr, double beta1, double beta2, double eps, double wd);
/* Sum of squares of g[n] in double, deterministic (fixed reduction order). Waits. */
double cuda_sumsq(const float *g, size_t n);
/* x[n] *= s (global-norm clipping). */
void cuda_scale(float *x, size_t n, float s);

/* Device sampling, rollout/sampling.h semantics (full-vocabulary logprob, top-k then top-p,
 * ties to the lower index, inverse CDF with one uniform per row). */
struct cuda_sampler {
  int vocab, max_rows;
  double *z, *z_sorted;    /* [max_rows, V] */
  int *idx, *idx_sorted;   /* [max_rows, V] */
  int *offsets;            /* [max_rows + 1] row starts for the segmented sort */
  void *sort_tmp;
  size_t sort_tmp_bytes;
  double *u, *logprob;     /* [max_rows] */
  int *rows, *iota;        /* [max_rows] logits row of each sampled row; 0 .. max_rows-1 */
  double *row_max, *row_sum; /* [max_rows] max of logits/T and sum of exp(logits/T - max) */
  int *row_argmax;         /* [max_rows] greedy token, -1 on a NaN logit */
  int *tokens;             /* [max_rows] */
};
/* 0 ok, -1 out of device memory. */
int cuda_sampler_init(struct cuda_sampler *s, int vocab, int max_rows);
void cuda_sampler_free(struct cuda_sampler *s);
/* Sample R <= max_rows rows with host uniforms u[R]: row r from row rows[r] (host indices;
 * NULL: row r) of the device logits [*, V]; host tokens[R] (-1: NaN logit or nothing to
 * sample) and logprob[R], as sampler_sample. */
void cuda_sampler_sample(struct cuda_sampler *s, const float *logits, const int *rows, int R,
                         const struct sampling_params *p, const double *u, int *tokens,
                         double *logprob);

#ifdef __cplusplus
}
#endif

#endif
