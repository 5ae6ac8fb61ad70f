/* rollout/test_gpu_sample.c: the rollout engine on the CUDA backend (logits sampled on the
 * device: rollout/sample_device.h) against the same engine on the CPU backend (host sampler),
 * on one tiny random fp32 model with the same weights.
 *
 * For greedy and for temperature sampling with and without top-k / top-p, 8 prompts x
 * G = 4 samples, generated with prefix sharing in batches of 64 sequences (followers
 * sample their leader's row) and of 6 (later samples of a prompt start from the prefix
 * cache's host row, uploaded for the device sampler), then a second call on the same
 * engine (every prompt a prefix-cache hit):
 *   - the tokens are the same, token by token;
 *   - the logprobs of equal tokens agree within 1e-4 absolute (both are the trainer's
 *     log-softmax of logits that differ by the backends' fp32 rounding, ~1e-6).
 * Near ties. The two backends' logits differ by ~1e-6 relative, so a token may legitimately
 * differ where the draw sits on a boundary: a sampled draw whose uniform u is within ~1e-6
 * of a boundary of the cumulative distribution, a greedy draw whose top two logits are
 * within ~1e-6. At the first differing token of a sample the test recomputes the CPU
 * logits of that context and accepts the difference only with that evidence: the host
 * sampler picks different tokens at u - 1e-5 and u + 1e-5 (sampled), or the top-two margin
 * is below 1e-4 (greedy); the rest of that sample is not compared (its contexts differ).
 * At most 1 such sample of 32 per case; a difference without the evidence fails.
 * Also: a NaN weight makes both backends' generation fail with "non-finite logits".
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <math.h>
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
#include "rollout/sampling.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "util/rng.h"

#define N_PROMPTS 8
#define G 4
#define MAX_NEW 16
#define LP_TOL 1e-4
#define U_TIE 1e-5      /* a sampled draw this close to a boundary is a near tie */
#define MARGIN_TIE 1e-4 /* a greedy draw with top-two logits this close is a near tie */

static const char *PROMPTS[N_PROMPTS] = {"12+34=", "What is 7*8?", "abc", "Count: 1, 2,",
                                         "x", "hello world", "(5-3)*2=", "the quick fox"};

struct sp_case {
  const char *name;
  double temperature, top_p;
  int top_k;
};

static const struct sp_case CASES[] = {
    {"greedy", 0.0, 1.0, 0},
    {"T=1", 1.0, 1.0, 0},
    {"T=1 top_p=0.9", 1.0, 0.9, 0},
    {"T=0.8 top_k=20", 0.8, 1.0, 20},
    {"T=1.2 top_k=10 top_p=0.7", 1.2, 0.7, 10},
};

struct prompt_set {
  int tok[N_PROMPTS][32];
  struct rollout_prompt p[N_PROMPTS];
};

static void deck(struct config *cfg, const struct sp_case *c, int max_num_seqs) {
  config_defaults(cfg);
  cfg->run.seed = 2024;
  cfg->rollout.max_new_tokens = MAX_NEW;
  cfg->rollout.max_num_seqs = max_num_seqs;
  cfg->rollout.kv_cache_mb = 4;
  cfg->rollout.prefix_sharing = 1;
  cfg->rollout.max_batch_tokens = 512;
  cfg->rollout.block_size = 16;
  cfg->rollout.temperature = c->temperature;
  cfg->rollout.top_p = c->top_p;
  cfg->rollout.top_k = c->top_k;
  cfg->rollout.stop[0] = '\0';
}

/* Two calls on one engine into out; *hits: the prefix-cache hits of both (every prompt of
 * the second call is one). 0 or the code. */
static int generate(struct model *m, const struct config *cfg, const struct tokenizer *tok,
                    const struct prompt_set *ps, struct sample_batch *out, long *hits) {
  struct rollout_engine *re = NULL;
  struct gen_stats st[2] = {{0}};
  char err[512] = "";
  int rc = rollout_create(&re, m, cfg, tok, err, sizeof err);
  if (!rc) rc = rollout_generate(re, ps->p, N_PROMPTS, G, 3, 9, out, &st[0], err, sizeof err);
  if (!rc) rc = rollout_generate(re, ps->p, N_PROMPTS, G, 4, 9, out, &st[1], err, sizeof err);
  *hits = st[0].prefix_hits + st[1].prefix_hits;
  if (rc) printf("generate (%s): %s\n", m->ops->name, err);
  rollout_free(re);
  return rc;
}

/* No cache: the context is exactly the new rows (every call starts at position 0). */
static int identity_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                             const float *v_new, const float **k_ctx, const float **v_ctx) {
  (void)ctx, (void)layer, (void)b;
  *k_ctx = k_new;
  *v_ctx = v_new;
  return 0;
}

