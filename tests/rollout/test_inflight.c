/* rollout/test_inflight.c: in-flight weight updates in the rollout engine (rollout/engine.h
 * rollout_set_update, rollout/scheduler.h update_fn) on a real tiny transformer. Weights A
 * (version 42) are replaced by weights B (version 43) at the start of decode step N; every
 * sequence is admitted at step 0, so each one still running then has exactly N tokens of A.
 * The references are independent of the scheduler: a run on A alone, a run on B alone
 * (sampling is keyed by position, not by weights), and model_forward over each whole
 * sequence (rollout_logprob_diff_max_of):
 *   every policy   samples finished before step N (the stop string ends 2 of 16) equal
 *                  the A run's, bit for bit, and carry version 42 only
 *   continue,      the others record both versions (tok_version: 42 for tokens < N, 43
 *   recompute      after), weight_version the oldest (42), their first N tokens equal A's
 *   continue       the version-43 tokens keep the KV cache of A's prefix: their logprobs
 *                  are NOT those of a B forward over the whole sequence (> 1e-3: the cache
 *                  really was kept), and the engine requeued nothing
 *   recompute      the prefix is prefilled again under B: the version-43 logprobs equal a B
 *                  forward's (tolerance 1e-6, the engine's rollout-vs-trainer bound,
 *                  test_rollout.c)
 *   abort          every split sequence restarts on B: it equals the B run's sample bit for
 *                  bit and carries version 43 only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define LP_TOL 1e-6   /* rollout vs model_forward logprob (test_rollout.c LP_TOL_TRAINER) */
#define SWITCH_AT 6   /* decode step at which B arrives */
#define N_PROMPTS 4
#define G 4

static const char *PROMPTS[N_PROMPTS] = { "12+34=", "What is 7*8?", "abc", "the quick brown fox" };

static void tiny_model(struct model *m, uint64_t seed) {
  struct model_config mc = { .vocab_size = TOK_CHAR_VOCAB, .dim = 64, .layers = 4, .heads = 8,
                             .kv_heads = 4, .ffn_dim = 128, .max_seq = 96, .rope_theta = 10000.0,
                             .norm_eps = 1e-5, .init_std = 0.15, .tie_embeddings = 0,
                             .qkv_bias = 1, .value_head = 0 };
  CHECK(model_create(m, &mc, 4096, &cpu_backend) == 0);
  model_init_params(m, seed);
}

/* The deck's defaults (T = 1, no top-p / top-k, prefix sharing, 16-token blocks) but a
 * small pool, short responses, and a stop string so that some end before the switch. */
static void deck(struct config *cfg) {
  config_defaults(cfg);
  cfg->run.seed = 77;
  cfg->rollout.max_new_tokens = 24;
  cfg->rollout.kv_cache_mb = 16;
  snprintf(cfg->rollout.stop, sizeof cfg->rollout.stop, " ");  /* ends 2 of the 16 before step 6 */
}

/* The hook: B's params into the engine's model at step SWITCH_AT. */
struct swap {
  struct model *m;
  const struct model *b;
  struct rollout_engine *re;
};

static int swap_at(void *ctx, long steps, uint64_t *version) {
  struct swap *w = ctx;
  if (steps != SWITCH_AT) return 0;
  memcpy(w->m->params, w->b->params, sizeof(float) * w->m->table.total);
  rollout_weights_changed(w->re, 43);
  *version = 43;
  return 1;
}

/* Generate on m (version v) with the swap hook when b != NULL. */
static const struct tokenizer *TOK;  /* the char tokenizer (EOS and the stop string) */

static void generate(struct model *m, const struct model *b, int64_t v, int policy,
                     const struct rollout_prompt *p, struct sample_batch *out, struct gen_stats *st) {
  struct config cfg;
  deck(&cfg);
  struct rollout_engine *re;
  char err[512] = "";
  CHECK(rollout_create(&re, m, &cfg, TOK, err, sizeof err) == 0);
  struct swap w = { .m = m, .b = b, .re = re };
  if (b) rollout_set_update(re, swap_at, &w, (enum gen_in_flight)policy);
  CHECK(rollout_generate(re, p, N_PROMPTS, G, 5, v, out, st, err, sizeof err) == 0);
  rollout_free(re);
}

static int same_sample(const struct sample *x, const struct sample *y, int n) {
  return x->n_resp >= n && y->n_resp >= n && memcmp(x->resp, y->resp, sizeof(int32_t) * (size_t)n) == 0 &&
         memcmp(x->logprobs, y->logprobs, sizeof(float) * (size_t)n) == 0;
}

