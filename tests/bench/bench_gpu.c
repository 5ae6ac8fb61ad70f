/* bench_gpu.c: CUDA backend figures on the present GPU (label bench; prints,
 * never asserts a time). Lines start with "bench " for jobscripts/device-check.sh.
 *
 *   GEMM:      cuBLASLt bf16 (fp32 accumulate) and fp32 at square sizes, TFLOP/s and
 *              the fraction of the chip's dense peak (table by device name);
 *   attention: packed causal GQA forward and backward at the SmolLM2-135M head shape
 *              (9 heads, 3 kv heads, head size 64), 8 x 1024 tokens;
 *   step:      one training step (forward, backward) of the SmolLM2-135M shape built
 *              from the fp32 ops (30 layers of tests/gpu_layer.h, tied head over a
 *              49152 vocabulary) on 4 x 1024 tokens: tokens/s and MFU against the fp32
 *              and the bf16 peak (model FLOPs: 6 N T + causal attention 6 L H D sum len^2).
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <stdio.h>
#include <string.h>

#include "device.h"

#ifdef RLPT_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda_backend.h"
#include "gpu_layer.h"

struct peak {
  double bf16_tflops, fp32_tflops;
};

/* Dense peaks from the vendor data sheets (SXM parts); 0 when the chip is unknown. */
static struct peak peak_for(const char *name) {
  if (strstr(name, "H200") || strstr(name, "H100")) return (struct peak){989.4, 66.9};
  if (strstr(name, "A100")) return (struct peak){312.0, 19.5};
  if (strstr(name, "L40S")) return (struct peak){362.0, 91.6};
  return (struct peak){0, 0};
}

static double frac(double x, double peak) { return peak > 0 ? 100.0 * x / peak : 0.0; }

/* Milliseconds per call of fn(arg), after one warm-up call, over reps calls. */
static double time_ms(void (*fn)(void *), void *arg, int reps) {
  cudaEvent_t a, b;
  float ms = 0;
  fn(arg);
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, 0);
  for (int i = 0; i < reps; i++) fn(arg);
  cudaEventRecord(b, 0);
  cudaEventSynchronize(b);
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

struct gemm_arg {
  int n, bf16;
  void *A, *B;
  float *C;
};

static void gemm_call(void *p) {
  struct gemm_arg *g = p;
  if (g->bf16) cuda_matmul_bf16(0, 1, g->n, g->n, g->n, 1.0f, g->A, g->n, g->B, g->n, 0.0f, g->C,
                                g->n);
  else cuda_backend.matmul(0, 1, g->n, g->n, g->n, 1.0f, g->A, g->n, g->B, g->n, 0.0f, g->C, g->n);
}

static void bench_gemm(const struct peak *pk) {
  const int sizes[] = {2048, 4096, 8192};
  for (int bf = 1; bf >= 0; bf--)
    for (int i = 0; i < 3; i++) {
      int n = sizes[i];
      size_t el = (size_t)n * n, esz = bf ? 2 : 4;
      struct gemm_arg g = {n, bf, cuda_backend.alloc(el * esz), cuda_backend.alloc(el * esz),
                           cuda_backend.alloc(el * 4)};
      if (!g.A || !g.B || !g.C) {
        printf("bench gemm %d: out of device memory\n", n);
        return;
      }
      double ms = time_ms(gemm_call, &g, 10), tf = 2.0 * n * n * (double)n / (ms * 1e9);
      double pk_tf = bf ? pk->bf16_tflops : pk->fp32_tflops;
      printf("bench gemm %-4s %5d^3: %8.3f ms  %7.1f TFLOP/s  %5.1f %% of peak (%.0f)\n",
             bf ? "bf16" : "fp32", n, ms, tf, frac(tf, pk_tf), pk_tf);
      cuda_backend.free(g.A);
      cuda_backend.free(g.B);
      cuda_backend.free(g.C);
    }
}

struct attn_arg {
  struct net *n;
  int bwd;
};

