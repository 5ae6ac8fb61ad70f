/* rollout/kv_cache.c: block pool, block tables, copy-on-write forks and the versioned
 * prefix cache of the rollout engine (see rollout/kv_cache.h for the layout). */
#include "rollout/kv_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t kv_bytes_per_token(const struct kv_layout *L) {
  return 2 * (size_t)L->layers * (size_t)L->kv_heads * (size_t)L->head_dim * sizeof(float);
}

size_t kv_block_floats(const struct kv_layout *L) {
  return 2 * (size_t)L->layers * (size_t)L->block_size * (size_t)L->kv_heads * (size_t)L->head_dim;
}

int kv_create(struct kv_cache *kv, const struct kv_layout *L, size_t bytes, int max_seqs,
              int max_prefix, int n_logits, char *err, size_t errlen) {
  return kv_create_on(kv, L, bytes, max_seqs, max_prefix, n_logits, NULL, err, errlen);
}

int kv_create_on(struct kv_cache *kv, const struct kv_layout *L, size_t bytes, int max_seqs,
                 int max_prefix, int n_logits, const struct kv_storage *st, char *err,
                 size_t errlen) {
  memset(kv, 0, sizeof *kv);
  kv->storage = st;
  kv->L = *L;
  kv->block_floats = kv_block_floats(L);
  size_t block_bytes = kv->block_floats * sizeof(float);
  size_t nb = block_bytes ? bytes / block_bytes : 0;
  if (nb < 1 || nb > (size_t)1 << 30) {
    snprintf(err, errlen, "KV cache of %zu bytes holds %zu blocks of %zu bytes (block_size %d, "
             "%zu bytes/token): need at least one", bytes, nb, block_bytes, L->block_size,
             kv_bytes_per_token(L));
    return -1;
  }
  kv->n_blocks = (int)nb;
  kv->max_seqs = max_seqs;
  kv->max_prefix = max_prefix;
  kv->n_logits = n_logits;
  kv->data = st ? st->alloc(nb * block_bytes) : malloc(nb * block_bytes);
  kv->refcount = calloc(nb, sizeof *kv->refcount);
  kv->free_list = malloc(nb * sizeof *kv->free_list);
  kv->seqs = calloc((size_t)max_seqs, sizeof *kv->seqs);
  kv->prefix = calloc((size_t)(max_prefix > 0 ? max_prefix : 1), sizeof *kv->prefix);
  if (!kv->data || !kv->refcount || !kv->free_list || !kv->seqs || !kv->prefix) {
    kv_destroy(kv);
    snprintf(err, errlen, "out of %smemory allocating a KV cache of %zu bytes",
             st ? "device " : "", nb * block_bytes);
    return -1;
  }
  /* Pop order 0, 1, 2, ...: the free list is a stack, so fill it backwards. */
  for (int i = 0; i < kv->n_blocks; i++) kv->free_list[i] = kv->n_blocks - 1 - i;
  kv->n_free = kv->n_blocks;
  return 0;
}

static void prefix_drop(struct kv_cache *kv, int e);

void kv_destroy(struct kv_cache *kv) {
  if (kv->seqs)
    for (int s = 0; s < kv->max_seqs; s++) {
      if (kv->seqs[s].live) kv_seq_free(kv, s);
      free(kv->seqs[s].blocks);
    }
  while (kv->n_prefix > 0) prefix_drop(kv, kv->n_prefix - 1);
  if (kv->storage) { if (kv->data) kv->storage->free(kv->data); } else free(kv->data);
  free(kv->refcount);
  free(kv->free_list);
  free(kv->seqs);
  free(kv->prefix);
  memset(kv, 0, sizeof *kv);
}

int kv_blocks_free(const struct kv_cache *kv) { return kv->n_free; }

static int block_alloc(struct kv_cache *kv) {
  int b = kv->free_list[--kv->n_free];
  kv->refcount[b] = 1;
  int used = kv->n_blocks - kv->n_free;
  if (used > kv->stats.blocks_used_max) kv->stats.blocks_used_max = used;
  return b;
}

static void block_unref(struct kv_cache *kv, int b) {
  if (--kv->refcount[b] == 0) kv->free_list[kv->n_free++] = b;
}

float *kv_slot(const struct kv_cache *kv, const int *table, int t, int layer, int which) {
  const struct kv_layout *L = &kv->L;
  size_t tok = (size_t)L->kv_heads * L->head_dim;
  float *block = kv->data + (size_t)table[t / L->block_size] * kv->block_floats;
  return block + ((size_t)(2 * layer + which) * L->block_size + t % L->block_size) * tok;
}

