/* model/test_gpu_model.c: the transformer on the CUDA backend against the CPU backend.
 *
 * Part 1: one layer with its head, composed of the backend ops exactly as model/model.c
 * composes them (embedding, RMSNorm, q/k/v with bias, RoPE, packed causal GQA
 * attention, o_proj, residual, RMSNorm, SwiGLU MLP, residual, tied lm_head,
 * logprob + entropy), forward and backward through backend_ops' memory functions;
 * compares logprobs, entropies and every parameter gradient.
 * Part 2: the whole model (model/model.c) built once with cpu_backend and once with
 * cuda_backend on the same host weights: model_forward (logprob, entropy, value)
 * and model_backward (two accumulated micro-batches) on a ragged packed batch, in
 * a tied/bias config and an untied value-head config with small logit chunks, and
 * model_forward_kv (a prefill then a decode step through a host KV cache).
 * Tolerances (max |gpu - cpu| / max |cpu| per tensor): forward outputs and logits
 * 1e-5; gradients 1e-4 (per-op differences of ~1e-6 compound through ~30 ops of
 * the backward per layer).
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "gpu_main.h"
#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include "gpu_layer.h"
#include "kernels/cuda_backend.h"
#include "model/model.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */

static const int seqlen[3] = {5, 23, 40};
/* ragged packed batch, GQA 2:1, head size 16, a vocabulary that is no power of two */
static const struct layer_dims dims = {.nseq = 3, .C = 64, .H = 4, .KVH = 2, .D = 16, .F = 96,
                                       .V = 211, .maxpos = 64, .seqlen = seqlen};

static int layer_check(void) {
  struct host_inputs in;
  inputs_make(&in, &dims);
  struct net cn, gn;
  net_build(&cn, &cpu_backend, &dims, &in);
  net_build(&gn, &cuda_backend, &dims, &in);
  net_forward(&cn);
  net_forward(&gn);
  net_backward(&cn);
  net_backward(&gn);
  size_t na = cn.aoff[A_COUNT], np = cn.poff[GL_COUNT];
  float *ga = malloc(4 * na), *gg = malloc(4 * np);
  gl_mem_get(gn.o, ga, gn.act, 4 * na);
  gl_mem_get(gn.o, gg, gn.grad, 4 * np);
  int T = in.T;
  double e;
  e = tu_rel_err(ga + cn.aoff[A_LP], AC(&cn, A_LP), T);
  CHECK_MSG(e <= 1e-5, "logprob: relative error %.3g", e);
  e = tu_rel_err(ga + cn.aoff[A_ENT], AC(&cn, A_ENT), T);
  CHECK_MSG(e <= 1e-5, "entropy: relative error %.3g", e);
  e = tu_rel_err(ga + cn.aoff[A_Y], AC(&cn, A_Y), (size_t)T * dims.C);
  CHECK_MSG(e <= 1e-5, "layer output: relative error %.3g", e);
  for (int p = 0; p < GL_COUNT; p++) {
    e = tu_rel_err(gg + cn.poff[p], GP(&cn, p), gl_psize(&dims, p));
    printf("grad %-6s relative error %.3g\n", gl_pname[p], e);
    CHECK_MSG(e <= 1e-4, "grad %s: relative error %.3g", gl_pname[p], e);
  }
  free(ga);
  free(gg);
  net_free(&cn);
  net_free(&gn);
  inputs_free(&in);
  return 0;
}

/* ---- whole model ------------------------------------------------------------- */

static const int mseq[4] = {5, 23, 1, 40}; /* ragged, a one-token sequence included */
#define MSEQ 4
#define MTOK 69

/* deterministic values in [-a, a] */
static void fill_uniform(float *x, size_t n, double a, uint32_t seed) {
  uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)(a * (2.0 * (double)(s >> 11) / 9007199254740992.0 - 1.0));
  }
}

