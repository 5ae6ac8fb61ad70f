/* env/test_env_rollout.c: multi-turn generation on the rollout engine's KV cache
 * (rollout/scheduler.h's env_fn, rollout/engine.h's rollout_env) with a tiny random
 * transformer. A scripted environment appends a tool turn after the 3rd and the 9th
 * sampled token of every sequence (a random model writes no "</tool_call>"; the parser
 * and the episode hook are test_tool_call's):
 *   - the samples carry the tool tokens with mask 0 and logprob 0 where they were put;
 *   - the logprob of every sampled token, turn 2 and 3 included, equals a from-scratch
 *     model_forward of the whole sequence (prompt, model and tool tokens) within 1e-5
 *     (rollout_logprob_diff_max; on the CPU backend it is 0: the same bits);
 *   - without preemption the tool tokens are fed as decodes on the cache: the prefill
 *     computed is the prompts' tokens alone (nothing earlier is recomputed);
 *   - a KV pool small enough to preempt (the re-admitted sequence recomputes its prompt,
 *     model and tool tokens), a one-sequence batch and prefix sharing (the G samples fork the
 *     prompt's blocks, copy-on-write before their own tool turns) give the same tokens and
 *     logprob bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define LP_TOL 1e-5
#define N_PROMPTS 4
#define G 4
static const char *PROMPTS[N_PROMPTS] = { "12*34=", "What is 7*8?", "abc", "(5-3)*2=" };
static const char *TOOL = "<tool_response>42</tool_response>";

struct script {
  int inserted[N_PROMPTS * G];  /* tool tokens appended so far, per request */
};

static int script_begin(void *ctx, const struct rollout_prompt *p, int n, int group_size) {
  (void)p;
  memset(ctx, 0, sizeof(int) * (size_t)(n * group_size));
  return 0;
}

/* A tool turn after the 3rd and the 9th sampled token. */
static int script_turn(void *ctx, int r, const int *resp, int n, int *ins, int cap) {
  (void)resp;
  struct script *s = ctx;
  int sampled = n - s->inserted[r], k = (int)strlen(TOOL);
  if (sampled != 3 && sampled != 9) return 0;
  k = k < cap ? k : cap;
  for (int i = 0; i < k; i++) ins[i] = TOOL[i] - 32;
  s->inserted[r] += k;
  return k;
}

static void tiny_model(struct model *m) {
  struct model_config mc = { .vocab_size = TOK_CHAR_VOCAB, .dim = 64, .layers = 4, .heads = 8,
                             .kv_heads = 4, .ffn_dim = 128, .max_seq = 128, .rope_theta = 10000.0,
                             .norm_eps = 1e-5, .init_std = 0.15, .qkv_bias = 1 };
  CHECK(model_create(m, &mc, 4096, &cpu_backend) == 0);
  model_init_params(m, 99);
}

