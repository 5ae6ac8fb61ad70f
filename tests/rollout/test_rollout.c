/* rollout/test_rollout.c: the rollout engine on a real (tiny, random) transformer.
 *
 * (a) greedy generation equals, token by token, the argmax of a forward recomputed
 *     from scratch over the whole context at each step (no cache reuse);
 * (b) at T = 1 the recorded logprobs equal the trainer's model_forward logprobs (stated
 *     tolerance 1e-6; on the CPU backend they are the same bits: every product and the
 *     attention compute a row in one fixed order whatever the batch, cpu/rowinv.c and
 *     cpu/attention.c, and the
 *     sampler's log-softmax is the trainer's arithmetic, rollout/sampling.h);
 * (c) prefix sharing on/off, batch 1/16/64 and a tiny KV pool (preemptions) give the same
 *     tokens and bit-identical logprobs;
 * (d) after a weight update the prefix cache of the old weights is never reused;
 * (e) the deck's stop string ends responses with finish reason "stop";
 * (f) the quickstart's shape (dim 128, 4 layers, 4/2 heads, ffn 344, max_seq 32, tied
 *     embeddings; 8 prompts x G = 16 decoded together, 6 new tokens) with weights of a
 *     trained model's scale: rollout vs model_forward within 1e-6, and the same samples
 *     generated one sequence at a time carry the same logprob bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "rollout/sampling.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

/* Rollout vs trainer logprob tolerance, ten times tighter than the run's own bound
 * (logprob_diff_max <= 1e-5): the row-invariant products (cpu/rowinv.c) give both the same
 * logits, and what is left is the two log-softmax implementations' exp. The batch
 * composition checks ask for bit-identical logprobs (a GEMM that sums a row in an order
 * depending on the row count puts them up to 8e-6 apart). */
#define LP_TOL_TRAINER 1e-6

static const char *PROMPTS[] = { "12+34=", "What is 7*8?", "abc", "Count: 1, 2, 3,", "x", "hello world",
                                 "(5-3)*2=", "the quick brown fox" };
#define N_PROMPTS 8

static void tiny_model(struct model *m) {
  struct model_config mc = { .vocab_size = TOK_CHAR_VOCAB, .dim = 64, .layers = 4, .heads = 8,
                             .kv_heads = 4, .ffn_dim = 128, .max_seq = 96, .rope_theta = 10000.0,
                             .norm_eps = 1e-5, .init_std = 0.15, .tie_embeddings = 0,
                             .qkv_bias = 1, .value_head = 0 };
  CHECK(model_create(m, &mc, 4096, &cpu_backend) == 0);
  model_init_params(m, 1234);
}

static void deck(struct config *cfg, int max_new, int max_num_seqs, long kv_mb, int share) {
  config_defaults(cfg);
  cfg->run.seed = 77;
  cfg->rollout.max_new_tokens = max_new;
  cfg->rollout.max_num_seqs = max_num_seqs;
  cfg->rollout.kv_cache_mb = kv_mb;
  cfg->rollout.prefix_sharing = share;
  cfg->rollout.max_batch_tokens = 4096;
  cfg->rollout.block_size = 16;
  cfg->rollout.temperature = 1.0;
  cfg->rollout.top_p = 1.0;
  cfg->rollout.top_k = 0;
  cfg->rollout.stop[0] = '\0';
}

struct prompt_set {
  int tok[N_PROMPTS][64];
  struct rollout_prompt p[N_PROMPTS];
};

static void prompts_init(struct prompt_set *ps, const struct tokenizer *tok) {
  for (int i = 0; i < N_PROMPTS; i++) {
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode(tok, PROMPTS[i], strlen(PROMPTS[i]), ps->tok[i], 64, &n, &at) == TOK_OK);
    ps->p[i] = (struct rollout_prompt){ .prompt_id = 100 + i, .group = i, .tokens = ps->tok[i],
                                        .n_tokens = (int)n };
  }
}

