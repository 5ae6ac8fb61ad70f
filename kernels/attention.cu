/* kernels/attention.cu: causal grouped-query attention over packed variable-length
 * sequences (FlashAttention style), its backward, and decode attention over the
 * paged KV cache.
 *
 * Forward: a block owns (sequence, head, BQ query rows); it walks the key/value
 * rows in tiles of ATT_BK through shared memory and keeps, per query row, the
 * running max m, sum l and the output accumulator (online softmax). No score
 * matrix touches global memory; lse = m + log l is saved for the backward.
 * Inside a warp, lane j scores key j of the tile, and lane d owns output columns
 * d, d+32, ... (so D <= ATT_MAXD = 128).
 *
 * Backward, in two kernels so that no gradient needs atomics (deterministic):
 *   dq: a block owns query rows (like the forward), recomputes P = exp(S - lse)
 *       per key tile and accumulates dQ = dS K;
 *   dk/dv: a block owns key rows of one kv head, walks every query row of every
 *       query head of its group that can see them, and accumulates
 *       dV = P^T dO and dK = dS^T Q;
 * with dS = P (dP - delta) scale, dP = dO V^T and delta_i = dO_i . O_i.
 *
 * Query i of a sequence sits at position kv_len - q_len + i and sees keys
 * 0..that position (model/backend.h). Shared-memory tiles stay under 48 KiB at D=128. */
#include <math.h>

#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_kernels.h"

#define ATT_MAXD 128
#define ATT_DPL (ATT_MAXD / 32) /* output columns per lane */
#define ATT_WARPS 4
#define ATT_BK 32               /* keys per tile: one per lane */
#define ATT_FWD_RPW 4           /* forward: query rows per warp */
#define ATT_DQ_RPW 2            /* dq: query rows per warp */
#define ATT_KV_KPW 2            /* dk/dv: key rows per warp */
#define ATT_BQT 32              /* dk/dv: query rows per tile, one per lane */

#define FULL_MASK 0xffffffffu

/* Dot product of two D-vectors in shared memory. */
__device__ __forceinline__ float dot_d(const float *a, const float *b, int D) {
  float s = 0.0f;
  for (int d = 0; d < D; d++) s += a[d] * b[d];
  return s;
}

/* delta = dO_i . O_i of query row `row`, head h, summed over the warp (every lane gets it). */
__device__ __forceinline__ float row_delta(const float *dout, const float *out, size_t row, int qs,
                                           int h, int D, int lane) {
  const float *a = dout + row * qs + h * D, *b = out + row * qs + h * D;
  float s = 0.0f;
  for (int d = lane; d < D; d += 32) s += a[d] * b[d];
  return warp_sum(s);
}

/* Copy rows r0 .. r0+nrows-1 (zeros past nvalid) of a strided [*, ld] matrix, columns
 * col0 .. col0+D-1, into dst[nrows][dst_ld]. Every thread of the block takes part. */
__device__ void tile_load(float *dst, int dst_ld, const float *src, size_t row0, int nrows,
                          int nvalid, int ld, int col0, int D) {
  for (int e = threadIdx.x; e < nrows * D; e += blockDim.x) {
    int r = e / D, d = e % D;
    dst[r * dst_ld + d] = r < nvalid ? src[(row0 + r) * (size_t)ld + col0 + d] : 0.0f;
  }
}

/* ---- forward ------------------------------------------------------------- */

