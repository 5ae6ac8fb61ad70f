/* cpu/ops_internal.h: what the files of the CPU backend (model/backend.h's cpu_backend)
 * share: the parallel loops over rows, the GEMM dispatch and the three-factor dot of
 * cpu/ops.c, and the ops of cpu/attention.c and cpu/logprob.c that its table holds.
 *
 * Threads: the row loops of the larger ops, and the larger GEMMs (cpu_gemm_parallel,
 * or one single-threaded GEMM per slice), are split over as many threads as
 * OpenBLAS has (the rank's thread budget) on the rank's persistent pool
 * (cpu/thread_pool.h), so OpenBLAS's own threads stay asleep. Every output element
 * of the loops is computed by the same operations in the same order whatever the
 * thread count, so their results do not depend on it; a product's sums depend on
 * where it is cut, as they would with OpenBLAS's own threads. */
#ifndef RLPT_CPU_OPS_INTERNAL_H
#define RLPT_CPU_OPS_INTERNAL_H

#include <cblas.h>
#include <stddef.h>

#include "cpu/thread_pool.h"
#include "model/backend.h"

/* ---- parallel loops over rows --------------------------------------------- */

#define PAR_MIN_WORK 65536 /* (rows x cost) per thread below which a thread is not worth waking */

/* fn(arg, lo, hi) over [0, n) in contiguous slices, one per thread, at most nt
 * threads of the rank's pool and each with PAR_MIN_WORK at least (cpu/thread_pool.h: the
 * slices depend on n and the thread count only). */
static inline void par_for_nt(int nt, size_t n, size_t cost, void (*fn)(void *, size_t, size_t),
                              void *arg) {
  thread_pool_par_for_work(nt, n, cost, PAR_MIN_WORK, fn, arg);
}

/* par_for_nt with OpenBLAS at one thread for the call (restored after): the slices'
 * own sgemm calls then run on the slice's thread and start no second layer of
 * threads under the pool's. */
static inline void par_for_blas1(int nt, size_t n, size_t cost,
                                 void (*fn)(void *, size_t, size_t), void *arg) {
  if (nt > 1) openblas_set_num_threads(1);
  par_for_nt(nt, n, cost, fn, arg);
  if (nt > 1) openblas_set_num_threads(nt);
}

/* par_for_nt over the BLAS thread count (the rank's thread budget). */
static inline void par_for(size_t n, size_t cost, void (*fn)(void *, size_t, size_t), void *arg) {
  par_for_nt(openblas_get_num_threads(), n, cost, fn, arg);
}

/* ---- cpu/ops.c -------------------------------------------------------------- */

/* model/backend.h's matmul: a GEMV for one row or column, cpu_gemm otherwise, a larger
 * product split over the pool. */
void cpu_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);

/* sum_i x[i] y[i] z[i] (z NULL: sum_i x[i] y[i]) in the lane order of rowinv_dot_plain
 * (cpu/rowinv.h); avx2 = cpu_have_avx2() picks the vector loop, the same bits. */
float cpu_dot3(const float *x, const float *y, const float *z, int n, int avx2);

/* ---- cpu/attention.c and cpu/logprob.c: model/backend.h's ops of those names ---- */

void cpu_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v,
                       const struct attn_batch *b, int H, int KVH, int D, float scale,
                       float *scratch);
void cpu_attention_paged_fwd(float *out, float *lse, const float *q, const struct attn_paged *kv,
                             const struct attn_batch *b, int H, int KVH, int D, float scale);
void cpu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                       const float *lse, const float *q, const float *k, const float *v,
                       const struct attn_batch *b, int H, int KVH, int D, float scale,
                       float *scratch);

void cpu_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                     const int *targets, int R, int V);
void cpu_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                     const float *dlogprob, const float *dentropy, int R, int V);

#endif
