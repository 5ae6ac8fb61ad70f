/* train/rl_step.c: the RL step of the train ranks (train/trainer.h): pack the samples,
 * reference and old logprobs, advantages (rl/README.md §1, §4), off-policy
 * weights (§5), then ppo_epochs x mini_batches updates of the policy loss
 * (rl/algo.h) with global divisors, and the step's metrics. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "mpi/allreduce.h"
#include "rl/algo.h"
#include "util/clock.h"
#include "util/error.h"

/* This rank's samples packed as prompt ++ response, one sequence each. Token
 * arrays are per packed position t; position t carries the logprob of token t+1,
 * so response token j of a sample sits at n_prompt - 1 + j. */
struct rl_data {
  int n, n_tok, n_group;
  int n_mb, *mb;  /* mini-batch j = sequences [mb[j], mb[j + 1]) */
  int *cu, *tokens, *group, *sample;
  unsigned char *has_roll;
  float *mask, *lp_roll, *lp_old, *lp_ref, *adv, *ret, *w_is, *lp, *ent, *dlp, *dent;
  float *v_old, *val, *dval;  /* PPO critic: values before the step, current, d loss/d value */
  double *r_seq, *a_seq;
};

static void rl_data_free(struct rl_data *d) {
  void *p[] = {d->mb, d->cu, d->tokens, d->group, d->sample, d->has_roll, d->mask, d->lp_roll,
               d->lp_old, d->lp_ref, d->adv, d->ret, d->w_is, d->lp, d->ent, d->dlp, d->dent,
               d->r_seq, d->a_seq, d->v_old, d->val, d->dval};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
  memset(d, 0, sizeof *d);
}

static int rl_data_alloc(struct rl_data *d, int n, int n_tok, int n_mb) {
  size_t ns = (size_t)(n > 0 ? n : 1), nt = (size_t)(n_tok > 0 ? n_tok : 1);
  d->mb = malloc(sizeof(int) * ((size_t)n_mb + 1));
  d->cu = malloc(sizeof(int) * (ns + 1));
  d->tokens = malloc(sizeof(int) * nt);
  d->group = malloc(sizeof(int) * ns);
  d->sample = malloc(sizeof(int) * ns);
  d->has_roll = malloc(ns);
  d->r_seq = malloc(sizeof(double) * ns);
  d->a_seq = malloc(sizeof(double) * ns);
  float **f[] = {&d->mask, &d->lp_roll, &d->lp_old, &d->lp_ref, &d->adv, &d->ret, &d->w_is,
                 &d->lp, &d->ent, &d->dlp, &d->dent, &d->v_old, &d->val, &d->dval};
  int bad = !d->mb || !d->cu || !d->tokens || !d->group || !d->sample || !d->has_roll ||
            !d->r_seq || !d->a_seq;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    *f[i] = calloc(nt, sizeof(float));
    bad |= !*f[i];
  }
  return bad;
}

/* Append sample i of b as packed sequence d->n. */
static void rl_pack_one(struct rl_data *d, const struct sample_batch *b, int i) {
  const struct sample *s = &b->s[i];
  int k = d->n, o = d->cu[k], np = s->n_prompt, nr = s->n_resp;
  for (int j = 0; j < np; j++) d->tokens[o + j] = s->prompt[j];
  for (int j = 0; j < nr; j++) d->tokens[o + np + j] = s->resp[j];
  float m = (s->flags & SAMPLE_MASKED) ? 0.0f : 1.0f;
  for (int j = 0; j < nr; j++) {
    d->mask[o + np - 1 + j] = sample_tok_trained(s, j) ? m : 0.0f;  /* tool tokens: no loss */
    if (s->logprobs) d->lp_roll[o + np - 1 + j] = s->logprobs[j];
  }
  d->has_roll[k] = s->logprobs != NULL;
  d->group[k] = s->group > 0 ? s->group : 0;
  d->n_group = d->group[k] + 1 > d->n_group ? d->group[k] + 1 : d->n_group;
  d->sample[k] = i;
  d->r_seq[k] = s->reward;
  d->cu[++d->n] = o + np + nr;
}

static int rl_mini_batch(const struct sample *s, int n_mb) {
  return (s->group > 0 ? s->group : 0) % n_mb;
}

/* Pack the samples that are not SAMPLE_FILTERED, mini-batch by mini-batch: a
 * sample goes to mini-batch (group slot mod n_mb), so the mini-batches are the
 * same sets however the groups are spread over the DP ranks. Returns 0, or 1
 * (no memory, or an empty prompt: a sample needs at least its BOS). */