/* Per tensor of the table: relative error of the GPU model's host gradients. */
static void grads_check(const struct model *cm, const struct model *gm, const char *what) {
  double worst = 0;
  for (int i = 0; i < cm->table.n; i++) {
    const struct param_entry *e = &cm->table.e[i];
    double r = tu_rel_err(gm->grads + e->offset, cm->grads + e->offset, e->numel);
    worst = r > worst ? r : worst;
    CHECK_MSG(r <= 1e-4, "%s: grad %s relative error %.3g", what, e->name, r);
  }
  printf("%s: worst gradient relative error %.3g over %d tensors\n", what, worst, cm->table.n);
}

/* model_forward + two accumulated model_backward calls on both backends. */
static void model_check(const struct model_config *mc, int chunk, const char *what) {
  struct model cm, gm;
  CHECK(model_create(&cm, mc, MTOK, &cpu_backend) == 0);
  CHECK(model_create(&gm, mc, MTOK, &cuda_backend) == 0);
  cm.logit_chunk = gm.logit_chunk = chunk;
  model_init_params(&cm, 7);
  /* biases and norms off their zero/one init, so every gradient path carries signal */
  float *noise = malloc(sizeof(float) * cm.table.total);
  fill_uniform(noise, cm.table.total, 0.02, 1);
  for (size_t i = 0; i < cm.table.total; i++) cm.params[i] += noise[i];
  memcpy(gm.params, cm.params, sizeof(float) * cm.table.total); /* host mirror */
  int tok[MTOK], cu[MSEQ + 1] = {0};
  for (int s = 0; s < MSEQ; s++) cu[s + 1] = cu[s] + mseq[s];
  for (int t = 0; t < MTOK; t++) tok[t] = (t * 37 + 11) % mc->vocab_size;
  float out[2][3][MTOK], d[3][MTOK];
  fill_uniform(&d[0][0], 3 * MTOK, 1.0, 2);
  struct model *mm[2] = {&cm, &gm};
  for (int b = 0; b < 2; b++) {
    struct model *m = mm[b];
    model_zero_grad(m);
    CHECK(model_forward(m, tok, cu, MSEQ, out[b][0], out[b][1], out[b][2]) == 0);
    model_backward(m, d[0], d[1], mc->value_head ? d[2] : NULL);
    /* a second micro-batch (the first two sequences) accumulates */
    CHECK(model_forward(m, tok, cu, 2, NULL, NULL, NULL) == 0);
    model_backward(m, d[0], NULL, NULL);
  }
  static const char *const oname[3] = {"logprob", "entropy", "value"};
  for (int k = 0; k < (mc->value_head ? 3 : 2); k++) {
    double e = tu_rel_err(out[1][k], out[0][k], MTOK);
    printf("%s: %s relative error %.3g\n", what, oname[k], e);
    CHECK_MSG(e <= 1e-5, "%s: %s relative error %.3g", what, oname[k], e);
  }
  grads_check(&cm, &gm, what);
  free(noise);
  model_free(&cm);
  model_free(&gm);
}

/* A host KV cache for model_forward_kv: cache[layer][seq][pos][kv_dim], K then V. */
struct kv_host_cache {
  int layers, kvd, max_seq;
  const int *pos0;
  float *k, *v, *kc, *vc;
};

static int kvh_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                        const float *v_new, const float **k_ctx, const float **v_ctx) {
  struct kv_host_cache *c = ctx;
  size_t kvd = (size_t)c->kvd;
  for (int s = 0; s < b->nseq; s++) {
    size_t base = ((size_t)layer * MSEQ + s) * c->max_seq * kvd;
    int n = b->cu_q[s + 1] - b->cu_q[s], ctx_len = b->cu_kv[s + 1] - b->cu_kv[s];
    memcpy(c->k + base + c->pos0[s] * kvd, k_new + b->cu_q[s] * kvd, sizeof(float) * n * kvd);
    memcpy(c->v + base + c->pos0[s] * kvd, v_new + b->cu_q[s] * kvd, sizeof(float) * n * kvd);
    memcpy(c->kc + b->cu_kv[s] * kvd, c->k + base, sizeof(float) * ctx_len * kvd);
    memcpy(c->vc + b->cu_kv[s] * kvd, c->v + base, sizeof(float) * ctx_len * kvd);
  }
  *k_ctx = c->kc;
  *v_ctx = c->vc;
  return 0;
}