__global__ void __launch_bounds__(ATT_WARPS * 32)
attn_fwd_kernel(float *out, float *lse, const float *q, const float *k, const float *v,
                const int *cu_q, const int *cu_kv, int H, int KVH, int D, float scale) {
  extern __shared__ float smem[];
  const int BQ = ATT_WARPS * ATT_FWD_RPW, KS = D + 1;
  int s = blockIdx.y, h = blockIdx.z, g = h / (H / KVH);
  int q0 = cu_q[s], nq = cu_q[s + 1] - q0, k0 = cu_kv[s], nk = cu_kv[s + 1] - k0;
  int i0 = blockIdx.x * BQ;
  if (i0 >= nq) return; /* whole block: this sequence is shorter */
  int qs = H * D, ks = KVH * D, off = nk - nq;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Qs = smem, *Ks = Qs + BQ * D, *Vs = Ks + ATT_BK * KS;
  int nrows = min(BQ, nq - i0);
  tile_load(Qs, D, q, (size_t)q0 + i0, BQ, nrows, qs, h * D, D);

  float m[ATT_FWD_RPW], l[ATT_FWD_RPW], acc[ATT_FWD_RPW][ATT_DPL];
#pragma unroll
  for (int rr = 0; rr < ATT_FWD_RPW; rr++) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) acc[rr][c] = 0.0f;
  }
  int last_key = off + i0 + nrows - 1; /* the last key any row of this block sees */
  for (int j0 = 0; j0 <= last_key; j0 += ATT_BK) {
    __syncthreads(); /* the previous tile is consumed (first pass: Q is loaded) */
    int nkt = min(ATT_BK, nk - j0);
    tile_load(Ks, KS, k, (size_t)k0 + j0, ATT_BK, nkt, ks, g * D, D);
    tile_load(Vs, D, v, (size_t)k0 + j0, ATT_BK, nkt, ks, g * D, D);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < ATT_FWD_RPW; rr++) {
      int r = warp * ATT_FWD_RPW + rr, p = off + i0 + r, j = j0 + lane;
      if (r >= nrows) continue; /* warp-uniform */
      float sc = j <= p ? dot_d(Qs + r * D, Ks + lane * KS, D) * scale : -INFINITY;
      float tmax = warp_max(sc);
      if (tmax == -INFINITY) continue; /* no visible key in this tile (warp-uniform) */
      float mnew = fmaxf(m[rr], tmax), corr = expf(m[rr] - mnew);
      float pj = j <= p ? expf(sc - mnew) : 0.0f;
      l[rr] = l[rr] * corr + warp_sum(pj);
#pragma unroll
      for (int c = 0; c < ATT_DPL; c++) acc[rr][c] *= corr;
      for (int jj = 0; jj < ATT_BK; jj++) {
        float pb = __shfl_sync(FULL_MASK, pj, jj);
#pragma unroll
        for (int c = 0; c < ATT_DPL; c++) {
          int d = lane + 32 * c;
          if (d < D) acc[rr][c] += pb * Vs[jj * D + d];
        }
      }
      m[rr] = mnew;
    }
  }
#pragma unroll
  for (int rr = 0; rr < ATT_FWD_RPW; rr++) {
    int r = warp * ATT_FWD_RPW + rr;
    if (r >= nrows) continue;
    size_t row = (size_t)q0 + i0 + r;
    float inv = 1.0f / l[rr];
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) {
      int d = lane + 32 * c;
      if (d < D) out[row * qs + h * D + d] = acc[rr][c] * inv;
    }
    if (lane == 0) lse[row * H + h] = m[rr] + logf(l[rr]);
  }
}

/* ---- backward: dq ----------------------------------------------------------- */

