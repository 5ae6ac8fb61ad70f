/* rollout/kv_device.c: the rollout engine's paged KV pool in device memory (rollout/kv_device.h).
 * Compiled in every build; the device work only with the CUDA backend. */
#include "rollout/kv_device.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

/* The step being run: device views into one uploaded int array (ints), built on the host
 * in h_ints. Sequences [0, n_dec) are decodes; [n_dec, nseq) the others, whose contexts
 * are gathered into kbuf, laid out by pcu_kv (from 0), their queries at rows pcu_q. */
struct kv_device {
  struct model *m;
  const struct kv_cache *kv;
  int *h_ints, *ints;
  size_t ints_cap;
  const int *tables, *kv_len, *pcu_q, *pcu_kv;
  int max_blocks, n_dec, n_pre, max_q_pre, max_kv_pre;
  int n_rows, pre_rows;  /* new rows of the step; context rows gathered */
  float *kbuf;           /* [2][kbuf_rows][kv_heads * head_dim]: K rows, then V rows */
  size_t kbuf_rows;
};

#ifdef RLPT_HAVE_CUDA
static void *dev_alloc(size_t bytes) { return cuda_backend.alloc(bytes); }
static void dev_free(void *p) { cuda_backend.free(p); }
static const struct kv_storage cuda_storage = {.alloc = dev_alloc, .free = dev_free,
                                              .copy = cuda_kv_copy};
#endif

const struct kv_storage *kv_device_storage(const struct model *m) {
#ifdef RLPT_HAVE_CUDA
  if (m->on_device) return &cuda_storage;
#endif
  (void)m;
  return NULL;
}

int kv_device_create(struct kv_device **out, struct model *m, const struct kv_cache *kv) {
  struct kv_device *d = calloc(1, sizeof *d);
  *out = d;
  if (!d) {
    fprintf(stderr, "rlpt: rollout: out of memory for the device KV state\n");
    return -1;
  }
  *d = (struct kv_device){ .m = m, .kv = kv };
  return 0;
}

void kv_device_free(struct kv_device *d) {
  if (!d) return;
  free(d->h_ints);
  if (d->ints) d->m->ops->free(d->ints);
  if (d->kbuf) d->m->ops->free(d->kbuf);
  free(d);
}

/* Room for n ints on both sides and for rows gathered context rows. 0 or -1. */
static int reserve(struct kv_device *d, size_t n, size_t rows) {
  const struct backend_ops *ops = d->m->ops;
  size_t KV = (size_t)d->kv->L.kv_heads * d->kv->L.head_dim;
  if (n > d->ints_cap) {
    size_t cap = n + n / 2;
    free(d->h_ints);
    if (d->ints) ops->free(d->ints);
    d->h_ints = malloc(sizeof(int) * cap);
    d->ints = ops->alloc(sizeof(int) * cap);
    d->ints_cap = d->h_ints && d->ints ? cap : 0;
    if (!d->ints_cap) return -1;
  }
  if (rows > d->kbuf_rows) {
    size_t cap = rows + rows / 2;
    if (d->kbuf) ops->free(d->kbuf);
    d->kbuf = ops->alloc(sizeof(float) * 2 * cap * KV);
    d->kbuf_rows = d->kbuf ? cap : 0;
    if (!d->kbuf) return -1;
  }
  return 0;
}

/* The step's spans: decodes first, then the gathered sequences. Returns the ints needed. */
static size_t plan(struct kv_device *d, const struct lm_batch *b) {
  int bs = d->kv->L.block_size, n = b->n_seqs;
  d->max_blocks = 1;
  d->n_dec = 0;
  while (d->n_dec < n && b->seqs[d->n_dec].n == 1) d->n_dec++;
  d->n_pre = n - d->n_dec;
  d->max_q_pre = d->max_kv_pre = d->n_rows = d->pre_rows = 0;
  for (int s = 0; s < n; s++) {
    const struct lm_seq *q = &b->seqs[s];
    int ctx = q->pos0 + q->n, nb = (ctx + bs - 1) / bs;
    d->max_blocks = nb > d->max_blocks ? nb : d->max_blocks;
    d->n_rows += q->n;
    if (s < d->n_dec) continue;
    d->max_q_pre = q->n > d->max_q_pre ? q->n : d->max_q_pre;
    d->max_kv_pre = ctx > d->max_kv_pre ? ctx : d->max_kv_pre;
    d->pre_rows += ctx;
  }
  return (size_t)n * d->max_blocks + (size_t)n + 2 * ((size_t)d->n_pre + 1);
}

