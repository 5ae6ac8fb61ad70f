/* rollout/test_gpu_rollout.c: the rollout engine's KV pool in device memory (rollout/kv_device.h,
 * kernels/kv_paged.cu) against the host pool.
 *
 * Part 1, kernels: two pools, one on the host (kv_create) and one in device memory
 * (kv_create_on with kv_device_storage), take the same bookkeeping (new sequences, a
 * fork, appends with a copy-on-write of a shared partial block: same block ids) and the
 * same rows: kv_scatter on the host, cuda_kv_store on the device, for a step mixing a
 * prefill, a chunk after a cached prefix and a decode, in two layers. The whole device
 * pool must equal the host pool byte for byte (stray writes included), and
 * cuda_kv_gather must return kv_gather's rows exactly.
 * Part 2, engine: rollout_generate on a tiny random model (fp32, block_size 4, prompts
 * x G = 4 sharing their prompt blocks) with the model on cuda_backend against the same
 * model on cpu_backend: greedy tokens identical, logprobs within 1e-4 absolute, in
 * three decks: prefix sharing with a second call served from the prefix cache; at most
 * 5 sequences at a time (admissions beside decodes: mixed steps); a 1 MiB pool that
 * preempts and recomputes. The cuda rollout's logprobs also match its own model_forward
 * within 1e-4. Skips (exit 77) without the CUDA backend or a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "gpu_main.h"
#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include "deck/config.h"
#include "kernels/cuda_backend.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "rollout/kv_cache.h"
#include "rollout/kv_device.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static const struct backend_ops *G = &cuda_backend;

static void *up(const void *h, size_t bytes) {
  void *d = G->alloc(bytes);
  CHECK(d != NULL);
  G->upload(d, h, bytes);
  return d;
}

/* ---- part 1: store / gather / copy-on-write against the host pool ------------------ */

/* The same bookkeeping on both pools: A (10 tokens), B forked from A (one more token
 * later: copy-on-write of A's partial third block), C (5 cached + 3 new). */
static void pools_fill(struct kv_cache *kv, int seq[3]) {
  CHECK((seq[0] = kv_seq_new(kv)) >= 0 && kv_seq_append(kv, seq[0], 10) == 0);
  CHECK((seq[1] = kv_seq_fork(kv, seq[0])) >= 0);
  CHECK((seq[2] = kv_seq_new(kv)) >= 0 && kv_seq_append(kv, seq[2], 8) == 0);
}

/* The whole device pool against the host pool, byte for byte. */
static void pools_same(const struct kv_cache *hk, const struct kv_cache *dk, const char *what) {
  size_t pool = (size_t)hk->n_blocks * hk->block_floats * sizeof(float);
  char *back = malloc(pool);
  G->download(back, dk->data, pool);
  CHECK_MSG(memcmp(back, hk->data, pool) == 0, "%s: the device pool differs from the host pool",
            what);
  free(back);
}

/* C's cached prefix (positions 0..4, from an earlier step) on both pools. */
static void prefix_store(struct kv_cache *hk, struct kv_cache *dk, int hc, int dc, const float *k,
                         const float *v, const float *gk, const float *gv) {
  int cu[2] = {0, 5}, *g_cu = up(cu, sizeof cu), *g_t = up(dk->seqs[dc].blocks, sizeof(int) * 2);
  for (int l = 0; l < 2; l++) {
    kv_scatter(hk, hk->seqs[hc].blocks, 0, 5, l, KV_K, k);
    kv_scatter(hk, hk->seqs[hc].blocks, 0, 5, l, KV_V, v);
    cuda_kv_store(dk->data, &dk->L, l, g_t, 2, g_cu, g_cu, 1, 5, gk, gv);
  }
  G->free(g_cu);
  G->free(g_t);
}

