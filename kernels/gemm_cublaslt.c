/* kernels/gemm_cublaslt.c: the backend's GEMMs through cuBLASLt.
 *
 * model/backend.h speaks row-major; cuBLASLt speaks column-major. A row-major matrix
 * is its transpose in column-major, so C = op(A) op(B) is computed as
 * C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B and its "B" is our A, each
 * with the stored shape read transposed.
 *
 * fp32 GEMMs use CUBLAS_COMPUTE_32F (no TF32: the ops must match the CPU to
 * 1e-5); the bf16 path takes bf16 A, B and accumulates and writes fp32 (and
 * cuda_matmul_mixed / cuda_matmul_w16 at the end round fp32 operands into it). For each
 * shape (type, transposes, M, N, K, leading dimensions, pointer alignments) the
 * descriptors and the heuristic's first algorithm are built once and cached; one
 * workspace serves every call (all on the default stream, so never concurrently).
 * A shape the heuristic has no algorithm for goes to gemm_fallback.cu (noted once).
 *
 * The op table carries no context, so the handle, workspace and plan cache are
 * the one piece of process state of this backend, created on first use on the
 * current device and released by cuda_gemm_release(). Not thread-safe: the
 * model calls the ops from one thread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_backend.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_kernels.h"

#define GEMM_WORKSPACE_BYTES ((size_t)32 << 20)
#define GEMM_CACHE 128

enum { GEMM_F32 = 0, GEMM_BF16 = 1 };

struct gemm_key {
  int dtype, ta, tb, M, N, K, lda, ldb, ldc, align_a, align_b, align_c;
};

struct gemm_plan {
  struct gemm_key key;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C/D */
  cublasLtMatmulAlgo_t algo;
  int fallback; /* the heuristic had no algorithm: gemm_fallback.cu */
};

struct gemm_ctx {
  cublasLtHandle_t lt;
  void *workspace;
  struct gemm_plan plans[GEMM_CACHE];
  int n_plans, next_evict;
};

static struct gemm_ctx *gemm_state;

static struct gemm_ctx *gemm_ctx_get(void) {
  if (gemm_state) return gemm_state;
  struct gemm_ctx *g = calloc(1, sizeof *g);
  if (!g) cuda_fail("rlpt", "calloc", "out of host memory", "", __FILE__, __LINE__);
  CUBLAS_CHECK(cublasLtCreate(&g->lt));
  CUDA_CHECK(cudaMalloc(&g->workspace, GEMM_WORKSPACE_BYTES));
  gemm_state = g;
  return g;
}

static void gemm_plan_destroy(struct gemm_plan *p) {
  cublasLtMatrixLayoutDestroy(p->la);
  cublasLtMatrixLayoutDestroy(p->lb);
  cublasLtMatrixLayoutDestroy(p->lc);
  cublasLtMatmulDescDestroy(p->op);
}

void cuda_gemm_release(void) {
  struct gemm_ctx *g = gemm_state;
  if (!g) return;
  for (int i = 0; i < g->n_plans; i++) gemm_plan_destroy(&g->plans[i]);
  cudaFree(g->workspace);
  cublasLtDestroy(g->lt);
  free(g);
  gemm_state = NULL;
}

/* Largest of 16, 8, 4, 2, 1 bytes that divides the address (what the heuristic may assume). */
static int ptr_align(const void *p) {
  uintptr_t a = (uintptr_t)p;
  int al = 16;
  while (al > 1 && a % (uintptr_t)al) al /= 2;
  return al;
}

static void gemm_plan_build(struct gemm_ctx *g, struct gemm_plan *p, const struct gemm_key *k) {
  cudaDataType_t ab = k->dtype == GEMM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt A = our B */
  cublasOperation_t opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt B = our A */
  p->key = *k;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, ab, (uint64_t)(k->tb ? k->K : k->N),
                                          (uint64_t)(k->tb ? k->N : k->K), k->ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, ab, (uint64_t)(k->ta ? k->M : k->K),
                                          (uint64_t)(k->ta ? k->K : k->M), k->lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_32F, (uint64_t)k->N, (uint64_t)k->M,
                                          k->ldc));
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = GEMM_WORKSPACE_BYTES;
  uint32_t al_a = (uint32_t)k->align_b, al_b = (uint32_t)k->align_a, al_c = (uint32_t)k->align_c;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof ws));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c));
  cublasLtMatmulHeuristicResult_t res;
  int n = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->la, p->lb, p->lc, p->lc,
                                                     pref, 1, &res, &n);
  cublasLtMatmulPreferenceDestroy(pref);
  /* No algorithm comes back as a count of 0, or for some configurations as NOT_SUPPORTED
   * ("no heuristic function available"): both mean the fallback, not a failure. */
  if (st != CUBLAS_STATUS_NOT_SUPPORTED) CUBLAS_CHECK(st);
  p->fallback = st != CUBLAS_STATUS_SUCCESS || n < 1;
  if (p->fallback) /* once per shape: slow, so say so */
    fprintf(stderr, "rlpt: cuBLASLt has no algorithm for %s M=%d N=%d K=%d ta=%d tb=%d lda=%d "
            "ldb=%d ldc=%d (alignments %d/%d/%d bytes): using the fallback GEMM\n",
            k->dtype == GEMM_BF16 ? "bf16" : "fp32", k->M, k->N, k->K, k->ta, k->tb, k->lda,
            k->ldb, k->ldc, k->align_a, k->align_b, k->align_c);
  else
    p->algo = res.algo;
}

