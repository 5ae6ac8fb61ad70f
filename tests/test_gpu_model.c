/* test_gpu_model.c: a whole transformer layer with its head, composed of the
 * backend ops exactly as model.c composes them (embedding, RMSNorm, q/k/v with
 * bias, RoPE, packed causal GQA attention, o_proj, residual, RMSNorm, SwiGLU MLP,
 * residual, tied lm_head, logprob + entropy), forward and backward, run once on
 * the CPU backend and once on the CUDA backend from the same inputs.
 *
 * model.c allocates host memory itself today, so it cannot take the CUDA backend
 * yet; this test runs the same op sequence through backend_ops' memory functions
 * and compares logprobs, entropies and every parameter gradient.
 * Tolerances (max |gpu - cpu| / max |cpu| per tensor): forward 1e-5; gradients
 * 1e-4 (per-op differences of ~1e-6 compound through ~30 ops of the backward).
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "device.h"

#ifdef RLPT_HAVE_CUDA
#include "cuda_backend.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */
#include "gpu_layer.h"

static const int seqlen[3] = {5, 23, 40};
/* ragged packed batch, GQA 2:1, head size 16, a vocabulary that is no power of two */
static const struct layer_dims dims = {3, 64, 4, 2, 16, 96, 211, 64, seqlen};

static double rel_err(const float *a, const float *ref, size_t n) {
  double md = 0, mr = 0;
  for (size_t i = 0; i < n; i++) {
    double d = isnan(a[i]) || isnan(ref[i]) ? INFINITY : fabs((double)a[i] - ref[i]);
    md = d > md ? d : md;
    mr = fabs(ref[i]) > mr ? fabs(ref[i]) : mr;
  }
  return mr > 0 ? md / mr : md;
}

static int run_all(void) {
  struct host_inputs in;
  inputs_make(&in, &dims);
  struct net cn, gn;
  net_build(&cn, &cpu_backend, &dims, &in);
  net_build(&gn, &cuda_backend, &dims, &in);
  net_forward(&cn);
  net_forward(&gn);
  net_backward(&cn);
  net_backward(&gn);
  size_t na = cn.aoff[A_COUNT], np = cn.poff[P_COUNT];
  float *ga = malloc(4 * na), *gg = malloc(4 * np);
  gl_mem_get(gn.o, ga, gn.act, 4 * na);
  gl_mem_get(gn.o, gg, gn.grad, 4 * np);
  int T = in.T;
  double e;
  e = rel_err(ga + cn.aoff[A_LP], AC(&cn, A_LP), T);
  CHECK_MSG(e <= 1e-5, "logprob: relative error %.3g", e);
  e = rel_err(ga + cn.aoff[A_ENT], AC(&cn, A_ENT), T);
  CHECK_MSG(e <= 1e-5, "entropy: relative error %.3g", e);
  e = rel_err(ga + cn.aoff[A_Y], AC(&cn, A_Y), (size_t)T * dims.C);
  CHECK_MSG(e <= 1e-5, "layer output: relative error %.3g", e);
  for (int p = 0; p < P_COUNT; p++) {
    e = rel_err(gg + cn.poff[p], GP(&cn, p), gl_psize(&dims, p));
    printf("grad %-6s relative error %.3g\n", gl_pname[p], e);
    CHECK_MSG(e <= 1e-4, "grad %s: relative error %.3g", gl_pname[p], e);
  }
  free(ga);
  free(gg);
  net_free(&cn);
  net_free(&gn);
  inputs_free(&in);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_model");
}
#endif

int main(void) {
#ifndef RLPT_HAVE_CUDA
  printf("test_gpu_model: CUDA backend not built: skipped\n");
  return 77;
#else
  if (device_cuda_count() == 0) {
    printf("test_gpu_model: no CUDA device: skipped\n");
    return 77;
  }
  return run_all();
#endif
}