/* Prefill of three prompts (all logits) then one decode token each (last logits). */
static void kv_check(const struct model_config *mc) {
  struct model m[2];
  CHECK(model_create(&m[0], mc, MTOK, &cpu_backend) == 0);
  CHECK(model_create(&m[1], mc, MTOK, &cuda_backend) == 0);
  model_init_params(&m[0], 11);
  memcpy(m[1].params, m[0].params, sizeof(float) * m[0].table.total);
  const int plen[3] = {7, 12, 1}, V = mc->vocab_size;
  int tok[32], cu[4] = {0}, pos0[3] = {0, 0, 0}, dtok[3] = {3, 5, 8}, dcu[4] = {0, 1, 2, 3};
  for (int s = 0; s < 3; s++) cu[s + 1] = cu[s] + plen[s];
  for (int t = 0; t < cu[3]; t++) tok[t] = (t * 13 + 5) % V;
  float *lg[2][2];
  for (int b = 0; b < 2; b++) {
    size_t kvd = (size_t)mc->kv_heads * (mc->dim / mc->heads);
    size_t cache = (size_t)mc->layers * MSEQ * mc->max_seq * kvd;
    struct kv_host_cache c = {.layers = mc->layers, .kvd = (int)kvd, .max_seq = mc->max_seq,
                              .pos0 = pos0, .k = calloc(cache, 4), .v = calloc(cache, 4),
                              .kc = calloc(3 * mc->max_seq * kvd, 4),
                              .vc = calloc(3 * mc->max_seq * kvd, 4)};
    struct model_kv_io io = {.ctx = &c, .exchange = kvh_exchange};
    lg[b][0] = malloc(sizeof(float) * cu[3] * V);
    lg[b][1] = malloc(sizeof(float) * 3 * V);
    int p0[3] = {0, 0, 0};
    c.pos0 = p0;
    CHECK(model_forward_kv(&m[b], tok, cu, p0, 3, &io, 1, lg[b][0]) == 0);
    for (int s = 0; s < 3; s++) p0[s] = plen[s];
    CHECK(model_forward_kv(&m[b], dtok, dcu, p0, 3, &io, 0, lg[b][1]) == 0);
    free(c.k); free(c.v); free(c.kc); free(c.vc);
  }
  double e0 = tu_rel_err(lg[1][0], lg[0][0], (size_t)cu[3] * V);
  double e1 = tu_rel_err(lg[1][1], lg[0][1], (size_t)3 * V);
  printf("kv path: prefill logits relative error %.3g, decode %.3g\n", e0, e1);
  CHECK_MSG(e0 <= 1e-5 && e1 <= 1e-5, "kv path: logits relative error %.3g / %.3g", e0, e1);
  for (int b = 0; b < 2; b++) { free(lg[b][0]); free(lg[b][1]); model_free(&m[b]); }
}

static int run_all(void) {
  layer_check();
  struct model_config a = {.vocab_size = 211, .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2,
                           .ffn_dim = 96, .max_seq = 48, .rope_theta = 10000.0, .norm_eps = 1e-5,
                           .init_std = 0.1, .tie_embeddings = 1, .qkv_bias = 1, .value_head = 0};
  model_check(&a, MODEL_LOGIT_CHUNK, "model tied+bias");
  struct model_config b = a;
  b.tie_embeddings = 0, b.qkv_bias = 0, b.value_head = 1, b.heads = 2, b.kv_heads = 1;
  model_check(&b, 16, "model untied+value, chunk 16");
  kv_check(&a);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_model");
}
#endif

GPU_TEST_MAIN("test_gpu_model", run_all)
