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
 *              and the bf16 peak (model FLOPs: 6 N T + causal attention 6 L H D sum len^2);
 *   model:     what `rlpt run` does on the GPU, for the SmolLM2-135M shape and a ~1B
 *              shape (dim 2048, 16 layers, 16/8 heads, ffn 5632, vocab 32000): one
 *              training step of model/model.c (model_forward + model_backward on 4 x 1024
 *              tokens, with its host<->device copies of weights and gradients) as
 *              tokens/s and MFU against the bf16 peak, and the same step with [model]
 *              dtype = bf16 (cuda_backend_bf16); the rollout engine (rollout/engine.c,
 *              KV cache, sampling) at 64 sequences (8 prompts x 8 samples) and at 1,
 *              32-token prompts, as generated tokens/s; batch 1 against the memory-
 *              bandwidth bound (every weight read once per token: HBM bytes/s over the
 *              weight bytes, for the fp32 weights this build streams and for bf16).
 *              One "bench table" line per shape for jobscripts/device-check.sh.
 * Peaks and HBM bandwidths come from a small table of data-sheet figures by device
 * name (n/a for another chip). Skips (exit 77) without the CUDA backend or without a
 * device. `bench_gpu --quick`: only the model part, on two tiny shapes and 4 x 64
 * tokens, to check the benchmark itself (e.g. under kernels/emu, where a real shape
 * would take hours). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include <cuda_runtime.h>

#include "bench_prompts.h"
#include "deck/config.h"
#include "gpu_layer.h"
#include "kernels/cuda_backend.h"
#include "model/model.h"
#include "rollout/engine.h"

struct peak {
  double bf16_tflops, fp32_tflops, hbm_tbps;
};

/* Dense peaks and HBM bandwidth from the vendor data sheets; 0 when the chip is unknown. */
static struct peak peak_for(const char *name) {
  if (strstr(name, "H200")) return (struct peak){.bf16_tflops = 989.4, .fp32_tflops = 66.9, .hbm_tbps = 4.8};
  if (strstr(name, "H100") && strstr(name, "PCIe")) return (struct peak){.bf16_tflops = 756.0, .fp32_tflops = 51.2, .hbm_tbps = 2.0};
  if (strstr(name, "H100")) return (struct peak){.bf16_tflops = 989.4, .fp32_tflops = 66.9, .hbm_tbps = 3.35}; /* SXM */
  if (strstr(name, "A100")) return (struct peak){.bf16_tflops = 312.0, .fp32_tflops = 19.5, .hbm_tbps = 2.0};
  if (strstr(name, "L40S")) return (struct peak){.bf16_tflops = 362.0, .fp32_tflops = 91.6, .hbm_tbps = 0.864};
  return (struct peak){.bf16_tflops = 0};
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
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
      struct gemm_arg g = {.n = n, .bf16 = bf, .A = cuda_backend.alloc(el * esz),
                           .B = cuda_backend.alloc(el * esz), .C = cuda_backend.alloc(el * 4)};
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
  n->o->embed_fwd(AC(n, A_X), n->tok, WP(n, GL_EMB), n->T, n->d.C);
  for (int l = 0; l < LAYERS; l++) net_layer_forward(n); /* one layer's weights, reused */
  net_head_forward(n);
  net_head_backward(n);
  for (int l = 0; l < LAYERS; l++) net_layer_backward(n);
  n->o->embed_bwd(GP(n, GL_EMB), n->tok, AC(n, A_DY), n->T, n->d.C);
}

