/* rollout/test_generate.c: the rollout scheduler (rollout/scheduler.h, gen_run) on a toy
 * language model.
 *
 * The toy LM implements lm_ops like the real model must: each new token's K/V (a
 * fixed function of token, position and layer) is written into the paged cache
 * through the block table, and the logits of a sequence are computed from ALL its
 * cached K/V entries read back through the block table (softmax attention per layer
 * and head, then a fixed projection to 20 logits). A bug in paging, prefix sharing,
 * copy-on-write or preemption therefore changes the tokens or the logprobs.
 *
 * Checks (outputs compared bit for bit unless a tolerance is given):
 *  a) greedy generation == argmax of the toy LM recomputed from scratch over the full
 *     context at every step (no cache), logprob within 1e-6;
 *  b) prefix sharing on == off, and the prefill counters show the sharing;
 *  c) one sequence at a time == continuous batching of 64 (and longest_first == fcfs);
 *  d) a pool small enough to force preemptions == an ample pool, preemptions > 0;
 *  e) after a weight update the prefix cache is not reused: prefill recomputed, and the
 *     outputs equal a fresh cache's under the new weights;
 *  f) finish reasons eos / stop (token sequence, callback, text via the tokenizer) / length;
 *  g) bad input: a request that can never fit is refused with exit code 2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rollout/scheduler.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define TL 2    /* layers */
#define TH 2    /* kv heads */
#define TD 4    /* head dim */
#define TV 20   /* vocab */
#define TF (TL * TH * TD)
#define MAXCTX 512

struct toy {
  float w;                   /* "weights": changes every logit */
  float K[TL][MAXCTX][TH * TD], Vv[TL][MAXCTX][TH * TD];  /* one layer's context, contiguous */
  long calls, max_seqs;
};

static void toy_kv(int tok, int pos, int l, int h, int d, float *k, float *v) {
  *k = sinf(0.37f * tok * (d + 1) + 0.11f * pos + 0.7f * l + 1.3f * h);
  *v = cosf(0.23f * tok * (h + 1) + 0.05f * pos * (d + 1) + 0.4f * l + 0.9f * d);
}

/* logits[TV] for the query token qtok at position q attending to K/V of positions 0..q. */
static void toy_logits(const struct toy *t, int qtok, int q, float *logits) {
  float feat[TF];
  for (int l = 0; l < TL; l++)
    for (int h = 0; h < TH; h++) {
      int o = (l * TH + h) * TD, c = h * TD;
      float qv[TD], sc[MAXCTX], m = -INFINITY, sum = 0;
      for (int d = 0; d < TD; d++) qv[d] = 2.0f * sinf(0.29f * qtok * (d + 2) + 0.13f * q + 0.5f * l + 0.8f * h);
      for (int j = 0; j <= q; j++) {
        sc[j] = 0;
        for (int d = 0; d < TD; d++) sc[j] += qv[d] * t->K[l][j][c + d];
        if (sc[j] > m) m = sc[j];
      }
      for (int j = 0; j <= q; j++) sum += sc[j] = expf(sc[j] - m);
      for (int d = 0; d < TD; d++) {
        float acc = 0;
        for (int j = 0; j <= q; j++) acc += sc[j] * t->Vv[l][j][c + d];
        feat[o + d] = acc / sum;
      }
    }
  for (int v = 0; v < TV; v++) {
    float acc = cosf(0.5f * (float)(v - qtok));
    for (int f = 0; f < TF; f++) acc += sinf(1.7f * v + 0.9f * f + 0.3f * v * f) * feat[f];
    logits[v] = t->w * 2.5f * acc;
  }
}

static int toy_forward(void *ctx, const struct lm_batch *b, float *logits) {
  struct toy *t = ctx;
  int row = 0;
  for (int s = 0; s < b->n_seqs; s++) {
    const struct lm_seq *q = &b->seqs[s];
    int ctx_len = q->pos0 + q->n;
    if (ctx_len > MAXCTX) return 1;
    for (int l = 0; l < TL; l++) {
      float k[MAXCTX][TH * TD], v[MAXCTX][TH * TD];  /* the new tokens' K/V rows, into their slots */
      for (int i = 0; i < q->n; i++)
        for (int h = 0; h < TH; h++)
          for (int d = 0; d < TD; d++) toy_kv(q->tokens[i], q->pos0 + i, l, h, d, &k[i][h * TD + d], &v[i][h * TD + d]);
      kv_scatter(b->kv, q->block_table, q->pos0, q->n, l, KV_K, &k[0][0]);
      kv_scatter(b->kv, q->block_table, q->pos0, q->n, l, KV_V, &v[0][0]);
      /* the whole context read back through the block table */
      kv_gather(b->kv, q->block_table, ctx_len, l, KV_K, &t->K[l][0][0]);
      kv_gather(b->kv, q->block_table, ctx_len, l, KV_V, &t->Vv[l][0][0]);
    }
    for (int i = b->all_logits ? 0 : q->n - 1; i < q->n; i++) toy_logits(t, q->tokens[i], q->pos0 + i, logits + (size_t)TV * row++);
  }
  t->calls++;
  if (b->n_seqs > t->max_seqs) t->max_seqs = b->n_seqs;
  return 0;
}

