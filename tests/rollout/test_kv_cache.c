/* rollout/test_kv_cache.c: the paged KV cache on its own: pool sizing, the documented
 * block layout, fork/refcounts, copy-on-write of a shared partial block,
 * all-or-nothing out-of-blocks, and the versioned prefix cache. */
#include <stdlib.h>
#include <string.h>

#include "rollout/kv_cache.h"
#include "testutil.h"

static const struct kv_layout L = { .layers = 2, .kv_heads = 2, .head_dim = 3, .block_size = 4 };
#define TOK_FLOATS 6  /* kv_heads * head_dim */

/* Write a value identifying (tag, position) into every K/V float of positions [from, to). */
static void fill(struct kv_cache *kv, int seq, int from, int to, float tag) {
  for (int t = from; t < to; t++)
    for (int l = 0; l < L.layers; l++)
      for (int w = 0; w < 2; w++) {
        float *p = kv_slot(kv, kv->seqs[seq].blocks, t, l, w);
        for (int i = 0; i < TOK_FLOATS; i++) p[i] = tag + 0.01f * t + 0.1f * w + 0.2f * l;
      }
}

static int holds(const struct kv_cache *kv, int seq, int t, float tag) {
  for (int l = 0; l < L.layers; l++)
    for (int w = 0; w < 2; w++) {
      const float *p = kv_slot(kv, kv->seqs[seq].blocks, t, l, w);
      for (int i = 0; i < TOK_FLOATS; i++)
        if (p[i] != tag + 0.01f * t + 0.1f * w + 0.2f * l) return 0;
    }
  return 1;
}

static void test_sizing_layout(void) {
  char err[256];
  struct kv_cache kv;
  CHECK(kv_bytes_per_token(&L) == 2 * 2 * 2 * 3 * 4);
  size_t block_bytes = 4 * kv_bytes_per_token(&L);
  CHECK(kv_create(&kv, &L, 10 * block_bytes + block_bytes - 1, 4, 4, 5, err, sizeof err) == 0);
  CHECK(kv.n_blocks == 10);
  CHECK(kv_blocks_free(&kv) == 10);
  /* [layer][k|v][block_size][kv_heads][head_dim] */
  int table[3] = { 7, 2, 5 };
  for (int t = 0; t < 12; t++)
    for (int l = 0; l < 2; l++)
      for (int w = 0; w < 2; w++) {
        size_t want = (size_t)table[t / 4] * kv.block_floats + ((size_t)(2 * l + w) * 4 + t % 4) * TOK_FLOATS;
        CHECK((size_t)(kv_slot(&kv, table, t, l, w) - kv.data) == want);
      }
  kv_destroy(&kv);
  CHECK(kv_create(&kv, &L, block_bytes - 1, 4, 4, 5, err, sizeof err) == -1);
  CHECK(strstr(err, "need at least one") != NULL);
}

/* kv_scatter / kv_gather move contiguous rows across block boundaries like kv_slot addresses them. */
static void test_scatter_gather(void) {
  char err[256];
  struct kv_cache kv;
  CHECK(kv_create(&kv, &L, 8 * 4 * kv_bytes_per_token(&L), 4, 0, 5, err, sizeof err) == 0);
  int table[4] = { 6, 1, 3, 0 };
  float rows[16][TOK_FLOATS], back[16][TOK_FLOATS];
  for (int t = 0; t < 16; t++)
    for (int i = 0; i < TOK_FLOATS; i++) rows[t][i] = 100.0f * t + i;
  for (int l = 0; l < 2; l++) {
    kv_scatter(&kv, table, 0, 3, l, KV_V, &rows[0][0]);   /* inside block 0 */
    kv_scatter(&kv, table, 3, 10, l, KV_V, &rows[3][0]);  /* crosses two boundaries */
    kv_scatter(&kv, table, 13, 3, l, KV_V, &rows[13][0]);
    memset(back, 0, sizeof back);
    kv_gather(&kv, table, 15, l, KV_V, &back[0][0]);
    for (int t = 0; t < 16; t++) {
      const float *p = kv_slot(&kv, table, t, l, KV_V);
      for (int i = 0; i < TOK_FLOATS; i++) {
        CHECK(p[i] == rows[t][i]);
        CHECK(back[t][i] == (t < 15 ? rows[t][i] : 0.0f));
      }
    }
  }
  kv_destroy(&kv);
}