/* Generate with a fresh engine; returns rollout_generate's code. */
static int generate(struct model *m, const struct config *cfg, const struct tokenizer *tok,
                    const struct prompt_set *ps, int n, int G, double temperature,
                    struct sample_batch *out, struct gen_stats *st) {
  struct rollout_engine *re;
  char err[512] = "";
  int rc = rollout_create(&re, m, cfg, tok, err, sizeof err);
  if (rc) { printf("rollout_create: %s\n", err); return rc; }
  rollout_set_sampling(re, temperature, -1, -1);
  rc = rollout_generate(re, ps->p, n, G, 5, 42, out, st, err, sizeof err);
  if (rc) printf("rollout_generate: %s\n", err);
  rollout_free(re);
  return rc;
}

/* ---- (a) greedy against a from-scratch forward ------------------------------------- */

/* No cache: the context is exactly the new rows (every call starts at position 0). */
static int identity_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                             const float *v_new, const float **k_ctx, const float **v_ctx) {
  (void)ctx; (void)layer; (void)b;
  *k_ctx = k_new;
  *v_ctx = v_new;
  return 0;
}

static void test_greedy(struct model *m, const struct tokenizer *tok, const struct prompt_set *ps) {
  struct config cfg;
  deck(&cfg, 40, 64, 16, 1);
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK(generate(m, &cfg, tok, ps, N_PROMPTS, 1, 0.0, &b, NULL) == 0);
  struct model_kv_io io = { .exchange = identity_exchange };
  float *logits = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
  int ctx[128], checked = 0, mismatches = 0;
  double lp_diff = 0, min_margin = INFINITY;
  for (int i = 0; i < b.n; i++) {
    const struct sample *s = &b.s[i];
    memcpy(ctx, s->prompt, sizeof(int) * (size_t)s->n_prompt);
    for (int k = 0; k < s->n_resp; k++) {
      int n = s->n_prompt + k, cu[2] = { 0, n }, pos0 = 0;
      CHECK(model_forward_kv(m, ctx, cu, &pos0, 1, &io, 0, logits) == 0);
      int best = sampling_argmax(logits, m->cfg.vocab_size);
      double second = -INFINITY;
      for (int v = 0; v < m->cfg.vocab_size; v++)
        if (v != best && logits[v] > second) second = logits[v];
      if (logits[best] - second < min_margin) min_margin = logits[best] - second;
      mismatches += best != s->resp[k];
      double d = fabs(sampling_logprob(logits, m->cfg.vocab_size, 0, s->resp[k]) - s->logprobs[k]);
      lp_diff = d > lp_diff ? d : lp_diff;
      ctx[n] = s->resp[k];
      checked++;
    }
  }
  printf("a) greedy: %d tokens over %d samples, %d argmax mismatches, logprob diff %.2e, "
         "smallest top-2 logit margin %.2e\n", checked, b.n, mismatches, lp_diff, min_margin);
  CHECK(b.n == N_PROMPTS && checked > N_PROMPTS * 5);
  CHECK(mismatches == 0);
  CHECK(lp_diff <= LP_TOL_TRAINER);
  free(logits);
  sample_batch_free(&b);
}

/* ---- (b) logprobs against model_forward --------------------------------------------- */

static void test_logprobs(struct model *m, const struct tokenizer *tok, const struct prompt_set *ps) {
  struct config cfg;
  deck(&cfg, 48, 64, 16, 1);
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK(generate(m, &cfg, tok, ps, 4, 8, 1.0, &b, NULL) == 0);
  double d = rollout_logprob_diff_max(m, &b);
  int64_t toks = sample_batch_resp_tokens(&b), fin[FINISH_COUNT] = { 0 };
  for (int i = 0; i < b.n; i++) {
    const struct sample *s = &b.s[i];
    fin[s->finish]++;
    CHECK(s->group == i / 8 && s->index == i % 8 && s->prompt_id == 100 + i / 8);
    CHECK(s->weight_version == 42 && s->step == 5 && s->logprobs != NULL);
    CHECK(s->n_resp >= 1 && s->n_resp <= 48);
    CHECK((s->finish == FINISH_EOS) == (s->resp[s->n_resp - 1] == TOK_CHAR_EOS));
    CHECK(s->finish != FINISH_LENGTH || s->n_resp == 48);
  }
  printf("b) T=1, 4 prompts x G=8: %d samples, %lld tokens (eos %lld, length %lld), "
         "max |rollout - model_forward| logprob = %.2e (tolerance %.0e)\n", b.n, (long long)toks,
         (long long)fin[FINISH_EOS], (long long)fin[FINISH_LENGTH], d, LP_TOL_TRAINER);
  CHECK(b.n == 32);
  CHECK(d <= LP_TOL_TRAINER);
  sample_batch_free(&b);
}

