/* rl/losses.c: loss aggregation, KL estimators, the per-token policy losses
 * (PPO clip with dual clip, GSPO, CISPO), the PPO value loss and DPO/IPO
 * (rl/README.md §2-4, §7). Every function returns d(loss)/d(input) per token,
 * multiplied by its aggregation weight, for the model's backward. */
#include "rl/algo.h"

#include <math.h>

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
static double max1(double x) { return x > 1.0 ? x : 1.0; }

/* ---- aggregation ------------------------------------------------------------------------- */

void algo_counts_local(const struct algo_batch *b, struct algo_counts *c) {
  c->n_tok = c->n_seq_valid = 0.0;
  c->n_seq = b->n_seq;
  for (int i = 0; i < b->n_seq; i++) {
    double l = algo_seq_len(b, i);
    c->n_tok += l;
    c->n_seq_valid += l > 0.0;
  }
}

/* The weight of each valid token of a sequence with len_i valid tokens. */
static double agg_factor(int mode, const struct algo_counts *g, double len_i, long l_max) {
  if (len_i <= 0.0) return 0.0;
  switch (mode) {
    case AGG_SEQ_MEAN_TOKEN_SUM: return 1.0 / max1(g->n_seq_valid);
    case AGG_SEQ_MEAN_TOKEN_MEAN: return 1.0 / (max1(g->n_seq_valid) * len_i);
    case AGG_SEQ_MEAN_TOKEN_SUM_NORM: return 1.0 / (max1(g->n_seq) * max1((double)l_max));
    case AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL: return 1.0 / max1((double)l_max);  /* veRL agg_loss */
    default: return 1.0 / max1(g->n_tok);
  }
}

void algo_agg_weights(const struct algo_batch *b, int mode, const struct algo_counts *g,
                      long l_max, float *w) {
  for (int i = 0; i < b->n_seq; i++) {
    double f = agg_factor(mode, g, algo_seq_len(b, i), l_max);
    for (int t = b->off[i]; t < b->off[i + 1]; t++) w[t] = (float)(b->mask[t] * f);
  }
}

double algo_frac(double count, double n_tok) { return count / max1(n_tok); }

/* ---- KL estimators ------------------------------------------------------------------------ */

double algo_kl(int est, double x, double *dk) {
  switch (est) {
    case KL_K1: *dk = 1.0; return x;
    case KL_K2: *dk = x; return 0.5 * x * x;
    case KL_K3: *dk = 1.0 - exp(-x); return exp(-x) + x - 1.0;
    default: {  /* low_var_kl (veRL): k3 with -x clamped to +-20 and the result to +-10 */
      double c = clampd(-x, -20.0, 20.0);
      double k = exp(c) - c - 1.0;
      int inside = -x >= -20.0 && -x <= 20.0 && k >= -10.0 && k <= 10.0;
      *dk = inside ? 1.0 - exp(c) : 0.0;
      return clampd(k, -10.0, 10.0);
    }
  }
}

/* ---- policy losses ------------------------------------------------------------------------- */

/* Clipped surrogate at ratio r with d r / d lp = dr: max(-A r, -A clip(r, lo, hi)),
 * then for A < 0 the dual clip min(., -A c) when c > 0. Returns the loss, *dl the
 * gradient wrt lp. */
static double clip_surrogate(double a, double r, double dr, double lo, double hi, double dual,
                             struct algo_stats *st, double *dl) {
  double l1 = -a * r, l2 = -a * clampd(r, lo, hi), l;
  if (l1 >= l2) {
    l = l1;
    *dl = -a * dr;
  } else {  /* the clipped branch is constant in r */
    l = l2;
    *dl = 0.0;
  }
  if (dual > 0.0 && a < 0.0 && -a * dual < l) {
    l = -a * dual;
    *dl = 0.0;
    st->n_dual_clip += 1.0;
  }
  st->n_clip_low += a < 0.0 && r < lo;
  st->n_clip_high += a > 0.0 && r > hi;
  st->ratio_sum += r;
  return l;
}

/* GSPO: the sequence's log ratio (1/L_i) sum_t m (lp - lp_old), L_i >= 1. */
static double gspo_seq_log_ratio(const struct algo_batch *b, int i, const struct algo_tokens *in) {
  double s = 0.0, n = 0.0;
  for (int t = b->off[i]; t < b->off[i + 1]; t++) {
    s += (double)b->mask[t] * ((double)in->lp[t] - in->lp_old[t]);
    n += b->mask[t];
  }
  return s / max1(n);
}

/* The policy term of one valid token; *dl = its gradient wrt lp[t]. seq_log is
 * GSPO's sequence log ratio (unused otherwise). */