__global__ void __launch_bounds__(ATT_WARPS * 32)
attn_bwd_dq_kernel(float *dq, const float *dout, const float *out, const float *lse,
                   const float *q, const float *k, const float *v, const int *cu_q,
                   const int *cu_kv, int H, int KVH, int D, float scale) {
  extern __shared__ float smem[];
  const int BQ = ATT_WARPS * ATT_DQ_RPW, KS = D + 1;
  int s = blockIdx.y, h = blockIdx.z, g = h / (H / KVH);
  int q0 = cu_q[s], nq = cu_q[s + 1] - q0, k0 = cu_kv[s], nk = cu_kv[s + 1] - k0;
  int i0 = blockIdx.x * BQ;
  if (i0 >= nq) return;
  int qs = H * D, ks = KVH * D, off = nk - nq;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Qs = smem, *dOs = Qs + BQ * D, *Ks = dOs + BQ * D, *Vs = Ks + ATT_BK * KS;
  int nrows = min(BQ, nq - i0);
  tile_load(Qs, D, q, (size_t)q0 + i0, BQ, nrows, qs, h * D, D);
  tile_load(dOs, D, dout, (size_t)q0 + i0, BQ, nrows, qs, h * D, D);

  float delta[ATT_DQ_RPW], lrow[ATT_DQ_RPW], acc[ATT_DQ_RPW][ATT_DPL];
#pragma unroll
  for (int rr = 0; rr < ATT_DQ_RPW; rr++) {
    int r = warp * ATT_DQ_RPW + rr;
    size_t row = (size_t)q0 + i0 + (r < nrows ? r : 0);
    delta[rr] = row_delta(dout, out, row, qs, h, D, lane);
    lrow[rr] = lse[row * H + h];
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) acc[rr][c] = 0.0f;
  }
  int last_key = off + i0 + nrows - 1;
  for (int j0 = 0; j0 <= last_key; j0 += ATT_BK) {
    __syncthreads();
    int nkt = min(ATT_BK, nk - j0);
    tile_load(Ks, KS, k, (size_t)k0 + j0, ATT_BK, nkt, ks, g * D, D);
    tile_load(Vs, KS, v, (size_t)k0 + j0, ATT_BK, nkt, ks, g * D, D);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < ATT_DQ_RPW; rr++) {
      int r = warp * ATT_DQ_RPW + rr, p = off + i0 + r, j = j0 + lane;
      if (r >= nrows) continue;
      float ds = 0.0f;
      if (j <= p) {
        float pr = expf(dot_d(Qs + r * D, Ks + lane * KS, D) * scale - lrow[rr]);
        float dp = dot_d(dOs + r * D, Vs + lane * KS, D);
        ds = pr * (dp - delta[rr]) * scale;
      }
      for (int jj = 0; jj < ATT_BK; jj++) {
        float sb = __shfl_sync(FULL_MASK, ds, jj);
#pragma unroll
        for (int c = 0; c < ATT_DPL; c++) {
          int d = lane + 32 * c;
          if (d < D) acc[rr][c] += sb * Ks[jj * KS + d];
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < ATT_DQ_RPW; rr++) {
    int r = warp * ATT_DQ_RPW + rr;
    if (r >= nrows) continue;
    size_t row = (size_t)q0 + i0 + r;
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) {
      int d = lane + 32 * c;
      if (d < D) dq[row * qs + h * D + d] = acc[rr][c];
    }
  }
}

/* ---- backward: dk, dv ------------------------------------------------------- */