/* The same model with no cache: K/V straight from the tokens. */
static void toy_reference(struct toy *t, const int *ctx, int n, float *logits) {
  for (int j = 0; j < n; j++)
    for (int l = 0; l < TL; l++)
      for (int h = 0; h < TH; h++)
        for (int d = 0; d < TD; d++) toy_kv(ctx[j], j, l, h, d, &t->K[l][j][h * TD + d], &t->Vv[l][j][h * TD + d]);
  toy_logits(t, ctx[n - 1], n - 1, logits);
}

/* ---- harness ---------------------------------------------------------------- */

#define NP_MAX 16
#define G_MAX 4
#define NEW_MAX 24

struct setup {
  int block_size;  /* tokens per KV block (4 unless a test says otherwise: many block boundaries) */
  int n_prompts, G, plen[NP_MAX], prompts[NP_MAX][40];
  struct gen_request req[NP_MAX * G_MAX];
};

struct outputs {
  int tokens[NP_MAX * G_MAX * NEW_MAX], len[NP_MAX * G_MAX], finish[NP_MAX * G_MAX];
  float logprobs[NP_MAX * G_MAX * NEW_MAX];
  struct gen_stats st;
};

/* Prompts of 1..37 tokens (crossing block boundaries), requests prompt-major. */
static void setup_init(struct setup *s, int n_prompts, int G) {
  s->block_size = 4;
  s->n_prompts = n_prompts;
  s->G = G;
  for (int p = 0; p < n_prompts; p++) {
    s->plen[p] = 1 + (p * 13 + 5) % 37;
    for (int i = 0; i < s->plen[p]; i++) s->prompts[p][i] = (p * 7 + i * i * 3 + i) % TV;
    for (int g = 0; g < G; g++)
      s->req[p * G + g] = (struct gen_request){ .prompt_id = 100 + p, .sample = g, .prompt = s->prompts[p],
                                                .prompt_len = s->plen[p] };
  }
}

static struct gen_config base_config(double T) {
  struct gen_config g = { .sp = { .temperature = T, .top_k = 0, .top_p = 1.0 },
                          .max_new_tokens = NEW_MAX, .max_num_seqs = 64,
                          .max_batch_tokens = 256, .scheduling = ROLLOUT_FCFS, .prefix_sharing = 1,
                          .eos_id = -1, .seed = 4321 };
  return g;
}

static struct kv_layout layout(int block_size) {
  return (struct kv_layout){ .layers = TL, .kv_heads = TH, .head_dim = TD, .block_size = block_size };
}

/* Run on a fresh (or the given) cache of n_blocks blocks. Returns gen_run's code. */
static int run(const struct setup *s, const struct gen_config *g, struct toy *t, struct kv_cache *kv_in,
               int n_blocks, uint64_t version, struct outputs *o) {
  struct lm_ops lm = { .ctx = t, .vocab = TV, .forward = toy_forward };
  struct kv_cache own, *kv = kv_in ? kv_in : &own;
  struct kv_layout L = layout(s->block_size);
  char err[512] = "";
  if (!kv_in)
    CHECK(kv_create(kv, &L, (size_t)n_blocks * L.block_size * kv_bytes_per_token(&L), 64, 64, TV,
                    err, sizeof err) == 0);
  memset(o, 0, sizeof *o);
  struct gen_result res = { .tokens = o->tokens, .logprobs = o->logprobs, .len = o->len,
                            .finish = o->finish };
  int rc = gen_run(g, &lm, kv, version, 3, s->req, s->n_prompts * s->G, &res, &o->st, err, sizeof err);
  if (rc) printf("gen_run: %s\n", err);
  if (!kv_in) kv_destroy(kv);
  return rc;
}

