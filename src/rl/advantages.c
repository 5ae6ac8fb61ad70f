/* rl/advantages.c: advantage estimators and the reward-side KL (rl/README.md §1, §4).
 * Nothing here has a gradient. Group statistics are two-pass in double, and a
 * group whose rewards are all equal gets exactly 0: naive fp32 sums of 16 x 0.7
 * give a spread of ~1e-7 that the std normalisation blows up to |A| ~ 0.1. */
#include "rl/algo.h"

#include <math.h>
#include <stdlib.h>

struct group_acc { double n, sum, ss, min, max; };

/* Per-group count, sum, min, max (pass 1) and sum of squared deviations (pass 2). */
static struct group_acc *group_stats(const struct algo_batch *b, const double *r) {
  struct group_acc *g = calloc((size_t)(b->n_group > 0 ? b->n_group : 1), sizeof *g);
  if (!g) return NULL;
  for (int i = 0; i < b->n_seq; i++) {
    struct group_acc *a = &g[b->group[i]];
    if (a->n == 0 || r[i] < a->min) a->min = r[i];
    if (a->n == 0 || r[i] > a->max) a->max = r[i];
    a->n += 1.0;
    a->sum += r[i];
  }
  for (int i = 0; i < b->n_seq; i++) {
    struct group_acc *a = &g[b->group[i]];
    double d = r[i] - a->sum / a->n;
    a->ss += d * d;
  }
  return g;
}

int algo_adv_outcome(const struct algo_batch *b, const double *r_seq, int est, int std_mode,
                     double eps, double *adv_seq) {
  if (est != ADV_GRPO && est != ADV_DR_GRPO && est != ADV_RLOO) return -1;
  struct group_acc *g = group_stats(b, r_seq);
  if (!g) return -1;
  int singles = 0;
  for (int k = 0; k < b->n_group; k++) singles += g[k].n == 1.0;
  for (int i = 0; i < b->n_seq; i++) {
    const struct group_acc *a = &g[b->group[i]];
    double mean = a->sum / a->n, x = 0.0;
    if (a->n < 2.0 || a->max == a->min) {
      x = 0.0;
    } else if (est == ADV_GRPO) {
      double var = a->ss / (std_mode == STD_BIASED ? a->n : a->n - 1.0);
      x = (r_seq[i] - mean) / (sqrt(var) + eps);
    } else if (est == ADV_DR_GRPO) {
      x = r_seq[i] - mean;
    } else {  /* leave-one-out baseline: the mean of the other G-1 rewards */
      x = r_seq[i] - (a->sum - r_seq[i]) / (a->n - 1.0);
    }
    adv_seq[i] = x;
  }
  free(g);
  return singles;
}

int algo_groups_keep(const struct algo_batch *b, const double *r_seq, unsigned char *keep) {
  struct group_acc *g = group_stats(b, r_seq);
  if (!g) return -1;
  int kept = 0;
  for (int k = 0; k < b->n_group; k++) {
    keep[k] = g[k].n > 1.0 && g[k].max != g[k].min;
    kept += keep[k];
  }
  free(g);
  return kept;
}

void algo_whiten(const struct algo_batch *b, float *x) {
  int n_tok = b->off[b->n_seq];
  double n = 0.0, sum = 0.0, ss = 0.0;
  for (int t = 0; t < n_tok; t++)
    if (b->mask[t] > 0.0f) {
      n += 1.0;
      sum += x[t];
    }
  double mu = n > 0.0 ? sum / n : 0.0;
  for (int t = 0; t < n_tok; t++)
    if (b->mask[t] > 0.0f) ss += ((double)x[t] - mu) * ((double)x[t] - mu);
  double var = n > 1.0 ? ss / (n - 1.0) : 0.0;
  double inv = 1.0 / sqrt(var + 1e-8);
  for (int t = 0; t < n_tok; t++) x[t] = b->mask[t] > 0.0f ? (float)(((double)x[t] - mu) * inv) : 0.0f;
}

void algo_adv_reinforce_pp(const struct algo_batch *b, const float *r_tok, double gamma,
                           float *adv, float *ret) {
  for (int i = 0; i < b->n_seq; i++) {
    double run = 0.0;
    for (int t = b->off[i + 1] - 1; t >= b->off[i]; t--) {
      run = r_tok[t] + gamma * run;
      adv[t] = (float)run;
      if (ret) ret[t] = (float)run;
      if (b->mask[t] <= 0.0f) run = 0.0;  /* veRL: a masked token ends the return */
    }
  }
  algo_whiten(b, adv);
}

int algo_adv_reinforce_pp_baseline(const struct algo_batch *b, const double *r_seq, float *adv) {
  double *a = malloc((size_t)(b->n_seq > 0 ? b->n_seq : 1) * sizeof *a);
  if (!a) return -1;
  int singles = algo_adv_outcome(b, r_seq, ADV_DR_GRPO, STD_UNBIASED, 0.0, a);
  if (singles >= 0) {
    algo_broadcast_seq(b, a, adv);
    algo_whiten(b, adv);
  }
  free(a);
  return singles;
}

void algo_adv_gae(const struct algo_batch *b, const float *r_tok, const float *values,
                  double gamma, double lam, int whiten, float *adv, float *ret) {
  for (int i = 0; i < b->n_seq; i++) {
    double next_v = 0.0, last = 0.0;
    for (int t = b->off[i + 1] - 1; t >= b->off[i]; t--) {
      double m = b->mask[t];
      double delta = r_tok[t] + gamma * next_v - values[t];
      double a = delta + gamma * lam * last;
      /* A masked token is skipped: the recursion carries over it unchanged. */
      next_v = m * values[t] + (1.0 - m) * next_v;
      last = m * a + (1.0 - m) * last;
      adv[t] = (float)(m * a);
      ret[t] = (float)(m * (a + values[t]));
    }
  }
  if (whiten) algo_whiten(b, adv);
}

void algo_kl_reward_tok(const struct algo_batch *b, const float *lp_old, const float *lp_ref,
                        double coef, float *r_tok) {
  int n_tok = b->off[b->n_seq];
  for (int t = 0; t < n_tok; t++)
    if (b->mask[t] > 0.0f) r_tok[t] -= (float)(coef * ((double)lp_old[t] - lp_ref[t]));
}

void algo_kl_reward_seq(const struct algo_batch *b, const float *lp_old, const float *lp_ref,
                        double coef, double *r_seq) {
  for (int i = 0; i < b->n_seq; i++) {
    double s = 0.0;
    for (int t = b->off[i]; t < b->off[i + 1]; t++)
      s += (double)b->mask[t] * ((double)lp_old[t] - lp_ref[t]);
    r_seq[i] -= coef * s;
  }
}
