/* cpu/test_cpu_gemm.c: cpu_gemm (both implementations) and the CPU backend's matmul
 * (cpu/ops.c, which splits larger products over the pool) against a naive
 * double-precision product.
 *
 * Cases: all four transposes; M, N, K over 1..70 (odd/even, below and above the
 * 6 x 16 register tile) and a few large shapes crossing the KC/MC/NC blocks;
 * lda/ldb/ldc larger than needed; alpha 1 and -0.75; beta 0 (over a NaN-filled C),
 * 1 and 0.5; the backend at 1 and 2 pool threads (the large shapes at 2, where
 * they are split). The padding between rows of C must stay untouched.
 * Tolerance per element: |C - ref| <= 1e-5 * (|alpha| sum_k |a_ik b_kj| + |beta C0_ij|),
 * the fp32 rounding of a K-term sum with ample room (an edge tile computed wrong is
 * off by O(1) of that scale). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/gemm.h"
#include "model/backend.h"
#include "testutil.h"

#define PAD_MARK -1234.5f

static unsigned rng = 12345u;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

struct gcase {
  int ta, tb, M, N, K, pad;
  float alpha, beta;
};

typedef void (*gemm_fn)(int, int, int, int, int, float, const float *, int, const float *, int,
                        float, float *, int);

/* Runs one case through fn; returns 1 when every element is within tolerance. */
static int run_case(const struct gcase *g, gemm_fn fn, const char *what) {
  int M = g->M, N = g->N, K = g->K;
  int lda = (g->ta ? M : K) + g->pad, ldb = (g->tb ? K : N) + g->pad, ldc = N + g->pad;
  size_t na = (size_t)(g->ta ? K : M) * lda, nb = (size_t)(g->tb ? N : K) * ldb;
  size_t nc = (size_t)M * ldc;
  float *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B), *C = malloc(nc * sizeof *C);
  float *C0 = malloc(nc * sizeof *C0);
  for (size_t i = 0; i < na; i++) A[i] = frand();
  for (size_t i = 0; i < nb; i++) B[i] = frand();
  for (size_t i = 0; i < nc; i++) {
    int inside = (int)(i % (size_t)ldc) < N;
    C0[i] = !inside ? PAD_MARK : g->beta == 0.0f ? NAN : frand();
  }
  memcpy(C, C0, nc * sizeof *C);
  fn(g->ta, g->tb, M, N, K, g->alpha, A, lda, B, ldb, g->beta, C, ldc);
  /* op(B) in double, [K, N]; each checked row of C from op(A)'s row, k outer */
  double *bk = malloc(sizeof *bk * (size_t)K * N), *ref = malloc(sizeof *ref * (size_t)N);
  double *mag = malloc(sizeof *mag * (size_t)N);
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++)
      bk[(size_t)k * N + j] = g->tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
  /* large products: every 4th row and the last 8 (the reference is the test's cost) */
  int every = (double)M * N * K > 1e7 ? 4 : 1, ok = 1;
  for (int i = 0; i < M && ok; i++) {
    if (i % every && i < M - 8) continue;
    for (int j = 0; j < N; j++) ref[j] = mag[j] = 0;
    for (int k = 0; k < K; k++) {
      double a = g->ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
      const double *b = bk + (size_t)k * N;
      for (int j = 0; j < N; j++) ref[j] += a * b[j], mag[j] += fabs(a * b[j]);
    }
    for (int j = 0; j < ldc && ok; j++) {
      float c = C[(size_t)i * ldc + j], c0 = C0[(size_t)i * ldc + j];
      if (j >= N) {
        ok = c == PAD_MARK;
        if (!ok) fprintf(stderr, "%s: padding of C written at (%d, %d)\n", what, i, j);
        continue;
      }
      double r = g->alpha * ref[j], bound = fabs(g->alpha) * mag[j];
      if (g->beta != 0.0f) r += g->beta * (double)c0, bound += fabs(g->beta * (double)c0);
      ok = fabs(c - r) <= 1e-5 * bound;
      if (!ok)
        fprintf(stderr, "%s: ta %d tb %d M %d N %d K %d pad %d alpha %g beta %g: C(%d, %d) = %.9g vs "
                "%.9g (tol %.3g)\n", what, g->ta, g->tb, M, N, K, g->pad, g->alpha, g->beta, i, j,
                c, r, 1e-5 * bound);
    }
  }
  free(bk), free(ref), free(mag);
  free(A), free(B), free(C), free(C0);
  return ok;
}

