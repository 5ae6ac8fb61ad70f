/* train/test_trainer.c: the trainer on a tiny model (src/train/trainer.c, src/train/rl_step.c).
 *   - SFT on the arith task: the loss falls over 30 steps (by at least 1 nat/token
 *     from ~ln 98 = 4.6);
 *   - micro-batching: micro_batch_seqs 3 gives the parameters of one big batch
 *     (1e-5 relative: only the fp32 summation order differs);
 *   - RL direction: one GRPO step raises the logprob of the rewarded responses
 *     and lowers the others; with the rewards swapped the movement flips;
 *     logprob_diff_max of on-policy samples is ~0 (1e-5);
 *   - REINFORCE++ with PPO epochs/mini-batches runs finite with its metrics;
 *   - PPO: the critic fits the returns (squared error halves in 6 steps);
 *   - samples from the rollout engine: logprob_diff_max < 1e-5;
 *   - a SAMPLE_STALE sample gets truncated importance weights (tis_clipfrac);
 *   - [model] init = ckpt:PATH loads a model file; a wrong shape is refused;
 *   - a non-finite gradient skips the update: parameters and AdamW state stay
 *     bit-identical and skipped_nonfinite counts it.
 * With `--sft-deck DECK [section.key=value ...]` it instead runs the deck's SFT
 * phase and prints the held-out greedy exact match as it rises every 25 steps
 * (a measurement, not a CTest). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/model_h5.h"
#include "rollout/engine.h"
#include "tasks/tasks.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"
#include "util/clock.h"

static const char *deck_tiny =
    "[run]\nseed = 7\nsteps = 5\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 64\nmax_seq = 32\n"
    "[optim]\nlr = 1e-2\ngrad_clip = 1.0\n"
    "[task]\nname = arith\ndigits_min = 1\ndigits_max = 2\n"
    "[sft]\nsteps = 30\nbatch_size = 16\nlr = 3e-3\nwarmup_steps = 5\n"
    "[ranks]\nmicro_batch_seqs = 64\n";

struct fix {
  struct config cfg;
  struct model_config mc;
  struct tokenizer tok;
  struct task task;
  struct trainer t;
};

/* The tiny deck with overrides; a trainer over MPI_COMM_SELF. */
static int fix_make(struct fix *f, int n_over, char *const *over) {
  char err[512];
  memset(f, 0, sizeof *f);
  if (config_parse(&f->cfg, "tiny.ini", deck_tiny, n_over, over, err, sizeof err)) {
    fprintf(stderr, "deck: %s\n", err);
    return 1;
  }
  tokenizer_init_char(&f->tok);
  if (model_config_from_deck(&f->mc, &f->cfg, f->tok.vocab_size, err, sizeof err) ||
      task_init(&f->task, &f->cfg, err, sizeof err) ||
      trainer_create(&f->t, &f->cfg, &f->mc, 512, MPI_COMM_SELF, err, sizeof err)) {
    fprintf(stderr, "setup: %s\n", err);
    return 1;
  }
  return 0;
}

static void fix_free(struct fix *f) {
  trainer_free(&f->t);
  tokenizer_free(&f->tok);
}

static int sft_run(struct fix *f, long steps, double *first, double *last) {
  struct sft_batch b;
  sft_batch_init(&b);
  char err[256];
  int rc = 0;
  trainer_begin_sft(&f->t);
  for (long s = 0; s < steps && !rc; s++) {
    struct step_metrics m;
    metrics_init(&m);
    rc = trainer_sft_batch_from_task(&b, &f->cfg, &f->task, &f->tok, f->mc.max_seq, s, 0,
                                     f->cfg.sft.batch_size, err, sizeof err) ||
         trainer_sft_step(&f->t, b.tokens, b.cu_seqlens, b.mask, b.nseq, &m);
    if (s == 0 && first) *first = m.pg_loss;
    if (last) *last = m.pg_loss;
    CHECK(isfinite(m.grad_norm) && m.lr > 0.0 && m.skipped_nonfinite == 0.0);
  }
  sft_batch_free(&b);
  return rc;
}