static void attn_call(void *p) {
  struct attn_arg *a = p;
  struct net *n = a->n;
  struct attn_batch b = net_attn(n);
  float sc = 1.0f / sqrtf((float)n->d.D);
  if (!a->bwd)
    n->o->attention_fwd(AC(n, A_ATT), AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, n->d.H,
                        n->d.KVH, n->d.D, sc, n->scratch);
  else
    n->o->attention_bwd(AC(n, A_DQ), AC(n, A_DK), AC(n, A_DV), AC(n, A_DATT), AC(n, A_ATT),
                        AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, n->d.H, n->d.KVH,
                        n->d.D, sc, n->scratch);
}

enum { LAYERS = 30 };

static void step_call(void *p) {
  struct net *n = p;
  n->o->embed_fwd(AC(n, A_X), n->tok, WP(n, P_EMB), n->T, n->d.C);
  for (int l = 0; l < LAYERS; l++) net_layer_forward(n); /* one layer's weights, reused */
  net_head_forward(n);
  net_head_backward(n);
  for (int l = 0; l < LAYERS; l++) net_layer_backward(n);
  n->o->embed_bwd(GP(n, P_EMB), n->tok, AC(n, A_DY), n->T, n->d.C);
}

static void bench_model(const struct peak *pk, int nseq, const int *lens, int step) {
  struct layer_dims d = {nseq, 576, 9, 3, 64, 1536, 49152, 2048, lens};
  struct host_inputs in;
  struct net n;
  inputs_make(&in, &d);
  net_build(&n, &cuda_backend, &d, &in);
  double sumsq_len = 0;
  for (int s = 0; s < nseq; s++) sumsq_len += (double)lens[s] * lens[s];
  /* causal attention: QK^T and PV over half the square, 2 flops per multiply-add */
  double att_fwd = 2.0 * 2.0 * d.H * d.D * sumsq_len / 2.0;
  if (!step) {
    net_forward(&n); /* q, k, v, out, lse of real values */
    struct attn_arg fa = {&n, 0}, ba = {&n, 1};
    double fms = time_ms(attn_call, &fa, 10), bms = time_ms(attn_call, &ba, 10);
    printf("bench attention fwd T=%d (%d x %d): %8.3f ms  %6.1f TFLOP/s\n", n.T, nseq, lens[0],
           fms, att_fwd / (fms * 1e9));
    printf("bench attention bwd T=%d (%d x %d): %8.3f ms  %6.1f TFLOP/s\n", n.T, nseq, lens[0],
           bms, 2.5 * att_fwd / (bms * 1e9));
  } else {
    double N = 0;
    for (int p = P_N1; p < P_COUNT; p++) N += (double)gl_psize(&d, p);
    N = N * LAYERS + (double)d.V * d.C; /* + the tied lm_head matmul */
    double flops = 6.0 * N * n.T + 3.0 * att_fwd * LAYERS;
    double ms = time_ms(step_call, &n, 3), tf = flops / (ms * 1e9);
    printf("bench step SmolLM2-135M shape fp32 T=%d: %8.1f ms  %8.0f tok/s  %6.1f TFLOP/s  "
           "MFU %.1f %% of fp32 peak, %.1f %% of bf16 peak\n", n.T, ms, n.T / (ms * 1e-3), tf,
           frac(tf, pk->fp32_tflops), frac(tf, pk->bf16_tflops));
  }
  net_free(&n);
  inputs_free(&in);
}

static int run_all(void) {
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  struct peak pk = peak_for(prop.name);
  printf("bench device %s, %d SMs, %.0f GiB; peaks bf16 %.0f / fp32 %.1f TFLOP/s%s\n", prop.name,
         prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, pk.bf16_tflops,
         pk.fp32_tflops, pk.bf16_tflops > 0 ? "" : " (unknown chip: no MFU)");
  bench_gemm(&pk);
  const int att_lens[8] = {1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024};
  bench_model(&pk, 8, att_lens, 0);
  bench_model(&pk, 4, att_lens, 1);
  cuda_gemm_release();
  return 0;
}
#endif

int main(void) {
#ifndef RLPT_HAVE_CUDA
  printf("bench_gpu: CUDA backend not built: skipped\n");
  return 77;
#else
  if (device_cuda_count() == 0) {
    printf("bench_gpu: no CUDA device: skipped\n");
    return 77;
  }
  return run_all();
#endif
}