static int rl_pack(struct rl_data *d, const struct sample_batch *b, int n_mb) {
  int n = 0, n_tok = 0;
  for (int i = 0; i < b->n; i++)
    if (!(b->s[i].flags & SAMPLE_FILTERED)) {
      if (b->s[i].n_prompt < 1) {
        fprintf(stderr, "rlpt: trainer: sample %d (group %d) has an empty prompt\n", i,
                b->s[i].group);
        return 1;
      }
      n++;
      n_tok += b->s[i].n_prompt + b->s[i].n_resp;
    }
  if (rl_data_alloc(d, n, n_tok, n_mb)) return 1;
  d->n_tok = n_tok;
  d->n_mb = n_mb;
  /* a stable counting sort by mini-batch: mb[] counts, then offsets, then fill */
  memset(d->mb, 0, sizeof(int) * ((size_t)n_mb + 1));
  for (int i = 0; i < b->n; i++)
    if (!(b->s[i].flags & SAMPLE_FILTERED)) d->mb[rl_mini_batch(&b->s[i], n_mb) + 1]++;
  for (int j = 0; j < n_mb; j++) d->mb[j + 1] += d->mb[j];
  int *next = malloc(sizeof(int) * (size_t)n_mb);
  if (!next) return 1;
  memcpy(next, d->mb, sizeof(int) * (size_t)n_mb);
  for (int i = 0; i < b->n; i++)
    if (!(b->s[i].flags & SAMPLE_FILTERED)) d->sample[next[rl_mini_batch(&b->s[i], n_mb)]++] = i;
  free(next);
  d->cu[0] = 0;
  for (int k = 0; k < n; k++) rl_pack_one(d, b, d->sample[k]);
  return 0;
}

/* Sequences [a, e) of the packed samples as a loss batch (no groups). */
static struct algo_batch rl_span(const struct rl_data *d, int a, int e) {
  return (struct algo_batch){ .n_seq = e - a, .off = d->cu + a, .mask = d->mask };
}

/* Logprobs of every packed sequence under the policy with weights w (its own or the
 * reference), without backward. */
static int rl_forward_all(struct trainer *t, const struct rl_data *d, struct weights *w,
                          float *lp) {
  for (int s0 = 0; s0 < d->n;) {
    int s1 = trainer_micro_end(t, d->cu, s0, d->n);
    int o = d->cu[s0];
    if (trainer_forward_micro(t, &t->policy, w, d->tokens, d->cu, s0, s1, lp + o, NULL, NULL))
      return 1;
    s0 = s1;
  }
  return 0;
}

/* Critic values of sequences [s0, s1) into val at their packed positions (value only:
 * no vocabulary GEMM). 0 or -1. */
static int critic_forward(struct trainer *t, const struct rl_data *d, int s0, int s1, float *val) {
  int o = d->cu[s0];
  return trainer_forward_micro(t, &t->critic, &t->critic.weights, d->tokens, d->cu, s0, s1, NULL,
                               NULL, val + o);
}

/* v_old: the critic's values of every sequence before the step's updates. */
static int critic_values(struct trainer *t, const struct rl_data *d) {
  for (int s0 = 0; s0 < d->n;) {
    int s1 = trainer_micro_end(t, d->cu, s0, d->n);
    if (critic_forward(t, d, s0, s1, d->v_old)) return 1;
    s0 = s1;
  }
  return 0;
}

/* How lp_old is obtained: from the rollout (every sample recorded logprobs and
 * old_logprobs = rollout), by a recompute pass before the updates, or - with a
 * single update and nothing that needs lp_old before it (no KL in the reward,
 * no TIS) - fused: the update's own forward gives lp_old = lp (the same weights
 * and the same micro-batches, so bit-identical), which saves one forward pass. */
enum old_mode { OLD_ROLLOUT, OLD_RECOMPUTE, OLD_FUSED };

static int rl_old_mode(const struct trainer *t, const struct rl_data *d, int use_ref, int tis) {
  const struct config *cfg = t->cfg;
  int all_roll = 1;
  for (int i = 0; i < d->n; i++) all_roll &= d->has_roll[i];
  if (cfg->algo.old_logprobs == OLDLP_ROLLOUT && all_roll) return OLD_ROLLOUT;
  int one_update = cfg->algo.ppo_epochs == 1 && cfg->algo.mini_batches == 1;
  int kl_rew = use_ref && cfg->algo.kl_in == KL_IN_REWARD;
  return one_update && !kl_rew && tis == TIS_OFF ? OLD_FUSED : OLD_RECOMPUTE;
}