static void test_kernels(void) {
  struct kv_layout L = {2, 2, 16, 4};
  size_t row = (size_t)L.kv_heads * L.head_dim;
  size_t bytes = 12 * (size_t)L.block_size * kv_bytes_per_token(&L);
  struct model dev_model = { .on_device = 1 }; /* kv_device_storage reads on_device only */
  const struct kv_storage *st = kv_device_storage(&dev_model);
  CHECK(st != NULL);
  struct kv_cache hk, dk;
  char err[256];
  CHECK(kv_create(&hk, &L, bytes, 4, 0, 1, err, sizeof err) == 0);
  CHECK(kv_create_on(&dk, &L, bytes, 4, 0, 1, st, err, sizeof err) == 0);
  memset(hk.data, 0, (size_t)hk.n_blocks * hk.block_floats * sizeof(float)); /* as the device's */
  int hs[3], ds[3];
  pools_fill(&hk, hs);
  pools_fill(&dk, ds);
  /* the step, in batch order: A prefill of 10 at 0, C 3 new at 5, B decode at 10 (second
   * pass only, after its append) */
  static const int n_new[3] = {10, 3, 1}, pos0[3] = {0, 5, 10}, order[3] = {0, 2, 1};
  int cu_q[4] = {0}, cu_kv[4] = {0}, max_blocks = 3, tables[9] = {0};
  for (int i = 0; i < 3; i++) {
    cu_q[i + 1] = cu_q[i] + n_new[i];
    cu_kv[i + 1] = cu_kv[i] + pos0[i] + n_new[i];
  }
  float *k = malloc(sizeof(float) * 14 * row), *v = malloc(sizeof(float) * 14 * row);
  for (size_t i = 0; i < 14 * row; i++) {
    k[i] = (float)sin(0.37 * (double)i + 1.0);
    v[i] = (float)cos(0.11 * (double)i - 2.0);
  }
  float *gk = up(k, sizeof(float) * 14 * row), *gv = up(v, sizeof(float) * 14 * row);
  prefix_store(&hk, &dk, hs[2], ds[2], v, k, gv, gk);
  int *g_t = G->alloc(sizeof tables), *g_cq = up(cu_q, sizeof cu_q), *g_ckv = up(cu_kv, sizeof cu_kv);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      CHECK(kv_seq_append(&hk, hs[1], 1) == 0 && kv_seq_append(&dk, ds[1], 1) == 0);
      CHECK(hk.stats.cow_copies == 1 && dk.stats.cow_copies == 1);
      pools_same(&hk, &dk, "copy-on-write");
    }
    int nseq = pass ? 3 : 2;
    for (int i = 0; i < nseq; i++) {
      const struct kv_seq *sq = &dk.seqs[ds[order[i]]];
      for (int b = 0; b < max_blocks; b++)
        tables[i * max_blocks + b] = b < sq->n_blocks ? sq->blocks[b] : 0;
    }
    G->upload(g_t, tables, sizeof tables);
    for (int l = 0; l < 2; l++) {
      cuda_kv_store(dk.data, &L, l, g_t, max_blocks, g_cq, g_ckv, nseq, cu_q[nseq], gk, gv);
      for (int i = 0; i < nseq; i++) {
        const int *t = hk.seqs[hs[order[i]]].blocks;
        kv_scatter(&hk, t, pos0[i], n_new[i], l, KV_K, k + (size_t)cu_q[i] * row);
        kv_scatter(&hk, t, pos0[i], n_new[i], l, KV_V, v + (size_t)cu_q[i] * row);
      }
    }
    pools_same(&hk, &dk, pass ? "store with the decode" : "store");
  }
  /* every context (A 10, C 8, B 11 rows) gathered back, per layer */
  size_t rows = (size_t)cu_kv[3], rb = sizeof(float) * rows * row;
  float *hkc = malloc(rb), *hvc = malloc(rb), *dkc = malloc(rb), *dvc = malloc(rb);
  float *gkc = G->alloc(rb), *gvc = G->alloc(rb);
  for (int l = 0; l < 2; l++) {
    for (int i = 0; i < 3; i++) {
      const int *t = hk.seqs[hs[order[i]]].blocks;
      kv_gather(&hk, t, cu_kv[i + 1] - cu_kv[i], l, KV_K, hkc + (size_t)cu_kv[i] * row);
      kv_gather(&hk, t, cu_kv[i + 1] - cu_kv[i], l, KV_V, hvc + (size_t)cu_kv[i] * row);
    }
    cuda_kv_gather(gkc, gvc, dk.data, &L, l, g_t, max_blocks, g_ckv, 3, cu_kv[3]);
    G->download(dkc, gkc, rb);
    G->download(dvc, gvc, rb);
    CHECK_MSG(memcmp(dkc, hkc, rb) == 0, "layer %d: gathered K differ", l);
    CHECK_MSG(memcmp(dvc, hvc, rb) == 0, "layer %d: gathered V differ", l);
  }
  printf("kernels: store, copy-on-write and gather over %d blocks of %d: the device pool equals "
         "the host pool\n", hk.n_blocks, L.block_size);
  void *bufs[] = {gk, gv, g_t, g_cq, g_ckv, gkc, gvc};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) G->free(bufs[i]);
  free(k), free(v), free(hkc), free(hvc), free(dkc), free(dvc);
  kv_destroy(&hk);
  kv_destroy(&dk);
}

