/* model/model_alloc.c: a model's memory (model/model.h): the activation arena carved into
 * its buffers (with model_create_forward, one layer set every layer reuses), the batch
 * arrays, the RoPE tables, the TP shard of the config, and the parameters' initialisation. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lora.h"
#include "model/model_mem.h"
#include "util/alloc.h"
#include "util/huge_alloc.h"
#include "util/rng.h"

/* Hands out consecutive pieces of the arena; with base == NULL it only counts. */
struct carver { float *base; size_t used; };

static float *carve(struct carver *c, size_t n) {
  float *p = c->base ? c->base + c->used : NULL;
  c->used += (n + 15) & ~(size_t)15; /* 64-byte aligned pieces */
  return p;
}

static void model_carve(struct model *m, struct carver *c) {
  const struct model_config *mc = &m->cfg;
  size_t T = (size_t)m->max_tokens, C = mc->dim, F = mc->ffn_dim;
  size_t KV = (size_t)mc->kv_heads * mc->head_dim, QD = (size_t)mc->heads * mc->head_dim;
  int span = mc->max_seq < m->max_tokens ? mc->max_seq : m->max_tokens;
  for (int l = 0; l < mc->layers; l++) {
    struct layer_acts *a = &m->layers[l];
    /* forward only: nothing reads a layer's activations after it has run, and a layer
     * writes its output (the next layer's res_in) only after its last read of its own
     * res_in, so every layer uses layer 0's set */
    if (m->forward_only && l >= 1) {
      *a = m->layers[0];
      continue;
    }
    a->res_in = carve(c, T * C);
    a->rstd1 = carve(c, T);
    a->q = carve(c, T * QD);
    a->k = carve(c, T * KV);
    a->v = carve(c, T * KV);
    a->att = carve(c, T * QD);
    a->lse = carve(c, T * mc->heads);
    a->res_mid = carve(c, T * C);
    a->rstd2 = carve(c, T);
    a->gate = carve(c, T * F);
    a->up = carve(c, T * F);
  }
  m->res_final = carve(c, T * C);
  m->rstdf = carve(c, T);
  m->xf = carve(c, T * C);
  m->lse_out = carve(c, T);
  m->ent_out = carve(c, T);
  m->lp_out = carve(c, T);
  m->val_out = carve(c, T);
  m->xn = carve(c, T * C);
  m->h = carve(c, T * F);
  if (!m->forward_only) {  /* the backward's */
    m->dlp_in = carve(c, T);
    m->dent_in = carve(c, T);
    m->dval_in = carve(c, T);
    m->dres = carve(c, T * C);
    m->dxn = carve(c, T * C);
    m->datt = carve(c, T * QD);
    m->dq = carve(c, T * QD);
    m->dk = carve(c, T * KV);
    m->dv = carve(c, T * KV);
    m->dgate = carve(c, T * F);
    m->dup = carve(c, T * F);
  }
  m->logits = carve(c, (size_t)m->logit_rows * mc->vocab_size);
  /* queries of one call span at most `span` rows, keys at most max_seq (KV-cache path) */
  m->attn_scratch = carve(c, attn_scratch_floats(span, mc->max_seq));
}

/* cos/sin of pos * theta^(-2i/D), computed in double, stored fp32. */
static int rope_tables(struct model *m) {
  int half = m->cfg.head_dim / 2;
  size_t n = (size_t)half * m->cfg.max_seq;
  float *hc = m->on_device ? malloc(sizeof(float) * n) : m->rope_cos;
  float *hs = m->on_device ? malloc(sizeof(float) * n) : m->rope_sin;
  if (!hc || !hs) { if (m->on_device) { free(hc); free(hs); } return -1; }
  for (int p = 0; p < m->cfg.max_seq; p++)
    for (int i = 0; i < half; i++) {
      double inv_freq = pow(m->cfg.rope_theta, -2.0 * i / m->cfg.head_dim);
      hc[(size_t)p * half + i] = (float)cos(p * inv_freq);
      hs[(size_t)p * half + i] = (float)sin(p * inv_freq);
    }
  to_dev(m, m->rope_cos, hc, sizeof(float) * n);
  to_dev(m, m->rope_sin, hs, sizeof(float) * n);
  if (m->on_device) { free(hc); free(hs); }
  return 0;
}

