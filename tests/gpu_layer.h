/* gpu_layer.h: one transformer layer with its head, composed of backend ops in
 * model/model.c's order, runnable on any backend_ops through the table's memory
 * functions (host memory when they are NULL). Shared by model/test_gpu_model.c (CPU vs
 * CUDA on the same inputs) and bench/bench_gpu.c (step time at a real shape).
 *
 * Forward: embedding, RMSNorm, q/k/v with bias, RoPE, packed causal GQA
 * attention, o_proj + residual, RMSNorm, SwiGLU MLP + residual, tied lm_head,
 * logprob + entropy. Backward of L = sum dlp * logprob + dent * entropy. */
#ifndef RLPT_TESTS_GPU_LAYER_H
#define RLPT_TESTS_GPU_LAYER_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"

struct layer_dims {
  int nseq, C, H, KVH, D, F, V, maxpos;
  const int *seqlen; /* [nseq] */
};

/* Parameter tensors, one after the other in one flat buffer. */
enum { GL_EMB, GL_N1, GL_WQ, GL_BQ, GL_WK, GL_BK, GL_WV, GL_BV, GL_WO, GL_N2, GL_WG, GL_WU, GL_WD, GL_COUNT };
static const char *const gl_pname[GL_COUNT] = {"embed", "norm1", "wq", "bq", "wk", "bk", "wv",
                                              "bv", "wo", "norm2", "wgate", "wup", "wdown"};

/* Activations, one flat buffer ([T, width] each). */
enum { A_X, A_XN, A_R1, A_Q, A_K, A_V, A_ATT, A_LSE, A_MID, A_XN2, A_R2, A_GATE, A_UP, A_H, A_Y,
       A_LOGITS, A_LP, A_ENT, A_LSEO, A_DY, A_DGATE, A_DUP, A_DXN, A_DATT, A_DQ, A_DK, A_DV,
       A_COUNT };

static inline size_t gl_psize(const struct layer_dims *d, int p) {
  size_t C = d->C, KV = (size_t)d->KVH * d->D, F = d->F, V = d->V;
  const size_t s[GL_COUNT] = {V * C, C, C * C, C, KV * C, KV, KV * C, KV, C * C, C, F * C, F * C,
                             C * F};
  return s[p];
}

static inline int gl_awidth(const struct layer_dims *d, int a) {
  int C = d->C, KV = d->KVH * d->D, F = d->F;
  const int w[A_COUNT] = {C, C, 1, C, KV, KV, C, d->H, C, C, 1, F, F, F, C,
                          d->V, 1, 1, 1, C, F, F, C, C, C, KV, KV};
  return w[a];
}

/* Host inputs: parameters, RoPE tables, tokens, positions, targets, offsets, loss weights. */
struct host_inputs {
  float *par, *rope_cos, *rope_sin, *dlp, *dent;
  int *tok, *pos, *tg, *cu;
  int T, maxlen;
};

/* Everything one backend needs, in that backend's memory. */
struct net {
  const struct backend_ops *o;
  struct layer_dims d;
  float *par, *grad, *act, *rope_cos, *rope_sin, *dlp, *dent, *scratch;
  int *tok, *pos, *tg, *cu;
  size_t poff[GL_COUNT + 1], aoff[A_COUNT + 1];
  int T, maxlen;
};

#define WP(n, p) ((n)->par + (n)->poff[p])
#define GP(n, p) ((n)->grad + (n)->poff[p])
#define AC(n, a) ((n)->act + (n)->aoff[a])

