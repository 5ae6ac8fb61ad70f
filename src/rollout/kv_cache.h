/* rollout/kv_cache.h: the paged KV cache of the rollout engine (vLLM's PagedAttention
 * memory model) and its prefix cache.
 *
 * The pool is n_blocks fixed-size blocks of block_size tokens, sized from a byte
 * budget and the per-token KV bytes (2 * layers * kv_heads * head_dim * 4). A
 * sequence owns a block table: token at position t lives in block
 * table[t / block_size], slot t % block_size. Blocks are refcounted, so a fork
 * shares every block of its parent (the G samples of a prompt share the prompt's
 * blocks); a sequence that appends into a shared, partially filled last block
 * first copies it (copy-on-write). Full shared blocks are never written again.
 *
 * Memory layout of one block (fp32, contiguous, kv_block_floats() floats):
 *
 *     [layer][k|v][block_size][kv_heads][head_dim]
 *
 * so kv_slot(kv, table, t, layer, KV_V) points at the [kv_heads][head_dim] values
 * of token t in that layer. A model implementing lm_ops (rollout/scheduler.h) writes the K
 * (after RoPE) and V of each new token there and reads the context back the same way.
 *
 * Running out of blocks is reported (return -1), never a crash or a silent
 * truncation: the scheduler (rollout/scheduler.h) then evicts prefix-cache entries or
 * preempts a sequence.
 *
 * Prefix cache: an entry is (weight_version, prompt tokens) -> the prompt's blocks
 * (held by reference) plus the logits after its last token. Entries of a weight
 * version other than the current one are never returned and are dropped when the
 * version changes: KV computed by old weights would silently make data off-policy. */
#ifndef RLPT_KV_CACHE_H
#define RLPT_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

enum { KV_K = 0, KV_V = 1 };

struct kv_layout {
  int layers, kv_heads, head_dim, block_size;
};

struct kv_seq {
  int live;        /* slot in use */
  int len;         /* tokens in the cache */
  int n_blocks;
  int cap;         /* capacity of blocks[] */
  int *blocks;     /* block table */
};

struct kv_prefix {
  uint64_t version, hash;
  int n_tokens, n_blocks;
  int *tokens;     /* [n_tokens] */
  int *blocks;     /* [n_blocks], one reference each */
  float *logits;   /* [n_logits] after the last prompt token */
  long last_use;   /* LRU clock */
};

struct kv_stats {
  long cow_copies;       /* partial blocks copied on write */
  long prefix_hits, prefix_misses;
  long prefix_stale;     /* entries dropped because the weight version changed */
  long prefix_evicted;   /* entries dropped for space (LRU) */
  int blocks_used_max;   /* high-water mark */
};

/* Where the block storage lives: a device backend's memory (the rollout engine on a GPU)
 * through its allocator and a copy within that memory; the block tables, refcounts, prefix
 * entries and versions stay host bookkeeping. alloc returns NULL when out of memory. */
struct kv_storage {
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
  void (*copy)(void *dst, const void *src, size_t bytes);
};

struct kv_cache {
  struct kv_layout L;
  size_t block_floats;
  int n_blocks;
  float *data;           /* [n_blocks][block_floats]; device memory with a kv_storage */
  const struct kv_storage *storage; /* NULL: host memory */
  int *refcount;         /* [n_blocks] */
  int *free_list, n_free;
  struct kv_seq *seqs;   /* [max_seqs] slots */
  int max_seqs;
  struct kv_prefix *prefix;  /* [max_prefix] entries, n_prefix in use */
  int n_prefix, max_prefix, n_logits;
  uint64_t version;      /* current weight version */
  long clock;
  struct kv_stats stats;
};

/* Bytes of KV per token: 2 * layers * kv_heads * head_dim * sizeof(float). */
size_t kv_bytes_per_token(const struct kv_layout *L);
size_t kv_block_floats(const struct kv_layout *L);

/* A pool of floor(bytes / block bytes) blocks, max_seqs sequence slots and a prefix cache of
 * at most max_prefix entries each keeping n_logits logits. 0 ok; -1 when the budget holds
 * no block or memory runs out (err says which). */
int kv_create(struct kv_cache *kv, const struct kv_layout *L, size_t bytes, int max_seqs,
              int max_prefix, int n_logits, char *err, size_t errlen);
/* The same with the blocks in st's memory (kv_create: st NULL, host memory). kv->data is
 * then device memory: kv_slot gives device addresses, kv_scatter and kv_gather are not for
 * it (the device moves rows with its own kernels, e.g. cuda_backend.h's cuda_kv_store). */
int kv_create_on(struct kv_cache *kv, const struct kv_layout *L, size_t bytes, int max_seqs,
                 int max_prefix, int n_logits, const struct kv_storage *st, char *err,
                 size_t errlen);
void kv_destroy(struct kv_cache *kv);

/* A new empty sequence: its slot id, or -1 when every slot is taken. */
int kv_seq_new(struct kv_cache *kv);
/* A new sequence sharing every block of src (same length); -1 when no slot is free. */
int kv_seq_fork(struct kv_cache *kv, int src);
/* Grow seq by n tokens (positions len .. len+n-1, contents for the model to write),
 * copying a shared partial last block first. All or nothing: -1 when the pool lacks
 * the blocks, with the sequence unchanged. */
int kv_seq_append(struct kv_cache *kv, int seq, int n);
/* Blocks kv_seq_append(seq, n) would take from the pool. */
int kv_seq_blocks_needed(const struct kv_cache *kv, int seq, int n);
/* Drop the sequence and its references; blocks nobody else holds return to the pool. */
void kv_seq_free(struct kv_cache *kv, int seq);

/* Pointer to the [kv_heads][head_dim] K (which = KV_K) or V of position t of a sequence
 * whose block table is `table`. */
float *kv_slot(const struct kv_cache *kv, const int *table, int t, int layer, int which);
int kv_blocks_free(const struct kv_cache *kv);
/* The model's two copies, one memcpy per block: write rows src[n][kv_heads * head_dim] as the K
 * or V of positions pos0 .. pos0+n-1 of one layer; read positions 0 .. n-1 of one layer into
 * dst[n][kv_heads * head_dim] (the contiguous rows model/backend.h's attention takes). */
void kv_scatter(const struct kv_cache *kv, const int *table, int pos0, int n, int layer, int which,
                const float *src);
void kv_gather(const struct kv_cache *kv, const int *table, int n, int layer, int which, float *dst);

/* Set the current weight version; entries of any other version are dropped. */
void kv_set_version(struct kv_cache *kv, uint64_t version);
/* Prefix lookup for the current version: on a hit, a new sequence forked from the entry
 * (returned, >= 0) and *logits = the entry's logits (valid until the prefix cache next
 * changes: copy them); -1 on a miss (or no free slot). */
int kv_prefix_lookup(struct kv_cache *kv, const int *tokens, int n, const float **logits);
/* 1 when the current version has an entry for exactly these tokens (no stats, no fork). */
int kv_prefix_has(const struct kv_cache *kv, const int *tokens, int n);
/* Register seq (holding exactly these n prompt tokens) as the prefix entry of the current
 * version with its last-token logits; the least recently used entry makes room.
 * -1 on out of memory (nothing registered). */
int kv_prefix_insert(struct kv_cache *kv, int seq, const int *tokens, int n, const float *logits);
/* Drop the least recently used entry; 0 when there was none. */
int kv_prefix_evict_lru(struct kv_cache *kv);

#endif