static void test_sft_learns(void) {
  struct fix f;
  CHECK(fix_make(&f, 0, NULL) == 0);
  double first = NAN, last = NAN;
  CHECK(sft_run(&f, 30, &first, &last) == 0);
  printf("sft: loss %.3f -> %.3f after 30 steps\n", first, last);
  CHECK(first > 4.0 && first < 5.0);  /* ~ln 98 at init */
  CHECK(last < first - 1.0);
  fix_free(&f);
}

static double max_rel_diff(const float *a, const float *b, size_t n) {
  double mx = 0.0, scale = 0.0;
  for (size_t i = 0; i < n; i++) {
    mx = fmax(mx, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)a[i]));
  }
  return mx / (scale > 0.0 ? scale : 1.0);
}

static void test_micro_batches(void) {
  char *small[] = {"ranks.micro_batch_seqs=3"};
  struct fix a, b;
  CHECK(fix_make(&a, 0, NULL) == 0 && fix_make(&b, 1, small) == 0);
  double la, lb;
  CHECK(sft_run(&a, 3, NULL, &la) == 0 && sft_run(&b, 3, NULL, &lb) == 0);
  double d = max_rel_diff(a.t.policy.params, b.t.policy.params, a.t.policy.table.total);
  printf("micro-batches: loss %.7f vs %.7f, params max rel diff %.2e\n", la, lb, d);
  CHECK_NEAR(la, lb, 1e-5 * fabs(la));
  CHECK(d < 1e-5);
  fix_free(&a);
  fix_free(&b);
}

/* ---- RL ----------------------------------------------------------------------- */

/* Sum of the response logprobs of s under the trainer's current weights; also
 * fills per-token logprobs into lp_out when not NULL. */
static double resp_logp(struct trainer *t, const struct sample *s, float *lp_out) {
  int tok[64], cu[2] = {0, s->n_prompt + s->n_resp};
  float lp[64];
  for (int i = 0; i < s->n_prompt; i++) tok[i] = s->prompt[i];
  for (int i = 0; i < s->n_resp; i++) tok[s->n_prompt + i] = s->resp[i];
  if (model_forward(&t->policy, tok, cu, 1, lp, NULL, NULL)) return NAN;
  double sum = 0.0;
  for (int j = 0; j < s->n_resp; j++) {
    sum += lp[s->n_prompt - 1 + j];
    if (lp_out) lp_out[j] = lp[s->n_prompt - 1 + j];
  }
  return sum;
}

/* n_groups groups of G samples: prompt [BOS] "g+1=", response of `len` tokens
 * (len - 1 digits then EOS; len = 0: 2 + i % 3), digits distinct across samples
 * of a group; reward(g, i) from rw; rollout logprobs from the current weights. */
static void rl_batch(struct trainer *t, struct sample_batch *b, int n_groups, int G, int len,
                     double (*rw)(int g, int i)) {
  for (int g = 0; g < n_groups; g++)
    for (int i = 0; i < G; i++) {
      struct sample *s = sample_batch_add(b);
      int32_t prompt[5] = {TOK_CHAR_BOS, '1' + g - 32, '+' - 32, '1' - 32, '=' - 32};
      int nr = len > 0 ? len : 2 + i % 3;
      int32_t resp[8];
      for (int j = 0; j < nr - 1; j++) resp[j] = '0' + (i * 3 + j * 7 + g) % 10 - 32;
      resp[nr - 1] = TOK_CHAR_EOS;
      sample_set_prompt(s, prompt, 5);
      sample_set_response(s, resp, NULL, nr);
      float lp[8];
      resp_logp(t, s, lp);
      sample_set_response(s, resp, lp, nr);
      s->group = g;
      s->index = i;
      s->weight_version = t->weight_version;
      s->reward = rw(g, i);
    }
}