/* The constant logprobs once lp_old is known: rollout logprobs of samples that
 * recorded none default to lp_old; everything is clamped at logprob_min. */
static void rl_finish_logprobs(const struct trainer *t, struct rl_data *d, int use_ref) {
  for (int i = 0; i < d->n; i++)
    if (!d->has_roll[i])
      memcpy(d->lp_roll + d->cu[i], d->lp_old + d->cu[i],
             sizeof(float) * (size_t)(d->cu[i + 1] - d->cu[i]));
  float lp_min = (float)t->cfg->algo.logprob_min;
  algo_clamp_logprobs(d->lp_old, d->n_tok, lp_min);
  algo_clamp_logprobs(d->lp_roll, d->n_tok, lp_min);
  if (use_ref) algo_clamp_logprobs(d->lp_ref, d->n_tok, lp_min);
}

/* lp_ref under the frozen reference (the policy's model reading the reference weights:
 * no second model, no second activation arena), lp_old by recompute or from the rollout
 * (OLD_FUSED: later, in the update). */
static int rl_logprobs(struct trainer *t, struct rl_data *d, int use_ref, int mode) {
  int rc = 0;
  if (use_ref) rc = rl_forward_all(t, d, &t->ref, d->lp_ref);
  if (mode == OLD_ROLLOUT) memcpy(d->lp_old, d->lp_roll, sizeof(float) * (size_t)d->n_tok);
  if (mode == OLD_RECOMPUTE && !rc) rc = rl_forward_all(t, d, &t->policy.weights, d->lp_old);
  if (mode != OLD_FUSED) rl_finish_logprobs(t, d, use_ref);
  return rc;
}

/* |lp_roll - lp| over the response tokens of samples [i0, i1) generated at the current
 * weights (lp: logprobs under the current weights, before any update): its max (-1 when
 * none), sum, the tokens, and those beyond LP_DIFF_FAR. */
#define LP_DIFF_FAR 1e-3
struct lp_diff { double max, sum, n, far; };

static struct lp_diff rl_diff(const struct trainer *t, const struct rl_data *d,
                              const struct sample_batch *b, const float *lp, int i0, int i1) {
  struct lp_diff r = {.max = -1.0};
  for (int i = i0; i < i1; i++) {
    const struct sample *s = &b->s[d->sample[i]];
    if (!d->has_roll[i] || s->weight_version != t->weight_version) continue;
    int o = d->cu[i] + s->n_prompt - 1;
    for (int j = 0; j < s->n_resp; j++) {
      if (!sample_tok_trained(s, j)) continue;  /* a tool token was never sampled */
      double x = fabs((double)d->lp_roll[o + j] - lp[o + j]);
      r.max = x > r.max || x != x ? x : r.max;
      r.sum += x;
      r.n += 1.0;
      r.far += x > LP_DIFF_FAR;
    }
  }
  return r;
}

/* (x - mu)/sqrt(var + 1e-8) over the valid tokens of every DP rank, var unbiased:
 * algo_whiten with global statistics (two all-reduced passes). */
static void whiten_global(struct trainer *t, const struct algo_batch *b, const float *x,
                          float *out) {
  int n_tok = b->off[b->n_seq];
  double s[2] = {0.0, 0.0};
  for (int i = 0; i < n_tok; i++)
    if (b->mask[i] > 0.0f) {
      s[0] += 1.0;
      s[1] += x[i];
    }
  allreduce_polite(s, 2, MPI_DOUBLE, MPI_SUM, t->dp);
  double mu = s[0] > 0.0 ? s[1] / s[0] : 0.0, ss = 0.0;
  for (int i = 0; i < n_tok; i++)
    if (b->mask[i] > 0.0f) ss += ((double)x[i] - mu) * ((double)x[i] - mu);
  allreduce_polite(&ss, 1, MPI_DOUBLE, MPI_SUM, t->dp);
  double inv = 1.0 / sqrt((s[0] > 1.0 ? ss / (s[0] - 1.0) : 0.0) + 1e-8);
  for (int i = 0; i < n_tok; i++)
    out[i] = b->mask[i] > 0.0f ? (float)(((double)x[i] - mu) * inv) : 0.0f;
}