static void backend_matmul(int ta, int tb, int M, int N, int K, float alpha, const float *A,
                           int lda, const float *B, int ldb, float beta, float *C, int ldc) {
  cpu_backend.matmul(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Every small case through fn: M over 1..70, N and K spread over 1..70 with it. */
static void small_cases(gemm_fn fn, const char *what) {
  static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 1.0f, 0.5f};
  int n = 0;
  for (int s = 1; s <= 70; s++)
    for (int t = 0; t < 4; t++) {
      struct gcase g = {.ta = t >> 1, .tb = t & 1, .M = s, .N = (s * 37 + t * 11) % 70 + 1,
                        .K = (s * 53 + t * 29) % 70 + 1, .pad = (s + t) % 3 == 0 ? 0 : 3,
                        .alpha = alphas[(s + t) & 1], .beta = betas[(s + 2 * t) % 3]};
      CHECK_MSG(run_case(&g, fn, what), "%s small case M %d", what, s);
      n++;
    }
  /* the register tile's edges in each direction, one at a time */
  static const int dims[] = {1, 5, 6, 7, 12, 15, 16, 17, 32, 33};
  for (int d = 0; d < 10; d++)
    for (int t = 0; t < 4; t++) {
      int ta = t >> 1, tb = t & 1;
      struct gcase a = {.ta = ta, .tb = tb, .M = dims[d], .N = 16, .K = 9, .pad = 1,
                        .alpha = 1.0f, .beta = 0.0f};
      struct gcase b = {.ta = ta, .tb = tb, .M = 6, .N = dims[d], .K = 9, .pad = 0,
                        .alpha = 1.0f, .beta = 1.0f};
      struct gcase c = {.ta = ta, .tb = tb, .M = 12, .N = 32, .K = dims[d], .pad = 2,
                        .alpha = 1.0f, .beta = 0.5f};
      CHECK(run_case(&a, fn, what));
      CHECK(run_case(&b, fn, what));
      CHECK(run_case(&c, fn, what));
      n += 3;
    }
  printf("%s: %d small cases\n", what, n);
}

/* Shapes crossing KC (320), MC (144) and NC (4096), two of the training step, and
 * products over 8 MFLOP that the backend splits over threads by rows (M >= N) or by
 * columns, with odd sides and several blocks along each; the last one's shared copy
 * of op(A) is too large (cpu_gemm_parallel declines: the backend's own split). */
static void large_cases(gemm_fn fn, const char *what) {
  static const int shapes[][3] = {{1024, 576, 576}, {256, 1000, 576}, {300, 40, 700},
                                  {7, 4200, 20},    {150, 33, 257},   {301, 97, 700},
                                  {151, 4500, 33},  {5000, 4300, 3},  {64, 100, 20000}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 4; t++) {
      struct gcase g = {.ta = t >> 1, .tb = t & 1, .M = shapes[s][0], .N = shapes[s][1],
                        .K = shapes[s][2], .pad = t == 1 ? 5 : 0, .alpha = t == 3 ? -0.75f : 1.0f,
                        .beta = t == 2 ? 1.0f : t == 1 ? 0.5f : 0.0f};
      CHECK_MSG(run_case(&g, fn, what), "%s %d x %d x %d ta %d tb %d", what, g.M, g.N, g.K, g.ta,
                g.tb);
    }
  printf("%s: large cases done\n", what);
}

/* alpha = 0 reads neither A nor B (BLAS semantics): C = beta C even with NaN in them. */
static void alpha_zero(void) {
  float A[6], B[6], C[4] = {1, 2, 3, 4};
  for (int i = 0; i < 6; i++) A[i] = B[i] = NAN;
  cpu_gemm(0, 0, 2, 2, 3, 0.0f, A, 3, B, 2, 0.5f, C, 2);
  CHECK(C[0] == 0.5f && C[1] == 1.0f && C[2] == 1.5f && C[3] == 2.0f);
}

/* --rlpt-only: skip the OpenBLAS passes (the sanitizer build's run). */
int main(int argc, char **argv) {
  static const enum cpu_gemm_impl impls[] = {CPU_GEMM_OPENBLAS, CPU_GEMM_RLPT};
  static const char *names[] = {"openblas", "rlpt"};
  int first = argc > 1 && !strcmp(argv[1], "--rlpt-only");
  printf("default implementation: %s\n", cpu_gemm_name());
  for (int m = first; m < 2; m++) {
    if (cpu_gemm_set_impl(impls[m]) != impls[m]) {
      printf("%s GEMM skipped: this CPU lacks AVX2+FMA\n", names[m]);
      continue;
    }
    openblas_set_num_threads(1);
    char what[64];
    snprintf(what, sizeof what, "cpu_gemm %s", names[m]);
    small_cases(cpu_gemm, what);
    alpha_zero();
    if (m == 1) large_cases(cpu_gemm, what);
    for (int threads = 1; threads <= 2; threads++) {
      openblas_set_num_threads(threads);
      snprintf(what, sizeof what, "backend matmul %s, %d thread(s)", names[m], threads);
      small_cases(backend_matmul, what);
      if (threads == 2) large_cases(backend_matmul, what);
    }
  }
  openblas_set_num_threads(1);
  return TEST_RESULT("test_cpu_gemm");
}
