/* kernels/test_gpu_edge.c: the CUDA backend's edges, which kernels/test_gpu_ops.c's random tensors do not
 * reach.
 *
 * Part 1, failures (no device needed, so they run in every CUDA build): CUDA_CHECK,
 * CUBLAS_CHECK and NCCL_CHECK print "rlpt: rank 0: <lib> error at <file>:<line>: <call>:
 * <error string>" and their hint, and the job exits 1; so do the backend's argument
 * checks (a leading dimension shorter than a row, an fp32 operand not 4-byte aligned,
 * head_dim 129, a fallback GEMM with more than 65535 x 16 rows). Each case runs in a
 * fresh process (this program again, `--die CASE`): a CUDA context must not cross a fork.
 * Part 2, with a device:
 *   - the cuBLASLt plan cache past its 128 shapes (the oldest plans evicted and rebuilt),
 *     operands at 4-byte (fp32) and 2-byte (bf16) alignment, beta = 0 over a C full of
 *     NaN, a heuristic answering NOT_SUPPORTED (the fallback GEMM; emulated by
 *     kernels/emu under EMU_NO_ALGO=status), and the handle released and made again:
 *     every product within 1e-5 of the CPU product (of the same bf16-rounded inputs
 *     for bf16), as kernels/test_gpu_ops.c;
 *   - an allocation larger than the device returns NULL and leaves no error for the next
 *     kernel's launch check;
 *   - to_bf16 on the values where rounding goes wrong: ties to even, the largest floats
 *     (to infinity), denormals, signed zeros, infinities, and NaNs whose payload sits in
 *     the low half only (a plain round-to-nearest turns them into infinity): the host's
 *     round-to-nearest-even bits, and NaN for NaN; bf16 -> fp32 over all 65536 patterns
 *     is exact.
 * Without a device part 1 still runs (a failure fails the test) and the test then
 * reports skipped (exit 77). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/backend.h"
#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include "gpu_testutil.h"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_kernels.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */

static const struct backend_ops *G = &cuda_backend, *Cpu = &cpu_backend;

/* ---- part 1: the failure paths, each in its own process ------------------------ */

/* The child says which line its check sits on, then dies there. */
static void at_line(int line) {
  printf("line %d\n", line);
  fflush(stdout);
}

static void die_cuda(void) { at_line(__LINE__); CUDA_CHECK(cudaErrorMemoryAllocation); }
static void die_cublas(void) { at_line(__LINE__); CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED); }
static void die_nccl(void) { at_line(__LINE__); NCCL_CHECK(ncclUnhandledCudaError); }

static float host_buf[64];

static void die_gemm_ld(void) {
  cuda_matmul(0, 0, 4, 4, 4, 1.0f, host_buf, 2, host_buf, 4, 0.0f, host_buf, 4);
}
static void die_gemm_align(void) {
  const float *a = (const float *)((const char *)host_buf + 2);
  cuda_matmul(0, 1, 2, 2, 2, 1.0f, a, 2, host_buf, 2, 0.0f, host_buf + 8, 2);
}
static void die_attention(void) {
  int cu[2] = {0, 1};
  struct attn_batch b = {.nseq = 1, .cu_q = cu, .cu_kv = cu, .max_q = 1, .max_kv = 1};
  cuda_attention_fwd(host_buf, host_buf, host_buf, host_buf, host_buf, &b, 2, 1, 129, 1.0f, NULL);
}
static void die_fallback_rows(void) {
  cuda_gemm_fallback(0, 0, 0, 65535 * 16 + 1, 1, 1, 1.0f, host_buf, 1, host_buf, 1, 0.0f, host_buf,
                     1);
}

struct die_case {
  const char *name;
  void (*fn)(void);
  const char *lib, *call, *hint; /* expected in the message; call NULL: no line check */
  const char *where;             /* the checking source, for call NULL (attention.cu, or
                                    attention.emu.cpp under kernels/emu) */
};

static const struct die_case die_cases[] = {
    {"cuda", die_cuda, "CUDA", "cudaErrorMemoryAllocation",
     "check the device is visible (CUDA_VISIBLE_DEVICES) and has free memory", NULL},
    {"cublas", die_cublas, "cuBLASLt", "CUBLAS_STATUS_NOT_SUPPORTED",
     "an unsupported shape/alignment/type combination, or out of device memory", NULL},
    {"nccl", die_nccl, "NCCL", "ncclUnhandledCudaError",
     "rerun with NCCL_DEBUG=WARN; check every rank reached the same collective", NULL},
    {"gemm_ld", die_gemm_ld, "rlpt", NULL, "leading dimensions must cover a stored row",
     "/gemm_cublaslt.c:"},
    {"gemm_align", die_gemm_align, "rlpt", NULL, "pointers must be element-aligned",
     "/gemm_cublaslt.c:"},
    {"attention", die_attention, "rlpt", NULL, "the CUDA attention needs head_dim <= 128",
     "attention."},
    {"fallback_rows", die_fallback_rows, "rlpt", NULL, "split the GEMM", "gemm_fallback."},
};
#define N_DIE (sizeof die_cases / sizeof die_cases[0])