static void bench_model(const struct peak *pk, int nseq, const int *lens, int step) {
  struct layer_dims d = {.nseq = nseq, .C = 576, .H = 9, .KVH = 3, .D = 64, .F = 1536, .V = 49152,
                         .maxpos = 2048, .seqlen = lens};
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
    struct attn_arg fa = {.n = &n, .bwd = 0}, ba = {.n = &n, .bwd = 1};
    double fms = time_ms(attn_call, &fa, 10), bms = time_ms(attn_call, &ba, 10);
    printf("bench attention fwd T=%d (%d x %d): %8.3f ms  %6.1f TFLOP/s\n", n.T, nseq, lens[0],
           fms, att_fwd / (fms * 1e9));
    printf("bench attention bwd T=%d (%d x %d): %8.3f ms  %6.1f TFLOP/s\n", n.T, nseq, lens[0],
           bms, 2.5 * att_fwd / (bms * 1e9));
  } else {
    double N = 0;
    for (int p = GL_N1; p < GL_COUNT; p++) N += (double)gl_psize(&d, p);
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

/* ---- the whole model and the rollout engine ------------------------------------ */

enum { TRAIN_SEQS = 4, PROMPT = 32, NEW_TOKENS = 32, GROUP = 8 };

/* The shape (quick: a tiny one of the same kind, tied or not) and its training tokens per
 * sequence. */
static struct model_config shape_get(int big, int quick, int *train_len) {
  *train_len = quick ? 64 : 1024;
  if (quick)
    return (struct model_config){.vocab_size = 211, .dim = 64, .layers = 2, .heads = 4,
                                 .kv_heads = 2, .ffn_dim = 96, .tie_embeddings = !big,
                                 .max_seq = 2048, .head_dim = 16, .rope_theta = 10000.0,
                                 .norm_eps = 1e-5, .init_std = 0.02};
  struct model_config mc = big
    ? (struct model_config){.vocab_size = 32000, .dim = 2048, .layers = 16, .heads = 16,
                            .kv_heads = 8, .ffn_dim = 5632, .tie_embeddings = 0}
    : (struct model_config){.vocab_size = 49152, .dim = 576, .layers = 30, .heads = 9,
                            .kv_heads = 3, .ffn_dim = 1536, .tie_embeddings = 1};
  mc.max_seq = 2048;
  mc.head_dim = mc.dim / mc.heads;
  mc.rope_theta = 10000.0;
  mc.norm_eps = 1e-5;
  mc.init_std = 0.02;
  return mc;
}

/* Uniform values in [-0.03, 0.03] (norm weights too: only the timing matters), fast
 * enough for a billion parameters. */
static void params_fill(float *p, size_t n) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (float)((double)(x >> 11) * (0.06 / 9007199254740992.0) - 0.03);
  }
}

struct model_figs {
  double params, train_tps, train_mfu, xfer_s, roll_tps, dec_tps, bound_fp32, bound_bf16;
  double train16_tps, train16_mfu; /* the training step with [model] dtype = bf16 */
};

/* Seconds per training step (forward + backward of TRAIN_SEQS x TRAIN_LEN tokens),
 * best of 2 after one warm-up step; -1 on failure. */
static double train_step_s(struct model *m, int vocab, int len) {
  int T = TRAIN_SEQS * len, cu[TRAIN_SEQS + 1];
  int *tok = malloc(sizeof(int) * T);
  float *lp = malloc(sizeof(float) * T), *ent = malloc(sizeof(float) * T);
  float *dlp = malloc(sizeof(float) * T), *dent = malloc(sizeof(float) * T);
  double best = -1;
  for (int s = 0; s <= TRAIN_SEQS; s++) cu[s] = s * len;
  for (int t = 0; tok && dlp && dent && t < T; t++) {
    tok[t] = (int)((1103515245u * (unsigned)t + 12345u) % (unsigned)vocab);
    dlp[t] = 1.0f / T;
    dent[t] = 0.01f / T;
  }
  m->exact = 0; /* a training pass: the plain matmul */
  for (int rep = 0; tok && lp && ent && dlp && dent && rep < 3; rep++) {
    double t0 = now_s();
    model_zero_grad(m);
    if (model_forward(m, tok, cu, TRAIN_SEQS, lp, ent, NULL)) break;
    model_backward(m, dlp, dent, NULL);
    double dt = now_s() - t0;
    if (rep > 0 && (best < 0 || dt < best)) best = dt;
  }
  m->exact = 1;
  free(tok), free(lp), free(ent), free(dlp), free(dent);
  return best;
}

/* Generated tokens/s of the rollout engine with B sequences at a time (B = 1: one
 * prompt, one sample; else B / GROUP prompts x GROUP samples); -1 on failure. */