/* ---- (c) batch composition ------------------------------------------------------------ */

/* 1 when the tokens, lengths and finish reasons match; *lp_max gets the largest logprob
 * difference and *bits whether every logprob matched bit for bit. */
static int same_samples(const struct sample_batch *a, const struct sample_batch *b, double *lp_max,
                        int *bits) {
  *lp_max = 0;
  *bits = 1;
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const struct sample *x = &a->s[i], *y = &b->s[i];
    if (x->n_resp != y->n_resp || x->finish != y->finish ||
        memcmp(x->resp, y->resp, sizeof(int32_t) * (size_t)x->n_resp) != 0)
      return 0;
    for (int k = 0; k < x->n_resp; k++) {
      double d = fabs((double)x->logprobs[k] - y->logprobs[k]);
      *lp_max = d > *lp_max ? d : *lp_max;
      *bits &= memcmp(&x->logprobs[k], &y->logprobs[k], sizeof(float)) == 0;
    }
  }
  return 1;
}

static void test_composition(struct model *m, const struct tokenizer *tok, const struct prompt_set *ps) {
  struct { const char *name; int max_num_seqs; long kv_mb; int share; } v[] = {
    { "prefix sharing on, batch 64, 16 MiB", 64, 16, 1 },
    { "prefix sharing off", 64, 16, 0 },
    { "batch 1", 1, 16, 1 },
    { "batch 16", 16, 16, 1 },
    { "KV pool 1 MiB (preemption)", 64, 1, 1 },
    { "KV pool 1 MiB, no sharing", 64, 1, 0 },
  };
  int nv = (int)(sizeof v / sizeof v[0]);
  struct sample_batch ref;
  sample_batch_init(&ref);
  for (int i = 0; i < nv; i++) {
    struct config cfg;
    deck(&cfg, 48, v[i].max_num_seqs, v[i].kv_mb, v[i].share);
    struct sample_batch b;
    struct gen_stats st;
    sample_batch_init(&b);
    CHECK(generate(m, &cfg, tok, ps, N_PROMPTS, 8, 1.0, &b, &st) == 0);
    double lp = 0;
    int bits = 1, same = i == 0 ? 1 : same_samples(&ref, &b, &lp, &bits);
    printf("c) %-36s steps %4ld, preemptions %3ld, prefill computed %5ld of %5ld: tokens %s, "
           "logprobs %s (max diff %.2e)\n", v[i].name, st.steps, st.preemptions, st.prefill_computed,
           st.prefill_requested, same ? "identical" : "DIFFER", bits ? "bit-identical" : "differ",
           lp);
    CHECK(same);
    CHECK(bits && lp == 0);
    if (v[i].kv_mb == 1) CHECK(st.preemptions > 0);
    if (i == 0) CHECK(st.prefill_computed < st.prefill_requested);
    if (i == 0) sample_batch_move_all(&ref, &b);
    sample_batch_free(&b);
  }
  sample_batch_free(&ref);
}

/* ---- (d) weight versions and the prefix cache ---------------------------------------- */

/* One engine across a weight update: the second call (new weights, new version) must equal
 * a fresh engine's output with the new weights, i.e. no prompt KV of the old weights is
 * reused. Control: the same call under the OLD version label does reuse the stale prefix
 * and differs, which shows the check can fail. */