/* The ops' int arrays and, on a device, their host copies. 0 or -1. */
static int batch_arrays_alloc(struct model *m) {
  size_t n = (size_t)m->max_tokens;
  m->tokens = dmem_alloc(m, sizeof(int) * n);
  m->pos = dmem_alloc(m, sizeof(int) * n);
  m->targets = dmem_alloc(m, sizeof(int) * n);
  m->cu_seqlens = dmem_alloc(m, sizeof(int) * (n + 1));
  m->cu_kv = dmem_alloc(m, sizeof(int) * (n + 1));
  if (!m->on_device) {
    m->h_tokens = m->tokens, m->h_pos = m->pos, m->h_targets = m->targets;
    m->h_cu_seqlens = m->cu_seqlens, m->h_cu_kv = m->cu_kv;
    return m->tokens && m->pos && m->targets && m->cu_seqlens && m->cu_kv ? 0 : -1;
  }
  m->h_tokens = malloc(sizeof(int) * n);
  m->h_pos = malloc(sizeof(int) * n);
  m->h_targets = malloc(sizeof(int) * n);
  m->h_cu_seqlens = malloc(sizeof(int) * (n + 1));
  m->h_cu_kv = malloc(sizeof(int) * (n + 1));
  size_t kvd = (size_t)m->cfg.kv_heads * m->cfg.head_dim;
  m->kv_host = malloc(sizeof(float) * 2 * n * kvd);
  return m->tokens && m->pos && m->targets && m->cu_seqlens && m->cu_kv && m->h_tokens &&
         m->h_pos && m->h_targets && m->h_cu_seqlens && m->h_cu_kv && m->kv_host ? 0 : -1;
}

static void batch_arrays_free(struct model *m) {
  if (m->on_device) {
    free(m->h_tokens); free(m->h_pos); free(m->h_targets);
    free(m->h_cu_seqlens); free(m->h_cu_kv); free(m->kv_host);
    dmem_free(m, m->kv_dev);
  }
  dmem_free(m, m->tokens); dmem_free(m, m->pos); dmem_free(m, m->targets);
  dmem_free(m, m->cu_seqlens); dmem_free(m, m->cu_kv);
}

/* With tp: this rank's shard of mc (model/model.h model_create_tp). 0, or -1 with a
 * message. */
static int shard_config(struct model *m, const struct model_config *mc, const struct tp_group *tp) {
  m->cfg = *mc;
  m->cfg.head_dim = mc->dim / mc->heads;
  m->vocab_full = mc->vocab_size;
  if (!tp) return 0;
  int n = tp->size;
  if (mc->heads % n || mc->kv_heads % n || mc->ffn_dim % n || mc->vocab_size % n || mc->value_head) {
    fprintf(stderr, "rlpt: model: a tensor-parallel group of %d needs heads (%d), kv_heads (%d), "
            "ffn_dim (%d) and vocab_size (%d) divisible by it, and no value head\n", n, mc->heads,
            mc->kv_heads, mc->ffn_dim, mc->vocab_size);
    return -1;
  }
  m->tp = tp;
  m->cfg.heads /= n;
  m->cfg.kv_heads /= n;
  m->cfg.ffn_dim /= n;
  m->cfg.vocab_size /= n;
  m->vocab_lo = tp->rank * m->cfg.vocab_size;
  return 0;
}

static int create(struct model *m, const struct model_config *mc, int max_tokens,
                  const struct backend_ops *ops, const struct tp_group *tp, int forward_only);

/* Rows of the logits scratch: a chunk, or the whole batch when it is smaller. */
static int logit_rows(int max_tokens) {
  return max_tokens < 1 ? 1 : max_tokens < MODEL_LOGIT_CHUNK ? max_tokens : MODEL_LOGIT_CHUNK;
}

int model_create(struct model *m, const struct model_config *mc, int max_tokens,
                 const struct backend_ops *ops) {
  return create(m, mc, max_tokens, ops, NULL, 0);
}

int model_create_forward(struct model *m, const struct model_config *mc, int max_tokens,
                         const struct backend_ops *ops) {
  return create(m, mc, max_tokens, ops, NULL, 1);
}

int model_create_tp(struct model *m, const struct model_config *mc, int max_tokens,
                    const struct backend_ops *ops, const struct tp_group *tp) {
  return create(m, mc, max_tokens, ops, tp, 0);
}

int model_create_forward_tp(struct model *m, const struct model_config *mc, int max_tokens,
                            const struct backend_ops *ops, const struct tp_group *tp) {
  return create(m, mc, max_tokens, ops, tp, 1);
}

size_t model_forward_arena_bytes(const struct model_config *mc, int max_tokens) {
  struct model m = {.cfg = *mc, .max_tokens = max_tokens, .forward_only = 1};
  m.cfg.head_dim = mc->dim / mc->heads;
  m.logit_rows = logit_rows(max_tokens);
  m.layers = calloc_check((size_t)mc->layers, sizeof *m.layers);
  struct carver count = {.base = NULL, .used = 0};
  model_carve(&m, &count);
  free(m.layers);
  return sizeof(float) * count.used;
}

