/* kernels/kv_paged.cu: the rollout engine's paged KV pool (rollout/kv_cache.h layout) in device
 * memory: the new rows of a step stored into their blocks, the contexts of a
 * prefill gathered back into contiguous rows for the varlen attention, and the
 * copy-on-write of a block. Decode attention reads the blocks in place
 * (attention.cu, cuda_attention_decode_paged).
 *
 * Both kernels walk a batch described as attention.cu's is: sequence s has new rows
 * cu_q[s] .. cu_q[s+1]-1, which are the last q_len of its kv_len = cu_kv[s+1] - cu_kv[s]
 * positions, and its block ids in tables[s * max_blocks ...]. One thread block moves
 * one packed row (K and V, kv_heads * head_dim floats each) and finds its sequence by
 * a binary search of the offsets, so a step of short decodes beside a long prefill
 * launches no idle blocks. They only copy: a stored or gathered row has its source's bits. */
#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"

#define KVP_THREADS 128

/* First float of position t's K (which = 0) or V row of `layer` in the pool. */
__device__ __forceinline__ size_t kvp_slot(const int *table, int t, int layer, int which, int bs,
                                           size_t blk_floats, size_t row) {
  return (size_t)table[t / bs] * blk_floats + ((size_t)(2 * layer + which) * bs + t % bs) * row;
}

/* The sequence holding packed row r: the last s with cu[s] <= r (cu[0] = 0 <= r < cu[nseq]). */
__device__ __forceinline__ int kvp_seq_of(const int *cu, int nseq, int r) {
  int lo = 0, hi = nseq - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (cu[mid] <= r) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/* One block per new row r (grid T = cu_q[nseq]): row i of its sequence s goes to position
 * kv_len - q_len + i. */
__global__ void kv_store_kernel(float *kv, size_t blk_floats, int layer, int bs, size_t row,
                                const int *tables, int max_blocks, const int *cu_q,
                                const int *cu_kv, int nseq, const float *k_new,
                                const float *v_new) {
  int r = blockIdx.x, s = kvp_seq_of(cu_q, nseq, r);
  int t = cu_kv[s + 1] - cu_kv[s] - (cu_q[s + 1] - r);
  const int *table = tables + (size_t)s * max_blocks;
  float *dk = kv + kvp_slot(table, t, layer, 0, bs, blk_floats, row);
  float *dv = kv + kvp_slot(table, t, layer, 1, bs, blk_floats, row);
  const float *sk = k_new + (size_t)r * row, *sv = v_new + (size_t)r * row;
  for (size_t e = threadIdx.x; e < row; e += blockDim.x) {
    dk[e] = sk[e];
    dv[e] = sv[e];
  }
}

/* One block per context row r (grid cu_kv[nseq]): position r - cu_kv[s] of its sequence. */
__global__ void kv_gather_kernel(float *k_out, float *v_out, const float *kv, size_t blk_floats,
                                 int layer, int bs, size_t row, const int *tables, int max_blocks,
                                 const int *cu_kv, int nseq) {
  int r = blockIdx.x, s = kvp_seq_of(cu_kv, nseq, r), t = r - cu_kv[s];
  const int *table = tables + (size_t)s * max_blocks;
  const float *sk = kv + kvp_slot(table, t, layer, 0, bs, blk_floats, row);
  const float *sv = kv + kvp_slot(table, t, layer, 1, bs, blk_floats, row);
  float *dk = k_out + (size_t)r * row, *dv = v_out + (size_t)r * row;
  for (size_t e = threadIdx.x; e < row; e += blockDim.x) {
    dk[e] = sk[e];
    dv[e] = sv[e];
  }
}

/* kv_block_floats(L) (rollout/kv_cache.c is C, not linked from here under C++ names) */
static size_t kvp_block_floats(const struct kv_layout *L) {
  return (size_t)2 * L->layers * L->block_size * L->kv_heads * L->head_dim;
}

extern "C" {

void cuda_kv_store(float *kv_data, const struct kv_layout *L, int layer, const int *tables,
                   int max_blocks, const int *cu_q, const int *cu_kv, int nseq, int rows,
                   const float *k_new, const float *v_new) {
  if (nseq <= 0 || rows <= 0) return;
  kv_store_kernel<<<rows, KVP_THREADS>>>(kv_data, kvp_block_floats(L), layer, L->block_size,
                                         (size_t)L->kv_heads * L->head_dim, tables, max_blocks,
                                         cu_q, cu_kv, nseq, k_new, v_new);
  CUDA_LAUNCH_CHECK();
}

void cuda_kv_gather(float *k_out, float *v_out, const float *kv_data, const struct kv_layout *L,
                    int layer, const int *tables, int max_blocks, const int *cu_kv, int nseq,
                    int rows) {
  if (nseq <= 0 || rows <= 0) return;
  kv_gather_kernel<<<rows, KVP_THREADS>>>(k_out, v_out, kv_data, kvp_block_floats(L), layer,
                                          L->block_size, (size_t)L->kv_heads * L->head_dim,
                                          tables, max_blocks, cu_kv, nseq);
  CUDA_LAUNCH_CHECK();
}

void cuda_kv_copy(void *dst, const void *src, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

} /* extern "C" */