static void test_versions(struct model *m, const struct tokenizer *tok, const struct prompt_set *ps) {
  struct config cfg;
  deck(&cfg, 16, 64, 16, 1);
  struct rollout_engine *re;
  char err[512] = "";
  CHECK(rollout_create(&re, m, &cfg, tok, err, sizeof err) == 0);
  struct sample_batch b1, b2, fresh, stale;
  sample_batch_init(&b1); sample_batch_init(&b2); sample_batch_init(&fresh); sample_batch_init(&stale);
  struct gen_stats st;
  CHECK(rollout_generate(re, ps->p, 4, 4, 1, 1, &b1, NULL, err, sizeof err) == 0);
  model_init_params(m, 999);  /* the "update" */
  rollout_weights_changed(re, 2);
  CHECK(rollout_generate(re, ps->p, 4, 4, 1, 2, &b2, &st, err, sizeof err) == 0);
  CHECK(st.prefix_hits == 0);
  struct rollout_engine *re3;  /* fresh engine, same step and version labels */
  CHECK(rollout_create(&re3, m, &cfg, tok, err, sizeof err) == 0);
  CHECK(rollout_generate(re3, ps->p, 4, 4, 1, 2, &fresh, NULL, err, sizeof err) == 0);
  rollout_free(re3);
  double lp;
  int bits, same_fresh = same_samples(&b2, &fresh, &lp, &bits);
  /* control: a fresh engine primed under version 1 with the old weights, then asked for
   * version 1 again after the weights changed, serves the prompts from its stale cache */
  struct rollout_engine *re2;
  CHECK(rollout_create(&re2, m, &cfg, tok, err, sizeof err) == 0);
  model_init_params(m, 1234);
  sample_batch_clear(&stale);
  CHECK(rollout_generate(re2, ps->p, 4, 4, 1, 1, &stale, NULL, err, sizeof err) == 0);
  model_init_params(m, 999);
  sample_batch_clear(&stale);
  CHECK(rollout_generate(re2, ps->p, 4, 4, 1, 1, &stale, &st, err, sizeof err) == 0);
  double lp2;
  int bits2, same_stale = same_samples(&stale, &fresh, &lp2, &bits2);
  printf("d) after a weight update: new version == fresh engine: %s (max logprob diff %.2e); "
         "control, stale version label: %ld prefix hits, %s\n", same_fresh ? "yes" : "NO", lp,
         st.prefix_hits, same_stale && bits2 ? "SAME (control failed)" : "differs");
  CHECK(same_fresh && bits);
  CHECK(st.prefix_hits > 0 && !(same_stale && bits2));
  model_init_params(m, 1234);  /* back to the weights of the other tests */
  rollout_free(re);
  rollout_free(re2);
  sample_batch_free(&b1); sample_batch_free(&b2); sample_batch_free(&fresh); sample_batch_free(&stale);
}

/* ---- (e) the deck's stop string --------------------------------------------------------- */

/* Stop at the character the model emits most often: samples that finish "stop" end with
 * it, the others never contain it, and the stop character is what made them end early. */
static void test_stop(struct model *m, const struct tokenizer *tok, const struct prompt_set *ps) {
  struct config cfg;
  deck(&cfg, 32, 64, 16, 1);
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK(generate(m, &cfg, tok, ps, 4, 8, 1.0, &b, NULL) == 0);
  int count[TOK_CHAR_VOCAB] = { 0 }, best = 0;
  for (int i = 0; i < b.n; i++)
    for (int k = 0; k < b.s[i].n_resp; k++)
      if (b.s[i].resp[k] < 95) count[b.s[i].resp[k]]++;
  for (int c = 1; c < 95; c++) best = count[c] > count[best] ? c : best;
  cfg.rollout.stop[0] = (char)(best + 32);
  cfg.rollout.stop[1] = '\0';
  sample_batch_clear(&b);
  CHECK(generate(m, &cfg, tok, ps, 4, 8, 1.0, &b, NULL) == 0);
  int n_stop = 0, bad = 0;
  for (int i = 0; i < b.n; i++) {
    const struct sample *s = &b.s[i];
    int last = s->resp[s->n_resp - 1], inside = 0;
    for (int k = 0; k + 1 < s->n_resp; k++) inside |= s->resp[k] == best;
    if (s->finish == FINISH_STOP) n_stop++, bad += last != best || inside;
    else bad += inside || last == best;
  }
  printf("e) stop string \"%s\": %d of %d samples finish \"stop\", %d inconsistent\n", cfg.rollout.stop,
         n_stop, b.n, bad);
  CHECK(n_stop > 0 && bad == 0);
  sample_batch_free(&b);
}