/* Copy rows of positions [pos0, pos0+n) of one layer between the cache and a contiguous
 * buffer, one memcpy per block: from `src` into the cache when src is set, else into dst. */
static void copy_rows(const struct kv_cache *kv, const int *table, int pos0, int n, int layer, int which,
                      const float *src, float *dst) {
  int bs = kv->L.block_size;
  size_t tok = (size_t)kv->L.kv_heads * kv->L.head_dim;
  for (int t = pos0; t < pos0 + n;) {
    int run = bs - t % bs;
    if (run > pos0 + n - t) run = pos0 + n - t;
    float *slot = kv_slot(kv, table, t, layer, which);
    size_t row = (size_t)(t - pos0) * tok, bytes = (size_t)run * tok * sizeof(float);
    if (src) memcpy(slot, src + row, bytes);
    else memcpy(dst + row, slot, bytes);
    t += run;
  }
}

void kv_scatter(const struct kv_cache *kv, const int *table, int pos0, int n, int layer, int which,
                const float *src) {
  copy_rows(kv, table, pos0, n, layer, which, src, NULL);
}

void kv_gather(const struct kv_cache *kv, const int *table, int n, int layer, int which, float *dst) {
  copy_rows(kv, table, 0, n, layer, which, NULL, dst);
}

static int seq_reserve(struct kv_seq *s, int n_blocks) {
  if (n_blocks <= s->cap) return 0;
  int cap = s->cap ? s->cap : 4;
  while (cap < n_blocks) cap *= 2;
  int *b = realloc(s->blocks, (size_t)cap * sizeof *b);
  if (!b) return -1;
  s->blocks = b;
  s->cap = cap;
  return 0;
}

int kv_seq_new(struct kv_cache *kv) {
  for (int s = 0; s < kv->max_seqs; s++)
    if (!kv->seqs[s].live) {
      kv->seqs[s].live = 1;
      kv->seqs[s].len = 0;
      kv->seqs[s].n_blocks = 0;
      return s;
    }
  return -1;
}

/* A new sequence holding a reference to each of blocks[0..nb) and len tokens. */
static int seq_share(struct kv_cache *kv, const int *blocks, int nb, int len) {
  int s = kv_seq_new(kv);
  if (s < 0) return -1;
  struct kv_seq *d = &kv->seqs[s];
  if (seq_reserve(d, nb) != 0) {
    d->live = 0;
    return -1;
  }
  for (int i = 0; i < nb; i++) {
    d->blocks[i] = blocks[i];
    kv->refcount[blocks[i]]++;
  }
  d->n_blocks = nb;
  d->len = len;
  return s;
}

int kv_seq_fork(struct kv_cache *kv, int src) {
  const struct kv_seq *p = &kv->seqs[src];
  return seq_share(kv, p->blocks, p->n_blocks, p->len);
}

int kv_seq_blocks_needed(const struct kv_cache *kv, int seq, int n) {
  const struct kv_seq *s = &kv->seqs[seq];
  int bs = kv->L.block_size;
  if (n <= 0) return 0;
  int cow = (s->len % bs != 0 && kv->refcount[s->blocks[s->n_blocks - 1]] > 1);
  return (s->len + n + bs - 1) / bs - s->n_blocks + cow;
}

int kv_seq_append(struct kv_cache *kv, int seq, int n) {
  struct kv_seq *s = &kv->seqs[seq];
  int bs = kv->L.block_size;
  if (n <= 0) return 0;
  int need = kv_seq_blocks_needed(kv, seq, n);
  int total = (s->len + n + bs - 1) / bs;
  if (need > kv->n_free || seq_reserve(s, total) != 0) return -1;
  if (s->len % bs != 0 && kv->refcount[s->blocks[s->n_blocks - 1]] > 1) {
    /* Copy on write: the other holders keep the old block. The filled slots are strided over
     * the layers, so one memcpy of the whole block is simpler than copying them one by one. */
    int old = s->blocks[s->n_blocks - 1], nb = block_alloc(kv);
    float *dst = kv->data + (size_t)nb * kv->block_floats;
    const float *src = kv->data + (size_t)old * kv->block_floats;
    size_t bytes = kv->block_floats * sizeof(float);
    if (kv->storage) kv->storage->copy(dst, src, bytes); else memcpy(dst, src, bytes);
    block_unref(kv, old);
    s->blocks[s->n_blocks - 1] = nb;
    kv->stats.cow_copies++;
  }
  while (s->n_blocks < total) s->blocks[s->n_blocks++] = block_alloc(kv);
  s->len += n;
  return 0;
}