static int same_outputs(const struct outputs *a, const struct outputs *b, int n_req) {
  for (int r = 0; r < n_req; r++) {
    if (a->len[r] != b->len[r] || a->finish[r] != b->finish[r]) return 0;
    for (int i = 0; i < a->len[r]; i++)
      if (a->tokens[r * NEW_MAX + i] != b->tokens[r * NEW_MAX + i] ||
          a->logprobs[r * NEW_MAX + i] != b->logprobs[r * NEW_MAX + i])
        return 0;
  }
  return 1;
}

static long prompt_tokens(const struct setup *s) {
  long n = 0;
  for (int p = 0; p < s->n_prompts; p++) n += s->plen[p];
  return n;
}

/* ---- tests ------------------------------------------------------------------ */

/* a) greedy gen_run output == from-scratch argmax at every step, blocks of 4 and 16 tokens. */
static void test_greedy_reference(struct toy *t, int block_size) {
  struct setup s;
  setup_init(&s, 12, 2);
  s.block_size = block_size;
  struct gen_config g = base_config(0.0);
  struct outputs o;
  CHECK(run(&s, &g, t, NULL, 800 / block_size, 1, &o) == 0);
  int seen[TV] = { 0 }, distinct = 0;
  for (int r = 0; r < s.n_prompts * s.G; r++) {
    int ctx[40 + NEW_MAX], n = s.req[r].prompt_len, bad = 0;
    memcpy(ctx, s.req[r].prompt, (size_t)n * sizeof(int));
    CHECK(o.len[r] == NEW_MAX && o.finish[r] == GEN_LENGTH);
    for (int i = 0; i < NEW_MAX && !bad; i++) {
      float lg[TV];
      toy_reference(t, ctx, n, lg);
      int tok = sampling_argmax(lg, TV);
      CHECK_MSG(o.tokens[r * NEW_MAX + i] == tok, "request %d token %d: gen_run %d, reference %d", r, i,
                o.tokens[r * NEW_MAX + i], tok);
      CHECK_NEAR(o.logprobs[r * NEW_MAX + i], sampling_logprob(lg, TV, 1.0, tok), 1e-6);
      bad = o.tokens[r * NEW_MAX + i] != tok;
      distinct += !seen[tok]++;
      ctx[n++] = tok;
    }
  }
  CHECK_MSG(distinct >= 5, "the toy LM should not be trivial: %d distinct tokens", distinct);
  printf("a) greedy == from-scratch reference (block_size %d): %d requests x %d tokens, %d distinct tokens, "
         "%ld steps, %ld preemptions\n", block_size, s.n_prompts * s.G, NEW_MAX, distinct, o.st.steps,
         o.st.preemptions);
}

/* b) prefix sharing on == off; the counters show one prefill per prompt. */
static void test_prefix_sharing(struct toy *t) {
  struct setup s;
  setup_init(&s, 12, 4);
  struct gen_config g = base_config(0.8);
  g.sp.top_p = 0.9;
  struct outputs on, off;
  CHECK(run(&s, &g, t, NULL, 1000, 1, &on) == 0);
  g.prefix_sharing = 0;
  CHECK(run(&s, &g, t, NULL, 1000, 1, &off) == 0);
  CHECK(on.st.preemptions == 0 && off.st.preemptions == 0);  /* so the counters are exact */
  int n = s.n_prompts * s.G;
  long P = prompt_tokens(&s);
  CHECK(same_outputs(&on, &off, n));
  CHECK(on.st.prefill_requested == s.G * P && off.st.prefill_requested == s.G * P);
  CHECK(on.st.prefill_computed == P);
  CHECK(off.st.prefill_computed == s.G * P);
  CHECK(on.st.cow_copies > 0 && off.st.cow_copies == 0);
  printf("b) prefix sharing on == off: prefill computed/requested %ld/%ld vs %ld/%ld, %ld COW copies\n",
         on.st.prefill_computed, on.st.prefill_requested, off.st.prefill_computed, off.st.prefill_requested,
         on.st.cow_copies);
}