static int create(struct model *m, const struct model_config *mc, int max_tokens,
                  const struct backend_ops *ops, const struct tp_group *tp, int forward_only) {
  memset(m, 0, sizeof *m);
  m->forward_only = forward_only;
  if (tp && ops->upload) {
    fprintf(stderr, "rlpt: model: tensor parallelism runs on the host backend only\n");
    return -1;
  }
  if (shard_config(m, mc, tp)) return -1;
  m->ops = ops;
  m->on_device = ops->upload != NULL;
  m->exact = 1;
  m->max_tokens = max_tokens;
  m->logit_chunk = MODEL_LOGIT_CHUNK;
  m->logit_rows = logit_rows(max_tokens);
  param_table_build_tp(&m->table, mc, tp ? tp->size : 1);
  size_t half = (size_t)m->cfg.head_dim / 2;
  int weights_rc = weights_create(&m->weights, m->table.total, ops);
  if (!weights_rc) weights_rc = weights_device_alloc(&m->weights);
  m->params = m->weights.host;
  if (!forward_only) {
    m->grads = huge_floats(m->table.total);
    m->dgrads = m->on_device ? ops->alloc(sizeof(float) * m->table.total) : m->grads;
  }
  int arrays_rc = batch_arrays_alloc(m);
  m->rope_cos = dmem_alloc(m, sizeof(float) * half * mc->max_seq);
  m->rope_sin = dmem_alloc(m, sizeof(float) * half * mc->max_seq);
  m->layers = calloc((size_t)mc->layers, sizeof *m->layers);
  if (mc->lora_rank > 0 && m->on_device) {
    fprintf(stderr, "rlpt: model: LoRA adapters run on the CPU backend only\n");
    model_free(m);
    return -1;
  }
  size_t lora_n = (size_t)(max_tokens < 1 ? 1 : max_tokens) * (size_t)mc->lora_rank;
  if (mc->lora_rank > 0) {
    m->lora_u = malloc(sizeof(float) * lora_n);
    m->lora_du = malloc(sizeof(float) * lora_n);
  }
  struct carver count = { .base = NULL, .used = 0 };
  model_carve(m, &count);
  m->arena = dmem_alloc(m, sizeof(float) * count.used); /* count.used: whole 64-byte pieces */
  if (weights_rc || (!forward_only && (!m->grads || !m->dgrads)) || arrays_rc || !m->rope_cos || !m->rope_sin ||
      !m->layers || !m->arena || rope_tables(m) ||
      (mc->lora_rank > 0 && (!m->lora_u || !m->lora_du))) {
    fprintf(stderr, "rlpt: out of memory for the model (%zu parameters, %zu activation floats "
            "for %d tokens)\n", m->table.total, count.used, max_tokens);
    model_free(m);
    return -1;
  }
  struct carver c = { .base = m->arena, .used = 0 };
  model_carve(m, &c);
  return 0;
}

void model_free(struct model *m) {
  weights_free(&m->weights);
  if (m->on_device) dmem_free(m, m->dgrads);
  free(m->grads);
  batch_arrays_free(m);
  dmem_free(m, m->rope_cos);
  dmem_free(m, m->rope_sin);
  free(m->layers);
  free(m->lora_u);
  free(m->lora_du);
  dmem_free(m, m->arena);
  param_table_free(&m->table);
  memset(m, 0, sizeof *m);
}

/* ---- initialisation --------------------------------------------------------- */

void model_param_init_one(const struct param_table *t, int n, float *p, double init_std,
                          uint64_t seed) {
  const struct param_entry *e = &t->e[n];
  switch (e->kind) {
  case P_ATTN_NORM: case P_FFN_NORM: case P_FINAL_NORM:
    for (size_t i = 0; i < e->numel; i++) p[i] = 1.0f;
    break;
  case P_BQ: case P_BK: case P_BV: case P_LORA_B:
    memset(p, 0, sizeof(float) * e->numel);
    break;
  case P_LORA_A:
    lora_init_a(p, e->rows, e->cols, seed, n);
    break;
  default: {
    /* one rng stream per tensor: values depend on (seed, tensor index) only */
    struct rng_seq s;
    rng_seq_init(&s, seed, RNG_STREAM_INIT, (uint32_t)n, 0);
    rng_seq_fill_normal(&s, p, e->numel, 0.0f, (float)init_std);
  }
  }
}

void model_params_init(const struct param_table *t, float *params, double init_std,
                       uint64_t seed) {
  for (int n = 0; n < t->n; n++)
    model_param_init_one(t, n, params + t->e[n].offset, init_std, seed);
}

void model_params_init_lora(const struct param_table *t, float *params, uint64_t seed) {
  for (int n = 0; n < t->n; n++)
    if (t->e[n].kind == P_LORA_A || t->e[n].kind == P_LORA_B)
      model_param_init_one(t, n, params + t->e[n].offset, 0.0, seed);
}

void model_init_params(struct model *m, uint64_t seed) {
  model_params_init(&m->table, m->params, m->cfg.init_std, seed);
}

void model_zero_grad(struct model *m) {
  if (m->forward_only) return;  /* no gradients */
  if (!m->grads_on_device) memset(m->grads, 0, sizeof(float) * m->table.total);
  if (m->on_device) dmem_zero(m, m->dgrads, sizeof(float) * m->table.total);
}