/* Bad input: a prompt longer than max_seq allows is exit code 2 with a message. */
static void test_bad_input(struct model *m, const struct tokenizer *tok) {
  struct config cfg;
  deck(&cfg, 90, 64, 16, 1);
  struct rollout_engine *re;
  char err[512] = "";
  CHECK(rollout_create(&re, m, &cfg, tok, err, sizeof err) == 0);
  int t[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
  struct rollout_prompt p = { .prompt_id = 1, .tokens = t, .n_tokens = 10 };
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK(rollout_generate(re, &p, 1, 2, 0, 0, &b, NULL, err, sizeof err) == 2);
  CHECK(strstr(err, "max_seq") != NULL && b.n == 0);
  printf("bad input: %s\n", err);
  rollout_free(re);
  sample_batch_free(&b);
}

/* ---- (f) the quickstart's shape ------------------------------------------------------- */

static void test_quickstart_shape(const struct tokenizer *tok) {
  struct model_config mc = { .vocab_size = TOK_CHAR_VOCAB, .dim = 128, .layers = 4, .heads = 4,
                             .kv_heads = 2, .ffn_dim = 344, .max_seq = 32, .rope_theta = 10000.0,
                             .norm_eps = 1e-5, .init_std = 0.3, .tie_embeddings = 1 };
  struct model m;
  CHECK(model_create(&m, &mc, 4096, &cpu_backend) == 0);
  model_init_params(&m, 4321);
  struct prompt_set ps;
  for (int i = 0; i < N_PROMPTS; i++) {
    char text[16];
    snprintf(text, sizeof text, "%d+%d=", 10 + 11 * i, 97 - 9 * i);
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode(tok, text, strlen(text), ps.tok[i], 64, &n, &at) == TOK_OK);
    ps.p[i] = (struct rollout_prompt){ .prompt_id = 500 + i, .group = i, .tokens = ps.tok[i],
                                       .n_tokens = (int)n };
  }
  double d[2];
  struct sample_batch b[2];
  for (int k = 0; k < 2; k++) {  /* all 128 sequences together, then one at a time */
    struct config cfg;
    deck(&cfg, 6, k == 0 ? 256 : 1, 16, 1);
    sample_batch_init(&b[k]);
    CHECK(generate(&m, &cfg, tok, &ps, N_PROMPTS, 16, 1.0, &b[k], NULL) == 0);
    d[k] = rollout_logprob_diff_max(&m, &b[k]);
  }
  double lp;
  int bits, same = same_samples(&b[0], &b[1], &lp, &bits);
  printf("f) quickstart shape, %d samples: max |rollout - model_forward| logprob = %.2e batched, "
         "%.2e one at a time (tolerance %.0e); batched vs one at a time: tokens %s, logprobs %s\n",
         b[0].n, d[0], d[1], LP_TOL_TRAINER, same ? "identical" : "DIFFER",
         bits ? "bit-identical" : "differ");
  CHECK(b[0].n == N_PROMPTS * 16 && d[0] <= LP_TOL_TRAINER && d[1] <= LP_TOL_TRAINER);
  CHECK(same && bits);
  sample_batch_free(&b[0]);
  sample_batch_free(&b[1]);
  model_free(&m);
}

int main(void) {
  struct model m;
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  tiny_model(&m);
  struct prompt_set ps;
  prompts_init(&ps, &tok);
  test_greedy(&m, &tok, &ps);
  test_logprobs(&m, &tok, &ps);
  test_composition(&m, &tok, &ps);
  test_versions(&m, &tok, &ps);
  test_stop(&m, &tok, &ps);
  test_bad_input(&m, &tok);
  model_free(&m);
  test_quickstart_shape(&tok);
  tokenizer_free(&tok);
  return TEST_RESULT("test_rollout");
}