static double reward_even(int g, int i) { (void)g; return i % 2 == 0 ? 1.0 : 0.0; }
static double reward_odd(int g, int i) { (void)g; return i % 2 == 1 ? 1.0 : 0.0; }

/* One GRPO step; every rewarded response must gain logprob, every other lose. */
static void rl_direction(double (*rw)(int, int), const char *name, char *old_lp, int given_adv) {
  char *over[] = {"algo.kl_coef=0", "optim.lr=3e-3", old_lp};
  struct fix f;
  CHECK(fix_make(&f, 3, over) == 0);
  trainer_begin_rl(&f.t);
  struct sample_batch b;
  sample_batch_init(&b);
  rl_batch(&f.t, &b, 2, 2, 3, rw);
  double before[4], after[4], rewarded[4];
  for (int k = 0; k < b.n; k++) {
    rewarded[k] = b.s[k].reward > 0.5;
    if (given_adv) {
      /* the caller's advantages win over the rewards, which all read 0 here */
      float a = b.s[k].reward > 0.5 ? 1.0f : -1.0f;
      CHECK(sample_set_adv(&b.s[k], &a, 1) == 0);
      b.s[k].reward = 0.0;
    }
  }
  for (int k = 0; k < b.n; k++) before[k] = resp_logp(&f.t, &b.s[k], NULL);
  struct step_metrics m;
  metrics_init(&m);
  CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
  int right = 0;
  for (int k = 0; k < b.n; k++) {
    after[k] = resp_logp(&f.t, &b.s[k], NULL);
    int up = after[k] > before[k];
    right += up == (rewarded[k] > 0.5);
  }
  printf("rl direction (%s): %d/%d responses moved the right way; pg_loss %.3g grad_norm %.3g "
         "ratio_mean %.7f logprob_diff_max %.2g\n", name, right, b.n, m.pg_loss, m.grad_norm,
         m.ratio_mean, m.logprob_diff_max);
  CHECK(right == b.n);
  CHECK(f.t.weight_version == 1 && f.t.update == 1);
  CHECK_NEAR(m.ratio_mean, 1.0, 1e-5);   /* one on-policy pass: rho = 1 (exact when recomputed) */
  CHECK(m.logprob_diff_max < 1e-5);      /* rollout lp == trainer lp at equal weights */
  CHECK(isnan(m.kl));                    /* no reference with kl_coef = 0 */
  sample_batch_free(&b);
  fix_free(&f);
}

static void test_rl_direction(void) {
  rl_direction(reward_even, "even rewarded", "algo.old_logprobs=recompute", 0);
  rl_direction(reward_odd, "rewards swapped", "algo.old_logprobs=recompute", 0);
  rl_direction(reward_even, "old logprobs from the rollout", "algo.old_logprobs=rollout", 0);
  rl_direction(reward_odd, "advantages set by the caller", "algo.old_logprobs=recompute", 1);
}

/* A sample the buffer kept past max_lag (SAMPLE_STALE) gets truncated importance
 * weights even with [algo] tis = off; the others weight 1. Its rollout logprobs
 * are 2 nats below the current ones: w = e^2 > tis_cap 2, so every one of its
 * response tokens is truncated and tis_clipfrac = its tokens / all tokens. */
static void test_rl_stale_tis(void) {
  char *over[] = {"algo.kl_coef=0"};
  struct fix f;
  CHECK(fix_make(&f, 1, over) == 0);
  trainer_begin_rl(&f.t);
  struct sample_batch b;
  sample_batch_init(&b);
  rl_batch(&f.t, &b, 2, 2, 3, reward_even);
  struct step_metrics m;
  metrics_init(&m);
  CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
  CHECK(isnan(m.tis_clipfrac));  /* nothing stale, tis off: no weights */
  struct sample *s = &b.s[1];
  float lp[8];
  resp_logp(&f.t, s, lp);
  for (int j = 0; j < s->n_resp; j++) s->logprobs[j] = lp[j] - 2.0f;
  s->flags |= SAMPLE_STALE;
  metrics_init(&m);
  CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
  printf("stale sample: tis_clipfrac %.4f (expected 3/12)\n", m.tis_clipfrac);
  CHECK_NEAR(m.tis_clipfrac, 3.0 / 12.0, 1e-12);
  sample_batch_free(&b);
  fix_free(&f);
}

