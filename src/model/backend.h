/* model/backend.h: the op interface the model calls.
 *
 * model/model.c is written once against this table; the CPU backend (cpu/ops.c and the
 * files beside it) implements it with rlpt's GEMM, OpenBLAS and plain loops, the CUDA
 * backend (kernels/cuda_ops.c) with cuBLASLt and kernels, tested op by op against the
 * CPU one. All tensors are row-major fp32 and
 * live where the backend wants them (host memory for the CPU backend).
 *
 * Conventions: T is the number of packed token rows, C the model width, H the
 * query heads, KVH the key/value heads, D the head size. Activations are
 * [T, H*D] for queries and [T, KVH*D] for keys/values (head h occupies columns
 * h*D .. h*D+D-1, as in Hugging Face). Ops that say "accumulate" add into
 * their output; the others overwrite it. */
#ifndef RLPT_BACKEND_H
#define RLPT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Sequences of one attention call. Query rows of sequence s are
 * cu_q[s] .. cu_q[s+1]-1, its key/value rows cu_kv[s] .. cu_kv[s+1]-1. The
 * queries are the LAST q_len positions of the kv_len keys (causal): query i
 * sits at position kv_len - q_len + i and sees keys 0 .. that position. Training
 * and scoring pass cu_q == cu_kv; a KV-cache decode step passes q_len = 1 per
 * sequence and the cached keys plus the new one. */
struct attn_batch {
  int nseq;
  const int *cu_q;   /* [nseq+1] */
  const int *cu_kv;  /* [nseq+1] */
  int max_q, max_kv; /* longest query / key span, sizes the scratch */
};

/* Keys and values read in place from a paged KV cache (rollout/kv_cache.h) instead of
 * contiguous rows: row t (0 .. kv_len-1) of sequence s starts at
 * k + tables[s][t / block_size] * block_stride + (t % block_size) * KVH*D (v
 * likewise); the attention batch's cu_kv gives only each sequence's kv_len. */
struct attn_paged {
  const float *k, *v;        /* one layer's K and V in block 0 */
  const int *const *tables;  /* [nseq] block tables */
  int block_size;
  size_t block_stride;       /* floats from one block to the next */
};

/* Floats of scratch the attention ops need for a batch (forward and backward). */
static inline size_t attn_scratch_floats(int max_q, int max_kv) {
  return 2 * (size_t)max_q * (size_t)max_kv + (size_t)max_q;
}

/* One product of matmul_rowinv_shared: B [N, K] and C [M, N], both row-major and dense. */
struct rowinv_product {
  int N;
  const float *B;
  float *C;
};

struct backend_ops {
  const char *name;

  /* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C; op(X) = X^T when
   * trans_X. Leading dimensions are row strides of the stored matrices. */
  void (*matmul)(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);
  /* C[M,N] = alpha * A[M,K] * B[N,K]^T + beta * C where every row of C has the same
   * bits whatever M is and whichever rows share the call (one fixed summation order
   * per element). Rollout decode steps, the trainer's scoring passes and its fused
   * old-logprob pass use it so rollout and trainer logprobs agree to the bit; plain
   * training passes use the faster matmul. Optional (NULL: matmul). */
  void (*matmul_rowinv)(int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc);
  /* count matmul_rowinv products that share A (a layer's q, k and v from one normed
   * input; gate and up): out[i].C = A out[i].B^T (alpha 1, beta 0), the bits of count
   * separate calls, in one parallel job: one wake-up of the threads, not count.
   * Optional (NULL: separate matmul_rowinv calls). */
  void (*matmul_rowinv_shared)(int M, int K, const float *A, int lda, int count,
                               const struct rowinv_product *out);
  /* bf16 mixed precision ([model] dtype = bf16), optional (NULL: fp32 backend). A backend
   * whose matmul rounds both fp32 operands to bf16 (fp32 accumulation and output) sets
   * both, so that the model keeps a bf16 working copy of its weights, converted once per
   * upload instead of at every product: to_bf16 writes dst[n] = bf16(src[n]) (round to
   * nearest even; bf16 is the upper half of an fp32, held as uint16_t); matmul_w16 is
   * matmul with B already in bf16 (the weight operand) and A rounded like matmul's. */
  void (*to_bf16)(uint16_t *dst, const float *src, size_t n);
  void (*matmul_w16)(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                     int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc);