static double pg_token(const struct algo_params *p, const struct algo_tokens *in, int t,
                       double seq_log, struct algo_stats *st, double *dl) {
  double a = in->adv[t], lo = 1.0 - p->clip_low, hi = 1.0 + p->clip_high, l;
  if (p->policy_loss == PL_GSPO) {
    /* Token form lp - sg(lp) + sg(log s_i): value s_i, gradient s_i * d lp_t;
     * clamped above at 10 (veRL), where the gradient stops. */
    double s = exp(seq_log < 10.0 ? seq_log : 10.0);
    l = clip_surrogate(a, s, seq_log <= 10.0 ? s : 0.0, lo, hi, 0.0, st, dl);
  } else {
    double x = (double)in->lp[t] - in->lp_old[t];
    double r = exp(clampd(x, -20.0, 20.0)), dr = (x >= -20.0 && x <= 20.0) ? r : 0.0;
    if (p->policy_loss == PL_CISPO) {
      /* -sg(clip(r)) * A * lp: the clipped ratio is a constant weight. */
      double rc = clampd(r, lo, hi);
      st->n_clip_low += a < 0.0 && r < lo;
      st->n_clip_high += a > 0.0 && r > hi;
      st->ratio_sum += r;
      *dl = -rc * a;
      l = -rc * a * in->lp[t];
    } else {
      l = clip_surrogate(a, r, dr, lo, hi, p->dual_clip, st, dl);
    }
  }
  if (in->w_is) {
    l *= in->w_is[t];
    *dl *= in->w_is[t];
  }
  return l;
}

double algo_policy_loss(const struct algo_params *p, const struct algo_batch *b,
                        const struct algo_counts *g, const struct algo_tokens *in,
                        float *dlp, float *dent, struct algo_stats *st) {
  int use_kl = p->kl_in == KL_IN_LOSS && p->kl_coef > 0.0 && in->lp_ref;
  double total = 0.0;
  for (int i = 0; i < b->n_seq; i++) {
    double f = agg_factor(p->loss_agg, g, algo_seq_len(b, i), p->l_max);
    double seq_log = p->policy_loss == PL_GSPO ? gspo_seq_log_ratio(b, i, in) : 0.0;
    for (int t = b->off[i]; t < b->off[i + 1]; t++) {
      dlp[t] = 0.0f;
      if (dent) dent[t] = 0.0f;
      if (b->mask[t] <= 0.0f) continue;
      double w = b->mask[t] * f, dl, dk = 0.0, k = 0.0, h = 0.0;
      double l = pg_token(p, in, t, seq_log, st, &dl);
      st->pg_loss += w * l;
      if (use_kl) {
        k = algo_kl(p->kl_estimator, (double)in->lp[t] - in->lp_ref[t], &dk);
        st->kl += w * k;
      }
      if (in->entropy) {
        h = in->entropy[t];
        st->entropy += w * h;
        if (dent) dent[t] = (float)(-p->entropy_coef * w);
      }
      double lt = w * (l + p->kl_coef * k - p->entropy_coef * h);
      total += lt;
      dlp[t] = (float)(w * (dl + (use_kl ? p->kl_coef * dk : 0.0)));
      st->n_tok += 1.0;
    }
  }
  st->loss += total;
  return total;
}

/* ---- value loss ------------------------------------------------------------------------------ */

double algo_value_loss(const struct algo_params *p, const struct algo_batch *b,
                       const struct algo_counts *g, const float *v, const float *v_old,
                       const float *ret, float *dv, struct algo_stats *st) {
  double total = 0.0, c = p->value_clip;
  for (int i = 0; i < b->n_seq; i++) {
    double f = agg_factor(p->loss_agg, g, algo_seq_len(b, i), p->l_max);
    for (int t = b->off[i]; t < b->off[i + 1]; t++) {
      dv[t] = 0.0f;
      if (b->mask[t] <= 0.0f) continue;
      double w = p->vf_coef * b->mask[t] * f, r = ret[t], x = v[t];
      double xc = c > 0.0 ? clampd(x, (double)v_old[t] - c, (double)v_old[t] + c) : x;
      double e1 = (x - r) * (x - r), e2 = (xc - r) * (xc - r), l, d;
      if (e1 >= e2) {
        l = 0.5 * e1;
        d = x - r;
      } else {  /* the clipped value is constant in v */
        l = 0.5 * e2;
        d = 0.0;
        st->n_vf_clip += 1.0;
      }
      total += w * l;
      dv[t] = (float)(w * d);
    }
  }
  st->vf_loss += total;
  return total;
}

/* ---- DPO / IPO ------------------------------------------------------------------------------ */

double algo_dpo_loss(int kind, double beta, const struct algo_dpo_pair *pairs, int n_pairs,
                     double n_pairs_global, double *d_w, double *d_l, struct algo_dpo_stats *st) {
  double inv_n = 1.0 / max1(n_pairs_global), total = 0.0;
  for (int k = 0; k < n_pairs; k++) {
    const struct algo_dpo_pair *q = &pairs[k];
    double dw = q->logp_w - q->ref_w, dl = q->logp_l - q->ref_l, loss;
    if (kind == DPO_IPO) {
      double nw = max1(q->n_w), nl = max1(q->n_l);
      double e = dw / nw - dl / nl - 1.0 / (2.0 * beta);
      loss = e * e;
      d_w[k] = 2.0 * e / nw * inv_n;
      d_l[k] = -2.0 * e / nl * inv_n;
    } else {
      double z = beta * (dw - dl);
      /* -log sigmoid(z) without overflow; d/dz = -sigmoid(-z). */
      loss = (z < 0.0 ? -z : 0.0) + log1p(exp(-fabs(z)));
      double sig_neg = z >= 0.0 ? exp(-z) / (1.0 + exp(-z)) : 1.0 / (1.0 + exp(z));
      d_w[k] = -sig_neg * beta * inv_n;
      d_l[k] = sig_neg * beta * inv_n;
    }
    double margin = beta * (dw - dl);
    total += loss * inv_n;
    st->margin_sum += margin;
    st->n_correct += margin > 0.0;
    st->n_pairs += 1.0;
  }
  st->loss += total;
  return total;
}