static double reward_mixed(int g, int i) { return (double)((g * 7 + i * 3) % 5) / 4.0; }

static void test_rl_reinforce_pp(void) {
  char *over[] = {"algo.name=reinforce_pp", "algo.ppo_epochs=2", "algo.mini_batches=2",
                  "ranks.micro_batch_seqs=3", "algo.tis=token_truncate"};
  struct fix f;
  CHECK(fix_make(&f, 5, over) == 0);
  CHECK(f.t.ref.host != NULL);  /* kl_coef 0.001 in the reward */
  trainer_begin_rl(&f.t);
  struct sample_batch b;
  sample_batch_init(&b);
  rl_batch(&f.t, &b, 3, 4, 0, reward_mixed);
  for (int step = 0; step < 2; step++) {
    struct step_metrics m;
    metrics_init(&m);
    CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
    printf("reinforce++ step %d: pg_loss %.4g kl %.3g entropy %.3f clip %.3f/%.3f ratio %.5f "
           "tis_clip %.3f grad_norm %.3g\n", step, m.pg_loss, m.kl, m.entropy, m.pg_clipfrac_low,
           m.pg_clipfrac_high, m.ratio_mean, m.tis_clipfrac, m.grad_norm);
    CHECK(isfinite(m.pg_loss) && isfinite(m.kl) && isfinite(m.entropy) && isfinite(m.grad_norm));
    /* k1 of lp_old - lp_ref: exactly 0 while the policy is the reference, then not */
    CHECK(step == 0 ? m.kl == 0.0 : m.kl != 0.0);
    CHECK(step == 0 ? m.logprob_diff_max < 1e-5 : isnan(m.logprob_diff_max));
  }
  CHECK(f.t.update == 8 && f.t.weight_version == 2);
  sample_batch_free(&b);
  fix_free(&f);
}

/* Samples from the rollout engine at T = 1: the trainer's recomputed logprobs match
 * the recorded ones (logprob_diff_max < 1e-5, fp32), and a step runs on them. The
 * reward is the share of digits in the response (varied within groups at init). */
static void test_rl_rollout(void) {
  char *over[] = {"rollout.max_new_tokens=6", "algo.kl_coef=0.01", "rollout.temperature=1.0"};
  struct fix f;
  CHECK(fix_make(&f, 3, over) == 0);
  struct rollout_engine *re = NULL;
  char err[256];
  CHECK(rollout_create(&re, &f.t.policy, &f.cfg, &f.tok, err, sizeof err) == 0);
  trainer_begin_rl(&f.t);
  int ids[4][48];
  struct rollout_prompt rp[4];
  for (int i = 0; i < 4; i++) {
    struct task_prompt tp;
    size_t n, at;
    ids[i][0] = f.tok.bos_id;
    CHECK(task_prompt(&f.task, (uint64_t)i, TASK_TRAIN, &tp) == 0);
    CHECK(tokenizer_encode(&f.tok, tp.text, strlen(tp.text), ids[i] + 1, 46, &n, &at) == 0);
    rp[i] = (struct rollout_prompt){ .prompt_id = i, .group = i, .tokens = ids[i],
                                     .n_tokens = (int)n + 1 };
  }
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK(rollout_generate(re, rp, 4, 4, 0, f.t.weight_version, &b, NULL, err, sizeof err) == 0);
  for (int k = 0; k < b.n; k++) {
    int digits = 0;
    for (int j = 0; j < b.s[k].n_resp; j++)
      digits += b.s[k].resp[j] >= '0' - 32 && b.s[k].resp[j] <= '9' - 32;
    b.s[k].reward = (double)digits / (b.s[k].n_resp > 0 ? b.s[k].n_resp : 1);
  }
  struct step_metrics m;
  metrics_init(&m);
  CHECK(b.n == 16 && trainer_rl_step(&f.t, &b, &m) == 0);
  printf("rl on rollout samples: logprob_diff_max %.2g, kl %.2g, pg_loss %.4g, grad_norm %.3g\n",
         m.logprob_diff_max, m.kl, m.pg_loss, m.grad_norm);
  CHECK(m.logprob_diff_max < 1e-5);
  CHECK(m.kl == 0.0 && isfinite(m.pg_loss) && isfinite(m.grad_norm) && f.t.weight_version == 1);
  rollout_free(re);
  sample_batch_free(&b);
  fix_free(&f);
}