static double rollout_tps(struct model *m, int B) {
  int n_prompts = B > GROUP ? B / GROUP : 1, G = B > GROUP ? GROUP : B;
  struct config cfg;
  bench_rollout_config(&cfg, m, B, NEW_TOKENS, B, PROMPT, 4);
  int tok[8 * PROMPT];
  struct rollout_prompt p[8];
  bench_prompts_fill(tok, p, n_prompts, PROMPT, m->cfg.vocab_size);
  struct rollout_engine *re = NULL;
  struct sample_batch b;
  sample_batch_init(&b);
  char err[512] = "";
  double tps = -1;
  if (rollout_create(&re, m, &cfg, NULL, err, sizeof err) == 0) {
    double t0 = now_s();
    if (rollout_generate(re, p, n_prompts, G, 0, 0, &b, NULL, err, sizeof err) == 0)
      tps = (double)sample_batch_resp_tokens(&b) / (now_s() - t0);
  }
  if (tps < 0) printf("bench rollout: %s\n", err);
  rollout_free(re);
  sample_batch_free(&b);
  return tps;
}

/* "n/a" for a figure that could not be measured or has no reference. */
static const char *fmt(char *buf, size_t n, const char *f, double x) {
  if (x < 0) snprintf(buf, n, "n/a");
  else snprintf(buf, n, f, x);
  return buf;
}

/* The training step again on cuda_backend_bf16 ([model] dtype = bf16: bf16 GEMM inputs,
 * fp32 accumulation), the same tokens and FLOPs: tok/s and MFU into f. */
static void bench_train_bf16(const struct peak *pk, const char *name,
                             const struct model_config *mc, int len, double flops,
                             struct model_figs *f) {
  struct model m;
  f->train16_tps = f->train16_mfu = -1;
  if (model_create(&m, mc, TRAIN_SEQS * len, &cuda_backend_bf16)) {
    printf("bench model %s train bf16: out of memory\n", name);
    return;
  }
  params_fill(m.params, m.table.total);
  double st = train_step_s(&m, mc->vocab_size, len);
  if (st > 0) {
    f->train16_tps = TRAIN_SEQS * len / st;
    f->train16_mfu = pk->bf16_tflops > 0 ? 100.0 * flops / st / (pk->bf16_tflops * 1e12) : -1;
    char mfu[32];
    printf("bench model %s train bf16: %.3f s/step, %.0f tok/s, %.1f TFLOP/s, MFU %s %% of bf16 "
           "peak\n", name, st, f->train16_tps, flops / st / 1e12,
           fmt(mfu, sizeof mfu, "%.2f", f->train16_mfu));
  }
  model_free(&m);
}

static void bench_whole_model(const struct peak *pk, int big, int quick, struct model_figs *f) {
  const char *name = big ? "1B" : "SmolLM2-135M";
  int len;
  struct model_config mc = shape_get(big, quick, &len);
  struct model m;
  memset(f, 0, sizeof *f);
  f->train_tps = f->roll_tps = f->dec_tps = f->train16_tps = f->train16_mfu = -1;
  if (model_create(&m, &mc, TRAIN_SEQS * len, &cuda_backend)) {
    printf("bench model %s: out of memory\n", name);
    return;
  }
  params_fill(m.params, m.table.total);
  int V = mc.vocab_size, C = mc.dim, L = mc.layers, H = mc.heads, D = mc.dim / mc.heads;
  f->params = (double)m.table.total;
  /* matmul weights: all but an untied embedding table (gathered, not multiplied) */
  double N = f->params - (mc.tie_embeddings ? 0.0 : (double)V * C);
  double T = TRAIN_SEQS * len, sumsq = TRAIN_SEQS * (double)len * len;
  double flops = 6.0 * N * T + 3.0 * L * (2.0 * H * D * sumsq);
  double t0 = now_s();
  cuda_backend.upload(m.weights.dev, m.params, sizeof(float) * m.table.total);
  cuda_backend.download(m.grads, m.dgrads, sizeof(float) * m.table.total);
  f->xfer_s = now_s() - t0;
  double st = train_step_s(&m, V, len);
  if (st > 0) {
    f->train_tps = T / st;
    f->train_mfu = pk->bf16_tflops > 0 ? 100.0 * flops / st / (pk->bf16_tflops * 1e12) : -1;
    char mfu[32];
    printf("bench model %s train: %.1fM params, %d x %d tokens: %.3f s/step (of which %.3f s "
           "weights up + gradients down), %.0f tok/s, %.1f TFLOP/s, MFU %s %% of bf16 peak\n",
           name, f->params / 1e6, TRAIN_SEQS, len, st, f->xfer_s, f->train_tps,
           flops / st / 1e12, fmt(mfu, sizeof mfu, "%.2f", f->train_mfu));
  }
  f->roll_tps = rollout_tps(&m, 64);
  f->dec_tps = rollout_tps(&m, 1);
  double bw = pk->hbm_tbps * 1e12;
  f->bound_fp32 = bw > 0 ? bw / (4.0 * N) : -1;
  f->bound_bf16 = bw > 0 ? bw / (2.0 * N) : -1;
  char b32[32], b16[32];
  printf("bench model %s rollout: %.1f tok/s at 64 sequences, %.1f tok/s at batch 1 (prompt %d, "
         "%d new); batch-1 bound %s tok/s fp32 weights, %s bf16 (HBM %.2f TB/s)\n", name,
         f->roll_tps, f->dec_tps, PROMPT, NEW_TOKENS, fmt(b32, sizeof b32, "%.0f", f->bound_fp32),
         fmt(b16, sizeof b16, "%.0f", f->bound_bf16), pk->hbm_tbps);
  model_free(&m);
  bench_train_bf16(pk, name, &mc, len, flops, f);
}

