/* model/model.c: forward and backward of the transformer on a packed batch (its memory and
 * the parameters' initialisation: model/model_alloc.c).
 *
 * Written once against model/backend.h. Each layer keeps what its backward needs
 * (inputs of the norms, q/k/v after RoPE, attention output and log-sum-exp,
 * gate/up); the normed inputs and the SwiGLU product are recomputed in the
 * backward, which costs a few elementwise passes and saves two [T, C] and one
 * [T, F] buffer per layer. The attention op takes separate query and key
 * spans (struct attn_batch), so a KV-cache path can call the same layer code
 * with cached keys. A forward reads the device copy of its weights (model/weights.h: the
 * model's own, or the KL reference's given to model_forward_with), made current first; on
 * a mixed-precision backend ([model] dtype = bf16, model/backend.h's matmul_w16) the
 * products take their weight operands from its bf16 working copy. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lora.h"
#include "model/model_mem.h"
#include "util/alloc.h"

/* The tensor (kind, layer) in the weights the forward reads; NULL when the model has none
 * (a bias of a model without biases, an lm_head tied to the embedding). */
static const float *param_ptr(const struct model *m, enum param_kind kind, int layer) {
  size_t off = param_offset(&m->table, kind, layer);
  return off == (size_t)-1 ? NULL : m->fwd_params + off;
}

/* Its gradient in dgrads. */
static float *grad_ptr(const struct model *m, enum param_kind kind, int layer) {
  size_t off = param_offset(&m->table, kind, layer);
  return off == (size_t)-1 ? NULL : m->dgrads + off;
}

/* The gradient of a base weight (kind, layer), or NULL when the model has none or its
 * base is frozen (LoRA: only the adapters train, model/lora.h); linear_bwd skips it. */
static float *wgrad_ptr(const struct model *m, enum param_kind kind, int layer) {
  return m->table.trainable ? NULL : grad_ptr(m, kind, layer);
}

/* The LoRA adapter of projection (kind, layer) in the weights the forward reads: 1, or 0
 * when it has none. */
static int adapter(const struct model *m, enum param_kind kind, int layer, struct lora_adapter *a) {
  if (!m->table.trainable) return 0;
  for (int i = 0; i + 1 < m->table.n; i++) {
    const struct param_entry *e = &m->table.e[i];
    if (e->kind != P_LORA_A || e->target != kind || e->layer != layer) continue;
    const struct param_entry *b = e + 1;
    *a = (struct lora_adapter){ .A = m->fwd_params + e->offset, .B = m->fwd_params + b->offset,
                                .dA = m->dgrads ? m->dgrads + e->offset : NULL,
                                .dB = m->dgrads ? m->dgrads + b->offset : NULL,
                                .r = e->rows, .in = e->cols, .out = b->rows,
                                .scale = (float)(m->cfg.lora_alpha / m->cfg.lora_rank) };
    return 1;
  }
  return 0;
}

/* y[T, out] += the adapter's term on x, when (kind, layer) has one. */
static void lora_add(const struct model *m, enum param_kind kind, int layer, float *y,
                     const float *x) {
  struct lora_adapter a;
  if (adapter(m, kind, layer, &a)) lora_fwd(m->ops, m->exact, &a, y, x, m->T, m->lora_u);
}

/* Backward of the adapter's term of (kind, layer), when it has one: dx += its input
 * gradient; dA, dB accumulate. */
static void lora_back(const struct model *m, enum param_kind kind, int layer, float *dx,
                      const float *dy, const float *x) {
  struct lora_adapter a;
  if (!adapter(m, kind, layer, &a)) return;
  lora_bwd_dx(m->ops, &a, dx, dy, m->T, m->lora_du);
  lora_bwd_dw(m->ops, &a, dy, x, m->lora_du, m->T, m->lora_u);
}

/* The forward (and its backward) read w's device copy, made current first. 0 or -1. */
static int weights_bind(struct model *m, struct weights *w) {
  if (weights_to_device(w)) return -1;
  m->fwd_params = w->dev;
  m->fwd_params16 = w->dev16;
  return 0;
}

/* The ops' copies of the batch arrays built on the host. */
static void batch_upload(struct model *m, int T, int nseq, int kv) {
  to_dev(m, m->tokens, m->h_tokens, sizeof(int) * T);
  to_dev(m, m->pos, m->h_pos, sizeof(int) * T);
  to_dev(m, m->targets, m->h_targets, sizeof(int) * T);
  to_dev(m, m->cu_seqlens, m->h_cu_seqlens, sizeof(int) * ((size_t)nseq + 1));
  if (kv) to_dev(m, m->cu_kv, m->h_cu_kv, sizeof(int) * ((size_t)nseq + 1));
}