  /* out[T,C] = x * rsqrt(mean(x^2) + eps) * w; rstd[T] keeps the rsqrt. */
  void (*rmsnorm_fwd)(float *out, float *rstd, const float *x, const float *w, int T, int C,
                      float eps);
  /* Accumulate dx[T,C] and dw[C] from dout, given x, w and the forward's rstd. */
  void (*rmsnorm_bwd)(float *dx, float *dw, const float *dout, const float *x, const float *w,
                      const float *rstd, int T, int C);

  /* In place on x[T, nh*D]: rotate every head of row t by position pos[t]
   * (Hugging Face rotate_half layout: pairs (i, i + D/2)). cos/sin tables are
   * [max_pos, D/2]. inverse = 1 applies the transposed rotation, which is the
   * backward of the forward rotation. */
  void (*rope)(float *x, const int *pos, const float *cos_tab, const float *sin_tab, int T, int nh,
               int D, int inverse);

  /* Causal grouped-query attention. q, out [Tq, H*D]; k, v [Tkv, KVH*D];
   * lse [Tq, H] keeps each row's log-sum-exp of the scaled scores for the
   * backward. scale is usually 1/sqrt(D). scratch: attn_scratch_floats(). */
  void (*attention_fwd)(float *out, float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch);
  /* attention_fwd over keys/values in a paged cache, the same bits as attention_fwd
   * on the same rows gathered contiguously. Optional (NULL: the model gathers). */
  void (*attention_paged_fwd)(float *out, float *lse, const float *q,
                              const struct attn_paged *kv, const struct attn_batch *b, int H,
                              int KVH, int D, float scale);
  /* Gradients of attention_fwd: dq written; dk, dv written (zeroed, then summed
   * over the query heads of each group). Recomputes the probabilities from lse. */
  void (*attention_bwd)(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch);

  /* h[n] = silu(gate) * up, and its backward: dgate, dup written; h, when not
   * NULL, gets the forward product again (one pass instead of a recompute).
   * dh may alias dgate (each element is read before it is written). */
  void (*swiglu_fwd)(float *h, const float *gate, const float *up, size_t n);
  void (*swiglu_bwd)(float *dgate, float *dup, float *h, const float *dh, const float *gate,
                     const float *up, size_t n);

  /* out[T,C] = table[tokens[t]]; backward accumulates dout rows into dtable. */
  void (*embed_fwd)(float *out, const int *tokens, const float *table, int T, int C);
  void (*embed_bwd)(float *dtable, const int *tokens, const float *dout, int T, int C);

  /* y[T,N] += b[N] (bias); db[N] accumulates the column sums of dy[T,N]. */
  void (*bias_add)(float *y, const float *b, int T, int N);
  void (*bias_bwd)(float *db, const float *dy, int T, int N);
  /* y[n] += x[n] (residual). */
  void (*add)(float *y, const float *x, size_t n);

  /* Over a chunk of rows of logits [R, V]: lse[r], entropy[r] = -sum p log p,
   * and logprob[r] = log p(targets[r]) (0 where targets[r] < 0: no target). */
  void (*logprob_fwd)(float *logprob, float *entropy, float *lse, const float *logits,
                      const int *targets, int R, int V);
  /* In place: logits [R, V] become dL/dlogits for
   * L = sum_r dlogprob[r] * logprob[r] + dentropy[r] * entropy[r]
   * (dH/dz = -p (log p + H)); dlogprob or dentropy may be NULL (zero). */
  void (*logprob_bwd)(float *logits, const float *lse, const float *entropy, const int *targets,
                      const float *dlogprob, const float *dentropy, int R, int V);

  /* Memory the ops' pointers live in (device memory for CUDA, int arrays such as
   * tokens, pos, targets and attn_batch's cu_q/cu_kv included). alloc returns zeroed
   * bytes or NULL; zero clears bytes; upload/download copy between host memory and
   * the backend's memory and return when the copy is done. A backend that leaves
   * these NULL works on host memory (malloc/free/memset/memcpy). */
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
  void (*zero)(void *p, size_t bytes);
  void (*upload)(void *dst, const void *host_src, size_t bytes);
  void (*download)(void *host_dst, const void *src, size_t bytes);
};

/* The CPU backend (cpu/ops.c): rlpt's or OpenBLAS's GEMMs, plain loops elsewhere. */
extern const struct backend_ops cpu_backend;

#endif
