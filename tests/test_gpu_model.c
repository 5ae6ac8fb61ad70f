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
#include "testutil.h"

#ifdef RLPT_HAVE_CUDA
#include "cuda_backend.h"

enum { NSEQ = 3, C = 64, H = 4, KVH = 2, D = 16, KV = KVH * D, F = 96, V = 211, MAXPOS = 64 };
static const int seqlen[NSEQ] = {5, 23, 40};

/* Parameter tensors, laid out one after the other in one flat buffer. */
enum { P_EMB, P_N1, P_WQ, P_BQ, P_WK, P_BK, P_WV, P_BV, P_WO, P_N2, P_WG, P_WU, P_WD, P_COUNT };
static const char *pname[P_COUNT] = {"embed", "norm1", "wq", "bq", "wk", "bk", "wv",
                                     "bv", "wo", "norm2", "wgate", "wup", "wdown"};
static const size_t psize[P_COUNT] = {(size_t)V * C, C, (size_t)C * C, C, (size_t)KV * C, KV,
                                      (size_t)KV * C, KV, (size_t)C * C, C, (size_t)F * C,
                                      (size_t)F * C, (size_t)C * F};

/* Activations, also one flat buffer ([T, width] each). */
enum { A_X, A_XN, A_R1, A_Q, A_K, A_V, A_ATT, A_LSE, A_MID, A_XN2, A_R2, A_GATE, A_UP, A_H, A_Y,
       A_LOGITS, A_LP, A_ENT, A_LSEO, A_DY, A_DGATE, A_DUP, A_DXN, A_DATT, A_DQ, A_DK, A_DV,
       A_COUNT };
static const int awidth[A_COUNT] = {C, C, 1, C, KV, KV, C, H, C, C, 1, F, F, F, C,
                                    V, 1, 1, 1, C, F, F, C, C, C, KV, KV};

static void *mem_new(const struct backend_ops *o, const void *host, size_t bytes) {
  void *p = o->alloc ? o->alloc(bytes) : calloc(1, bytes);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes on %s)\n", bytes, o->name);
    exit(1);
  }
  if (host) {
    if (o->upload) o->upload(p, host, bytes);
    else memcpy(p, host, bytes);
  }
  return p;
}

static void mem_get(const struct backend_ops *o, void *host, const void *p, size_t bytes) {
  if (o->download) o->download(host, p, bytes);
  else memcpy(host, p, bytes);
}

static void mem_del(const struct backend_ops *o, void *p) {
  if (o->free) o->free(p);
  else free(p);
}

/* Everything one backend needs, in that backend's memory. */
struct net {
  const struct backend_ops *o;
  float *par, *grad, *act, *rope_cos, *rope_sin, *dlp, *dent, *scratch;
  int *tok, *pos, *tg, *cu;
  size_t poff[P_COUNT + 1], aoff[A_COUNT + 1];
  int T, maxlen;
};

struct host_inputs {
  float *par, *rope_cos, *rope_sin, *dlp, *dent;
  int *tok, *pos, *tg, *cu;
  int T, maxlen;
};

#define WP(n, p) ((n)->par + (n)->poff[p])
#define GP(n, p) ((n)->grad + (n)->poff[p])
#define AC(n, a) ((n)->act + (n)->aoff[a])

static void net_build(struct net *n, const struct backend_ops *o, const struct host_inputs *in) {
  memset(n, 0, sizeof *n);
  n->o = o;
  n->T = in->T;
  n->maxlen = in->maxlen;
  for (int p = 0; p < P_COUNT; p++) n->poff[p + 1] = n->poff[p] + psize[p];
  for (int a = 0; a < A_COUNT; a++) n->aoff[a + 1] = n->aoff[a] + (size_t)in->T * awidth[a];
  size_t T = (size_t)in->T, half = D / 2;
  n->par = mem_new(o, in->par, 4 * n->poff[P_COUNT]);
  n->grad = mem_new(o, NULL, 4 * n->poff[P_COUNT]);
  n->act = mem_new(o, NULL, 4 * n->aoff[A_COUNT]);
  n->rope_cos = mem_new(o, in->rope_cos, 4 * MAXPOS * half);
  n->rope_sin = mem_new(o, in->rope_sin, 4 * MAXPOS * half);
  n->dlp = mem_new(o, in->dlp, 4 * T);
  n->dent = mem_new(o, in->dent, 4 * T);
  n->scratch = mem_new(o, NULL, 4 * attn_scratch_floats(in->maxlen, in->maxlen));
  n->tok = mem_new(o, in->tok, sizeof(int) * T);
  n->pos = mem_new(o, in->pos, sizeof(int) * T);
  n->tg = mem_new(o, in->tg, sizeof(int) * T);
  n->cu = mem_new(o, in->cu, sizeof(int) * (NSEQ + 1));
}