static void table_print(const struct model_figs *f, const char *const *names, int n) {
  printf("bench table %-13s %7s %11s %9s %16s %13s %12s %17s %10s\n", "shape", "params",
         "train tok/s", "MFU bf16", "dtype=bf16 train", "rollout tok/s", "decode tok/s",
         "B=1 bound bf16", "dec/bound");
  printf("bench table %-13s %7s %11s %9s %16s %13s %12s %17s %10s\n", "", "", "(4x1024)", "(%)",
         "tok/s (MFU %)", "(64 seqs)", "(batch 1)", "(fp32) tok/s", "(bf16)");
  for (int i = 0; i < n; i++) {
    char a[32], b[32], c[32], d[32], e[32], g[32], h[80], t16[80];
    snprintf(h, sizeof h, "%s (%s)", fmt(e, sizeof e, "%.0f", f[i].bound_bf16),
             fmt(g, sizeof g, "%.0f", f[i].bound_fp32));
    snprintf(t16, sizeof t16, "%s (%s)", fmt(e, sizeof e, "%.0f", f[i].train16_tps),
             fmt(g, sizeof g, "%.2f", f[i].train16_mfu));
    printf("bench table %-13s %6.1fM %11s %9s %16s %13s %12s %17s %10s\n", names[i],
           f[i].params / 1e6, fmt(a, sizeof a, "%.0f", f[i].train_tps),
           fmt(b, sizeof b, "%.2f", f[i].train_mfu), t16,
           fmt(c, sizeof c, "%.1f", f[i].roll_tps), fmt(d, sizeof d, "%.1f", f[i].dec_tps), h,
           fmt(e, sizeof e, "%.4f", f[i].dec_tps > 0 && f[i].bound_bf16 > 0
                                        ? f[i].dec_tps / f[i].bound_bf16 : -1));
  }
}

static int run_all(int quick) {
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  struct peak pk = peak_for(prop.name);
  printf("bench device %s, %d SMs, %.0f GiB; peaks bf16 %.0f / fp32 %.1f TFLOP/s, HBM %.2f TB/s%s\n",
         prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, pk.bf16_tflops,
         pk.fp32_tflops, pk.hbm_tbps, pk.bf16_tflops > 0 ? "" : " (unknown chip: MFU and bounds n/a)");
  const int att_lens[8] = {1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024};
  if (!quick) {
    bench_gemm(&pk);
    bench_model(&pk, 8, att_lens, 0);
    bench_model(&pk, 4, att_lens, 1);
  }
  struct model_figs f[2];
  const char *names[2] = {"SmolLM2-135M", "1B"};
  for (int big = 0; big < 2; big++) {
    bench_whole_model(&pk, big, quick, &f[big]);
    fflush(stdout);
  }
  table_print(f, names, 2);
  cuda_gemm_release();
  return 0;
}
#endif

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
#ifndef RLPT_HAVE_CUDA
  (void)quick;
  printf("bench_gpu: CUDA backend not built: skipped\n");
  return 77;
#else
  if (device_cuda_count() == 0) {
    printf("bench_gpu: no CUDA device: skipped\n");
    return 77;
  }
  return run_all(quick);
#endif
}