static void deck(struct config *cfg, int max_num_seqs, long kv_mb, int share) {
  config_defaults(cfg);
  cfg->run.seed = 5;
  cfg->rollout.max_new_tokens = 96;
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

static int generate(struct model *m, int max_num_seqs, long kv_mb, int share, struct sample_batch *out,
                    struct gen_stats *st, int *prompt_tokens) {
  static int tok[N_PROMPTS][32];
  struct rollout_prompt p[N_PROMPTS];
  struct tokenizer ct;
  tokenizer_init_char(&ct);
  *prompt_tokens = 0;
  for (int i = 0; i < N_PROMPTS; i++) {
    size_t n = 0, at = 0;
    CHECK(tokenizer_encode_prompt(&ct, PROMPTS[i], strlen(PROMPTS[i]), tok[i], 32, &n, &at) == TOK_OK);
    p[i] = (struct rollout_prompt){ .prompt_id = 10 + i, .group = i, .tokens = tok[i], .n_tokens = (int)n };
    *prompt_tokens += (int)n * G;
  }
  struct config cfg;
  deck(&cfg, max_num_seqs, kv_mb, share);
  struct rollout_engine *re;
  char err[512] = "";
  struct script sc;
  /* no EOS: every response runs to max_new_tokens, so every sequence gets both tool turns */
  int rc = rollout_create(&re, m, &cfg, NULL, err, sizeof err);
  struct rollout_env env = { .ctx = &sc, .begin = script_begin, .turn = script_turn };
  if (!rc) rc = rollout_set_env(re, &env, err, sizeof err);
  if (!rc) rc = rollout_generate(re, p, N_PROMPTS, G, 3, 7, out, st, err, sizeof err);
  if (rc) printf("rollout: %s\n", err);
  rollout_free(re);
  tokenizer_free(&ct);
  return rc;
}

/* The tool tokens sit masked where the script put them, with logprob 0. */
static void check_masks(const struct sample_batch *b) {
  int k = (int)strlen(TOOL);
  for (int i = 0; i < b->n; i++) {
    const struct sample *s = &b->s[i];
    CHECK(s->n_resp == 96 && s->resp_mask && s->finish == FINISH_LENGTH);
    if (!s->resp_mask || s->n_resp != 96) continue;
    int first = 3, second = 3 + k + 6;  /* after 3 sampled, then 6 more sampled */
    for (int j = 0; j < s->n_resp; j++) {
      int tool = (j >= first && j < first + k) || (j >= second && j < second + k);
      CHECK_MSG(s->resp_mask[j] == !tool, "sample %d token %d mask %d", i, j, s->resp_mask[j]);
      if (tool) CHECK(s->resp[j] == TOOL[j - (j < second ? first : second)] - 32 && s->logprobs[j] == 0.0f);
    }
  }
}

static int same_samples(const struct sample_batch *a, const struct sample_batch *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const struct sample *x = &a->s[i], *y = &b->s[i];
    if (x->n_resp != y->n_resp || memcmp(x->resp, y->resp, sizeof(int32_t) * (size_t)x->n_resp) ||
        memcmp(x->logprobs, y->logprobs, sizeof(float) * (size_t)x->n_resp) ||
        memcmp(x->resp_mask, y->resp_mask, (size_t)x->n_resp))
      return 0;
  }
  return 1;
}

int main(void) {
  struct model m;
  tiny_model(&m);
  struct sample_batch big, small, one;
  sample_batch_init(&big);
  sample_batch_init(&small);
  sample_batch_init(&one);
  struct gen_stats st;
  int prompt_tokens;
  CHECK(generate(&m, 64, 16, 0, &big, &st, &prompt_tokens) == 0);
  check_masks(&big);
  double diff = rollout_logprob_diff_max(&m, &big);
  printf("multi-turn: %d samples, logprob vs from-scratch forward max diff %.3g; preemptions %ld, "
         "prefill computed %ld (prompts %d)\n", big.n, diff, st.preemptions, st.prefill_computed,
         prompt_tokens);
  CHECK(diff <= LP_TOL);
  CHECK(st.preemptions == 0 && st.prefill_computed == prompt_tokens);
  CHECK(generate(&m, 16, 1, 0, &small, &st, &prompt_tokens) == 0);
  printf("small pool: preemptions %ld, prefill computed %ld\n", st.preemptions, st.prefill_computed);
  CHECK(st.preemptions > 0);
  CHECK(same_samples(&big, &small));
  CHECK(generate(&m, 1, 16, 0, &one, &st, &prompt_tokens) == 0);
  CHECK(same_samples(&big, &one));
  sample_batch_free(&one);
  sample_batch_init(&one);
  /* prefix sharing: the G samples of a prompt fork its blocks, then each appends its own tools */
  CHECK(generate(&m, 64, 16, 1, &one, &st, &prompt_tokens) == 0);
  printf("prefix sharing: prefill computed %ld of %ld requested\n", st.prefill_computed, st.prefill_requested);
  CHECK(st.prefill_computed < st.prefill_requested);
  CHECK(same_samples(&big, &one));
  sample_batch_free(&big);
  sample_batch_free(&small);
  sample_batch_free(&one);
  model_free(&m);
  return TEST_RESULT("test_env_rollout");
}