/* Advantages the caller set on every sample of every DP rank (n_adv = 1 or
 * n_resp) are used as they are; 0 when some lack them. Collective: the ranks
 * must agree, since the estimators may all-reduce. */
static int rl_adv_given(struct trainer *t, struct rl_data *d, const struct sample_batch *b) {
  int given = 1;
  for (int i = 0; i < d->n && given; i++) {
    const struct sample *s = &b->s[d->sample[i]];
    given = !(s->flags & SAMPLE_ADV_TRAINED) &&
            (s->n_adv == 1 || (s->n_adv == s->n_resp && s->n_resp > 0));
  }
  allreduce_polite(&given, 1, MPI_INT, MPI_MIN, t->dp);
  if (!given) return 0;
  for (int i = 0; i < d->n; i++) {
    const struct sample *s = &b->s[d->sample[i]];
    int o = d->cu[i] + s->n_prompt - 1;
    for (int j = 0; j < s->n_resp; j++)
      d->adv[o + j] = d->mask[o + j] * s->adv[s->n_adv == 1 ? 0 : j];
  }
  return 1;
}

/* Advantages by [algo] adv_estimator (gae is refused by trainer_create). Returns 0 or 1. */
static int rl_advantages(struct trainer *t, struct rl_data *d, const struct sample_batch *b,
                         const struct algo_batch *ab, int use_ref) {
  const struct config *cfg = t->cfg;
  if (rl_adv_given(t, d, b)) return 0;
  algo_sanitize_rewards(d->r_seq, d->n);
  int kl_rew = use_ref && cfg->algo.kl_in == KL_IN_REWARD;
  int est = cfg->algo.adv_estimator, singles = 0;
  if (est == ADV_GAE) {
    algo_place_outcome(ab, d->r_seq, d->ret);  /* r_tok, then the returns A + V */
    if (kl_rew) algo_kl_reward_tok(ab, d->lp_old, d->lp_ref, cfg->algo.kl_coef, d->ret);
    algo_adv_gae(ab, d->ret, d->v_old, cfg->algo.gamma, cfg->algo.lam, 0, d->adv, d->ret);
    if (cfg->algo.whiten_adv) whiten_global(t, ab, d->adv, d->adv);
    return 0;
  }
  if (est == ADV_REINFORCE_PP) {
    algo_place_outcome(ab, d->r_seq, d->ret);  /* ret holds r_tok, then the returns */
    if (kl_rew) algo_kl_reward_tok(ab, d->lp_old, d->lp_ref, cfg->algo.kl_coef, d->ret);
    algo_adv_reinforce_pp(ab, d->ret, cfg->algo.gamma, d->adv, d->ret);
    whiten_global(t, ab, d->ret, d->adv);
    return 0;
  }
  if (kl_rew) algo_kl_reward_seq(ab, d->lp_old, d->lp_ref, cfg->algo.kl_coef, d->r_seq);
  int whiten = cfg->algo.whiten_adv;
  if (est == ADV_REINFORCE_PP_BASELINE) {
    singles = algo_adv_outcome(ab, d->r_seq, ADV_DR_GRPO, STD_UNBIASED, 0.0, d->a_seq);
    whiten = 1;
  } else {
    singles = algo_adv_outcome(ab, d->r_seq, est, cfg->algo.std, cfg->algo.adv_eps, d->a_seq);
  }
  if (singles < 0) return 1;
  if (singles > 0 && !t->warned_single_groups) {
    fprintf(stderr, "rlpt: warning: %d group(s) of a single sample: their advantage is 0 "
            "(group-relative estimators need [algo] group_size >= 2)\n", singles);
    t->warned_single_groups = 1;
  }
  algo_broadcast_seq(ab, d->a_seq, whiten ? d->ret : d->adv);
  if (whiten) whiten_global(t, ab, d->ret, d->adv);
  return 0;
}

/* Sums over the step that are all-reduced once at the end. */
struct rl_sums {
  struct algo_stats st;
  double tok_trained, kl_sum, n_valid, tis_clipped;
};

/* One RL step's state. */
struct rl_ctx {
  struct trainer *t;
  struct rl_data d;
  struct algo_params p;
  int use_ref, mode;    /* mode: enum old_mode */
  int tis, tis_stale_only; /* enum tis_mode in use; 1: only SAMPLE_STALE samples get weights */
  double lr, norm;
  struct rl_sums sum;
};