/* Mean over response tokens of (V_t - reward)^2 under the critic: with gamma =
 * lam = 1 the return of every response token is the outcome reward (minus a
 * small KL), which the critic must learn. */
static double critic_error(struct trainer *t, const struct sample_batch *b) {
  double se = 0.0, n = 0.0;
  for (int k = 0; k < b->n; k++) {
    const struct sample *s = &b->s[k];
    int tok[64], cu[2] = {0, s->n_prompt + s->n_resp};
    float lp[64], v[64];
    for (int i = 0; i < s->n_prompt; i++) tok[i] = s->prompt[i];
    for (int i = 0; i < s->n_resp; i++) tok[s->n_prompt + i] = s->resp[i];
    if (model_forward(&t->critic, tok, cu, 1, lp, NULL, v)) return NAN;
    for (int j = 0; j < s->n_resp; j++) {
      double e = v[s->n_prompt - 1 + j] - s->reward;
      se += e * e;
      n += 1.0;
    }
  }
  return se / n;
}

/* PPO: the critic starts at V = 0 and fits the returns over a few steps; the
 * policy's metrics stay finite. */
static void test_ppo_critic(void) {
  char *over[] = {"algo.name=ppo", "algo.mini_batches=2", "ranks.micro_batch_seqs=5"};
  struct fix f;
  CHECK(fix_make(&f, 3, over) == 0);
  CHECK(f.t.has_critic && f.t.ref.host != NULL);
  trainer_begin_rl(&f.t);
  struct sample_batch b;
  sample_batch_init(&b);
  rl_batch(&f.t, &b, 3, 4, 0, reward_mixed);
  double e0 = critic_error(&f.t, &b), e1 = NAN;
  for (int step = 0; step < 6; step++) {
    struct step_metrics m;
    metrics_init(&m);
    CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
    CHECK(isfinite(m.pg_loss) && isfinite(m.kl) && isfinite(m.grad_norm));
  }
  e1 = critic_error(&f.t, &b);
  printf("ppo: critic mean squared error vs returns %.4f -> %.4f after 6 steps\n", e0, e1);
  CHECK(e1 < 0.5 * e0);
  CHECK(f.t.update == 12 && f.t.weight_version == 6);
  sample_batch_free(&b);
  fix_free(&f);
}