/* 1 when the draw of sample s at response position k is a near tie on the CPU model. */
static int near_tie(struct model *cm, const struct config *cfg, const struct sample *s, int k,
                    uint32_t step) {
  int V = cm->cfg.vocab_size, ctx[64], n = s->n_prompt + k, cu[2] = {0, n}, pos0 = 0;
  memcpy(ctx, s->prompt, sizeof(int) * (size_t)s->n_prompt);
  memcpy(ctx + s->n_prompt, s->resp, sizeof(int) * (size_t)k);
  float *lg = malloc(sizeof(float) * (size_t)V);
  struct model_kv_io io = {.exchange = identity_exchange};
  CHECK(model_forward_kv(cm, ctx, cu, &pos0, 1, &io, 0, lg) == 0);
  int tie;
  if (!(cfg->rollout.temperature > 0)) {
    int best = sampling_argmax(lg, V);
    double second = -INFINITY;
    for (int v = 0; v < V; v++)
      if (v != best && lg[v] > second) second = lg[v];
    tie = lg[best] - second < MARGIN_TIE;
    printf("  near-tie check: greedy top-two margin %.3g\n", lg[best] - second);
  } else {
    struct rng_key key = {.seed = (uint64_t)cfg->run.seed, .stream = RNG_STREAM_SAMPLE,
                          .step = step, .prompt = (uint32_t)s->prompt_id,
                          .sample = (uint32_t)s->index, .pos = (uint32_t)k};
    struct sampling_params sp = {.temperature = cfg->rollout.temperature, .top_k = cfg->rollout.top_k,
                                 .top_p = cfg->rollout.top_p};
    struct sampler sm;
    CHECK(sampler_init(&sm, V) == 0);
    double u = rng_uniform(&key), lp;
    int lo = sampler_sample(&sm, lg, &sp, u - U_TIE, &lp);
    int hi = sampler_sample(&sm, lg, &sp, u + U_TIE, &lp);
    tie = lo != hi;
    printf("  near-tie check: u = %.9f, tokens at u -/+ %.0e: %d / %d\n", u, U_TIE, lo, hi);
    sampler_free(&sm);
  }
  free(lg);
  return tie;
}

/* Token by token; returns the samples that differ (each checked as a near tie). */
static int compare(struct model *cm, const struct config *cfg, const struct sample_batch *c,
                   const struct sample_batch *g, double *lp_max, int *tokens) {
  int differ = 0;
  *lp_max = 0;
  *tokens = 0;
  CHECK(c->n == g->n && c->n == 2 * N_PROMPTS * G);
  for (int i = 0; i < c->n && i < g->n; i++) {
    const struct sample *x = &c->s[i], *y = &g->s[i];
    int k = 0;
    while (k < x->n_resp && k < y->n_resp && x->resp[k] == y->resp[k]) {
      double d = fabs((double)x->logprobs[k] - y->logprobs[k]);
      *lp_max = d > *lp_max || isnan(d) ? d : *lp_max;
      k++;
    }
    *tokens += k;
    if (k == x->n_resp && k == y->n_resp) {
      CHECK(x->finish == y->finish);
      continue;
    }
    differ++;
    printf("  sample %d (prompt %lld, index %d): token %d differs at position %d: cpu %d, "
           "cuda %d\n", i, (long long)x->prompt_id, x->index, k, k,
           k < x->n_resp ? x->resp[k] : -1, k < y->n_resp ? y->resp[k] : -1);
    CHECK_MSG(k < x->n_resp && k < y->n_resp, "sample %d: one response ended early", i);
    if (k < x->n_resp && k < y->n_resp)
      CHECK_MSG(near_tie(cm, cfg, x, k, (uint32_t)x->step), "sample %d position %d: the tokens "
                "differ and the draw is no near tie", i, k);
  }
  return differ;
}

