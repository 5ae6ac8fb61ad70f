/* cpu/gemm.h: the CPU backend's fp32 GEMM, C = alpha op(A) op(B) + beta C, row-major.
 *
 * Two implementations: OpenBLAS's cblas_sgemm, and rlpt's own blocked GEMM
 * (cpu/gemm.c: packed panels and a 6 x 16 AVX2+FMA micro-kernel, the BLIS
 * scheme). The environment variable RLPT_GEMM=openblas|rlpt, read once, picks
 * one; the default is rlpt where the CPU has AVX2 and FMA, else OpenBLAS.
 * Every call runs on the calling thread only (the caller splits larger products
 * over its threads). beta = 0 never reads C; alpha = 0 never reads A or B. */
#ifndef RLPT_CPU_GEMM_H
#define RLPT_CPU_GEMM_H

enum cpu_gemm_impl { CPU_GEMM_OPENBLAS, CPU_GEMM_RLPT };

/* The implementation cpu_gemm runs (RLPT_GEMM, read on the first call). */
enum cpu_gemm_impl cpu_gemm_impl(void);
/* Its name, "openblas" or "rlpt", for the run's banner. */
const char *cpu_gemm_name(void);
/* Override the choice (benchmarks and tests compare the two); CPU_GEMM_RLPT without
 * AVX2+FMA stays OpenBLAS. Only while no GEMM runs. Returns the implementation set. */
enum cpu_gemm_impl cpu_gemm_set_impl(enum cpu_gemm_impl impl);

/* C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C; op(X) = X^T when its flag is set.
 * Single-threaded (OpenBLAS must be at one thread for its path to be). */
void cpu_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* cpu_gemm over nt threads of the rank's pool (cpu/thread_pool.h), op(A) or op(B) packed
 * once and shared (cpu/gemm.c). Returns 0, having done nothing, when the OpenBLAS
 * implementation is chosen, the shared copy would be too large to stay in cache, or
 * memory is short: the caller then splits the product its own way. */
int cpu_gemm_parallel(int nt, int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc);

#endif