/* Per policy: the checks of the header comment; returns the split samples. */
static int check_policy(int policy, struct model *m, const float *a_params, const struct model *b,
                        const struct rollout_prompt *p, const struct sample_batch *ra,
                        const struct sample_batch *rb) {
  static const char *names[] = { "continue", "recompute", "abort" };
  memcpy(m->params, a_params, sizeof(float) * m->table.total);
  struct sample_batch out;
  sample_batch_init(&out);
  struct gen_stats st;
  generate(m, b, 42, policy, p, &out, &st);
  CHECK(out.n == ra->n && st.updates == 1);
  int split = 0, early = 0;
  for (int i = 0; i < out.n; i++) {
    const struct sample *s = &out.s[i], *a = &ra->s[i];
    if (a->n_resp <= SWITCH_AT) {  /* finished under A */
      CHECK(same_sample(s, a, a->n_resp) && s->n_resp == a->n_resp && !s->tok_version);
      CHECK(s->weight_version == 42);
      early++;
    } else if (policy == GEN_INFLIGHT_ABORT) {
      CHECK(s->n_resp == rb->s[i].n_resp && same_sample(s, &rb->s[i], s->n_resp));
      CHECK(s->weight_version == 43 && !s->tok_version);
    } else {
      CHECK(s->tok_version && s->weight_version == 42 && same_sample(s, a, SWITCH_AT));
      for (int j = 0; s->tok_version && j < s->n_resp; j++)
        CHECK(s->tok_version[j] == (j < SWITCH_AT ? 42 : 43));
      CHECK(sample_tokens_of_version(s, 43) == s->n_resp - SWITCH_AT);
      split++;
    }
  }
  double d43 = rollout_logprob_diff_max_of((struct model *)b, &out, 43);
  memcpy(m->params, a_params, sizeof(float) * m->table.total);
  double d42 = rollout_logprob_diff_max_of(m, &out, 42);
  printf("%-9s: %d samples, %d finished before step %d, %d span versions 42 and 43, %ld "
         "requeued; |rollout - forward| logprob: version 42 tokens vs A %.2e, version 43 "
         "tokens vs B %.2e\n", names[policy], out.n, early, SWITCH_AT, split, st.requeued, d42, d43);
  CHECK(d42 <= LP_TOL && early > 0);
  if (policy == GEN_INFLIGHT_CONTINUE) CHECK(d43 > 1e-3 && st.requeued == 0);
  else CHECK(d43 <= LP_TOL);
  if (policy == GEN_INFLIGHT_RECOMPUTE) CHECK(st.requeued == split);
  int restarted = out.n - early;
  sample_batch_free(&out);
  return policy == GEN_INFLIGHT_ABORT ? restarted : split;
}

int main(void) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  TOK = &tok;
  struct model m, b;
  tiny_model(&m, 1234);
  tiny_model(&b, 99);
  float *a_params = malloc(sizeof(float) * m.table.total);
  memcpy(a_params, m.params, sizeof(float) * m.table.total);
  int tk[N_PROMPTS][64];
  struct rollout_prompt p[N_PROMPTS];
  for (int i = 0; i < N_PROMPTS; i++) {
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode(&tok, PROMPTS[i], strlen(PROMPTS[i]), tk[i], 64, &n, &at) == TOK_OK);
    p[i] = (struct rollout_prompt){ .prompt_id = 100 + i, .group = i, .tokens = tk[i], .n_tokens = (int)n };
  }
  struct sample_batch ra, rb;
  sample_batch_init(&ra);
  sample_batch_init(&rb);
  struct gen_stats st;
  generate(&m, NULL, 42, 0, p, &ra, &st);
  generate(&b, NULL, 43, 0, p, &rb, &st);
  int spans = 0;
  for (int policy = GEN_INFLIGHT_CONTINUE; policy <= GEN_INFLIGHT_ABORT; policy++)
    spans += check_policy(policy, &m, a_params, &b, p, &ra, &rb);
  CHECK(spans >= 3 * N_PROMPTS);  /* the switch fell inside most responses */
  sample_batch_free(&ra);
  sample_batch_free(&rb);
  free(a_params);
  model_free(&m);
  model_free(&b);
  tokenizer_free(&tok);
  return TEST_RESULT("test_inflight");
}
