/* rl/algo.h: the RL algorithm math of rlpt (the formulas: rl/README.md):
 * advantages, per-token policy losses, loss aggregation, KL estimators, the value
 * loss, DPO/IPO, off-policy importance weights, DAPO's reward shaping and group
 * filter and pass@k. The presets behind [algo] name are the deck's (deck/presets.h).
 *
 * Everything works on a packed batch: n_seq sequences concatenated, sequence i
 * owning tokens [off[i], off[i+1]) of every per-token array, and a 0/1 loss mask
 * (1 on the response tokens that enter the loss). Inputs are fp32 as the model
 * produces them; sums, means and variances are accumulated in double.
 *
 * Losses are minimised. The functions return per-token d(loss)/d(lp) (and
 * d(loss)/d(entropy), d(loss)/d(value)) already multiplied by the aggregation
 * weight, so the model's backward consumes them directly. lp_old, lp_ref, lp_roll,
 * advantages and importance weights are constants: the gradient flows through lp
 * only. Aggregation divides by global counts (struct algo_counts) that the caller
 * sums over micro-batches and DP ranks first, so that micro-batching and gradient
 * accumulation give the gradient of one big batch. Loss values and statistics
 * come back as sums (struct algo_stats) that add across micro-batches and ranks. */
#ifndef RLPT_ALGO_H
#define RLPT_ALGO_H

#include "deck/config.h"

/* A packed batch (per-token arrays have off[n_seq] entries). */
struct algo_batch {
  int n_seq;
  const int *off;      /* n_seq + 1 token offsets */
  const float *mask;   /* per token, 0 or 1 */
  const int *group;    /* per sequence, group id in [0, n_group); NULL when unused */
  int n_group;
};

/* The [algo] knobs the loss functions read (algo_params_from_config). */
struct algo_params {
  int policy_loss, loss_agg, kl_estimator, kl_in;
  double clip_low, clip_high, dual_clip, kl_coef, entropy_coef, vf_coef, value_clip;
  long l_max;          /* rollout.max_new_tokens: the constant of seq-mean-token-sum-norm(-verl) */
};
void algo_params_from_config(const struct config *cfg, struct algo_params *p);

/* ---- sanitising (rl/algo.c) ------------------------------------------------------- */
/* NaN/Inf rewards -> 0; returns how many (reward_nonfinite). */
long algo_sanitize_rewards(double *r, long n);
/* lp < lp_min, -inf and NaN -> lp_min; returns how many. */
long algo_clamp_logprobs(float *lp, long n, float lp_min);

/* ---- per-sequence helpers (rl/algo.c) ----------------------------------------------- */
/* Valid tokens of sequence i: sum of its mask. */
double algo_seq_len(const struct algo_batch *b, int i);
/* out[i] = sum_t m x over sequence i (e.g. logp(y) for DPO). */
void algo_seq_sum(const struct algo_batch *b, const float *x, double *out);
/* x_tok[t] = m[t] * x_seq[i] for every token of sequence i. */
void algo_broadcast_seq(const struct algo_batch *b, const double *x_seq, float *x_tok);
/* r_tok = 0 everywhere except r_seq[i] on the last valid token of sequence i. */
void algo_place_outcome(const struct algo_batch *b, const double *r_seq, float *r_tok);

/* ---- advantages (rl/advantages.c), no gradient ------------------------------------------
 * Outcome estimators: r_seq per sequence -> adv_seq per sequence (broadcast with
 * algo_broadcast_seq). est is ADV_GRPO, ADV_DR_GRPO or ADV_RLOO; std_mode enum adv_std.
 * A group whose rewards are all equal gets A = 0 exactly; a group of one (G = 1)
 * gets A = 0. Returns the number of groups of one (the caller warns once), or -1
 * when out of memory or est is not an outcome estimator. */
int algo_adv_outcome(const struct algo_batch *b, const double *r_seq, int est, int std_mode,
                     double eps, double *adv_seq);
/* Dynamic sampling over a batch: keep[k] = 1 when the rewards of group k are not all
 * equal (a group of one is dropped: it carries no signal). Returns the number kept,
 * or -1 when out of memory. Also gives reward_parts_const_frac for one reward
 * component: 1 - kept/n_group. */