static void net_free(struct net *n) {
  void *bufs[] = {n->par, n->grad, n->act, n->rope_cos, n->rope_sin, n->dlp, n->dent, n->scratch,
                  n->tok, n->pos, n->tg, n->cu};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) mem_del(n->o, bufs[i]);
}

/* y[T, out] = x[T, in] W^T (+ b) */
static void lin_fwd(const struct net *n, float *y, const float *x, const float *w, const float *b,
                    int out, int in) {
  n->o->matmul(0, 1, n->T, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  if (b) n->o->bias_add(y, b, n->T, out);
}

/* dx (+)= dy W; dW += dy^T x; db += colsum dy */
static void lin_bwd(const struct net *n, float *dx, float *dw, float *db, const float *dy,
                    const float *x, const float *w, int out, int in, float beta) {
  n->o->matmul(0, 0, n->T, in, out, 1.0f, dy, out, w, in, beta, dx, in);
  n->o->matmul(1, 0, out, in, n->T, 1.0f, dy, out, x, in, 1.0f, dw, in);
  if (db) n->o->bias_bwd(db, dy, n->T, out);
}

static void net_forward(struct net *n) {
  const struct backend_ops *o = n->o;
  int T = n->T;
  struct attn_batch b = {NSEQ, n->cu, n->cu, n->maxlen, n->maxlen};
  o->embed_fwd(AC(n, A_X), n->tok, WP(n, P_EMB), T, C);
  o->rmsnorm_fwd(AC(n, A_XN), AC(n, A_R1), AC(n, A_X), WP(n, P_N1), T, C, 1e-5f);
  lin_fwd(n, AC(n, A_Q), AC(n, A_XN), WP(n, P_WQ), WP(n, P_BQ), C, C);
  lin_fwd(n, AC(n, A_K), AC(n, A_XN), WP(n, P_WK), WP(n, P_BK), KV, C);
  lin_fwd(n, AC(n, A_V), AC(n, A_XN), WP(n, P_WV), WP(n, P_BV), KV, C);
  o->rope(AC(n, A_Q), n->pos, n->rope_cos, n->rope_sin, T, H, D, 0);
  o->rope(AC(n, A_K), n->pos, n->rope_cos, n->rope_sin, T, KVH, D, 0);
  o->attention_fwd(AC(n, A_ATT), AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, H, KVH, D,
                   1.0f / sqrtf((float)D), n->scratch);
  lin_fwd(n, AC(n, A_MID), AC(n, A_ATT), WP(n, P_WO), NULL, C, C);
  o->add(AC(n, A_MID), AC(n, A_X), (size_t)T * C);
  o->rmsnorm_fwd(AC(n, A_XN2), AC(n, A_R2), AC(n, A_MID), WP(n, P_N2), T, C, 1e-5f);
  lin_fwd(n, AC(n, A_GATE), AC(n, A_XN2), WP(n, P_WG), NULL, F, C);
  lin_fwd(n, AC(n, A_UP), AC(n, A_XN2), WP(n, P_WU), NULL, F, C);
  o->swiglu_fwd(AC(n, A_H), AC(n, A_GATE), AC(n, A_UP), (size_t)T * F);
  lin_fwd(n, AC(n, A_Y), AC(n, A_H), WP(n, P_WD), NULL, C, F);
  o->add(AC(n, A_Y), AC(n, A_MID), (size_t)T * C);
  lin_fwd(n, AC(n, A_LOGITS), AC(n, A_Y), WP(n, P_EMB), NULL, V, C); /* tied lm_head */
  o->logprob_fwd(AC(n, A_LP), AC(n, A_ENT), AC(n, A_LSEO), AC(n, A_LOGITS), n->tg, T, V);
}

/* Backward of L = sum dlp * logprob + dent * entropy (the order of model.c). */
static void net_backward(struct net *n) {
  const struct backend_ops *o = n->o;
  int T = n->T;
  struct attn_batch b = {NSEQ, n->cu, n->cu, n->maxlen, n->maxlen};
  float *dy = AC(n, A_DY);
  lin_fwd(n, AC(n, A_LOGITS), AC(n, A_Y), WP(n, P_EMB), NULL, V, C); /* recomputed */
  o->logprob_bwd(AC(n, A_LOGITS), AC(n, A_LSEO), AC(n, A_ENT), n->tg, n->dlp, n->dent, T, V);
  lin_bwd(n, dy, GP(n, P_EMB), NULL, AC(n, A_LOGITS), AC(n, A_Y), WP(n, P_EMB), V, C, 0.0f);
  /* MLP branch */
  o->matmul(0, 0, T, F, C, 1.0f, dy, C, WP(n, P_WD), F, 0.0f, AC(n, A_DGATE), F);
  o->swiglu_bwd(AC(n, A_DGATE), AC(n, A_DUP), AC(n, A_H), AC(n, A_DGATE), AC(n, A_GATE),
                AC(n, A_UP), (size_t)T * F);
  o->matmul(1, 0, C, F, T, 1.0f, dy, C, AC(n, A_H), F, 1.0f, GP(n, P_WD), F);
  lin_bwd(n, AC(n, A_DXN), GP(n, P_WG), NULL, AC(n, A_DGATE), AC(n, A_XN2), WP(n, P_WG), F, C,
          0.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, P_WU), NULL, AC(n, A_DUP), AC(n, A_XN2), WP(n, P_WU), F, C, 1.0f);
  o->rmsnorm_bwd(dy, GP(n, P_N2), AC(n, A_DXN), AC(n, A_MID), WP(n, P_N2), AC(n, A_R2), T, C);
  /* attention branch */
  lin_bwd(n, AC(n, A_DATT), GP(n, P_WO), NULL, dy, AC(n, A_ATT), WP(n, P_WO), C, C, 0.0f);
  o->attention_bwd(AC(n, A_DQ), AC(n, A_DK), AC(n, A_DV), AC(n, A_DATT), AC(n, A_ATT),
                   AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, H, KVH, D,
                   1.0f / sqrtf((float)D), n->scratch);
  o->rope(AC(n, A_DQ), n->pos, n->rope_cos, n->rope_sin, T, H, D, 1);
  o->rope(AC(n, A_DK), n->pos, n->rope_cos, n->rope_sin, T, KVH, D, 1);
  lin_bwd(n, AC(n, A_DXN), GP(n, P_WQ), GP(n, P_BQ), AC(n, A_DQ), AC(n, A_XN), WP(n, P_WQ), C, C,
          0.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, P_WK), GP(n, P_BK), AC(n, A_DK), AC(n, A_XN), WP(n, P_WK), KV, C,
          1.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, P_WV), GP(n, P_BV), AC(n, A_DV), AC(n, A_XN), WP(n, P_WV), KV, C,
          1.0f);
  o->rmsnorm_bwd(dy, GP(n, P_N1), AC(n, A_DXN), AC(n, A_X), WP(n, P_N1), AC(n, A_R1), T, C);
  o->embed_bwd(GP(n, P_EMB), n->tok, dy, T, C);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static void inputs_make(struct host_inputs *in) {
  size_t np = 0, half = D / 2;
  for (int p = 0; p < P_COUNT; p++) np += psize[p];
  int T = 0, maxlen = 0;
  for (int s = 0; s < NSEQ; s++) {
    T += seqlen[s];
    maxlen = seqlen[s] > maxlen ? seqlen[s] : maxlen;
  }
  in->T = T;
  in->maxlen = maxlen;
  in->par = malloc(4 * np);
  for (size_t i = 0; i < np; i++) in->par[i] = (float)(0.3 * (2 * urand() - 1));
  size_t n1 = psize[P_EMB], n2 = n1 + psize[P_N1] + psize[P_WQ] + psize[P_BQ] + psize[P_WK] +
                                 psize[P_BK] + psize[P_WV] + psize[P_BV] + psize[P_WO];
  for (int i = 0; i < C; i++) { /* norm weights near 1 */
    in->par[n1 + i] = (float)(1 + 0.2 * (2 * urand() - 1));
    in->par[n2 + i] = (float)(1 + 0.2 * (2 * urand() - 1));
  }
  in->rope_cos = malloc(4 * MAXPOS * half);
  in->rope_sin = malloc(4 * MAXPOS * half);
  for (int p = 0; p < MAXPOS; p++)
    for (size_t i = 0; i < half; i++) {
      double a = p * pow(10000.0, -2.0 * (double)i / D);
      in->rope_cos[p * half + i] = (float)cos(a);
      in->rope_sin[p * half + i] = (float)sin(a);
    }
  in->tok = malloc(sizeof(int) * T);
  in->pos = malloc(sizeof(int) * T);
  in->tg = malloc(sizeof(int) * T);
  in->cu = malloc(sizeof(int) * (NSEQ + 1));
  in->dlp = malloc(4 * T);
  in->dent = malloc(4 * T);
  in->cu[0] = 0;
  for (int s = 0; s < NSEQ; s++) in->cu[s + 1] = in->cu[s] + seqlen[s];
  for (int t = 0; t < T; t++) in->tok[t] = (int)(urand() * V);
  for (int s = 0; s < NSEQ; s++)
    for (int t = in->cu[s]; t < in->cu[s + 1]; t++) {
      in->pos[t] = t - in->cu[s];
      in->tg[t] = t + 1 < in->cu[s + 1] ? in->tok[t + 1] : -1;
    }
  for (int t = 0; t < T; t++) {
    in->dlp[t] = (float)(2 * urand() - 1);
    in->dent[t] = (float)(0.5 * (2 * urand() - 1));
  }
}