static inline void *gl_mem_new(const struct backend_ops *o, const void *host, size_t bytes) {
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

static inline void gl_mem_get(const struct backend_ops *o, void *host, const void *p,
                              size_t bytes) {
  if (o->download) o->download(host, p, bytes);
  else memcpy(host, p, bytes);
}

static inline void gl_mem_del(const struct backend_ops *o, void *p) {
  if (o->free) o->free(p);
  else free(p);
}

static uint64_t gl_rng = 0x9e3779b97f4a7c15ull;
static inline double gl_urand(void) {
  gl_rng ^= gl_rng << 13;
  gl_rng ^= gl_rng >> 7;
  gl_rng ^= gl_rng << 17;
  return (double)(gl_rng >> 11) * (1.0 / 9007199254740992.0);
}

static inline void inputs_make(struct host_inputs *in, const struct layer_dims *d) {
  size_t np = 0, half = d->D / 2;
  for (int p = 0; p < GL_COUNT; p++) np += gl_psize(d, p);
  int T = 0, maxlen = 0;
  for (int s = 0; s < d->nseq; s++) {
    T += d->seqlen[s];
    maxlen = d->seqlen[s] > maxlen ? d->seqlen[s] : maxlen;
  }
  in->T = T;
  in->maxlen = maxlen;
  in->par = malloc(4 * np);
  for (size_t i = 0; i < np; i++) in->par[i] = (float)(0.3 * (2 * gl_urand() - 1));
  size_t n1 = gl_psize(d, GL_EMB), n2 = 0;
  for (int p = 0; p < GL_N2; p++) n2 += gl_psize(d, p);
  for (int i = 0; i < d->C; i++) { /* norm weights near 1 */
    in->par[n1 + i] = (float)(1 + 0.2 * (2 * gl_urand() - 1));
    in->par[n2 + i] = (float)(1 + 0.2 * (2 * gl_urand() - 1));
  }
  in->rope_cos = malloc(4 * d->maxpos * half);
  in->rope_sin = malloc(4 * d->maxpos * half);
  for (int p = 0; p < d->maxpos; p++)
    for (size_t i = 0; i < half; i++) {
      double a = p * pow(10000.0, -2.0 * (double)i / d->D);
      in->rope_cos[p * half + i] = (float)cos(a);
      in->rope_sin[p * half + i] = (float)sin(a);
    }
  in->tok = malloc(sizeof(int) * T);
  in->pos = malloc(sizeof(int) * T);
  in->tg = malloc(sizeof(int) * T);
  in->cu = malloc(sizeof(int) * (d->nseq + 1));
  in->dlp = malloc(4 * T);
  in->dent = malloc(4 * T);
  in->cu[0] = 0;
  for (int s = 0; s < d->nseq; s++) in->cu[s + 1] = in->cu[s] + d->seqlen[s];
  for (int t = 0; t < T; t++) in->tok[t] = (int)(gl_urand() * d->V);
  for (int s = 0; s < d->nseq; s++)
    for (int t = in->cu[s]; t < in->cu[s + 1]; t++) {
      in->pos[t] = t - in->cu[s];
      in->tg[t] = t + 1 < in->cu[s + 1] ? in->tok[t + 1] : -1;
    }
  for (int t = 0; t < T; t++) {
    in->dlp[t] = (float)(2 * gl_urand() - 1);
    in->dent[t] = (float)(0.5 * (2 * gl_urand() - 1));
  }
}

static inline void inputs_free(struct host_inputs *in) {
  free(in->par), free(in->rope_cos), free(in->rope_sin), free(in->dlp), free(in->dent);
  free(in->tok), free(in->pos), free(in->tg), free(in->cu);
}

static inline void net_build(struct net *n, const struct backend_ops *o,
                             const struct layer_dims *d, const struct host_inputs *in) {
  memset(n, 0, sizeof *n);
  n->o = o;
  n->d = *d;
  n->T = in->T;
  n->maxlen = in->maxlen;
  for (int p = 0; p < GL_COUNT; p++) n->poff[p + 1] = n->poff[p] + gl_psize(d, p);
  for (int a = 0; a < A_COUNT; a++)
    n->aoff[a + 1] = n->aoff[a] + (size_t)in->T * gl_awidth(d, a);
  size_t T = (size_t)in->T, half = d->D / 2;
  n->par = gl_mem_new(o, in->par, 4 * n->poff[GL_COUNT]);
  n->grad = gl_mem_new(o, NULL, 4 * n->poff[GL_COUNT]);
  n->act = gl_mem_new(o, NULL, 4 * n->aoff[A_COUNT]);
  n->rope_cos = gl_mem_new(o, in->rope_cos, 4 * d->maxpos * half);
  n->rope_sin = gl_mem_new(o, in->rope_sin, 4 * d->maxpos * half);
  n->dlp = gl_mem_new(o, in->dlp, 4 * T);
  n->dent = gl_mem_new(o, in->dent, 4 * T);
  n->scratch = gl_mem_new(o, NULL, 4 * attn_scratch_floats(in->maxlen, in->maxlen));
  n->tok = gl_mem_new(o, in->tok, sizeof(int) * T);
  n->pos = gl_mem_new(o, in->pos, sizeof(int) * T);
  n->tg = gl_mem_new(o, in->tg, sizeof(int) * T);
  n->cu = gl_mem_new(o, in->cu, sizeof(int) * (d->nseq + 1));
}

static inline void net_free(struct net *n) {
  void *bufs[] = {n->par, n->grad, n->act, n->rope_cos, n->rope_sin, n->dlp, n->dent, n->scratch,
                  n->tok, n->pos, n->tg, n->cu};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gl_mem_del(n->o, bufs[i]);
}

/* y[T, out] = x[T, in] W^T (+ b) */
static inline void lin_fwd(const struct net *n, float *y, const float *x, const float *w,
                           const float *b, int out, int in) {
  n->o->matmul(0, 1, n->T, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  if (b) n->o->bias_add(y, b, n->T, out);
}

/* dx (+)= dy W; dW += dy^T x; db += colsum dy */
static inline void lin_bwd(const struct net *n, float *dx, float *dw, float *db,
                           const float *dy, const float *x, const float *w, int out, int in,
                           float beta) {
  n->o->matmul(0, 0, n->T, in, out, 1.0f, dy, out, w, in, beta, dx, in);
  n->o->matmul(1, 0, out, in, n->T, 1.0f, dy, out, x, in, 1.0f, dw, in);
  if (db) n->o->bias_bwd(db, dy, n->T, out);
}

static inline struct attn_batch net_attn(const struct net *n) {
  return (struct attn_batch){.nseq = n->d.nseq, .cu_q = n->cu, .cu_kv = n->cu, .max_q = n->maxlen,
                             .max_kv = n->maxlen};
}

/* A_X (the layer input) -> A_Y (the layer output). */
static inline void net_layer_forward(struct net *n) {
  const struct backend_ops *o = n->o;
  int T = n->T, C = n->d.C, H = n->d.H, KVH = n->d.KVH, D = n->d.D, KV = KVH * D, F = n->d.F;
  struct attn_batch b = net_attn(n);
  o->rmsnorm_fwd(AC(n, A_XN), AC(n, A_R1), AC(n, A_X), WP(n, GL_N1), T, C, 1e-5f);
  lin_fwd(n, AC(n, A_Q), AC(n, A_XN), WP(n, GL_WQ), WP(n, GL_BQ), C, C);
  lin_fwd(n, AC(n, A_K), AC(n, A_XN), WP(n, GL_WK), WP(n, GL_BK), KV, C);
  lin_fwd(n, AC(n, A_V), AC(n, A_XN), WP(n, GL_WV), WP(n, GL_BV), KV, C);
  o->rope(AC(n, A_Q), n->pos, n->rope_cos, n->rope_sin, T, H, D, 0);
  o->rope(AC(n, A_K), n->pos, n->rope_cos, n->rope_sin, T, KVH, D, 0);
  o->attention_fwd(AC(n, A_ATT), AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, H, KVH, D,
                   1.0f / sqrtf((float)D), n->scratch);
  lin_fwd(n, AC(n, A_MID), AC(n, A_ATT), WP(n, GL_WO), NULL, C, C);
  o->add(AC(n, A_MID), AC(n, A_X), (size_t)T * C);
  o->rmsnorm_fwd(AC(n, A_XN2), AC(n, A_R2), AC(n, A_MID), WP(n, GL_N2), T, C, 1e-5f);
  lin_fwd(n, AC(n, A_GATE), AC(n, A_XN2), WP(n, GL_WG), NULL, F, C);
  lin_fwd(n, AC(n, A_UP), AC(n, A_XN2), WP(n, GL_WU), NULL, F, C);
  o->swiglu_fwd(AC(n, A_H), AC(n, A_GATE), AC(n, A_UP), (size_t)T * F);
  lin_fwd(n, AC(n, A_Y), AC(n, A_H), WP(n, GL_WD), NULL, C, F);
  o->add(AC(n, A_Y), AC(n, A_MID), (size_t)T * C);
}

/* Logits of A_Y through the tied embedding, then logprob and entropy. */
static inline void net_head_forward(struct net *n) {
  lin_fwd(n, AC(n, A_LOGITS), AC(n, A_Y), WP(n, GL_EMB), NULL, n->d.V, n->d.C);
  n->o->logprob_fwd(AC(n, A_LP), AC(n, A_ENT), AC(n, A_LSEO), AC(n, A_LOGITS), n->tg, n->T,
                    n->d.V);
}

static inline void net_forward(struct net *n) {
  n->o->embed_fwd(AC(n, A_X), n->tok, WP(n, GL_EMB), n->T, n->d.C);
  net_layer_forward(n);
  net_head_forward(n);
}

/* A_DY = dL/dY from the head (logits recomputed, as model/model.c does). */
static inline void net_head_backward(struct net *n) {
  int V = n->d.V, C = n->d.C;
  lin_fwd(n, AC(n, A_LOGITS), AC(n, A_Y), WP(n, GL_EMB), NULL, V, C);
  n->o->logprob_bwd(AC(n, A_LOGITS), AC(n, A_LSEO), AC(n, A_ENT), n->tg, n->dlp, n->dent, n->T, V);
  lin_bwd(n, AC(n, A_DY), GP(n, GL_EMB), NULL, AC(n, A_LOGITS), AC(n, A_Y), WP(n, GL_EMB), V, C,
          0.0f);
}

/* A_DY = dL/dY in, dL/dX out (in place), parameter gradients accumulated. */
static inline void net_layer_backward(struct net *n) {
  const struct backend_ops *o = n->o;
  int T = n->T, C = n->d.C, H = n->d.H, KVH = n->d.KVH, D = n->d.D, KV = KVH * D, F = n->d.F;
  struct attn_batch b = net_attn(n);
  float *dy = AC(n, A_DY);
  /* MLP branch */
  o->matmul(0, 0, T, F, C, 1.0f, dy, C, WP(n, GL_WD), F, 0.0f, AC(n, A_DGATE), F);
  o->swiglu_bwd(AC(n, A_DGATE), AC(n, A_DUP), AC(n, A_H), AC(n, A_DGATE), AC(n, A_GATE),
                AC(n, A_UP), (size_t)T * F);
  o->matmul(1, 0, C, F, T, 1.0f, dy, C, AC(n, A_H), F, 1.0f, GP(n, GL_WD), F);
  lin_bwd(n, AC(n, A_DXN), GP(n, GL_WG), NULL, AC(n, A_DGATE), AC(n, A_XN2), WP(n, GL_WG), F, C,
          0.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, GL_WU), NULL, AC(n, A_DUP), AC(n, A_XN2), WP(n, GL_WU), F, C, 1.0f);
  o->rmsnorm_bwd(dy, GP(n, GL_N2), AC(n, A_DXN), AC(n, A_MID), WP(n, GL_N2), AC(n, A_R2), T, C);
  /* attention branch */
  lin_bwd(n, AC(n, A_DATT), GP(n, GL_WO), NULL, dy, AC(n, A_ATT), WP(n, GL_WO), C, C, 0.0f);
  o->attention_bwd(AC(n, A_DQ), AC(n, A_DK), AC(n, A_DV), AC(n, A_DATT), AC(n, A_ATT),
                   AC(n, A_LSE), AC(n, A_Q), AC(n, A_K), AC(n, A_V), &b, H, KVH, D,
                   1.0f / sqrtf((float)D), n->scratch);
  o->rope(AC(n, A_DQ), n->pos, n->rope_cos, n->rope_sin, T, H, D, 1);
  o->rope(AC(n, A_DK), n->pos, n->rope_cos, n->rope_sin, T, KVH, D, 1);
  lin_bwd(n, AC(n, A_DXN), GP(n, GL_WQ), GP(n, GL_BQ), AC(n, A_DQ), AC(n, A_XN), WP(n, GL_WQ), C, C,
          0.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, GL_WK), GP(n, GL_BK), AC(n, A_DK), AC(n, A_XN), WP(n, GL_WK), KV, C,
          1.0f);
  lin_bwd(n, AC(n, A_DXN), GP(n, GL_WV), GP(n, GL_BV), AC(n, A_DV), AC(n, A_XN), WP(n, GL_WV), KV, C,
          1.0f);
  o->rmsnorm_bwd(dy, GP(n, GL_N1), AC(n, A_DXN), AC(n, A_X), WP(n, GL_N1), AC(n, A_R1), T, C);
}

static inline void net_backward(struct net *n) {
  net_head_backward(n);
  net_layer_backward(n);
  n->o->embed_bwd(GP(n, GL_EMB), n->tok, AC(n, A_DY), n->T, n->d.C);
}

#endif