int algo_groups_keep(const struct algo_batch *b, const double *r_seq, unsigned char *keep);
/* Whiten x over the valid tokens of the batch: (x - mu)/sqrt(var + 1e-8), var unbiased;
 * masked tokens are set to 0. */
void algo_whiten(const struct algo_batch *b, float *x);
/* REINFORCE++: per-token rewards r_tok (outcome on the last token, minus per-token KL),
 * returns R_t = r_t + gamma R_{t+1} (restarting after a masked token, as veRL),
 * advantages = whitened returns. ret may be NULL. Note: after whitening an all-equal
 * group is no longer 0 when lengths differ; that is the algorithm. */
void algo_adv_reinforce_pp(const struct algo_batch *b, const float *r_tok, double gamma,
                           float *adv, float *ret);
/* REINFORCE++-baseline: r_seq minus its group mean, broadcast, whitened over tokens.
 * Returns as algo_adv_outcome. */
int algo_adv_reinforce_pp_baseline(const struct algo_batch *b, const double *r_seq, float *adv);
/* GAE: delta_t = r_t + gamma V_{t+1} - V_t over valid tokens (V = 0 after the last),
 * A_t = delta_t + gamma lam A_{t+1}; ret = A + V before whitening; A whitened when whiten. */
void algo_adv_gae(const struct algo_batch *b, const float *r_tok, const float *values,
                  double gamma, double lam, int whiten, float *adv, float *ret);
/* kl_in = reward: r_tok[t] -= coef * (lp_old - lp_ref) on valid tokens. */
void algo_kl_reward_tok(const struct algo_batch *b, const float *lp_old, const float *lp_ref,
                        double coef, float *r_tok);
/* The same summed per sequence, for outcome estimators: r_seq[i] -= coef * sum_t m k1. */
void algo_kl_reward_seq(const struct algo_batch *b, const float *lp_old, const float *lp_ref,
                        double coef, double *r_seq);

/* ---- aggregation (rl/losses.c) -------------------------------------------------- */
/* Counts that set the divisors. Sum them over micro-batches and DP ranks
 * (MPI_SUM of the three doubles) before algo_agg_weights / the loss functions. */
struct algo_counts {
  double n_tok;        /* valid tokens */
  double n_seq;        /* sequences */
  double n_seq_valid;  /* sequences with at least one valid token */
};
void algo_counts_local(const struct algo_batch *b, struct algo_counts *c);
/* Per-token weight w[t] such that the aggregated loss is sum_t w[t] l[t]:
 *   token-mean               m / max(N_tok, 1)
 *   seq-mean-token-sum       m / max(N_seq_valid, 1)
 *   seq-mean-token-mean      m / (max(N_seq_valid, 1) * L_i)
 *   seq-mean-token-sum-norm  m / (max(N_seq, 1) * l_max)   (l_max = max_new_tokens)
 *   seq-mean-token-sum-norm-verl  m / l_max                 (veRL's agg_loss of that name)
 * Sequences without valid tokens get weight 0. */
void algo_agg_weights(const struct algo_batch *b, int mode, const struct algo_counts *g,
                      long l_max, float *w);

/* ---- KL estimators (rl/losses.c) ------------------------------------------------ */
/* Value of estimator est (enum kl_estimator) at x = lp - lp_ref, and d/d lp in *dk. */
double algo_kl(int est, double x, double *dk);

/* ---- policy loss (rl/losses.c) --------------------------------------------------- */
/* Per-token inputs (n = off[n_seq]); NULL for the optional ones. */
struct algo_tokens {
  const float *lp;        /* log pi_theta, the only input with a gradient */
  const float *lp_old;    /* behaviour policy (detached) */
  const float *lp_ref;    /* reference; needed when kl_in = loss and kl_coef > 0 */
  const float *adv;       /* advantages */
  const float *w_is;      /* off-policy weights (algo_tis_weights) or NULL */
  const float *entropy;   /* per-token entropy; needed when entropy_coef > 0 */
};

/* Sums that add across micro-batches and ranks. Loss terms are already aggregated
 * (weighted by the agg weights), so their sum over the whole batch is the loss;
 * the counters are over valid tokens (divide by n_tok for fractions). */