static void test_fork_cow(void) {
  char err[256];
  struct kv_cache kv;
  CHECK(kv_create(&kv, &L, 6 * 4 * kv_bytes_per_token(&L), 4, 2, 5, err, sizeof err) == 0);
  int a = kv_seq_new(&kv);
  CHECK(kv_seq_append(&kv, a, 6) == 0);  /* blocks: one full, one with 2 of 4 slots */
  CHECK(kv.seqs[a].n_blocks == 2 && kv.seqs[a].len == 6);
  fill(&kv, a, 0, 6, 1.0f);
  int b = kv_seq_fork(&kv, a);
  CHECK(b >= 0 && kv.seqs[b].len == 6);
  CHECK(kv.refcount[kv.seqs[a].blocks[0]] == 2 && kv.refcount[kv.seqs[a].blocks[1]] == 2);
  CHECK(kv_blocks_free(&kv) == 4);
  /* a appends into the shared partial block: it gets a copy, b keeps the original. */
  CHECK(kv_seq_blocks_needed(&kv, a, 1) == 1);
  CHECK(kv_seq_append(&kv, a, 1) == 0);
  CHECK(kv.stats.cow_copies == 1);
  CHECK(kv.seqs[a].blocks[0] == kv.seqs[b].blocks[0]);
  CHECK(kv.seqs[a].blocks[1] != kv.seqs[b].blocks[1]);
  fill(&kv, a, 6, 7, 5.0f);
  for (int t = 0; t < 6; t++) CHECK(holds(&kv, a, t, 1.0f) && holds(&kv, b, t, 1.0f));
  /* b is now the only holder of its partial block: appends in place, no copy. */
  CHECK(kv_seq_append(&kv, b, 2) == 0);
  CHECK(kv.stats.cow_copies == 1);
  fill(&kv, b, 6, 8, 9.0f);
  CHECK(holds(&kv, a, 6, 5.0f) && holds(&kv, b, 6, 9.0f) && holds(&kv, b, 7, 9.0f));
  /* Out of blocks: all or nothing. 3 free; a (len 7) + 10 needs 3 more blocks, + 14 needs 4. */
  CHECK(kv_blocks_free(&kv) == 3);
  CHECK(kv_seq_append(&kv, a, 14) == -1);
  CHECK(kv.seqs[a].len == 7 && kv.seqs[a].n_blocks == 2 && kv_blocks_free(&kv) == 3);
  CHECK(kv_seq_append(&kv, a, 10) == 0 && kv_blocks_free(&kv) == 0);
  CHECK(kv_seq_fork(&kv, a) >= 0);  /* forks cost no blocks */
  kv_seq_free(&kv, a);
  kv_seq_free(&kv, b);
  CHECK(kv_blocks_free(&kv) == 1);  /* the fork holds a's 5 blocks (block 0 shared with b); b's own one is back */
  kv_destroy(&kv);
}

static void test_prefix(void) {
  char err[256];
  struct kv_cache kv;
  CHECK(kv_create(&kv, &L, 8 * 4 * kv_bytes_per_token(&L), 4, 2, 3, err, sizeof err) == 0);
  int prompt[5] = { 3, 1, 4, 1, 5 }, other[5] = { 3, 1, 4, 1, 6 };
  float lg[3] = { 0.5f, -1.0f, 2.0f };
  const float *got = NULL;
  kv_set_version(&kv, 7);
  int s = kv_seq_new(&kv);
  CHECK(kv_seq_append(&kv, s, 5) == 0);
  fill(&kv, s, 0, 5, 2.0f);
  CHECK(kv_prefix_lookup(&kv, prompt, 5, &got) == -1);
  CHECK(kv_prefix_insert(&kv, s, prompt, 5, lg) == 0);
  kv_seq_free(&kv, s);                         /* the entry keeps the blocks alive */
  CHECK(kv_blocks_free(&kv) == 6);
  CHECK(kv_prefix_has(&kv, prompt, 5) && !kv_prefix_has(&kv, other, 5) && !kv_prefix_has(&kv, prompt, 4));
  int h = kv_prefix_lookup(&kv, prompt, 5, &got);
  CHECK(h >= 0 && got && got[2] == 2.0f && kv.seqs[h].len == 5);
  for (int t = 0; t < 5; t++) CHECK(holds(&kv, h, t, 2.0f));
  CHECK(kv_seq_append(&kv, h, 1) == 0 && kv.stats.cow_copies == 1);  /* the entry's partial block is shared */
  kv_seq_free(&kv, h);
  CHECK(kv.stats.prefix_hits == 1 && kv.stats.prefix_misses == 1);
  /* A new weight version: the entry is dropped, never returned, its blocks freed. */
  kv_set_version(&kv, 8);
  CHECK(kv.stats.prefix_stale == 1 && kv.n_prefix == 0 && kv_blocks_free(&kv) == 8);
  CHECK(kv_prefix_lookup(&kv, prompt, 5, &got) == -1);
  /* LRU: with room for 2 entries, a third insert evicts the least recently used. */
  int p0[2] = { 0, 0 }, p1[2] = { 1, 1 }, p2[2] = { 2, 2 };
  const int *ps[3] = { p0, p1, p2 };
  for (int i = 0; i < 3; i++) {
    if (i == 2) {  /* touch p0 so that p1 is the least recently used */
      int x = kv_prefix_lookup(&kv, p0, 2, &got);
      CHECK(x >= 0);
      kv_seq_free(&kv, x);
    }
    int q = kv_seq_new(&kv);
    CHECK(kv_seq_append(&kv, q, 2) == 0);
    CHECK(kv_prefix_insert(&kv, q, ps[i], 2, lg) == 0);
    kv_seq_free(&kv, q);
  }
  CHECK(kv_prefix_has(&kv, p0, 2) && !kv_prefix_has(&kv, p1, 2) && kv_prefix_has(&kv, p2, 2));
  CHECK(kv.stats.prefix_evicted == 1);
  CHECK(kv_prefix_evict_lru(&kv) == 1 && kv_prefix_evict_lru(&kv) == 1 && kv_prefix_evict_lru(&kv) == 0);
  CHECK(kv_blocks_free(&kv) == 8);
  kv_destroy(&kv);
}

int main(void) {
  test_sizing_layout();
  test_scatter_gather();
  test_fork_cow();
  test_prefix();
  return TEST_RESULT("test_kv_cache");
}