/* The critic's update on the same mini-batch: the clipped value loss against
 * the returns (algo_value_loss), its own DP sum, clip and AdamW. 0, or 1 when a
 * forward failed on some rank (agreed). */
static int critic_update(struct rl_ctx *x, int a, int e, const struct algo_counts *c) {
  struct trainer *t = x->t;
  struct rl_data *d = &x->d;
  model_zero_grad(&t->critic);
  int rc = 0;
  for (int s0 = a; s0 < e && !rc;) {
    int s1 = trainer_micro_end(t, d->cu, s0, e), o = d->cu[s0];
    rc = critic_forward(t, d, s0, s1, d->val) != 0;
    if (rc) break;
    struct algo_batch ub = rl_span(d, s0, s1);
    algo_value_loss(&x->p, &ub, c, d->val, d->v_old, d->ret, d->dval, &x->sum.st);
    model_backward(&t->critic, NULL, NULL, d->dval + o);
    s0 = s1;
  }
  if (error_agree(t->dp, rc)) return 1;
  double norm;
  trainer_update_model(t, &t->critic, &t->critic_opt, x->lr, &norm);
  return 0;
}

/* What became of one update (the same on every DP rank). */
enum rl_update_result {
  UPDATE_APPLIED,
  UPDATE_SKIPPED,  /* non-finite gradient norm: params and moments unchanged */
  UPDATE_EMPTY,    /* the mini-batch is empty on every rank: no update */
  UPDATE_FAILED    /* a forward failed on some rank (agreed) */
};

/* One update on sequences [a, e): global counts, micro-batches (forward, policy
 * loss, backward), then the DP sum, clip and AdamW. */
static enum rl_update_result rl_update(struct rl_ctx *x, int a, int e) {
  struct trainer *t = x->t;
  struct rl_data *d = &x->d;
  struct algo_batch mb = rl_span(d, a, e);
  struct algo_counts c;
  algo_counts_local(&mb, &c);
  allreduce_polite(&c, 3, MPI_DOUBLE, MPI_SUM, t->dp);
  if (c.n_seq == 0.0) return UPDATE_EMPTY;  /* no group of any rank fell in this mini-batch */
  model_zero_grad(&t->policy);
  int rc = 0, use_ent = x->p.entropy_coef != 0.0;
  struct algo_tokens in = { .lp = d->lp, .lp_old = d->lp_old,
                            .lp_ref = x->use_ref ? d->lp_ref : NULL, .adv = d->adv,
                            .w_is = x->tis != TIS_OFF ? d->w_is : NULL, .entropy = d->ent };
  for (int s0 = a; s0 < e && !rc;) {
    int s1 = trainer_micro_end(t, d->cu, s0, e), o = d->cu[s0], T = d->cu[s1] - o;
    /* The fused pass's logprobs are the old ones, compared with the rollout's
     * (logprob_diff_max): row-invariant products. Otherwise the old ones came from
     * rl_forward_all and this pass may take the faster ones (model/model.h, exact). */
    t->policy.exact = x->mode == OLD_FUSED;
    rc = trainer_forward_micro(t, &t->policy, &t->policy.weights, d->tokens, d->cu, s0, s1,
                               d->lp + o, d->ent + o, NULL) != 0;
    if (rc) break;
    if (x->mode == OLD_FUSED) memcpy(d->lp_old + o, d->lp + o, sizeof(float) * (size_t)T);
    struct algo_batch ub = rl_span(d, s0, s1);
    algo_policy_loss(&x->p, &ub, &c, &in, d->dlp, d->dent, &x->sum.st);
    model_backward(&t->policy, d->dlp + o, use_ent ? d->dent + o : NULL, NULL);
    x->sum.tok_trained += T;
    s0 = s1;
  }
  t->policy.exact = 1;
  if (error_agree(t->dp, rc)) return UPDATE_FAILED;
  int applied = trainer_apply_update(t, x->lr, &x->norm);
  if (t->has_critic && critic_update(x, a, e, &c)) return UPDATE_FAILED;
  return applied ? UPDATE_APPLIED : UPDATE_SKIPPED;
}

/* Valid tokens and the KL metric: the [algo] estimator at lp_old - lp_ref summed
 * over them (use_ref). */