struct algo_stats {
  double loss, pg_loss, kl, entropy, vf_loss;
  double n_tok, n_clip_low, n_clip_high, n_dual_clip, ratio_sum;
  double n_vf_clip;
};
/* Fractions and means of the summed stats: pg_clipfrac_low/high, ratio_mean, vf_clipfrac. */
double algo_frac(double count, double n_tok);

/* The policy loss of one micro-batch: policy term (p->policy_loss) + kl_coef * KL
 * (kl_in = loss) - entropy_coef * entropy, aggregated with p->loss_agg over the
 * global counts g. Writes dlp[t] = d loss / d lp[t] and, when dent is not NULL,
 * dent[t] = d loss / d entropy[t] (0 on masked tokens). Adds to *st. Returns this
 * micro-batch's share of the loss. */
double algo_policy_loss(const struct algo_params *p, const struct algo_batch *b,
                        const struct algo_counts *g, const struct algo_tokens *in,
                        float *dlp, float *dent, struct algo_stats *st);

/* PPO value loss: vf_coef * 0.5 * agg(max((v - R)^2, (clip(v, v_old +- value_clip) - R)^2))
 * (value_clip 0 = unclipped); dv[t] = d loss / d v[t]. Adds to st->vf_loss, n_vf_clip. */
double algo_value_loss(const struct algo_params *p, const struct algo_batch *b,
                       const struct algo_counts *g, const float *v, const float *v_old,
                       const float *ret, float *dv, struct algo_stats *st);

/* ---- DPO / IPO (rl/losses.c) ---------------------------------------------------- */
/* One preference pair: summed completion logprobs (algo_seq_sum) of the chosen (w)
 * and rejected (l) responses under the policy and the reference, and their valid
 * token counts (IPO normalises per token). */
struct algo_dpo_pair {
  double logp_w, logp_l, ref_w, ref_l, n_w, n_l;
};
struct algo_dpo_stats {
  double loss, margin_sum, n_correct, n_pairs;  /* sums; accuracy = n_correct/n_pairs */
};
/* loss = sum over pairs / max(n_pairs_global, 1) of
 *   sigmoid: -log sigmoid(z), z = beta*((logp_w - ref_w) - (logp_l - ref_l))
 *   ipo:     (h - 1/(2 beta))^2, h = (logp_w - ref_w)/max(n_w,1) - (logp_l - ref_l)/max(n_l,1)
 * d_w[k], d_l[k] = d loss / d logp_w, d logp_l of pair k (every token of the response
 * gets that gradient: broadcast with algo_broadcast_seq). margin = beta * (Delta_w -
 * Delta_l), correct when margin > 0. Returns this call's share of the loss. */
double algo_dpo_loss(int kind, double beta, const struct algo_dpo_pair *pairs, int n_pairs,
                     double n_pairs_global, double *d_w, double *d_l, struct algo_dpo_stats *st);

/* ---- off-policy, DAPO, evaluation (rl/algo.c) ------------------------------------------- */
/* Importance weights w_is per token for mode (enum tis_mode, not TIS_OFF):
 * token: exp(clamp(lp_old - lp_roll, +-20)); seq: exp(clamp(sum_t m (lp_old - lp_roll), +-20))
 * on every token of the sequence; truncate: min(w, cap); mask: w * 1[w_min <= w <= cap].
 * Returns the number of valid tokens whose weight was truncated or masked (tis_clipfrac
 * = that / n_tok). Masked-out tokens get w = 0. */
long algo_tis_weights(const struct algo_batch *b, int mode, const float *lp_old,
                      const float *lp_roll, double cap, double w_min, float *w);
/* DAPO overlong reward for a response of len tokens (l_max = max_new_tokens,
 * l_cache = overlong_buffer; 0 = off): penalty * R_len, R_len in [-1, 0]. */
double algo_overlong_reward(long len, long l_max, long l_cache, double penalty);
/* Dynamic sampling: keep a group unless all its rewards are equal. */
int algo_group_keep(const double *r, int g);
/* Unbiased pass@k from n samples with c correct (Codex paper), in double;
 * requires n >= k >= 1; 1 when n - c < k. */
double algo_pass_at_k(long n, long c, long k);

#endif