__global__ void __launch_bounds__(ATT_WARPS * 32)
attn_bwd_dkv_kernel(float *dk, float *dv, const float *dout, const float *out, const float *lse,
                    const float *q, const float *k, const float *v, const int *cu_q,
                    const int *cu_kv, int H, int KVH, int D, float scale) {
  extern __shared__ float smem[];
  const int BKEY = ATT_WARPS * ATT_KV_KPW, KS = D + 1;
  int s = blockIdx.y, g = blockIdx.z, group = H / KVH;
  int q0 = cu_q[s], nq = cu_q[s + 1] - q0, k0 = cu_kv[s], nk = cu_kv[s + 1] - k0;
  int j0 = blockIdx.x * BKEY;
  if (j0 >= nk) return;
  int qs = H * D, ks = KVH * D, off = nk - nq;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Ks = smem, *Vs = Ks + BKEY * D, *Qs = Vs + BKEY * D, *dOs = Qs + ATT_BQT * KS;
  float *lses = dOs + ATT_BQT * KS, *deltas = lses + ATT_BQT;
  int nkeys = min(BKEY, nk - j0);
  tile_load(Ks, D, k, (size_t)k0 + j0, BKEY, nkeys, ks, g * D, D);
  tile_load(Vs, D, v, (size_t)k0 + j0, BKEY, nkeys, ks, g * D, D);

  float dka[ATT_KV_KPW][ATT_DPL], dva[ATT_KV_KPW][ATT_DPL];
#pragma unroll
  for (int kk = 0; kk < ATT_KV_KPW; kk++)
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) dka[kk][c] = dva[kk][c] = 0.0f;
  /* query i sees key j when off + i >= j: the first query that sees key j0 */
  int istart = max(0, j0 - off);
  for (int h = g * group; h < (g + 1) * group; h++) {
    for (int i1 = istart; i1 < nq; i1 += ATT_BQT) {
      int nqt = min(ATT_BQT, nq - i1);
      __syncthreads(); /* previous query tile consumed (first pass: K/V loaded) */
      tile_load(Qs, KS, q, (size_t)q0 + i1, ATT_BQT, nqt, qs, h * D, D);
      tile_load(dOs, KS, dout, (size_t)q0 + i1, ATT_BQT, nqt, qs, h * D, D);
      for (int ii = warp; ii < ATT_BQT; ii += ATT_WARPS) {
        size_t row = (size_t)q0 + i1 + (ii < nqt ? ii : 0);
        float dsum = row_delta(dout, out, row, qs, h, D, lane);
        if (lane == 0) {
          deltas[ii] = dsum;
          lses[ii] = lse[row * H + h];
        }
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < ATT_KV_KPW; kk++) {
        int jr = warp * ATT_KV_KPW + kk, j = j0 + jr, i = i1 + lane;
        if (jr >= nkeys) continue; /* warp-uniform */
        float pr = 0.0f, ds = 0.0f;
        if (lane < nqt && off + i >= j) {
          pr = expf(dot_d(Qs + lane * KS, Ks + jr * D, D) * scale - lses[lane]);
          float dp = dot_d(dOs + lane * KS, Vs + jr * D, D);
          ds = pr * (dp - deltas[lane]) * scale;
        }
        for (int ii = 0; ii < ATT_BQT; ii++) {
          float pb = __shfl_sync(FULL_MASK, pr, ii), sb = __shfl_sync(FULL_MASK, ds, ii);
#pragma unroll
          for (int c = 0; c < ATT_DPL; c++) {
            int d = lane + 32 * c;
            if (d < D) {
              dva[kk][c] += pb * dOs[ii * KS + d];
              dka[kk][c] += sb * Qs[ii * KS + d];
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int kk = 0; kk < ATT_KV_KPW; kk++) {
    int jr = warp * ATT_KV_KPW + kk;
    if (jr >= nkeys) continue;
    size_t row = (size_t)k0 + j0 + jr;
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) {
      int d = lane + 32 * c;
      if (d < D) {
        dk[row * ks + g * D + d] = dka[kk][c];
        dv[row * ks + g * D + d] = dva[kk][c];
      }
    }
  }
}

/* ---- decode over the paged KV cache ----------------------------------------- */

/* One warp per (sequence, head); lane j scores key j0 + j of each 32-key step. */
__global__ void __launch_bounds__(32)
attn_decode_paged_kernel(float *out, float *lse, const float *q, const float *kv, size_t blk_floats,
                         int layer, int bs, int KVH, const int *tables, int max_blocks,
                         const int *kv_len, int H, int D, float scale) {
  __shared__ float qsh[ATT_MAXD];
  int s = blockIdx.x, h = blockIdx.y, g = h / (H / KVH), lane = threadIdx.x, n = kv_len[s];
  size_t qo = ((size_t)s * H + h) * D, kvrow = (size_t)KVH * D;
  for (int d = lane; d < D; d += 32) qsh[d] = q[qo + d];
  __syncwarp();
  const int *table = tables + (size_t)s * max_blocks;
  /* [layer][k|v][block_size][kv_heads][head_dim] inside each block */
  size_t kbase = (size_t)layer * 2 * bs * kvrow, vbase = kbase + bs * kvrow;
  float m = -INFINITY, l = 0.0f, acc[ATT_DPL];
#pragma unroll
  for (int c = 0; c < ATT_DPL; c++) acc[c] = 0.0f;
  for (int j0 = 0; j0 < n; j0 += 32) {
    int j = j0 + lane;
    float sc = -INFINITY;
    if (j < n) {
      const float *kp = kv + (size_t)table[j / bs] * blk_floats + kbase + (j % bs) * kvrow + g * D;
      sc = dot_d(qsh, kp, D) * scale;
    }
    float mnew = fmaxf(m, warp_max(sc)), corr = expf(m - mnew);
    float pj = j < n ? expf(sc - mnew) : 0.0f;
    l = l * corr + warp_sum(pj);
#pragma unroll
    for (int c = 0; c < ATT_DPL; c++) acc[c] *= corr;
    int nt = min(32, n - j0);
    for (int jj = 0; jj < nt; jj++) {
      float pb = __shfl_sync(FULL_MASK, pj, jj);
      int jk = j0 + jj;
      const float *vp =
          kv + (size_t)table[jk / bs] * blk_floats + vbase + (jk % bs) * kvrow + g * D;
#pragma unroll
      for (int c = 0; c < ATT_DPL; c++) {
        int d = lane + 32 * c;
        if (d < D) acc[c] += pb * vp[d];
      }
    }
    m = mnew;
  }
  float inv = n > 0 ? 1.0f / l : 0.0f;
#pragma unroll
  for (int c = 0; c < ATT_DPL; c++) {
    int d = lane + 32 * c;
    if (d < D) out[qo + d] = acc[c] * inv;
  }
  if (lse && lane == 0) lse[(size_t)s * H + h] = n > 0 ? m + logf(l) : -INFINITY;
}

/* ---- launchers ----------------------------------------------------------- */

static void attn_check_shape(int H, int KVH, int D, int nseq) {
  if (D < 1 || D > ATT_MAXD || KVH < 1 || H % KVH != 0 || H > 65535 || nseq > 65535)
    cuda_fail("rlpt", "attention", "unsupported shape",
              "the CUDA attention needs head_dim <= 128, heads a multiple of kv_heads, and at "
              "most 65535 sequences and heads per call", __FILE__, __LINE__);
}

extern "C" {

/* The tiled kernels need no scratch: `scratch` is the CPU backend's. */
void cuda_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch) {
  (void)scratch;
  attn_check_shape(H, KVH, D, b->nseq);
  if (b->nseq <= 0 || b->max_q <= 0) return;
  const int BQ = ATT_WARPS * ATT_FWD_RPW;
  size_t smem = sizeof(float) * ((size_t)BQ * D + (size_t)ATT_BK * (D + 1) + (size_t)ATT_BK * D);
  dim3 grid((b->max_q + BQ - 1) / BQ, b->nseq, H);
  attn_fwd_kernel<<<grid, ATT_WARPS * 32, smem>>>(out, lse, q, k, v, b->cu_q, b->cu_kv, H, KVH, D,
                                                   scale);
  CUDA_LAUNCH_CHECK();
}

void cuda_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *lse, const float *q, const float *k, const float *v,
                        const struct attn_batch *b, int H, int KVH, int D, float scale,
                        float *scratch) {
  (void)scratch;
  attn_check_shape(H, KVH, D, b->nseq);
  if (b->nseq <= 0 || b->max_q <= 0) return;
  const int BQ = ATT_WARPS * ATT_DQ_RPW, BKEY = ATT_WARPS * ATT_KV_KPW;
  size_t smem_q = sizeof(float) * (2 * (size_t)BQ * D + 2 * (size_t)ATT_BK * (D + 1));
  dim3 grid_q((b->max_q + BQ - 1) / BQ, b->nseq, H);
  attn_bwd_dq_kernel<<<grid_q, ATT_WARPS * 32, smem_q>>>(dq, dout, out, lse, q, k, v, b->cu_q,
                                                          b->cu_kv, H, KVH, D, scale);
  CUDA_LAUNCH_CHECK();
  size_t smem_kv = sizeof(float) * (2 * (size_t)BKEY * D + 2 * (size_t)ATT_BQT * (D + 1) +
                                    2 * (size_t)ATT_BQT);
  dim3 grid_kv((b->max_kv + BKEY - 1) / BKEY, b->nseq, KVH);
  attn_bwd_dkv_kernel<<<grid_kv, ATT_WARPS * 32, smem_kv>>>(dk, dv, dout, out, lse, q, k, v,
                                                             b->cu_q, b->cu_kv, H, KVH, D, scale);
  CUDA_LAUNCH_CHECK();
}

void cuda_attention_decode_paged(float *out, float *lse, const float *q, const float *kv_data,
                                 const struct kv_layout *L, int layer, const int *tables,
                                 int max_blocks, const int *kv_len, int nseq, int H, float scale) {
  attn_check_shape(H, L->kv_heads, L->head_dim, nseq);
  if (nseq <= 0) return;
  /* kv_block_floats(L): [layers][2][block_size][kv_heads][head_dim] */
  size_t blk = (size_t)L->layers * 2 * L->block_size * L->kv_heads * L->head_dim;
  dim3 grid(nseq, H);
  attn_decode_paged_kernel<<<grid, 32>>>(out, lse, q, kv_data, blk, layer, L->block_size,
                                         L->kv_heads, tables, max_blocks, kv_len, H, L->head_dim,
                                         scale);
  CUDA_LAUNCH_CHECK();
}

} /* extern "C" */