/* ---- forward ---------------------------------------------------------------- */

/* Checks the packed batch and keeps tokens, positions and targets. */
static int batch_set(struct model *m, const int *tokens, const int *cu, int nseq) {
  if (nseq < 1 || cu[0] != 0) {
    fprintf(stderr, "rlpt: model batch needs at least one sequence and cu_seqlens[0] = 0\n");
    return -1;
  }
  if (cu[nseq] > m->max_tokens) {
    fprintf(stderr, "rlpt: model batch of %d sequences, %d tokens exceeds the budget of %d tokens\n",
            nseq, cu[nseq], m->max_tokens);
    return -1;
  }
  int maxlen = 0;
  for (int s = 0; s < nseq; s++) {
    int len = cu[s + 1] - cu[s];
    if (len < 1 || len > m->cfg.max_seq) {
      fprintf(stderr, "rlpt: model sequence %d has %d tokens (must be 1..max_seq = %d)\n", s, len,
              m->cfg.max_seq);
      return -1;
    }
    maxlen = len > maxlen ? len : maxlen;
    for (int t = cu[s]; t < cu[s + 1]; t++) {
      if (tokens[t] < 0 || tokens[t] >= m->vocab_full) {
        fprintf(stderr, "rlpt: token %d at position %d is outside the vocabulary (0..%d)\n",
                tokens[t], t, m->vocab_full - 1);
        return -1;
      }
      m->h_tokens[t] = tokens[t];
      m->h_pos[t] = t - cu[s];
      m->h_targets[t] = t + 1 < cu[s + 1] ? tokens[t + 1] : -1;
    }
  }
  memcpy(m->h_cu_seqlens, cu, sizeof(int) * ((size_t)nseq + 1));
  batch_upload(m, cu[nseq], nseq, 0);
  m->T = cu[nseq];
  m->nseq = nseq;
  m->attn = (struct attn_batch){ .nseq = nseq, .cu_q = m->cu_seqlens, .cu_kv = m->cu_seqlens,
                                 .max_q = maxlen, .max_kv = maxlen };
  return 0;
}

/* The bf16 working copy of the weight at w (a pointer into fwd_params): same offset. */
static const uint16_t *bf16_of(const struct model *m, const float *w) {
  return m->fwd_params16 + (w - m->fwd_params);
}

/* C[M,N] = A[M,K] B[N,K]^T + beta C, B a weight: through its bf16 copy on a mixed-precision
 * backend; the row-invariant product when m->exact asks for it and the backend has one
 * (model/backend.h); else the backend's matmul. */