static void test_nonfinite_skip(void) {
  struct fix f;
  CHECK(fix_make(&f, 0, NULL) == 0);
  trainer_begin_sft(&f.t);
  size_t n = f.t.policy.table.total;
  float *p0 = malloc(sizeof(float) * n), *m0 = malloc(sizeof(float) * n);
  CHECK(sft_run(&f, 2, NULL, NULL) == 0);  /* non-zero moments to compare */
  memcpy(p0, f.t.policy.params, sizeof(float) * n);
  memcpy(m0, f.t.opt.m, sizeof(float) * n);
  long t0 = f.t.opt.t, u0 = f.t.update;
  /* a NaN loss weight poisons the gradient */
  struct sft_batch b;
  sft_batch_init(&b);
  char err[256];
  CHECK(trainer_sft_batch_from_task(&b, &f.cfg, &f.task, &f.tok, f.mc.max_seq, 2, 0, 8, err,
                                    sizeof err) == 0);
  b.mask[b.cu_seqlens[1] - 2] = NAN;
  struct step_metrics m;
  metrics_init(&m);
  CHECK(trainer_sft_step(&f.t, b.tokens, b.cu_seqlens, b.mask, b.nseq, &m) == 0);
  CHECK(m.skipped_nonfinite == 1.0 && f.t.skipped_nonfinite == 1);
  CHECK(!isfinite(m.grad_norm));
  CHECK(memcmp(p0, f.t.policy.params, sizeof(float) * n) == 0);
  CHECK(memcmp(m0, f.t.opt.m, sizeof(float) * n) == 0);
  CHECK(f.t.opt.t == t0 && f.t.update == u0);
  /* the same through the update directly: an Inf gradient */
  model_zero_grad(&f.t.policy);
  f.t.policy.grads[3] = INFINITY;
  double norm;
  CHECK(trainer_apply_update(&f.t, 1e-3, &norm) == 0 && f.t.skipped_nonfinite == 2);
  CHECK(memcmp(p0, f.t.policy.params, sizeof(float) * n) == 0);
  sft_batch_free(&b);
  free(p0);
  free(m0);
  fix_free(&f);
}

/* [model] init = ckpt:PATH loads an rlpt model file; a file of another shape is refused. */
static void test_init_ckpt(void) {
  struct fix a;
  CHECK(fix_make(&a, 0, NULL) == 0);
  const char *path = "test_trainer_init.h5";
  CHECK(sft_run(&a, 1, NULL, NULL) == 0);  /* weights that differ from the scratch init */
  CHECK(model_h5_write(path, &a.mc, a.t.policy.params) == 0);
  char *over[] = {"model.init=ckpt:test_trainer_init.h5"};
  struct fix b;
  CHECK(fix_make(&b, 1, over) == 0);
  CHECK(memcmp(a.t.policy.params, b.t.policy.params, sizeof(float) * a.t.policy.table.total) == 0);
  fix_free(&b);
  /* the deck asks for a wider model than the file holds */
  struct fix c;
  char *wide[] = {"model.init=ckpt:test_trainer_init.h5", "model.dim=64"};
  memset(&c, 0, sizeof c);
  char err[512];
  CHECK(config_parse(&c.cfg, "tiny.ini", deck_tiny, 2, wide, err, sizeof err) == 0);
  CHECK(model_config_from_deck(&c.mc, &c.cfg, TOK_CHAR_VOCAB, err, sizeof err) == 0);
  err[0] = 0;
  CHECK(trainer_create(&c.t, &c.cfg, &c.mc, 64, MPI_COMM_SELF, err, sizeof err) == 2);
  printf("init ckpt, wrong shape: %s\n", err);
  CHECK(strstr(err, "differs from the deck") != NULL);
  CHECK(c.t.cfg == NULL && c.t.policy.params == NULL);  /* left zeroed */

  remove(path);
  fix_free(&a);
}

/* ---- measurement: SFT on a deck, greedy held-out exact match ------------------------ */

/* Held-out greedy exact match through the rollout engine (temperature 0): the
 * fraction of the first n_prompts held-out problems answered exactly. SFT does
 * not bump weight_version, so the caller labels the weights (`version`, e.g. the
 * SFT step): the engine's prefix cache must not serve K/V of older weights. */