/* ---- part 2: the engine on cuda against cpu ------------------------------------------ */

#define LP_TOL 1e-4
static const char *PROMPTS[] = {"12+34=", "What is 7*8?", "abc", "the quick brown fox"};
#define N_PROMPTS 4
#define GROUP 4

/* KV-heavy and compute-light, so that a 1 MiB pool (256 tokens) preempts: 2 layers x 4 kv
 * heads x head size 64 x K,V x 4 bytes = 4 KiB per token. */
static void tiny_model(struct model *m, const struct backend_ops *ops) {
  struct model_config mc = { .vocab_size = TOK_CHAR_VOCAB, .dim = 256, .layers = 2, .heads = 4,
                             .kv_heads = 4, .ffn_dim = 96, .max_seq = 64, .rope_theta = 10000.0,
                             .norm_eps = 1e-5, .init_std = 0.12, .qkv_bias = 1 };
  CHECK(model_create(m, &mc, 512, ops) == 0);
  model_init_params(m, 4321);
}

static void deck(struct config *cfg, int max_num_seqs, long kv_mb) {
  config_defaults(cfg);
  cfg->run.seed = 3;
  cfg->rollout.max_new_tokens = 20;
  cfg->rollout.max_num_seqs = max_num_seqs;
  cfg->rollout.kv_cache_mb = kv_mb;
  cfg->rollout.prefix_sharing = 1;
  cfg->rollout.max_batch_tokens = 512;
  cfg->rollout.block_size = 4;
  cfg->rollout.temperature = 0.0;
  cfg->rollout.stop[0] = '\0';
}

/* Two calls on one engine (the second one's prompts come from the prefix cache). */
static void generate2(struct model *m, const struct config *cfg, const struct tokenizer *tok,
                      const struct rollout_prompt *p, struct sample_batch *out,
                      struct gen_stats *st) {
  struct rollout_engine *re;
  char err[512] = "";
  CHECK_MSG(rollout_create(&re, m, cfg, tok, err, sizeof err) == 0, "%s", err);
  struct gen_stats s2;
  CHECK_MSG(rollout_generate(re, p, N_PROMPTS, GROUP, 1, 7, out, st, err, sizeof err) == 0, "%s",
            err);
  CHECK_MSG(rollout_generate(re, p, N_PROMPTS, GROUP, 2, 7, out, &s2, err, sizeof err) == 0, "%s",
            err);
  st->prefix_hits += s2.prefix_hits;
  st->preemptions += s2.preemptions;
  st->cow_copies += s2.cow_copies;
  rollout_free(re);
}