static void matmul_abt(const struct model *m, int M, int N, int K, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc) {
  if (m->fwd_params16)
    m->ops->matmul_w16(0, 1, M, N, K, 1.0f, A, lda, bf16_of(m, B), ldb, beta, C, ldc);
  else if (m->exact && m->ops->matmul_rowinv)
    m->ops->matmul_rowinv(M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  else
    m->ops->matmul(0, 1, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* y[T, out] = x[T, in] W^T (+ b): a linear layer with W [out, in]. */
static void linear_fwd(const struct model *m, float *y, const float *x, const float *w,
                       const float *b, int T, int out, int in, float beta) {
  matmul_abt(m, T, out, in, x, in, w, in, beta, y, out);
  if (b) m->ops->bias_add(y, b, T, out);
}

/* y_i[T, out_i] = x[T, in] W_i^T (+ b_i) for n <= 3 linears that read the same x (a layer's
 * q, k and v; gate and up): on the row-invariant path one backend call when it has the
 * shared op (one wake-up of the threads instead of n: a decode step's products are
 * short), else linear_fwd each. Same bits either way. */
static void linears_fwd(const struct model *m, const float *x, int T, int in, int n,
                        float *const *y, const float *const *w, const float *const *b,
                        const int *out) {
  if (!m->fwd_params16 && m->exact && m->ops->matmul_rowinv && m->ops->matmul_rowinv_shared) {
    struct rowinv_product p[3];
    for (int i = 0; i < n; i++) p[i] = (struct rowinv_product){ .N = out[i], .B = w[i], .C = y[i] };
    m->ops->matmul_rowinv_shared(T, in, x, in, n, p);
    for (int i = 0; i < n; i++)
      if (b[i]) m->ops->bias_add(y[i], b[i], T, out[i]);
    return;
  }
  for (int i = 0; i < n; i++) linear_fwd(m, y[i], x, w[i], b[i], T, out[i], in, 0.0f);
}

/* C[M,N] = A[M,K] B[K,N] + beta C, B a weight (the input gradient of a linear layer):
 * through its bf16 copy on a mixed-precision backend. */
static void matmul_ab(const struct model *m, int M, int N, int K, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
  if (m->fwd_params16)
    m->ops->matmul_w16(0, 0, M, N, K, 1.0f, A, lda, bf16_of(m, B), ldb, beta, C, ldc);
  else
    m->ops->matmul(0, 0, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* dx[T, in] (+)= dy W;  dW += dy^T x (dw NULL: skipped);  db += colsum(dy). The dW product has no weight
 * operand: a mixed-precision backend's matmul rounds dy and x to bf16 itself. */
static void linear_bwd(const struct model *m, float *dx, float *dw, float *db, const float *dy,
                       const float *x, const float *w, int T, int out, int in, float beta) {
  matmul_ab(m, T, in, out, dy, out, w, in, beta, dx, in);
  if (dw) m->ops->matmul(1, 0, out, in, T, 1.0f, dy, out, x, in, 1.0f, dw, in);
  if (db) m->ops->bias_bwd(db, dy, T, out);
}

/* Hands the new K/V rows to io->exchange and returns the contexts it gives back.
 * exchange() works on host memory: on a device the rows go down and the contexts
 * come back up, per layer. 0, or nonzero from exchange() / out of device memory. */
static int kv_exchange(struct model *m, int l, const struct model_kv_io *io, const float *k,
                       const float *v, const float **kc, const float **vc) {
  if (!m->on_device) return io->exchange(io->ctx, l, &m->attn, k, v, kc, vc);
  size_t KV = (size_t)m->cfg.kv_heads * m->cfg.head_dim, T = (size_t)m->T;
  size_t rows = (size_t)m->h_cu_kv[m->nseq];
  float *hk = m->kv_host, *hv = m->kv_host + T * KV;
  to_host(m, hk, k, sizeof(float) * T * KV);
  to_host(m, hv, v, sizeof(float) * T * KV);
  struct attn_batch hb = m->attn;
  hb.cu_q = m->h_cu_seqlens;
  hb.cu_kv = m->h_cu_kv;
  const float *hkc, *hvc;
  int rc = io->exchange(io->ctx, l, &hb, hk, hv, &hkc, &hvc);
  if (rc) return rc;
  if (rows > m->kv_dev_rows) {
    size_t cap = rows + rows / 2;
    dmem_free(m, m->kv_dev);
    m->kv_dev = dmem_alloc(m, sizeof(float) * 2 * cap * KV);
    m->kv_dev_rows = m->kv_dev ? cap : 0;
    if (!m->kv_dev) {
      fprintf(stderr, "rlpt: model: out of device memory for %zu context rows\n", rows);
      return -1;
    }
  }
  float *dk = m->kv_dev, *dv = m->kv_dev + m->kv_dev_rows * KV;
  to_dev(m, dk, hkc, sizeof(float) * rows * KV);
  to_dev(m, dv, hvc, sizeof(float) * rows * KV);
  *kc = dk;
  *vc = dv;
  return 0;
}

/* Attention of layer l over the batch itself (no io), over the contexts exchange()
 * returns, over the paged cache in place when the caller and the backend can, or by
 * the caller's attend() over its device-resident cache. */
static int attention_forward(struct model *m, int l, const struct model_kv_io *io) {
  const struct model_config *mc = &m->cfg;
  struct layer_acts *a = &m->layers[l];
  int H = mc->heads, KVH = mc->kv_heads, D = mc->head_dim;
  float scale = 1.0f / sqrtf((float)D);
  if (io && io->attend && m->on_device)
    return io->attend(io->ctx, l, &m->attn, a->q, a->k, a->v, a->att, a->lse, H, scale) ? -1 : 0;
  if (io && io->paged && m->ops->attention_paged_fwd && !m->on_device) {
    struct attn_paged kv;
    if (io->paged(io->ctx, l, &m->attn, a->k, a->v, &kv)) return -1;
    m->ops->attention_paged_fwd(a->att, a->lse, a->q, &kv, &m->attn, H, KVH, D, scale);
    return 0;
  }
  const float *kc = a->k, *vc = a->v;
  if (io && kv_exchange(m, l, io, a->k, a->v, &kc, &vc)) return -1;
  m->ops->attention_fwd(a->att, a->lse, a->q, kc, vc, &m->attn, H, KVH, D, scale,
                        m->attn_scratch);
  return 0;
}

/* out = resid + x W^T, W [C, K] (a GEMM with beta = 1 adds the residual); row-parallel
 * with tp: this rank's part of the product summed over the group, then the residual. */
static void row_parallel_fwd(const struct model *m, float *out, const float *resid,
                             const float *x, const float *w, int K) {
  int T = m->T, C = m->cfg.dim;
  size_t n = (size_t)T * C;
  if (!m->tp) {
    dmem_copy(m, out, resid, n);
    linear_fwd(m, out, x, w, NULL, T, C, K, 1.0f);
    return;
  }
  linear_fwd(m, out, x, w, NULL, T, C, K, 0.0f);
  tp_sum_floats(m->tp, out, n);
  m->ops->add(out, resid, n);
}

/* One block on the current batch (m->T rows at positions m->pos). Without io,
 * attention runs over the batch itself (m->attn); with io, the new K/V rows go
 * to the caller's cache and attention runs over the contexts it returns. */
static int layer_forward(struct model *m, int l, float *out, const struct model_kv_io *io) {
  const struct model_config *mc = &m->cfg;
  const struct backend_ops *ops = m->ops;
  struct layer_acts *a = &m->layers[l];
  int T = m->T, C = mc->dim, F = mc->ffn_dim, H = mc->heads, KVH = mc->kv_heads, D = mc->head_dim;
  int KV = KVH * D, QD = H * D;
  float eps = (float)mc->norm_eps;
  ops->rmsnorm_fwd(m->xn, a->rstd1, a->res_in, param_ptr(m, P_ATTN_NORM, l), T, C, eps);
  linears_fwd(m, m->xn, T, C, 3, (float *[]){a->q, a->k, a->v},
              (const float *[]){param_ptr(m, P_WQ, l), param_ptr(m, P_WK, l),
                                param_ptr(m, P_WV, l)},
              (const float *[]){param_ptr(m, P_BQ, l), param_ptr(m, P_BK, l),
                                param_ptr(m, P_BV, l)},
              (int[]){QD, KV, KV});
  lora_add(m, P_WQ, l, a->q, m->xn);
  lora_add(m, P_WK, l, a->k, m->xn);
  lora_add(m, P_WV, l, a->v, m->xn);
  ops->rope(a->q, m->pos, m->rope_cos, m->rope_sin, T, H, D, 0);
  ops->rope(a->k, m->pos, m->rope_cos, m->rope_sin, T, KVH, D, 0);
  if (attention_forward(m, l, io)) return -1;
  row_parallel_fwd(m, a->res_mid, a->res_in, a->att, param_ptr(m, P_WO, l), QD);
  lora_add(m, P_WO, l, a->res_mid, a->att);
  ops->rmsnorm_fwd(m->xn, a->rstd2, a->res_mid, param_ptr(m, P_FFN_NORM, l), T, C, eps);
  linears_fwd(m, m->xn, T, C, 2, (float *[]){a->gate, a->up},
              (const float *[]){param_ptr(m, P_WGATE, l), param_ptr(m, P_WUP, l)},
              (const float *[]){NULL, NULL}, (int[]){F, F});
  lora_add(m, P_WGATE, l, a->gate, m->xn);
  lora_add(m, P_WUP, l, a->up, m->xn);
  ops->swiglu_fwd(m->h, a->gate, a->up, (size_t)T * F);
  row_parallel_fwd(m, out, a->res_mid, m->h, param_ptr(m, P_WDOWN, l), F);
  lora_add(m, P_WDOWN, l, out, m->h);
  return 0;
}

/* Embedding, every block and the final norm on the current batch: m->xf. */
static int trunk_forward(struct model *m, const struct model_kv_io *io) {
  const struct model_config *mc = &m->cfg;
  int L = mc->layers;
  if (m->tp)
    tp_embed_fwd(m->tp, m->layers[0].res_in, m->tokens, param_ptr(m, P_EMBED, -1), m->T, mc->dim,
                 m->vocab_lo, mc->vocab_size);
  else
    m->ops->embed_fwd(m->layers[0].res_in, m->tokens, param_ptr(m, P_EMBED, -1), m->T, mc->dim);
  for (int l = 0; l < L; l++)
    if (layer_forward(m, l, l + 1 < L ? m->layers[l + 1].res_in : m->res_final, io)) return -1;
  m->ops->rmsnorm_fwd(m->xf, m->rstdf, m->res_final, param_ptr(m, P_FINAL_NORM, -1), m->T,
                      mc->dim, (float)mc->norm_eps);
  return 0;
}

static const float *lm_head(const struct model *m) {
  return m->cfg.tie_embeddings ? param_ptr(m, P_EMBED, -1) : param_ptr(m, P_LM_HEAD, -1);
}

static int chunk_rows(const struct model *m) {
  int r = m->logit_chunk > m->logit_rows ? m->logit_rows : m->logit_chunk;
  return r < 1 ? 1 : r;
}

/* logprob, entropy and lse of every row, from logits computed a chunk at a time. */
static void head_forward(struct model *m) {
  int T = m->T, C = m->cfg.dim, V = m->cfg.vocab_size, R = chunk_rows(m);
  for (int r0 = 0; r0 < T; r0 += R) {
    int n = T - r0 < R ? T - r0 : R;
    /* logits[n, V] = xf[r0 .. r0+n) lm_head^T */
    matmul_abt(m, n, V, C, m->xf + (size_t)r0 * C, C, lm_head(m), C, 0.0f, m->logits,
                   V);
    if (m->tp)
      tp_logprob_fwd(m->tp, m->lp_out + r0, m->ent_out + r0, m->lse_out + r0, m->logits,
                     m->targets + r0, n, V, m->vocab_lo);
    else
      m->ops->logprob_fwd(m->lp_out + r0, m->ent_out + r0, m->lse_out + r0, m->logits,
                          m->targets + r0, n, V);
    m->logits_held = 1 + r0;
  }
  m->head_done = 1;
}

int model_forward(struct model *m, const int *tokens, const int *cu_seqlens, int nseq,
                  float *logprob_out, float *entropy_out, float *value_out) {
  return model_forward_with(m, &m->weights, tokens, cu_seqlens, nseq, logprob_out, entropy_out,
                            value_out);
}

int model_forward_with(struct model *m, struct weights *w, const int *tokens,
                       const int *cu_seqlens, int nseq, float *logprob_out, float *entropy_out,
                       float *value_out) {
  if (w->n != m->table.total) {
    fprintf(stderr, "rlpt: model forward with %zu weights for a table of %zu\n", w->n,
            m->table.total);
    return -1;
  }
  if (batch_set(m, tokens, cu_seqlens, nseq)) return -1;
  if (weights_bind(m, w)) return -1;
  const struct model_config *mc = &m->cfg;
  int T = m->T, C = mc->dim;
  trunk_forward(m, NULL);
  if (value_out && mc->value_head) {
    float *v = m->on_device ? m->val_out : value_out;
    matmul_abt(m, T, 1, C, m->xf, C, param_ptr(m, P_SCORE, -1), C, 0.0f, v, 1);
    to_host(m, value_out, v, sizeof(float) * T);
  }
  m->head_done = 0;
  m->logits_held = 0;
  if (logprob_out || entropy_out) head_forward(m);
  if (logprob_out) to_host(m, logprob_out, m->lp_out, sizeof(float) * T);
  if (entropy_out) to_host(m, entropy_out, m->ent_out, sizeof(float) * T);
  return 0;
}

/* ---- KV-cache forward ------------------------------------------------------- */

/* Checks new tokens and positions; sets tokens, positions and the attention spans. */
static int kv_batch_set(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                        int nseq) {
  if (nseq < 1 || nseq > m->max_tokens || cu_new[0] != 0 || cu_new[nseq] > m->max_tokens) {
    fprintf(stderr, "rlpt: model step of %d sequences, %d tokens exceeds the budget of %d "
            "tokens\n", nseq, nseq >= 1 ? cu_new[nseq] : 0, m->max_tokens);
    return -1;
  }
  int maxq = 0, maxkv = 0;
  m->h_cu_kv[0] = 0;
  for (int s = 0; s < nseq; s++) {
    int n = cu_new[s + 1] - cu_new[s], ctx = pos0[s] + n;
    if (n < 1 || pos0[s] < 0 || ctx > m->cfg.max_seq) {
      fprintf(stderr, "rlpt: model step: sequence %d has %d new tokens at position %d (context "
              "must be 1..max_seq = %d)\n", s, n, pos0[s], m->cfg.max_seq);
      return -1;
    }
    maxq = n > maxq ? n : maxq;
    maxkv = ctx > maxkv ? ctx : maxkv;
    m->h_cu_kv[s + 1] = m->h_cu_kv[s] + ctx;
    for (int t = cu_new[s]; t < cu_new[s + 1]; t++) {
      if (tokens[t] < 0 || tokens[t] >= m->vocab_full) {
        fprintf(stderr, "rlpt: token %d at position %d is outside the vocabulary (0..%d)\n",
                tokens[t], t, m->vocab_full - 1);
        return -1;
      }
      m->h_tokens[t] = tokens[t];
      m->h_pos[t] = pos0[s] + t - cu_new[s];
      m->h_targets[t] = -1;
    }
  }
  memcpy(m->h_cu_seqlens, cu_new, sizeof(int) * ((size_t)nseq + 1));
  batch_upload(m, cu_new[nseq], nseq, 1);
  m->T = cu_new[nseq];
  m->nseq = nseq;
  m->attn = (struct attn_batch){ .nseq = nseq, .cu_q = m->cu_seqlens, .cu_kv = m->cu_kv,
                                 .max_q = maxq, .max_kv = maxkv };
  return 0;
}

/* model_forward_kv's body; logits_dev: the logits are op memory (model_forward_kv_dev). */
static int forward_kv(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                      int nseq, const struct model_kv_io *io, int all_logits, float *logits,
                      int logits_dev) {
  if (kv_batch_set(m, tokens, cu_new, pos0, nseq)) return -1;
  if (weights_bind(m, &m->weights)) return -1;
  if (trunk_forward(m, io)) return -1;
  int C = m->cfg.dim, V = m->cfg.vocab_size, rows = all_logits ? m->T : nseq;
  const float *x = m->xf;
  if (!all_logits) { /* the last new row of each sequence, gathered into scratch */
    for (int s = 0; s < nseq; s++)
      dmem_copy(m, m->xn + (size_t)s * C, m->xf + (size_t)(cu_new[s + 1] - 1) * C, (size_t)C);
    x = m->xn;
  }
  if (m->tp) { /* this rank's vocabulary slice, then the whole row on every rank */
    float *slice = malloc_check(sizeof(float) * (size_t)rows * (size_t)V);
    matmul_abt(m, rows, V, C, x, C, lm_head(m), C, 0.0f, slice, V);
    tp_gather_cols(m->tp, slice, rows, V, logits);
    free(slice);
  } else if (!m->on_device || logits_dev) {
    matmul_abt(m, rows, V, C, x, C, lm_head(m), C, 0.0f, logits, V);
  } else { /* device logits a chunk at a time (the scratch holds logit_rows rows) */
    for (int r0 = 0; r0 < rows; r0 += m->logit_rows) {
      int n = rows - r0 < m->logit_rows ? rows - r0 : m->logit_rows;
      matmul_abt(m, n, V, C, x + (size_t)r0 * C, C, lm_head(m), C, 0.0f, m->logits,
                     V);
      to_host(m, logits + (size_t)r0 * V, m->logits, sizeof(float) * n * V);
    }
  }
  m->T = 0; /* the activations are not a training batch: model_backward must not use them */
  return 0;
}

int model_forward_kv(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                     int nseq, const struct model_kv_io *io, int all_logits, float *logits) {
  return forward_kv(m, tokens, cu_new, pos0, nseq, io, all_logits, logits, 0);
}

int model_forward_kv_dev(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                         int nseq, const struct model_kv_io *io, int all_logits, float *logits) {
  return forward_kv(m, tokens, cu_new, pos0, nseq, io, all_logits, logits, 1);
}

/* ---- backward --------------------------------------------------------------- */

/* With tp: dx of a column-parallel product (this rank's output columns only) summed over
 * the group. */
static void col_parallel_bwd(const struct model *m, float *dx) {
  if (m->tp) tp_sum_floats(m->tp, dx, (size_t)m->T * m->cfg.dim);
}

/* The logits buffer (n rows from row r0) <- dL/dlogits; vocabulary-parallel with tp. */
static void logprob_bwd(struct model *m, int r0, const float *dlp, const float *dent, int n) {
  int V = m->cfg.vocab_size;
  if (m->tp)
    tp_logprob_bwd(m->logits, m->lse_out + r0, m->ent_out + r0, m->targets + r0, dlp, dent, n, V,
                   m->vocab_lo);
  else
    m->ops->logprob_bwd(m->logits, m->lse_out + r0, m->ent_out + r0, m->targets + r0, dlp, dent,
                        n, V);
}

/* dxn = dL/dxf from the logits (recomputed chunk by chunk) and the value head. */
static void head_backward(struct model *m, const float *dlogprob, const float *dentropy,
                          const float *dvalue) {
  const struct model_config *mc = &m->cfg;
  int T = m->T, C = mc->dim, V = mc->vocab_size, R = chunk_rows(m);
  float *dhead = mc->tie_embeddings ? wgrad_ptr(m, P_EMBED, -1) : wgrad_ptr(m, P_LM_HEAD, -1);
  dmem_zero(m, m->dxn, sizeof(float) * T * C);
  if (dlogprob || dentropy) {
    if (!m->head_done) head_forward(m); /* the forward skipped the logits (value only) */
    /* last chunk first: the forward left its logits in the buffer, so it is not recomputed */
    for (int c = (T + R - 1) / R - 1; c >= 0; c--) {
      int r0 = c * R, n = T - r0 < R ? T - r0 : R;
      const float *x = m->xf + (size_t)r0 * C;
      if (m->logits_held != 1 + r0)
        matmul_abt(m, n, V, C, x, C, lm_head(m), C, 0.0f, m->logits, V);
      m->logits_held = 0; /* logprob_bwd turns the buffer into dL/dlogits */
      logprob_bwd(m, r0, dlogprob ? dlogprob + r0 : NULL, dentropy ? dentropy + r0 : NULL, n);
      linear_bwd(m, m->dxn + (size_t)r0 * C, dhead, NULL, m->logits, x, lm_head(m), n, V, C, 0.0f);
    }
    col_parallel_bwd(m, m->dxn);  /* the vocabulary slices' parts of dL/dxf */
  }
  if (dvalue && mc->value_head) {
    /* value[t] = xf[t] . w:  dxf += dvalue w;  dw += dvalue^T xf */
    linear_bwd(m, m->dxn, grad_ptr(m, P_SCORE, -1), NULL, dvalue, m->xf,
               param_ptr(m, P_SCORE, -1), T, 1, C, 1.0f);
  }
}

static void layer_backward(struct model *m, int l) {
  const struct model_config *mc = &m->cfg;
  const struct backend_ops *ops = m->ops;
  struct layer_acts *a = &m->layers[l];
  int T = m->T, C = mc->dim, F = mc->ffn_dim, H = mc->heads, KVH = mc->kv_heads, D = mc->head_dim;
  int KV = KVH * D, QD = H * D;
  float eps = (float)mc->norm_eps;
  struct lora_adapter down;
  int has_down = adapter(m, P_WDOWN, l, &down);
  /* MLP branch: out = res_mid + swiglu(xn2) Wdown^T; dres holds dL/dout. */
  ops->rmsnorm_fwd(m->xn, a->rstd2, a->res_mid, param_ptr(m, P_FFN_NORM, l), T, C, eps);
  /* dh (in dgate) = dres Wdown (+ the adapter's part); one pass then gives dgate, dup and h
   * for dWdown */
  matmul_ab(m, T, F, C, m->dres, C, param_ptr(m, P_WDOWN, l), F, 0.0f, m->dgate, F);
  if (has_down) lora_bwd_dx(ops, &down, m->dgate, m->dres, T, m->lora_du);
  ops->swiglu_bwd(m->dgate, m->dup, m->h, m->dgate, a->gate, a->up, (size_t)T * F);
  float *dwdown = wgrad_ptr(m, P_WDOWN, l);
  if (dwdown) ops->matmul(1, 0, C, F, T, 1.0f, m->dres, C, m->h, F, 1.0f, dwdown, F);
  if (has_down) lora_bwd_dw(ops, &down, m->dres, m->h, m->lora_du, T, m->lora_u);
  linear_bwd(m, m->dxn, wgrad_ptr(m, P_WGATE, l), NULL, m->dgate, m->xn,
             param_ptr(m, P_WGATE, l), T, F, C, 0.0f);
  lora_back(m, P_WGATE, l, m->dxn, m->dgate, m->xn);
  linear_bwd(m, m->dxn, wgrad_ptr(m, P_WUP, l), NULL, m->dup, m->xn, param_ptr(m, P_WUP, l), T, F,
             C, 1.0f);
  lora_back(m, P_WUP, l, m->dxn, m->dup, m->xn);
  col_parallel_bwd(m, m->dxn);
  ops->rmsnorm_bwd(m->dres, grad_ptr(m, P_FFN_NORM, l), m->dxn, a->res_mid,
                   param_ptr(m, P_FFN_NORM, l), a->rstd2, T, C);
  /* Attention branch: res_mid = res_in + att Wo^T; dres now holds dL/dres_mid. */
  linear_bwd(m, m->datt, wgrad_ptr(m, P_WO, l), NULL, m->dres, a->att, param_ptr(m, P_WO, l), T,
             C, QD, 0.0f);
  lora_back(m, P_WO, l, m->datt, m->dres, a->att);
  ops->attention_bwd(m->dq, m->dk, m->dv, m->datt, a->att, a->lse, a->q, a->k, a->v, &m->attn, H,
                     KVH, D, 1.0f / sqrtf((float)D), m->attn_scratch);
  ops->rope(m->dq, m->pos, m->rope_cos, m->rope_sin, T, H, D, 1);
  ops->rope(m->dk, m->pos, m->rope_cos, m->rope_sin, T, KVH, D, 1);
  ops->rmsnorm_fwd(m->xn, a->rstd1, a->res_in, param_ptr(m, P_ATTN_NORM, l), T, C, eps);
  linear_bwd(m, m->dxn, wgrad_ptr(m, P_WQ, l), wgrad_ptr(m, P_BQ, l), m->dq, m->xn,
             param_ptr(m, P_WQ, l), T, QD, C, 0.0f);
  lora_back(m, P_WQ, l, m->dxn, m->dq, m->xn);
  linear_bwd(m, m->dxn, wgrad_ptr(m, P_WK, l), wgrad_ptr(m, P_BK, l), m->dk, m->xn,
             param_ptr(m, P_WK, l), T, KV, C, 1.0f);
  lora_back(m, P_WK, l, m->dxn, m->dk, m->xn);
  linear_bwd(m, m->dxn, wgrad_ptr(m, P_WV, l), wgrad_ptr(m, P_BV, l), m->dv, m->xn,
             param_ptr(m, P_WV, l), T, KV, C, 1.0f);
  lora_back(m, P_WV, l, m->dxn, m->dv, m->xn);
  col_parallel_bwd(m, m->dxn);
  ops->rmsnorm_bwd(m->dres, grad_ptr(m, P_ATTN_NORM, l), m->dxn, a->res_in,
                   param_ptr(m, P_ATTN_NORM, l), a->rstd1, T, C);
}

/* Copies host x[T] (NULL: none) into the op buffer d; returns what the ops should read. */
static const float *stage_in(const struct model *m, float *d, const float *x, int T) {
  if (!x) return NULL;
  to_dev(m, d, x, sizeof(float) * T);
  return d;
}

void model_backward(struct model *m, const float *dlogprob, const float *dentropy,
                    const float *dvalue) {
  const struct model_config *mc = &m->cfg;
  int T = m->T, C = mc->dim;
  if (m->forward_only) {  /* a caller's bug: the model was made without the backward's memory */
    fprintf(stderr, "rlpt: model: model_backward on a forward-only model (model_create_forward)\n");
    abort();
  }
  if (m->on_device) { /* the ops read their own memory: the host gradients go up first */
    dlogprob = stage_in(m, m->dlp_in, dlogprob, T);
    dentropy = stage_in(m, m->dent_in, dentropy, T);
    dvalue = stage_in(m, m->dval_in, dvalue, T);
  }
  head_backward(m, dlogprob, dentropy, dvalue);
  dmem_zero(m, m->dres, sizeof(float) * T * C);
  m->ops->rmsnorm_bwd(m->dres, grad_ptr(m, P_FINAL_NORM, -1), m->dxn, m->res_final,
                      param_ptr(m, P_FINAL_NORM, -1), m->rstdf, T, C);
  for (int l = mc->layers - 1; l >= 0; l--) layer_backward(m, l);
  if (m->tp)
    tp_embed_bwd(grad_ptr(m, P_EMBED, -1), m->tokens, m->dres, T, C, m->vocab_lo, mc->vocab_size);
  else
    m->ops->embed_bwd(grad_ptr(m, P_EMBED, -1), m->tokens, m->dres, T, C);
  if (m->on_device && !m->grads_on_device)
    to_host(m, m->grads, m->dgrads, sizeof(float) * m->table.total);
}
