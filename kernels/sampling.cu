/* kernels/sampling.cu: temperature / top-k / top-p sampling on the device, with the
 * semantics of rollout/sampling.h (the recorded logprob is the full-vocabulary
 * log_softmax(logits / T) of the token; top-k first, then top-p over the sorted
 * kept mass; ties to the lower index; inverse CDF with one uniform per row).
 *
 * The arithmetic is rollout/sampling.c's (the trainer's log-softmax): zf = logits / T
 * rounded to float, the float max, terms expf(zf - max) summed in double, the
 * log-sum-exp rounded to float and logprob = zf[token] - lse in float. The sum's
 * order and the device expf (<= 2 ulp) differ from the host's, so the recorded
 * logprob can differ from sampler_sample's by a few float ulps; the token only
 * where u falls within ~1e-7 of a boundary.
 *
 * Row r of a call reads logits row rows[r], so the rollout engine's followers sample their
 * prompt leader's row and the prefix-cache rows sit anywhere in its buffer (rollout/sample_device.c).
 *
 * Three steps per call: (1) one block per row scales and exponentiates the
 * logits, finds the max, the sum and the argmax; (2) only when
 * truncating, a stable segmented radix sort (CUB) orders each row by decreasing
 * probability, equal probabilities keeping index order; (3) one thread per row
 * walks the (sorted) probabilities in order as sampler_sample does, so the
 * cumulative sums are formed in the CPU's order. Step 3 is sequential over the
 * kept tokens: simple first; a block-parallel scan is the next step if the
 * decode profile shows it. */
#include <cub/device/device_segmented_radix_sort.cuh>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_backend.h"
#include "kernels/cuda_common.cuh"

#define SAMPLE_THREADS 256

/* Step 1: z[i] = expf(zf[i] - max), zf = (float)(logits[i] / T), for row blockIdx.x (T = 1
 * for greedy; its logits are row rows[r] of `logits`), the row's float max of zf, the sum of
 * z and the argmax of the logits (strictly greater wins: lowest index on ties); idx[i] = i. */
__global__ void sample_prep_kernel(double *z, int *idx, double *row_max, double *row_sum,
                                   int *row_argmax, const float *logits, const int *rows, int V,
                                   double temp) {
  __shared__ float best_v[SAMPLE_THREADS];
  __shared__ int best_i[SAMPLE_THREADS];
  int r = blockIdx.x;
  const float *lg = logits + (size_t)rows[r] * V;
  double *zr = z + (size_t)r * V;
  float m = -INFINITY;
  int nan = 0, bi = -1;
  float bv = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    float x = lg[i];
    if (isnan(x)) nan = 1;
    if (bi < 0 || x > bv) {
      bv = x;
      bi = i;
    }
    float zi = (float)((double)x / temp);
    m = zi > m ? zi : m;
    idx[(size_t)r * V + i] = i;
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  nan = block_sum(nan);
  m = block_max(m);
  double sum = 0.0;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    float e = expf((float)((double)lg[i] / temp) - m);
    zr[i] = e;
    sum += e;
  }
  sum = block_sum(sum); /* syncs: best_v/best_i are complete */
  if (threadIdx.x == 0) {
    int b = -1;
    for (int t = 0; t < (int)blockDim.x; t++)
      if (best_i[t] >= 0 && (b < 0 || best_v[t] > best_v[b] ||
                             (best_v[t] == best_v[b] && best_i[t] < best_i[b])))
        b = t;
    row_max[r] = m;
    row_sum[r] = sum;
    row_argmax[r] = nan ? -1 : best_i[b];
  }
}

/* Step 3, one thread per row; p = z (index order) or the sorted z with their indices. */
__global__ void sample_select_kernel(int *tokens, double *logprob, const double *p, const int *pi,
                                     const double *row_max, const double *row_sum,
                                     const int *row_argmax, const float *logits, const int *rows,
                                     const double *u, int R, int V, double temp, long top_k,
                                     double top_p, int truncated) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const double *pr = p + (size_t)r * V;
  const int *ir = pi + (size_t)r * V;
  const float *lg = logits + (size_t)rows[r] * V;
  double m = row_max[r], sum = row_sum[r];
  int am = row_argmax[r], tok = -1;
  if (am < 0 || !isfinite(m)) { /* NaN, all -inf or +inf: nothing to sample */
    tokens[r] = -1;
    logprob[r] = 0.0;
    return;
  }
  if (!(temp > 0)) {
    tok = am;
  } else if (truncated) {
    int k = (top_k > 0 && top_k < V) ? (int)top_k : V;
    double mass_k = 0, before = 0, c = 0;
    for (int j = 0; j < k; j++) mass_k += pr[j];
    int n = 0;
    while (n < k && (n == 0 || before < top_p * mass_k)) before += pr[n++];
    double target = u[r] * before;
    for (int j = 0; j < n && tok < 0; j++) {
      c += pr[j];
      if (target < c) tok = ir[j];
    }
    if (tok < 0) tok = ir[0];
  } else {
    double target = u[r] * sum, c = 0;
    for (int i = 0; i < V && tok < 0; i++) {
      c += pr[i];
      if (target < c) tok = i;
    }
    if (tok < 0) tok = am; /* rounding at u -> 1 */
  }
  double t = temp > 0 ? temp : 1.0;
  float lse = (float)(m + log(sum));
  tokens[r] = tok;
  logprob[r] = (float)((double)lg[tok] / t) - lse;
}