static void inputs_free(struct host_inputs *in) {
  free(in->par), free(in->rope_cos), free(in->rope_sin), free(in->dlp), free(in->dent);
  free(in->tok), free(in->pos), free(in->tg), free(in->cu);
}

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
  inputs_make(&in);
  struct net cn, gn;
  net_build(&cn, &cpu_backend, &in);
  net_build(&gn, &cuda_backend, &in);
  net_forward(&cn);
  net_forward(&gn);
  net_backward(&cn);
  net_backward(&gn);
  size_t na = cn.aoff[A_COUNT], np = cn.poff[P_COUNT];
  float *ga = malloc(4 * na), *gg = malloc(4 * np);
  mem_get(gn.o, ga, gn.act, 4 * na);
  mem_get(gn.o, gg, gn.grad, 4 * np);
  int T = in.T;
  double e;
  e = rel_err(ga + cn.aoff[A_LP], AC(&cn, A_LP), T);
  CHECK_MSG(e <= 1e-5, "logprob: relative error %.3g", e);
  e = rel_err(ga + cn.aoff[A_ENT], AC(&cn, A_ENT), T);
  CHECK_MSG(e <= 1e-5, "entropy: relative error %.3g", e);
  e = rel_err(ga + cn.aoff[A_Y], AC(&cn, A_Y), (size_t)T * C);
  CHECK_MSG(e <= 1e-5, "layer output: relative error %.3g", e);
  for (int p = 0; p < P_COUNT; p++) {
    e = rel_err(gg + cn.poff[p], GP(&cn, p), psize[p]);
    printf("grad %-6s relative error %.3g\n", pname[p], e);
    CHECK_MSG(e <= 1e-4, "grad %s: relative error %.3g", pname[p], e);
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