/* 1 when a and b hold the same tokens and finish reasons; *lp the largest logprob gap. */
static int same_samples(const struct sample_batch *a, const struct sample_batch *b, double *lp,
                        int *toks) {
  *lp = 0;
  *toks = 0;
  if (a->n != b->n) return 0;
  for (int s = 0; s < a->n; s++) {
    const struct sample *x = &a->s[s], *y = &b->s[s];
    if (x->n_resp != y->n_resp || x->finish != y->finish ||
        memcmp(x->resp, y->resp, sizeof(int32_t) * (size_t)x->n_resp) != 0)
      return 0;
    for (int t = 0; t < x->n_resp; t++) {
      double d = fabs((double)x->logprobs[t] - (double)y->logprobs[t]);
      *lp = d > *lp || isnan(d) ? d : *lp;
    }
    *toks += x->n_resp;
  }
  return 1;
}

static void test_engine(const struct tokenizer *tok) {
  struct model cm, gm;
  tiny_model(&cm, &cpu_backend);
  tiny_model(&gm, &cuda_backend);
  memcpy(gm.params, cm.params, sizeof(float) * cm.table.total);
  int ptok[N_PROMPTS][32];
  struct rollout_prompt p[N_PROMPTS];
  for (int i = 0; i < N_PROMPTS; i++) {
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode(tok, PROMPTS[i], strlen(PROMPTS[i]), ptok[i], 32, &n, &at) == TOK_OK);
    p[i] = (struct rollout_prompt){ .prompt_id = 10 + i, .group = i, .tokens = ptok[i],
                                    .n_tokens = (int)n };
  }
  struct { const char *name; int max_num_seqs; long kv_mb; } v[] = {
    { "prefix sharing, prefix cache", 64, 16 },
    { "5 sequences at a time", 5, 16 },
    { "1 MiB pool (preemption)", 64, 1 },
  };
  for (int i = 0; i < 3; i++) {
    struct config cfg;
    deck(&cfg, v[i].max_num_seqs, v[i].kv_mb);
    struct sample_batch cb, gb;
    struct gen_stats cs = {0}, gs = {0};
    sample_batch_init(&cb);
    sample_batch_init(&gb);
    generate2(&cm, &cfg, tok, p, &cb, &cs);
    generate2(&gm, &cfg, tok, p, &gb, &gs);
    double lp = 0;
    int toks = 0, same = gb.n == 2 * N_PROMPTS * GROUP && same_samples(&cb, &gb, &lp, &toks);
    double self = same ? rollout_logprob_diff_max(&gm, &gb) : INFINITY;
    printf("engine %-30s %d samples, %d tokens: tokens %s, max |cuda - cpu| logprob %.2e, "
           "cuda rollout vs its model_forward %.2e (tolerance %.0e); cuda: preemptions %ld, "
           "prefix hits %ld, copy-on-write %ld\n", v[i].name, gb.n, toks,
           same ? "identical" : "DIFFER", lp, self, LP_TOL, gs.preemptions, gs.prefix_hits,
           gs.cow_copies);
    CHECK(same);
    CHECK(lp <= LP_TOL);
    CHECK(self <= LP_TOL);
    CHECK(gs.cow_copies > 0);
    CHECK(gs.preemptions == cs.preemptions && gs.cow_copies == cs.cow_copies);
    /* the small pool evicts the prefix entries before it preempts */
    CHECK(v[i].kv_mb == 1 ? gs.preemptions > 0 : gs.prefix_hits > 0);
    sample_batch_free(&cb);
    sample_batch_free(&gb);
  }
  model_free(&cm);
  model_free(&gm);
}

static int run_all(void) {
  test_kernels();
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  test_engine(&tok);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_rollout");
}
#endif

GPU_TEST_MAIN("test_gpu_rollout", run_all)