static void run_case(struct model *cm, struct model *gm, const struct tokenizer *tok,
                     const struct prompt_set *ps, const struct sp_case *c, int max_num_seqs,
                     struct sample_batch *keep) {
  struct config cfg;
  deck(&cfg, c, max_num_seqs);
  struct sample_batch b[2];
  sample_batch_init(&b[0]);
  sample_batch_init(&b[1]);
  long hits[2];
  CHECK(generate(cm, &cfg, tok, ps, &b[0], &hits[0]) == 0);
  CHECK(generate(gm, &cfg, tok, ps, &b[1], &hits[1]) == 0);
  double lp_max;
  int n_tok, differ = compare(cm, &cfg, &b[0], &b[1], &lp_max, &n_tok);
  printf("%-26s batch %2d: %d samples (%ld prefix-cache hits), %d tokens compared, %d samples "
         "differ (near ties), max |logprob cuda - cpu| %.2e\n", c->name, max_num_seqs, b[0].n,
         hits[1], n_tok, differ, lp_max);
  CHECK(hits[1] >= N_PROMPTS && hits[0] == hits[1]); /* host rows sampled on the device */
  CHECK_MSG(differ <= 1, "%s: %d of %d samples differ", c->name, differ, b[0].n);
  CHECK_MSG(lp_max <= LP_TOL, "%s: logprob difference %.3g > %.0e", c->name, lp_max, LP_TOL);
  CHECK(n_tok >= N_PROMPTS * G * 2 * 4); /* the comparison is not vacuous */
  if (keep) sample_batch_move_all(keep, &b[1]);
  sample_batch_free(&b[0]);
  sample_batch_free(&b[1]);
}

/* The sampled cases draw different tokens from greedy (the uniforms are used). */
static void check_sampling_used(const struct sample_batch *greedy, const struct sample_batch *t1) {
  int same = 0;
  for (int i = 0; i < greedy->n && i < t1->n; i++)
    same += greedy->s[i].n_resp == t1->s[i].n_resp &&
            memcmp(greedy->s[i].resp, t1->s[i].resp, sizeof(int32_t) * (size_t)t1->s[i].n_resp) == 0;
  printf("T=1 vs greedy on the device: %d of %d samples equal\n", same, t1->n);
  CHECK(t1->n > 0 && same < t1->n / 2);
}

/* A NaN in the final norm: every logit is NaN and both backends refuse to sample. */
static void nan_check(struct model *cm, struct model *gm, const struct tokenizer *tok,
                      const struct prompt_set *ps) {
  struct config cfg;
  deck(&cfg, &CASES[1], 64);
  const struct param_entry *e = param_table_find(&cm->table, "model.norm.weight");
  CHECK(e != NULL);
  if (!e) return;
  struct model *mm[2] = {cm, gm};
  for (int b = 0; b < 2; b++) {
    float keep = mm[b]->params[e->offset];
    mm[b]->params[e->offset] = NAN;
    struct rollout_engine *re;
    struct sample_batch out;
    sample_batch_init(&out);
    char err[512] = "";
    CHECK(rollout_create(&re, mm[b], &cfg, tok, err, sizeof err) == 0);
    rollout_weights_changed(re, 1); /* the device copy of the weights is refreshed */
    int rc = rollout_generate(re, ps->p, 2, 2, 0, 1, &out, NULL, err, sizeof err);
    printf("NaN weight on %s: code %d: %s\n", mm[b]->ops->name, rc, err);
    CHECK(rc == 1 && strstr(err, "non-finite logits") != NULL);
    rollout_free(re);
    sample_batch_free(&out);
    mm[b]->params[e->offset] = keep;
  }
}

static int run_all(void) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  struct prompt_set ps;
  for (int i = 0; i < N_PROMPTS; i++) {
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode(&tok, PROMPTS[i], strlen(PROMPTS[i]), ps.tok[i], 32, &n, &at) == TOK_OK);
    ps.p[i] = (struct rollout_prompt){.prompt_id = 300 + i, .group = i, .tokens = ps.tok[i],
                                      .n_tokens = (int)n};
  }
  struct model_config mc = {.vocab_size = TOK_CHAR_VOCAB, .dim = 32, .layers = 2, .heads = 4,
                            .kv_heads = 2, .ffn_dim = 48, .max_seq = 64, .rope_theta = 10000.0,
                            .norm_eps = 1e-5, .init_std = 0.3, .tie_embeddings = 1,
                            .qkv_bias = 1};
  struct model cm, gm;
  CHECK(model_create(&cm, &mc, 512, &cpu_backend) == 0);
  CHECK(model_create(&gm, &mc, 512, &cuda_backend) == 0);
  model_init_params(&cm, 31);
  memcpy(gm.params, cm.params, sizeof(float) * cm.table.total);
  struct sample_batch greedy, t1;
  sample_batch_init(&greedy);
  sample_batch_init(&t1);
  for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
    run_case(&cm, &gm, &tok, &ps, &CASES[c], 64, c == 0 ? &greedy : c == 1 ? &t1 : NULL);
    run_case(&cm, &gm, &tok, &ps, &CASES[c], 6, NULL);
  }
  check_sampling_used(&greedy, &t1);
  nan_check(&cm, &gm, &tok, &ps);
  sample_batch_free(&greedy);
  sample_batch_free(&t1);
  model_free(&cm);
  model_free(&gm);
  tokenizer_free(&tok);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_sample");
}
#endif

GPU_TEST_MAIN("test_gpu_sample", run_all)