/* c) + d) one at a time == batch of 64 == longest_first == under preemption. */
static void test_batching_preemption(struct toy *t) {
  struct setup s;
  setup_init(&s, 16, 4);
  int n = s.n_prompts * s.G;
  struct gen_config g = base_config(1.0);
  g.sp.top_k = 5;
  struct outputs *o = malloc(5 * sizeof *o);
  t->max_seqs = 0;
  CHECK(run(&s, &g, t, NULL, 400, 1, &o[0]) == 0);
  long batched = t->max_seqs;
  g.max_num_seqs = 1;
  t->max_seqs = 0;
  CHECK(run(&s, &g, t, NULL, 400, 1, &o[1]) == 0);
  CHECK(t->max_seqs == 1);
  CHECK(batched >= 32);
  CHECK(same_outputs(&o[0], &o[1], n));
  g.max_num_seqs = 64;
  g.scheduling = ROLLOUT_LONGEST_FIRST;
  CHECK(run(&s, &g, t, NULL, 400, 1, &o[2]) == 0);
  CHECK(same_outputs(&o[0], &o[2], n));
  g.scheduling = ROLLOUT_FCFS;
  printf("c) serial == batched (%ld seqs in one forward) == longest_first: %d requests, steps %ld / %ld / %ld\n",
         batched, n, o[1].st.steps, o[0].st.steps, o[2].st.steps);
  /* d) 20 blocks of 4 tokens: one request needs up to 15. */
  for (int share = 1; share >= 0; share--) {
    g.prefix_sharing = share;
    CHECK(run(&s, &g, t, NULL, 20, 1, &o[3]) == 0);
    CHECK(o[3].st.preemptions > 0);
    CHECK(o[3].st.prefill_computed > o[0].st.prefill_computed);
    CHECK(o[3].st.blocks_used_max <= 20);
    CHECK(same_outputs(&o[0], &o[3], n));
    printf("d) tiny pool (prefix sharing %d): %ld preemptions, prefill computed %ld (ample pool: %ld), "
           "identical outputs: %d\n", share, o[3].st.preemptions, o[3].st.prefill_computed,
           o[0].st.prefill_computed, same_outputs(&o[0], &o[3], n));
  }
  free(o);
}

/* e) a weight update invalidates the prefix cache. */
static void test_stale_prefix(struct toy *t) {
  struct setup s;
  setup_init(&s, 12, 4);
  int n = s.n_prompts * s.G;
  long P = prompt_tokens(&s);
  struct gen_config g = base_config(0.9);
  struct outputs *o = malloc(4 * sizeof *o);
  struct kv_cache kv;
  char err[256];
  struct kv_layout L = layout(s.block_size);
  CHECK(kv_create(&kv, &L, 1000 * 4 * kv_bytes_per_token(&L), 64, 64, TV, err, sizeof err) == 0);
  t->w = 1.0f;
  CHECK(run(&s, &g, t, &kv, 0, 1, &o[0]) == 0);
  CHECK(o[0].st.prefill_computed == P);
  CHECK(run(&s, &g, t, &kv, 0, 1, &o[1]) == 0);  /* same version: every prompt comes from the cache */
  CHECK(o[1].st.prefill_computed == 0 && o[1].st.prefix_hits == n);
  CHECK(same_outputs(&o[0], &o[1], n));
  t->w = 1.5f;                                   /* new weights, version 2 */
  CHECK(run(&s, &g, t, &kv, 0, 2, &o[2]) == 0);
  CHECK(o[2].st.prefill_computed == P && o[2].st.prefix_hits == o[0].st.prefix_hits);
  CHECK(kv.stats.prefix_stale == s.n_prompts);
  long dropped = kv.stats.prefix_stale;
  CHECK(run(&s, &g, t, NULL, 1000, 2, &o[3]) == 0);  /* a fresh cache under the new weights */
  CHECK(same_outputs(&o[2], &o[3], n));
  CHECK(!same_outputs(&o[0], &o[2], n));
  kv_set_version(&kv, 99);
  CHECK(kv_blocks_free(&kv) == kv.n_blocks);     /* nothing leaked */
  printf("e) stale prefix: prefill computed %ld, %ld (same version), %ld after the update; %ld entries dropped\n",
         o[0].st.prefill_computed, o[1].st.prefill_computed, o[2].st.prefill_computed, dropped);
  kv_destroy(&kv);
  t->w = 1.0f;
  free(o);
}

static int stop_at_7(void *ctx, const int *tokens, int n) {
  (void)ctx;
  (void)tokens;
  return n == 7;
}

/* Expected length of response r cut at the first i where cut(i) holds. */
static int first_cut(const int *tok, int eos, const int *stop, int stop_len) {
  for (int i = 0; i < NEW_MAX; i++) {
    if (eos >= 0 && tok[i] == eos) return i + 1;
    if (stop && i + 1 >= stop_len && memcmp(tok + i + 1 - stop_len, stop, (size_t)stop_len * sizeof(int)) == 0)
      return i + 1;
  }
  return 0;
}