static double heldout_em(struct fix *f, struct rollout_engine *re, int n_prompts, int64_t version) {
  struct rollout_prompt *rp = calloc((size_t)n_prompts, sizeof *rp);
  struct task_prompt *tp = calloc((size_t)n_prompts, sizeof *tp);
  int *ids = malloc(sizeof(int) * (size_t)n_prompts * 48);
  struct sample_batch out;
  sample_batch_init(&out);
  double em = NAN;
  char err[256];
  int ok = rp && tp && ids;
  for (int i = 0; ok && i < n_prompts; i++) {
    size_t n, at;
    int *p = ids + (size_t)i * 48;
    p[0] = f->tok.bos_id;
    ok = !task_prompt(&f->task, (uint64_t)i, TASK_EVAL, &tp[i]) &&
         !tokenizer_encode(&f->tok, tp[i].text, strlen(tp[i].text), p + 1, 46, &n, &at);
    rp[i] = (struct rollout_prompt){ .prompt_id = (int64_t)i, .group = i, .tokens = p,
                                     .n_tokens = (int)n + 1 };
  }
  rollout_weights_changed(re, version);
  if (ok && !rollout_generate(re, rp, n_prompts, 1, 0, version, &out, NULL, err, sizeof err)) {
    int right = 0;
    for (int i = 0; i < out.n; i++) {
      char text[64];
      size_t len;
      if (tokenizer_decode(&f->tok, out.s[i].resp, (size_t)out.s[i].n_resp, text, sizeof text,
                           &len))
        continue;
      right += task_verify(&f->task, &tp[out.s[i].group], text, len) > 0.5;
    }
    em = (double)right / n_prompts;
  }
  sample_batch_free(&out);
  free(rp);
  free(tp);
  free(ids);
  return em;
}

static int measure_sft(const char *deck, int n_over, char **over) {
  struct fix f;
  memset(&f, 0, sizeof f);
  char err[512];
  if (config_load_serial(&f.cfg, deck, n_over, over)) return 2;
  tokenizer_init_char(&f.tok);
  if (model_config_from_deck(&f.mc, &f.cfg, f.tok.vocab_size, err, sizeof err) ||
      task_init(&f.task, &f.cfg, err, sizeof err) ||
      trainer_create(&f.t, &f.cfg, &f.mc, (int)(f.cfg.ranks.micro_batch_seqs * f.mc.max_seq),
                     MPI_COMM_SELF, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", deck, err);
    return 2;
  }
  struct rollout_engine *re;
  if (rollout_create(&re, &f.t.policy, &f.cfg, &f.tok, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", deck, err);
    return 2;
  }
  rollout_set_sampling(re, 0.0, -1.0, -1);
  struct sft_batch b;
  sft_batch_init(&b);
  trainer_begin_sft(&f.t);
  double t0 = clock_seconds(), t_eval = 0.0;
  int n_eval = (int)f.cfg.sft.eval_prompts;
  for (long s = 0; s < f.cfg.sft.steps; s++) {
    struct step_metrics m;
    metrics_init(&m);
    if (trainer_sft_batch_from_task(&b, &f.cfg, &f.task, &f.tok, f.mc.max_seq, s, 0,
                                    f.cfg.sft.batch_size, err, sizeof err) ||
        trainer_sft_step(&f.t, b.tokens, b.cu_seqlens, b.mask, b.nseq, &m))
      return 1;
    if ((s + 1) % 25 == 0 || s + 1 == f.cfg.sft.steps) {
      double te = clock_seconds();
      double em = heldout_em(&f, re, n_eval, s + 1);
      t_eval += clock_seconds() - te;
      printf("sft step %4ld  loss %.4f  lr %.2e  grad_norm %.3f  tok/s %.0f  train_s %.1f  "
             "heldout_exact_match %.3f (%d prompts)\n", s + 1, m.pg_loss, m.lr, m.grad_norm,
             m.train_tok_per_s, clock_seconds() - t0 - t_eval, em, n_eval);
      fflush(stdout);
    }
  }
  sft_batch_free(&b);
  rollout_free(re);
  fix_free(&f);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc;
  if (argc >= 3 && !strcmp(argv[1], "--sft-deck")) {
    rc = measure_sft(argv[2], argc - 3, argv + 3);
  } else {
    test_sft_learns();
    test_micro_batches();
    test_rl_direction();
    test_rl_reinforce_pp();
    test_rl_rollout();
    test_rl_stale_tis();
    test_ppo_critic();
    test_nonfinite_skip();
    test_init_ckpt();
    rc = TEST_RESULT("test_trainer");
  }
  MPI_Finalize();
  return rc;
}