static void rl_kl_sums(struct rl_ctx *x) {
  const struct rl_data *d = &x->d;
  for (int i = 0; i < d->n_tok; i++)
    if (d->mask[i] > 0.0f) {
      double dk;
      if (x->use_ref)
        x->sum.kl_sum +=
            algo_kl(x->t->cfg->algo.kl_estimator, (double)d->lp_old[i] - d->lp_ref[i], &dk);
      x->sum.n_valid += 1.0;
    }
}

/* The step's sums over the DP ranks, named; all-reduced as one array of doubles. */
struct rl_totals {
  double pg_loss, entropy, n_tok, n_clip_low, n_clip_high, ratio_sum;  /* struct algo_stats' */
  double tok_trained, kl_sum, n_valid, tis_clipped;                    /* struct rl_sums' */
  double tis_ranks;  /* ranks with importance weights on */
  double diff_sum, diff_n, diff_far;                                   /* struct lp_diff's */
};

static void rl_metrics(struct rl_ctx *x, struct lp_diff df, int n_upd, long skipped, double t_ref,
                       double t_train, struct step_metrics *m) {
  struct trainer *t = x->t;
  const struct rl_sums *sum = &x->sum;
  struct rl_totals v = {.pg_loss = sum->st.pg_loss, .entropy = sum->st.entropy,
                        .n_tok = sum->st.n_tok, .n_clip_low = sum->st.n_clip_low,
                        .n_clip_high = sum->st.n_clip_high, .ratio_sum = sum->st.ratio_sum,
                        .tok_trained = sum->tok_trained, .kl_sum = sum->kl_sum,
                        .n_valid = sum->n_valid, .tis_clipped = sum->tis_clipped,
                        .tis_ranks = x->tis != TIS_OFF, .diff_sum = df.sum, .diff_n = df.n,
                        .diff_far = df.far};
  double diff = df.max;
  allreduce_polite(&v, (int)(sizeof v / sizeof(double)), MPI_DOUBLE, MPI_SUM, t->dp);
  allreduce_polite(&diff, 1, MPI_DOUBLE, MPI_MAX, t->dp);
  double nu = n_upd > 0 ? n_upd : 1;
  m->phase = PHASE_RL;
  m->pg_loss = v.pg_loss / nu;
  m->entropy = v.entropy / nu;
  m->pg_clipfrac_low = algo_frac(v.n_clip_low, v.n_tok);
  m->pg_clipfrac_high = algo_frac(v.n_clip_high, v.n_tok);
  m->ratio_mean = v.n_tok > 0.0 ? v.ratio_sum / v.n_tok : NAN;
  m->kl = x->use_ref ? v.kl_sum / (v.n_valid > 1.0 ? v.n_valid : 1.0) : NAN;
  m->tis_clipfrac = v.tis_ranks > 0.0 ? algo_frac(v.tis_clipped, v.n_valid) : NAN;
  m->logprob_diff_max = diff >= 0.0 ? diff : NAN;
  m->logprob_diff_mean = v.diff_n > 0.0 ? v.diff_sum / v.diff_n : NAN;
  m->logprob_diff_frac = v.diff_n > 0.0 ? v.diff_far / v.diff_n : NAN;
  m->grad_norm = x->norm;
  m->lr = x->lr;
  m->skipped_nonfinite = (double)(t->skipped_nonfinite - skipped);
  m->params_nonfinite = (double)trainer_params_nonfinite(t);
  m->t_ref = t_ref;
  m->t_train = t_train;
  m->train_tok_per_s = t_train > 0.0 ? v.tok_trained / t_train : NAN;
}

/* Importance weights ([algo] tis). With tis = off, samples the buffer kept past
 * max_lag (SAMPLE_STALE, stale = tis) still get token-truncated weights at
 * tis_cap, and every other sample weight 1 (rl/README.md §5). */
static void rl_tis(struct rl_ctx *x, const struct sample_batch *b) {
  const struct config *cfg = x->t->cfg;
  struct rl_data *d = &x->d;
  double clipped = 0.0;
  for (int i = 0; i < d->n; i++) {
    struct algo_batch one = rl_span(d, i, i + 1);
    if (x->tis_stale_only && !(b->s[d->sample[i]].flags & SAMPLE_STALE)) {
      for (int k = d->cu[i]; k < d->cu[i + 1]; k++) d->w_is[k] = d->mask[k];
      continue;
    }
    clipped += (double)algo_tis_weights(&one, x->tis, d->lp_old, d->lp_roll, cfg->algo.tis_cap,
                                        cfg->algo.tis_min, d->w_is);
  }
  x->sum.tis_clipped = clipped;
}