/* The cached plan for k, built on a miss (the oldest entry makes room when full). */
static const struct gemm_plan *gemm_plan_get(struct gemm_ctx *g, const struct gemm_key *k) {
  for (int i = 0; i < g->n_plans; i++)
    if (!memcmp(&g->plans[i].key, k, sizeof *k)) return &g->plans[i];
  struct gemm_plan *p;
  if (g->n_plans < GEMM_CACHE) {
    p = &g->plans[g->n_plans++];
  } else {
    p = &g->plans[g->next_evict];
    g->next_evict = (g->next_evict + 1) % GEMM_CACHE;
    gemm_plan_destroy(p);
  }
  gemm_plan_build(g, p, k);
  return p;
}

/* Leading dimensions and pointers cuBLASLt cannot take are a caller bug: fail with the shape. */
static void gemm_check_args(const struct gemm_key *k, int elem) {
  int ok = k->M >= 0 && k->N >= 0 && k->K >= 1 && k->lda >= (k->ta ? k->M : k->K) &&
           k->ldb >= (k->tb ? k->K : k->N) && k->ldc >= k->N && k->align_a >= elem &&
           k->align_b >= elem && k->align_c >= 4;
  if (ok) return;
  char what[200];
  snprintf(what, sizeof what, "bad GEMM arguments M=%d N=%d K=%d ta=%d tb=%d lda=%d ldb=%d ldc=%d "
           "alignments %d/%d/%d bytes", k->M, k->N, k->K, k->ta, k->tb, k->lda, k->ldb, k->ldc,
           k->align_a, k->align_b, k->align_c);
  cuda_fail("rlpt", "matmul", what, "leading dimensions must cover a stored row; pointers must be "
            "element-aligned", __FILE__, __LINE__);
}

static void gemm_run(int dtype, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                     int lda, const void *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return;
  /* all-int key, no padding: compared with memcmp */
  struct gemm_key k = {.dtype = dtype, .ta = ta != 0, .tb = tb != 0, .M = M, .N = N, .K = K,
                       .lda = lda, .ldb = ldb, .ldc = ldc, .align_a = ptr_align(A),
                       .align_b = ptr_align(B), .align_c = ptr_align(C)};
  gemm_check_args(&k, dtype == GEMM_BF16 ? 2 : 4);
  struct gemm_ctx *g = gemm_ctx_get();
  const struct gemm_plan *p = gemm_plan_get(g, &k);
  if (p->fallback) {
    cuda_gemm_fallback(dtype == GEMM_BF16, k.ta, k.tb, M, N, K, alpha, A, lda, B, ldb, beta, C,
                       ldc);
    return;
  }
  CUBLAS_CHECK(cublasLtMatmul(g->lt, p->op, &alpha, B, p->la, A, p->lb, &beta, C, p->lc, C, p->lc,
                              &p->algo, g->workspace, GEMM_WORKSPACE_BYTES, 0));
}

void cuda_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
  gemm_run(GEMM_F32, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void cuda_matmul_bf16(int ta, int tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const uint16_t *B, int ldb, float beta, float *C, int ldc) {
  gemm_run(GEMM_BF16, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- bf16 mixed precision (cuda_backend_bf16) ----------------------------------
 * The products of [model] dtype = bf16: fp32 operands are rounded to bf16 right before
 * the bf16 GEMM (one conversion kernel per operand) into scratch from the device's
 * stream-ordered memory pool (cheap after the first call, and no state kept here).
 * The whole stored span of an operand is converted, so its leading dimension stays. */

/* Elements spanned by a row-major rows x cols matrix with row stride ld. */
static size_t gemm_extent(int rows, int cols, int ld) {
  return rows > 0 && cols > 0 ? (size_t)(rows - 1) * (size_t)ld + (size_t)cols : 0;
}

/* B already bf16 (the model's working copy of a weight); A rounded here. */
void cuda_matmul_w16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return;
  size_t na = gemm_extent(ta ? K : M, ta ? M : K, lda);
  uint16_t *a16;
  CUDA_CHECK(cudaMallocAsync((void **)&a16, 2 * na + 2, 0));
  cuda_f32_to_bf16(a16, A, na);
  gemm_run(GEMM_BF16, ta, tb, M, N, K, alpha, a16, lda, B, ldb, beta, C, ldc);
  CUDA_CHECK(cudaFreeAsync(a16, 0));
}

/* Both operands fp32 activations (the weight-gradient products dW = dy^T x). */
void cuda_matmul_mixed(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return;
  size_t na = gemm_extent(ta ? K : M, ta ? M : K, lda);
  size_t nb = gemm_extent(tb ? N : K, tb ? K : N, ldb);
  size_t off = (na + 127) & ~(size_t)127; /* B 256-byte aligned, as the pool aligns A */
  uint16_t *s;
  CUDA_CHECK(cudaMallocAsync((void **)&s, 2 * (off + nb) + 2, 0));
  cuda_f32_to_bf16(s, A, na);
  cuda_f32_to_bf16(s + off, B, nb);
  gemm_run(GEMM_BF16, ta, tb, M, N, K, alpha, s, lda, s + off, ldb, beta, C, ldc);
  CUDA_CHECK(cudaFreeAsync(s, 0));
}