/* f) finish reasons. */
static void test_finish(struct toy *t) {
  struct setup s;
  setup_init(&s, 8, 1);
  struct gen_config g = base_config(0.0);
  struct outputs *o = malloc(5 * sizeof *o);
  CHECK(run(&s, &g, t, NULL, 200, 1, &o[0]) == 0);
  g.eos_id = o[0].tokens[5];
  CHECK(run(&s, &g, t, NULL, 200, 1, &o[1]) == 0);
  g.eos_id = -1;
  int stop[2] = { o[0].tokens[NEW_MAX + 3], o[0].tokens[NEW_MAX + 4] };
  const int *stops[1] = { stop };
  int stop_len[1] = { 2 };
  g.n_stop = 1;
  g.stop = stops;
  g.stop_len = stop_len;
  CHECK(run(&s, &g, t, NULL, 200, 1, &o[2]) == 0);
  g.n_stop = 0;
  g.stop_fn = stop_at_7;
  CHECK(run(&s, &g, t, NULL, 200, 1, &o[3]) == 0);
  /* The same stop as text through the character tokenizer (toy ids 0..19 are ' ' .. '3'). */
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  char text[8];
  size_t tl;
  CHECK(tokenizer_decode(&tok, stop, 2, text, sizeof text, &tl) == TOK_OK && strlen(text) == 2);
  struct gen_stop_text stx = { .tok = &tok, .stop = text };
  g.stop_fn = gen_stop_text;
  g.stop_ctx = &stx;
  CHECK(run(&s, &g, t, NULL, 200, 1, &o[4]) == 0);
  CHECK(same_outputs(&o[2], &o[4], s.n_prompts));
  tokenizer_free(&tok);
  int n_eos = 0, n_stop = 0;
  for (int r = 0; r < s.n_prompts; r++) {
    const int *full = &o[0].tokens[r * NEW_MAX];
    CHECK(o[0].finish[r] == GEN_LENGTH && o[0].len[r] == NEW_MAX);
    int le = first_cut(full, o[0].tokens[5], NULL, 0), ls = first_cut(full, -1, stop, 2);
    CHECK(o[1].finish[r] == (le ? GEN_EOS : GEN_LENGTH) && o[1].len[r] == (le ? le : NEW_MAX));
    CHECK(o[2].finish[r] == (ls ? GEN_STOP : GEN_LENGTH) && o[2].len[r] == (ls ? ls : NEW_MAX));
    CHECK(o[3].finish[r] == GEN_STOP && o[3].len[r] == 7);
    for (int k = 1; k < 4; k++)
      CHECK(memcmp(&o[k].tokens[r * NEW_MAX], full, (size_t)o[k].len[r] * sizeof(int)) == 0);
    n_eos += o[1].finish[r] == GEN_EOS;
    n_stop += o[2].finish[r] == GEN_STOP;
  }
  CHECK(o[1].finish[0] == GEN_EOS && o[1].len[0] <= 6);
  CHECK(o[2].finish[1] == GEN_STOP && o[2].len[1] <= 5);
  CHECK(strcmp(gen_finish_name(GEN_EOS), "eos") == 0 && strcmp(gen_finish_name(GEN_LENGTH), "length") == 0);
  printf("f) finish reasons: eos %d/%d, stop sequence (= stop text) %d/%d, stop callback %d/%d\n", n_eos, s.n_prompts,
         n_stop, s.n_prompts, s.n_prompts, s.n_prompts);
  free(o);
}

/* g) requests that can never fit are bad input (exit code 2), not a hang or a crash. */
static void test_bad_input(struct toy *t) {
  struct setup s;
  setup_init(&s, 3, 1);  /* the longest prompt has 32 tokens: with 24 new, 55 in the cache */
  struct gen_config g = base_config(0.0);
  struct outputs *o = malloc(sizeof *o);
  CHECK(run(&s, &g, t, NULL, 13, 1, o) == 2);
  CHECK(run(&s, &g, t, NULL, 14, 1, o) == 0);
  g.max_batch_tokens = 54;
  CHECK(run(&s, &g, t, NULL, 100, 1, o) == 2);
  free(o);
}

int main(void) {
  struct toy *t = calloc(1, sizeof *t);
  t->w = 1.0f;
  test_greedy_reference(t, 4);
  test_greedy_reference(t, 16);
  test_prefix_sharing(t);
  test_batching_preemption(t);
  test_stale_prefix(t);
  test_finish(t);
  test_bad_input(t);
  free(t);
  return TEST_RESULT("test_generate");
}