/* Advantages and TIS weights (collective: whitening all-reduces). 0 or 1 (agreed). */
static int rl_prepare(struct rl_ctx *x, struct sample_batch *b) {
  struct rl_data *d = &x->d;
  struct algo_batch ab = { .n_seq = d->n, .off = d->cu, .mask = d->mask, .group = d->group,
                           .n_group = d->n_group };
  int rc = rl_advantages(x->t, d, b, &ab, x->use_ref);
  if (!rc && x->tis != TIS_OFF) rl_tis(x, b);
  return error_agree(x->t->dp, rc);
}

/* The TIS mode of this step: the deck's, or token-truncate for stale samples only. */
static void rl_tis_mode(struct rl_ctx *x, const struct sample_batch *b) {
  x->tis = x->t->cfg->algo.tis;
  x->tis_stale_only = 0;
  if (x->tis != TIS_OFF) return;
  for (int i = 0; i < x->d.n; i++)
    if (b->s[x->d.sample[i]].flags & SAMPLE_STALE) {
      x->tis = TIS_TOKEN_TRUNCATE;
      x->tis_stale_only = 1;
      return;
    }
}

/* Each sample keeps the per-token advantages it was trained with ([log] samples_path). */
static int rl_record_adv(const struct rl_data *d, struct sample_batch *b) {
  for (int i = 0; i < d->n; i++) {
    struct sample *s = &b->s[d->sample[i]];
    if (s->n_resp > 0 && sample_set_adv(s, &d->adv[d->cu[i] + s->n_prompt - 1], s->n_resp))
      return 1;
    s->flags |= SAMPLE_ADV_TRAINED;
  }
  return 0;
}

int trainer_rl_step(struct trainer *t, struct sample_batch *b, struct step_metrics *m) {
  const struct config *cfg = t->cfg;
  struct rl_ctx x;
  memset(&x, 0, sizeof x);
  x.t = t;
  x.use_ref = t->ref.host != NULL && cfg->algo.kl_coef > 0.0;
  x.lr = optim_lr_at(&t->sched, t->step);
  x.norm = NAN;
  algo_params_from_config(cfg, &x.p);
  struct rl_data *d = &x.d;
  double t0 = clock_seconds();
  struct lp_diff diff = {.max = -1.0};
  int E = (int)cfg->algo.ppo_epochs, M = (int)cfg->algo.mini_batches, applied = 0, n_upd = 0;
  int rc = rl_pack(d, b, M);
  if (!rc) rl_tis_mode(&x, b);
  if (!rc) x.mode = rl_old_mode(t, d, x.use_ref, x.tis);
  if (!rc) rc = rl_logprobs(t, d, x.use_ref, x.mode);
  if (!rc && t->has_critic) rc = critic_values(t, d);
  if (error_agree(t->dp, rc) || rl_prepare(&x, b)) {
    rl_data_free(d);
    return 1;
  }
  double t1 = clock_seconds();
  if (x.mode == OLD_RECOMPUTE) diff = rl_diff(t, d, b, d->lp_old, 0, d->n);
  long skipped = t->skipped_nonfinite;
  for (int ep = 0; ep < E && !rc; ep++)
    for (int j = 0; j < M && !rc; j++) {
      enum rl_update_result r = rl_update(&x, d->mb[j], d->mb[j + 1]);
      rc = r == UPDATE_FAILED;
      applied += r == UPDATE_APPLIED;
      n_upd += r == UPDATE_APPLIED || r == UPDATE_SKIPPED;
      /* lp_old from the rollout: d->lp of the first mini-batch predates every update */
      if (!rc && x.mode == OLD_ROLLOUT && ep == 0 && j == 0)
        diff = rl_diff(t, d, b, d->lp, d->mb[0], d->mb[1]);
    }
  if (!rc && x.mode == OLD_FUSED) {
    rl_finish_logprobs(t, d, x.use_ref);
    diff = rl_diff(t, d, b, d->lp_old, 0, d->n);
  }
  if (!rc) rc = rl_record_adv(d, b);
  rl_kl_sums(&x);
  t->step++;
  if (applied) t->weight_version++;
  double t2 = clock_seconds();
  if (!rc) rl_metrics(&x, diff, n_upd, skipped, t1 - t0, t2 - t1, m);
  rl_data_free(d);
  return rc;
}