void kv_seq_free(struct kv_cache *kv, int seq) {
  struct kv_seq *s = &kv->seqs[seq];
  for (int i = 0; i < s->n_blocks; i++) block_unref(kv, s->blocks[i]);
  s->n_blocks = 0;
  s->len = 0;
  s->live = 0;
}

/* ---- prefix cache ---------------------------------------------------------- */

static uint64_t prefix_hash(uint64_t version, const int *tokens, int n) {
  uint64_t h = 1469598103934665603ULL ^ version;  /* FNV-1a over the version and tokens */
  for (int i = 0; i < n; i++) {
    h ^= (uint32_t)tokens[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static void prefix_drop(struct kv_cache *kv, int e) {
  struct kv_prefix *p = &kv->prefix[e];
  for (int i = 0; i < p->n_blocks; i++) block_unref(kv, p->blocks[i]);
  free(p->tokens);
  free(p->blocks);
  free(p->logits);
  kv->prefix[e] = kv->prefix[--kv->n_prefix];
}

void kv_set_version(struct kv_cache *kv, uint64_t version) {
  kv->version = version;
  for (int e = kv->n_prefix - 1; e >= 0; e--)
    if (kv->prefix[e].version != version) {
      prefix_drop(kv, e);
      kv->stats.prefix_stale++;
    }
}

/* The entry of the current version holding exactly these tokens, or -1. */
static int prefix_find(const struct kv_cache *kv, const int *tokens, int n) {
  uint64_t h = prefix_hash(kv->version, tokens, n);
  for (int e = 0; e < kv->n_prefix; e++) {
    const struct kv_prefix *p = &kv->prefix[e];
    if (p->version == kv->version && p->hash == h && p->n_tokens == n &&
        memcmp(p->tokens, tokens, (size_t)n * sizeof *tokens) == 0)
      return e;
  }
  return -1;
}

int kv_prefix_has(const struct kv_cache *kv, const int *tokens, int n) {
  return prefix_find(kv, tokens, n) >= 0;
}

int kv_prefix_lookup(struct kv_cache *kv, const int *tokens, int n, const float **logits) {
  int e = prefix_find(kv, tokens, n);
  if (e >= 0) {
    struct kv_prefix *p = &kv->prefix[e];
    int s = seq_share(kv, p->blocks, p->n_blocks, p->n_tokens);
    if (s < 0) return -1;
    p->last_use = ++kv->clock;
    *logits = p->logits;
    kv->stats.prefix_hits++;
    return s;
  }
  kv->stats.prefix_misses++;
  return -1;
}

int kv_prefix_evict_lru(struct kv_cache *kv) {
  if (kv->n_prefix == 0) return 0;
  int lru = 0;
  for (int e = 1; e < kv->n_prefix; e++)
    if (kv->prefix[e].last_use < kv->prefix[lru].last_use) lru = e;
  prefix_drop(kv, lru);
  kv->stats.prefix_evicted++;
  return 1;
}

int kv_prefix_insert(struct kv_cache *kv, int seq, const int *tokens, int n, const float *logits) {
  if (kv->max_prefix <= 0 || prefix_find(kv, tokens, n) >= 0) return 0;
  if (kv->n_prefix == kv->max_prefix) kv_prefix_evict_lru(kv);
  const struct kv_seq *s = &kv->seqs[seq];
  struct kv_prefix p = { .version = kv->version, .hash = prefix_hash(kv->version, tokens, n),
                         .n_tokens = n, .n_blocks = s->n_blocks, .last_use = ++kv->clock };
  p.tokens = malloc((size_t)n * sizeof *p.tokens);
  p.blocks = malloc((size_t)s->n_blocks * sizeof *p.blocks);
  p.logits = malloc((size_t)kv->n_logits * sizeof *p.logits);
  if (!p.tokens || !p.blocks || !p.logits) {
    free(p.tokens);
    free(p.blocks);
    free(p.logits);
    return -1;
  }
  memcpy(p.tokens, tokens, (size_t)n * sizeof *tokens);
  memcpy(p.logits, logits, (size_t)kv->n_logits * sizeof *logits);
  for (int i = 0; i < s->n_blocks; i++) {
    p.blocks[i] = s->blocks[i];
    kv->refcount[s->blocks[i]]++;
  }
  kv->prefix[kv->n_prefix++] = p;
  return 0;
}
