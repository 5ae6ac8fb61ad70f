/* rl/algo.c: the loss functions' [algo] knobs, input sanitising, per-sequence helpers,
 * off-policy importance weights, DAPO's overlong shaping and group filter, and pass@k
 * (see rl/algo.h; advantages live in rl/advantages.c, losses in rl/losses.c). */
#include "rl/algo.h"

#include <math.h>

/* ---- the deck's [algo] knobs ------------------------------------------------------- */

void algo_params_from_config(const struct config *cfg, struct algo_params *p) {
  p->policy_loss = cfg->algo.policy_loss;
  p->loss_agg = cfg->algo.loss_agg;
  p->kl_estimator = cfg->algo.kl_estimator;
  p->kl_in = cfg->algo.kl_in;
  p->clip_low = cfg->algo.clip_low;
  p->clip_high = cfg->algo.clip_high;
  p->dual_clip = cfg->algo.dual_clip;
  p->kl_coef = cfg->algo.kl_coef;
  p->entropy_coef = cfg->algo.entropy_coef;
  p->vf_coef = cfg->algo.vf_coef;
  p->value_clip = cfg->algo.value_clip;
  p->l_max = cfg->rollout.max_new_tokens;
}

/* ---- sanitising ---------------------------------------------------------------------- */

long algo_sanitize_rewards(double *r, long n) {
  long bad = 0;
  for (long i = 0; i < n; i++)
    if (!isfinite(r[i])) {
      r[i] = 0.0;
      bad++;
    }
  return bad;
}

long algo_clamp_logprobs(float *lp, long n, float lp_min) {
  long hit = 0;
  for (long i = 0; i < n; i++)
    if (!(lp[i] >= lp_min)) {  /* also catches NaN */
      lp[i] = lp_min;
      hit++;
    }
  return hit;
}

/* ---- per-sequence helpers ------------------------------------------------------------ */

double algo_seq_len(const struct algo_batch *b, int i) {
  double n = 0.0;
  for (int t = b->off[i]; t < b->off[i + 1]; t++) n += b->mask[t];
  return n;
}

void algo_seq_sum(const struct algo_batch *b, const float *x, double *out) {
  for (int i = 0; i < b->n_seq; i++) {
    double s = 0.0;
    for (int t = b->off[i]; t < b->off[i + 1]; t++) s += (double)b->mask[t] * x[t];
    out[i] = s;
  }
}

void algo_broadcast_seq(const struct algo_batch *b, const double *x_seq, float *x_tok) {
  for (int i = 0; i < b->n_seq; i++)
    for (int t = b->off[i]; t < b->off[i + 1]; t++) x_tok[t] = (float)(b->mask[t] * x_seq[i]);
}

void algo_place_outcome(const struct algo_batch *b, const double *r_seq, float *r_tok) {
  for (int i = 0; i < b->n_seq; i++) {
    int last = -1;
    for (int t = b->off[i]; t < b->off[i + 1]; t++) {
      r_tok[t] = 0.0f;
      if (b->mask[t] > 0.0f) last = t;
    }
    if (last >= 0) r_tok[last] = (float)r_seq[i];
  }
}

/* ---- off-policy importance weights ------------------------------------------------------ */

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

long algo_tis_weights(const struct algo_batch *b, int mode, const float *lp_old,
                      const float *lp_roll, double cap, double w_min, float *w) {
  int per_seq = mode == TIS_SEQ_TRUNCATE || mode == TIS_SEQ_MASK;
  int truncate = mode == TIS_TOKEN_TRUNCATE || mode == TIS_SEQ_TRUNCATE;
  long hit = 0;
  for (int i = 0; i < b->n_seq; i++) {
    double seq_log = 0.0;
    if (per_seq)
      for (int t = b->off[i]; t < b->off[i + 1]; t++)
        seq_log += (double)b->mask[t] * ((double)lp_old[t] - lp_roll[t]);
    for (int t = b->off[i]; t < b->off[i + 1]; t++) {
      if (b->mask[t] <= 0.0f) {
        w[t] = 0.0f;
        continue;
      }
      double lw = per_seq ? seq_log : (double)lp_old[t] - lp_roll[t];
      double x = exp(clamp(lw, -20.0, 20.0)), y;
      if (truncate)
        y = x < cap ? x : cap;
      else
        y = (x >= w_min && x <= cap) ? x : 0.0;
      if (y != x) hit++;
      w[t] = (float)y;
    }
  }
  return hit;
}

/* ---- DAPO ------------------------------------------------------------------------------ */

double algo_overlong_reward(long len, long l_max, long l_cache, double penalty) {
  if (l_cache <= 0) return 0.0;
  long free_len = l_max - l_cache;
  if (len <= free_len) return 0.0;
  if (len > l_max) return -penalty;
  return penalty * (double)(free_len - len) / (double)l_cache;
}

int algo_group_keep(const double *r, int g) {
  for (int j = 1; j < g; j++)
    if (r[j] != r[0]) return 1;
  return 0;
}

/* ---- evaluation ------------------------------------------------------------------------- */

double algo_pass_at_k(long n, long c, long k) {
  if (n - c < k) return 1.0;
  double prod = 1.0;
  for (long j = n - c + 1; j <= n; j++) prod *= 1.0 - (double)k / (double)j;
  return 1.0 - prod;
}