int kv_device_prepare(struct kv_device *d, const struct lm_batch *b) {
  size_t need = plan(d, b);
  if (reserve(d, need, (size_t)d->pre_rows)) {
    fprintf(stderr, "rlpt: rollout: out of device memory for a step of %d sequences (%d "
            "context rows to gather)\n", b->n_seqs, d->pre_rows);
    return -1;
  }
  int n = b->n_seqs, mb = d->max_blocks, bs = d->kv->L.block_size;
  int *tables = d->h_ints, *kv_len = tables + (size_t)n * mb, *pcu_q = kv_len + n;
  int *pcu_kv = pcu_q + d->n_pre + 1;
  int row = 0;
  pcu_q[0] = pcu_kv[0] = 0;
  for (int s = 0; s < n; s++) {
    const struct lm_seq *q = &b->seqs[s];
    int ctx = q->pos0 + q->n, nb = (ctx + bs - 1) / bs;
    for (int i = 0; i < mb; i++) tables[(size_t)s * mb + i] = i < nb ? q->block_table[i] : 0;
    kv_len[s] = ctx;
    if (s >= d->n_dec) {
      int p = s - d->n_dec;
      pcu_q[p] = row;
      pcu_q[p + 1] = row + q->n;
      pcu_kv[p + 1] = pcu_kv[p] + ctx;
    }
    row += q->n;
  }
  d->m->ops->upload(d->ints, d->h_ints, sizeof(int) * need);
  d->tables = d->ints;
  d->kv_len = d->ints + (kv_len - tables);
  d->pcu_q = d->ints + (pcu_q - tables);
  d->pcu_kv = d->ints + (pcu_kv - tables);
  return 0;
}

int kv_device_attend(struct kv_device *d, int layer, const struct attn_batch *b, const float *q,
                     const float *k_new, const float *v_new, float *out, float *lse, int H,
                     float scale) {
#ifdef RLPT_HAVE_CUDA
  const struct kv_cache *kv = d->kv;
  const struct kv_layout *L = &kv->L;
  int mb = d->max_blocks;
  cuda_kv_store(kv->data, L, layer, d->tables, mb, b->cu_q, b->cu_kv, b->nseq, d->n_rows, k_new,
                v_new);
  if (d->n_dec)
    cuda_attention_decode_paged(out, lse, q, kv->data, L, layer, d->tables, mb, d->kv_len,
                                d->n_dec, H, scale);
  if (d->n_pre) {
    size_t KV = (size_t)L->kv_heads * L->head_dim;
    float *kc = d->kbuf, *vc = d->kbuf + d->kbuf_rows * KV;
    cuda_kv_gather(kc, vc, kv->data, L, layer, d->tables + (size_t)d->n_dec * mb, mb, d->pcu_kv,
                   d->n_pre, d->pre_rows);
    struct attn_batch pb = {.nseq = d->n_pre, .cu_q = d->pcu_q, .cu_kv = d->pcu_kv,
                            .max_q = d->max_q_pre, .max_kv = d->max_kv_pre};
    d->m->ops->attention_fwd(out, lse, q, kc, vc, &pb, H, L->kv_heads, L->head_dim, scale,
                             d->m->attn_scratch);
  }
  return 0;
#else /* no device storage without CUDA (kv_device_storage), so no pool to attend over */
  (void)d, (void)layer, (void)b, (void)q, (void)k_new, (void)v_new, (void)out, (void)lse,
      (void)H, (void)scale;
  fprintf(stderr, "rlpt: rollout: this build has no device KV pool (CUDA backend not built)\n");
  return -1;
#endif
}