/* `self --die NAME` with stdout and stderr into buf; returns the exit status (128 + signal). */
static int run_child(const char *self, const char *name, char *buf, size_t cap) {
  int fd[2];
  if (pipe(fd)) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    execl(self, self, "--die", name, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fd[0], buf + n, cap - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void die_check(const char *self, const struct die_case *c) {
  char out[4096], want[512];
  int rc = run_child(self, c->name, out, sizeof out);
  CHECK_MSG(rc == 1, "%s: exit %d, want 1; output:\n%s", c->name, rc, out);
  int line = 0;
  const char *l = strstr(out, "line ");
  if (l) line = atoi(l + 5);
  if (c->call) /* the macro's own site: this file, the line the child printed, the call */
    snprintf(want, sizeof want, "rlpt: rank 0: %s error at %s:%d: %s: ", c->lib, __FILE__, line,
             c->call);
  else /* the backend's own check, in kernels/ */
    snprintf(want, sizeof want, "rlpt: rank 0: %s error at ", c->lib);
  CHECK_MSG(strstr(out, want) != NULL, "%s: no '%s' in:\n%s", c->name, want, out);
  const char *hint = strstr(out, "\n  hint: ");
  CHECK_MSG(hint && strstr(hint, c->hint), "%s: no hint '%s' in:\n%s", c->name, c->hint, out);
  const char *at = strstr(out, " error at ");
  CHECK_MSG(c->call || (at && strstr(at, c->where)), "%s: the location is not %s:\n%s",
            c->name, c->where, out);
}

static int die_main(const char *name) {
  for (size_t i = 0; i < N_DIE; i++)
    if (!strcmp(name, die_cases[i].name)) die_cases[i].fn();
  printf("%s: did not fail\n", name);
  return 0;
}

/* ---- part 2: the GEMM plan cache, alignment, release ---------------------------- */

/* One product with operands at element offsets oa, ob, oc from an aligned base, C
 * starting as NaN when beta = 0; bf16 = 1: A, B rounded to bf16 on the host first. */
static void gemm_check(int bf16, int ta, int tb, int M, int N, int K, int off, float beta) {
  int lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  size_t na = (size_t)(ta ? K : M) * lda + off, nb = (size_t)(tb ? N : K) * ldb + off;
  size_t nc = (size_t)M * ldc + off;
  float *A = gt_randv(na, 1), *B = gt_randv(nb, 1), *C = gt_randv(nc, 1), *Cg = malloc(4 * nc);
  memcpy(Cg, C, 4 * nc);
  if (beta == 0.0f) /* the device C is garbage (NaN); the reference starts from zeros */
    for (size_t i = 0; i < nc; i++) Cg[i] = NAN, C[i] = 0.0f;
  uint16_t *A16 = malloc(2 * na), *B16 = malloc(2 * nb);
  for (size_t i = 0; i < na; i++) A[i] = gt_bf16_value(A16[i] = gt_bf16(A[i]));
  for (size_t i = 0; i < nb; i++) B[i] = gt_bf16_value(B16[i] = gt_bf16(B[i]));
  void *dA = bf16 ? gt_up(G, A16, 2 * na) : gt_up(G, A, 4 * na);
  void *dB = bf16 ? gt_up(G, B16, 2 * nb) : gt_up(G, B, 4 * nb);
  float *dC = gt_up(G, Cg, 4 * nc);
  Cpu->matmul(ta, tb, M, N, K, 1.25f, A + off, lda, B + off, ldb, beta, C + off, ldc);
  if (bf16)
    cuda_matmul_bf16(ta, tb, M, N, K, 1.25f, (uint16_t *)dA + off, lda, (uint16_t *)dB + off, ldb,
                     beta, dC + off, ldc);
  else
    G->matmul(ta, tb, M, N, K, 1.25f, (float *)dA + off, lda, (float *)dB + off, ldb, beta,
              dC + off, ldc);
  GT_CHECK_REL(G, dC + off, C + off, nc - off, 1e-5, "%s GEMM ta=%d tb=%d M=%d N=%d K=%d offset %d "
               "beta %g", bf16 ? "bf16" : "fp32", ta, tb, M, N, K, off, beta);
  G->free(dA), G->free(dB), G->free(dC);
  free(A), free(B), free(C), free(Cg), free(A16), free(B16);
}

static void gemm_edges(void) {
  /* 140 shapes > the cache's 128; then the first ones again (evicted, rebuilt) */
  for (int round = 0; round < 2; round++)
    for (int m = 1; m <= (round ? 12 : 140); m++) gemm_check(m & 1, m % 3 == 0, m % 2, m, 3, 5, 0,
                                                             m % 4 ? 0.5f : 0.0f);
  for (int bf16 = 0; bf16 < 2; bf16++) {
    gemm_check(bf16, 0, 1, 33, 17, 31, 1, 0.0f); /* 4-byte (fp32) / 2-byte (bf16) aligned */
    gemm_check(bf16, 1, 0, 8, 40, 64, 3, 0.5f);
    gemm_check(bf16, 0, 0, 64, 64, 64, 0, 0.0f);
  }
  /* a heuristic that answers NOT_SUPPORTED (cuBLASLt's "no heuristic function available")
   * means the fallback GEMM, not a failure; kernels/emu answers so under
   * EMU_NO_ALGO=status, on a GPU these are two more products */
  const char *was = getenv("EMU_NO_ALGO");
  char keep[32] = "";
  if (was) snprintf(keep, sizeof keep, "%s", was);
  setenv("EMU_NO_ALGO", "status", 1);
  gemm_check(0, 1, 0, 9, 11, 13, 0, 0.5f);
  gemm_check(1, 0, 1, 9, 11, 13, 0, 0.0f);
  if (was) setenv("EMU_NO_ALGO", keep, 1);
  else unsetenv("EMU_NO_ALGO");
  cuda_gemm_release(); /* made again on the next product */
  gemm_check(0, 0, 1, 20, 30, 40, 0, 0.0f);
  cuda_gemm_release();
  cuda_gemm_release(); /* twice is harmless */
}

/* ---- part 2: a refused allocation ------------------------------------------------ */

/* alloc returns NULL for what the device cannot hold (callers report it) and clears the
 * error: the next kernel's launch check (cudaGetLastError) must not see it and abort. */
static void alloc_refused(void) {
  CHECK(G->alloc((size_t)1 << 52) == NULL); /* 4 PiB */
  float x[64], want[64];
  for (int i = 0; i < 64; i++) x[i] = 0.25f * (float)i, want[i] = 0.5f * (float)i;
  float *d = gt_up(G, x, sizeof x);
  cuda_scale(d, 64, 2.0f);
  GT_CHECK_REL(G, d, want, 64, 0.0, "scale after a refused allocation");
  G->free(d);
}

/* ---- part 2: bf16 conversions at the edges --------------------------------------- */

static void bf16_edges(void) {
  static const uint32_t bits[] = {
      0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, /* +-0, +-1 */
      0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf818000u, /* ties to even, just above */
      0x00000001u, 0x007fffffu, 0x00008000u, 0x00018000u, /* denormals, denormal ties */
      0x00800000u, 0x7f7fffffu, 0x7f7f7fffu, 0xff7fffffu, /* FLT_MIN, FLT_MAX -> inf */
      0x7f800000u, 0xff800000u,                           /* infinities */
      0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7f807fffu, /* NaNs, payload low only */
  };
  enum { NB = sizeof bits / sizeof bits[0] };
  float x[NB];
  memcpy(x, bits, sizeof x);
  uint16_t got[NB];
  float *dx = gt_up(G, x, sizeof x);
  uint16_t *d16 = G->alloc(sizeof got);
  cuda_f32_to_bf16(d16, dx, NB);
  G->download(got, d16, sizeof got);
  for (int i = 0; i < NB; i++) {
    uint16_t want = gt_bf16(x[i]);
    if (isnan(x[i]))
      CHECK_MSG(isnan(gt_bf16_value(got[i])), "to_bf16(0x%08x) = 0x%04x, not a NaN", bits[i],
                got[i]);
    else
      CHECK_MSG(got[i] == want, "to_bf16(0x%08x) = 0x%04x, want 0x%04x", bits[i], got[i], want);
  }
  G->free(dx), G->free(d16);
  uint16_t *all = malloc(2 * 65536);
  float *wide = malloc(4 * 65536);
  for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  uint16_t *dall = gt_up(G, all, 2 * 65536);
  float *dwide = G->alloc(4 * 65536);
  cuda_bf16_to_f32(dwide, dall, 65536);
  G->download(wide, dwide, 4 * 65536);
  int bad = 0;
  for (int i = 0; i < 65536; i++) {
    float want = gt_bf16_value(all[i]);
    bad += isnan(want) ? !isnan(wide[i]) : memcmp(&wide[i], &want, 4) != 0;
  }
  CHECK_MSG(bad == 0, "bf16 -> fp32: %d of 65536 patterns not exact", bad);
  G->free(dall), G->free(dwide);
  free(all), free(wide);
}
#endif

int main(int argc, char **argv) {
#ifndef RLPT_HAVE_CUDA
  (void)argc, (void)argv;
  printf("test_gpu_edge: CUDA backend not built: skipped\n");
  return 77;
#else
  if (argc == 3 && !strcmp(argv[1], "--die")) return die_main(argv[2]);
  for (size_t i = 0; i < N_DIE; i++) die_check("/proc/self/exe", &die_cases[i]);
  if (device_cuda_count() == 0) {
    if (tu_failures) return TEST_RESULT("test_gpu_edge");
    printf("test_gpu_edge: failure messages checked; no CUDA device: skipped\n");
    return 77;
  }
  gemm_edges();
  alloc_refused();
  bf16_edges();
  return TEST_RESULT("test_gpu_edge");
#endif
}