extern "C" {

int cuda_sampler_init(struct cuda_sampler *s, int vocab, int max_rows) {
  memset(s, 0, sizeof *s);
  s->vocab = vocab;
  s->max_rows = max_rows;
  size_t n = (size_t)vocab * max_rows;
  if (vocab < 1 || max_rows < 1 || n > 0x7fffffff) return -1; /* CUB counts items in int */
  int ok = cudaMalloc((void **)&s->z, n * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->z_sorted, n * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->idx, n * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->idx_sorted, n * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->offsets, (max_rows + 1) * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->u, max_rows * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->rows, max_rows * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->iota, max_rows * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->logprob, max_rows * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->row_max, max_rows * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->row_sum, max_rows * sizeof(double)) == cudaSuccess &&
           cudaMalloc((void **)&s->row_argmax, max_rows * sizeof(int)) == cudaSuccess &&
           cudaMalloc((void **)&s->tokens, max_rows * sizeof(int)) == cudaSuccess;
  int *off = ok ? (int *)malloc((max_rows + 1) * sizeof(int)) : NULL;
  if (off) {
    for (int r = 0; r <= max_rows; r++) off[r] = r * vocab;
    ok = cudaMemcpy(s->offsets, off, (max_rows + 1) * sizeof(int), cudaMemcpyHostToDevice) ==
         cudaSuccess;
    for (int r = 0; r < max_rows; r++) off[r] = r;
    ok = ok && cudaMemcpy(s->iota, off, max_rows * sizeof(int), cudaMemcpyHostToDevice) ==
                   cudaSuccess;
    free(off);
  } else {
    ok = 0;
  }
  if (ok)
    ok = cub::DeviceSegmentedRadixSort::SortPairsDescending(
             NULL, s->sort_tmp_bytes, s->z, s->z_sorted, s->idx, s->idx_sorted, (int)n, max_rows,
             s->offsets, s->offsets + 1) == cudaSuccess &&
         cudaMalloc(&s->sort_tmp, s->sort_tmp_bytes) == cudaSuccess;
  if (!ok) {
    (void)cudaGetLastError();
    cuda_sampler_free(s);
    return -1;
  }
  return 0;
}

void cuda_sampler_free(struct cuda_sampler *s) {
  void *bufs[] = {s->z, s->z_sorted, s->idx, s->idx_sorted, s->offsets, s->u, s->rows,
                  s->iota, s->logprob, s->row_max, s->row_sum, s->row_argmax, s->tokens,
                  s->sort_tmp};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) cudaFree(bufs[i]);
  memset(s, 0, sizeof *s);
}

void cuda_sampler_sample(struct cuda_sampler *s, const float *logits, const int *rows, int R,
                         const struct sampling_params *p, const double *u, int *tokens,
                         double *logprob) {
  if (R <= 0) return;
  if (R > s->max_rows)
    cuda_fail("rlpt", "cuda_sampler_sample", "more rows than the sampler was sized for",
              "size cuda_sampler_init's max_rows for the largest decode batch", __FILE__, __LINE__);
  int V = s->vocab;
  double temp = p->temperature > 0 ? p->temperature : 1.0;
  int truncated = p->temperature > 0 && ((p->top_k > 0 && p->top_k < V) || p->top_p < 1);
  CUDA_CHECK(cudaMemcpy(s->u, u, sizeof(double) * R, cudaMemcpyHostToDevice));
  if (rows) CUDA_CHECK(cudaMemcpy(s->rows, rows, sizeof(int) * R, cudaMemcpyHostToDevice));
  const int *drows = rows ? s->rows : s->iota;
  sample_prep_kernel<<<R, SAMPLE_THREADS>>>(s->z, s->idx, s->row_max, s->row_sum, s->row_argmax,
                                            logits, drows, V, temp);
  CUDA_LAUNCH_CHECK();
  if (truncated) {
    size_t tmp = s->sort_tmp_bytes;
    CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        s->sort_tmp, tmp, s->z, s->z_sorted, s->idx, s->idx_sorted, R * V, R, s->offsets,
        s->offsets + 1));
  }
  sample_select_kernel<<<(R + 63) / 64, 64>>>(
      s->tokens, s->logprob, truncated ? s->z_sorted : s->z, truncated ? s->idx_sorted : s->idx,
      s->row_max, s->row_sum, s->row_argmax, logits, drows, s->u, R, V, p->temperature, p->top_k,
      p->top_p, truncated);
  CUDA_LAUNCH_CHECK();
  CUDA_CHECK(cudaMemcpy(tokens, s->tokens, sizeof(int) * R, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(logprob, s->logprob, sizeof(double) * R, cudaMemcpyDeviceToHost));
}

} /* extern "C" */
