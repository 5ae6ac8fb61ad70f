/* monitor/checks.c: the per-step checks of the doctor's playbook and their thresholds
 * (monitor/checks.h). Field names are rl/metrics.c's. */
#include "monitor/checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- thresholds ----------------------------------------------------------------------- */

/* Trend checks look at the CHECK_LOOKBACK steps ending at a row (fewer at the start of a
 * run, from TREND_MIN on) and compare the mean of the first quarter with the last. */
#define TREND_MIN 8
/* Reward hacking: reward up while response length and KL climb together (the length
 * exploitation of RLHF); within one window: reward_mean +0.05 (rule rewards are 0..1),
 * resp_len_mean +50%, kl x3. */
#define HACK_REWARD_RISE 0.05
#define HACK_LEN_RISE 0.5
#define HACK_KL_RISE 3.0
/* KL: practitioners' healthy range of the logged KL is 1-10, and above 50 the policy has
 * left the reference. rlpt logs kl per token (nats); healthy runs here stay far below 1
 * (tests/decks/e2e_tiny.ini with algo.kl_coef = 0.001: 0.06-0.26), so a fast rise into
 * the range counts too: x10 within KL_GROWTH_STEPS steps to at least KL_HEALTHY_LO. */
#define KL_EXPLODE 50.0
#define KL_HEALTHY_LO 1.0
#define KL_GROWTH 10.0
#define KL_GROWTH_STEPS 5
/* Entropy collapse: the mean over the last 3 steps below a tenth of the first 3 RL steps'
 * (the collapse pattern of RL on LLMs: an order of magnitude lost, exploration gone). */
#define ENTROPY_AVG 3
#define ENTROPY_COLLAPSE_FRAC 0.1
/* Throughput: the median gen_tok_per_s of the last 10 steps below half the first 10's.
 * Medians ride over single slow steps (the quickstart on a shared 2-core VM: steps of 30k
 * to 54k around a 49k median, 10-step medians 46k-51k). */
#define TPUT_WIN 10
#define TPUT_DROP 0.5
/* Staleness: practitioners' alert levels, lag above 2 weight versions, drop above 20%. */
#define LAG_MAX 2.0
#define DROP_MAX 0.2
/* PPO clip fraction (pg_clipfrac_low + high, mean of 5 steps): practitioners' healthy
 * range 5-20%. A ratio_mean of exactly 1 is an update on the sampling policy itself (one
 * pass, one mini-batch: rho = 1, nothing to clip), where a low fraction says nothing. */
#define CLIP_WIN 5
#define CLIP_LO 0.05
#define CLIP_HI 0.2
#define RATIO_ON_POLICY_EPS 1e-6
/* Rollout vs trainer logprob: the e2e tests hold the fp32 pair to 1e-5 nats
 * (tests/run/tests.cmake); 1e-3 is what another precision or kernel gives. */
#define LOGPROB_DIFF_MAX 1e-3
/* Loss stuck at 0: |pg_loss| <= 1e-12 on 3 steps in a row (one can be chance). Its causes:
 * acc within 0.02 of 0 or 1, reward constant in 90% of the (group, part) pairs. */
#define LOSS_ZERO_EPS 1e-12
#define LOSS_ZERO_STEPS 3
#define ACC_EDGE 0.02
#define CONST_FRAC_HIGH 0.9
/* Task difficulty by acc: at 0.9 over the first RL steps 43% of 8-sample groups are all
 * right (0.9^8); at 0.05 over a window 66% are all wrong (0.95^8). */
#define ACC_TOO_EASY 0.9
#define ACC_TOO_HARD 0.05

/* ---- helpers -------------------------------------------------------------------------- */

/* Mean of column c's finite values over rows [lo, hi] (NaN when there are none). */
static double mean_rows(const struct metric_rows *r, int c, long lo, long hi) {
  double s = 0;
  long n = 0;
  for (long i = lo < 0 ? 0 : lo; i <= hi; i++) {
    double v = rows_get(r, i, c);
    if (isfinite(v)) s += v, n++;
  }
  return n ? s / (double)n : NAN;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of column c's finite values over rows [lo, hi], at most CHECK_LOOKBACK rows. */
static double median_rows(const struct metric_rows *r, int c, long lo, long hi) {
  double v[CHECK_LOOKBACK];
  long n = 0;
  for (long i = lo < 0 ? 0 : lo; i <= hi && n < CHECK_LOOKBACK; i++)
    if (isfinite(rows_get(r, i, c))) v[n++] = rows_get(r, i, c);
  if (!n) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The trend window ending at row t: rows [lo, t], the first and last e of them averaged. */
struct trend {
  long lo, t, e;
};

static int trend_window(long t, struct trend *w) {
  w->t = t;
  w->lo = t + 1 > CHECK_LOOKBACK ? t + 1 - CHECK_LOOKBACK : 0;
  long len = t - w->lo + 1;
  w->e = len / 4 > 2 ? len / 4 : 2;
  return len >= TREND_MIN;
}

static double trend_start(const struct metric_rows *r, int c, const struct trend *w) {
  return mean_rows(r, c, w->lo, w->lo + w->e - 1);
}

static double trend_end(const struct metric_rows *r, int c, const struct trend *w) {
  return mean_rows(r, c, w->t - w->e + 1, w->t);
}

/* Fill h for rows [lo, hi] and return 1. */
__attribute__((format(printf, 6, 7))) static int fire(struct check_hit *h, const struct metric_rows *r,
                                                      long lo, long hi, double score, const char *fmt, ...) {
  h->step_lo = r->step[lo];
  h->step_hi = r->step[hi];
  h->score = score;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->evidence, sizeof h->evidence, fmt, ap);
  va_end(ap);
  return 1;
}

/* "x12 (0.21 -> 2.5)", or "0 -> 2.5" from zero. */
static const char *growth(char *buf, size_t n, double a, double b) {
  if (a > 0) snprintf(buf, n, "x%.3g (%.3g -> %.3g)", b / a, a, b);
  else snprintf(buf, n, "%.3g -> %.3g", a, b);
  return buf;
}

/* ---- the checks ----------------------------------------------------------------------- */

static int check_reward_hacking(const struct metric_rows *r, long t, struct check_hit *h) {
  struct trend w;
  if (!trend_window(t, &w)) return 0;
  int R = SERIES_COL(reward_mean), L = SERIES_COL(resp_len_mean), K = SERIES_COL(kl);
  double r0 = trend_start(r, R, &w), r1 = trend_end(r, R, &w);
  double l0 = trend_start(r, L, &w), l1 = trend_end(r, L, &w);
  double k0 = trend_start(r, K, &w), k1 = trend_end(r, K, &w);
  if (!(r1 - r0 >= HACK_REWARD_RISE && l0 > 0 && l1 >= (1 + HACK_LEN_RISE) * l0 && k1 > 0 &&
        k1 >= HACK_KL_RISE * k0))
    return 0;
  int A = SERIES_COL(acc);
  char g[64];
  return fire(h, r, w.lo, t, (l1 / l0) * (k0 > 0 ? k1 / k0 : 1e3),
              "resp_len_mean %+.0f%% (%.3g -> %.3g) and kl %s over steps %ld-%ld while reward_mean "
              "rose %.3g -> %.3g (acc %.3g -> %.3g)", 100 * (l1 / l0 - 1), l0, l1,
              growth(g, sizeof g, k0, k1), r->step[w.lo], r->step[t], r0, r1,
              trend_start(r, A, &w), trend_end(r, A, &w));
}

static int check_kl(const struct metric_rows *r, long t, struct check_hit *h) {
  int K = SERIES_COL(kl);
  double k = rows_get(r, t, K);
  if (!isfinite(k)) return 0;
  if (k > KL_EXPLODE)
    return fire(h, r, t, t, 1e6 + k, "kl %.3g at step %ld, above %g (healthy 1-10)", k, r->step[t],
                KL_EXPLODE);
  if (k < KL_HEALTHY_LO) return 0;
  long jmin = -1;
  for (long j = t - 1; j >= 0 && j >= t - KL_GROWTH_STEPS; j--)
    if (isfinite(rows_get(r, j, K)) && (jmin < 0 || rows_get(r, j, K) < rows_get(r, jmin, K))) jmin = j;
  if (jmin < 0 || k < KL_GROWTH * rows_get(r, jmin, K)) return 0;
  char g[64];
  return fire(h, r, jmin, t, k, "kl %s over steps %ld-%ld: a rise of x%g or more within %d steps "
              "to above %g", growth(g, sizeof g, rows_get(r, jmin, K), k), r->step[jmin], r->step[t],
              KL_GROWTH, KL_GROWTH_STEPS, KL_HEALTHY_LO);
}

static int check_entropy(const struct metric_rows *r, long t, struct check_hit *h) {
  if (t < 2 * ENTROPY_AVG - 1) return 0;
  int E = SERIES_COL(entropy);
  double e0 = mean_rows(r, E, 0, ENTROPY_AVG - 1), e1 = mean_rows(r, E, t - ENTROPY_AVG + 1, t);
  if (!(e0 > 0 && e1 < ENTROPY_COLLAPSE_FRAC * e0)) return 0;
  return fire(h, r, t - ENTROPY_AVG + 1, t, e0 / fmax(e1, 1e-12),
              "entropy %.3g over steps %ld-%ld, %.0f%% of its %.3g over steps %ld-%ld (the first RL "
              "steps; collapse below %.0f%%)", e1, r->step[t - ENTROPY_AVG + 1], r->step[t],
              100 * e1 / e0, e0, r->step[0], r->step[ENTROPY_AVG - 1], 100 * ENTROPY_COLLAPSE_FRAC);
}

static int check_throughput(const struct metric_rows *r, long t, struct check_hit *h) {
  if (t < 2 * TPUT_WIN - 1) return 0;
  int G = SERIES_COL(gen_tok_per_s), L = SERIES_COL(resp_len_mean);
  long a = t - TPUT_WIN + 1;
  double g0 = median_rows(r, G, 0, TPUT_WIN - 1), g1 = median_rows(r, G, a, t);
  if (!(g0 > 0 && g1 < TPUT_DROP * g0)) return 0;
  return fire(h, r, a, t, g0 / fmax(g1, 1e-12),
              "gen_tok_per_s median %.0f over steps %ld-%ld -> %.0f over steps %ld-%ld (%+.0f%%; "
              "resp_len_mean %.3g -> %.3g)", g0, r->step[0], r->step[TPUT_WIN - 1], g1, r->step[a],
              r->step[t], 100 * (g1 / g0 - 1), mean_rows(r, L, 0, TPUT_WIN - 1), mean_rows(r, L, a, t));
}

static const char *num_or_null(char *buf, size_t n, double v) {
  if (isfinite(v)) snprintf(buf, n, "%.3g", v);
  else snprintf(buf, n, "null");
  return buf;
}

static int check_nonfinite(const struct metric_rows *r, long t, struct check_hit *h) {
  double sk = rows_get(r, t, SERIES_COL(skipped_nonfinite));
  double rn = rows_get(r, t, SERIES_COL(reward_nonfinite));
  double loss = rows_get(r, t, SERIES_COL(pg_loss)), gn = rows_get(r, t, SERIES_COL(grad_norm));
  if (!isfinite(loss)) loss = rows_get(r, t, SERIES_COL(pref_loss));  /* a preference step's loss */
  int trained = !(rows_get(r, t, SERIES_COL(groups_trained)) == 0);  /* NaN: assume it trained */
  int nulls = trained && (!isfinite(loss) || !isfinite(gn));
  if (!(sk > 0 || rn > 0 || nulls)) return 0;
  char a[32], b[32];
  return fire(h, r, t, t, (sk > 0 ? sk : 0) + (rn > 0 ? rn : 0) + nulls,
              "step %ld: skipped_nonfinite %g, reward_nonfinite %g, pg_loss %s, grad_norm %s",
              r->step[t], isfinite(sk) ? sk : 0, isfinite(rn) ? rn : 0, num_or_null(a, sizeof a, loss),
              num_or_null(b, sizeof b, gn));
}

static int check_drop(const struct metric_rows *r, long t, struct check_hit *h) {
  double d = rows_get(r, t, SERIES_COL(drop_ratio));
  if (!(d > DROP_MAX)) return 0;
  return fire(h, r, t, t, d, "drop_ratio %.3g at step %ld, above %g", d, r->step[t], DROP_MAX);
}

static int check_lag(const struct metric_rows *r, long t, struct check_hit *h) {
  double l = rows_get(r, t, SERIES_COL(lag_mean));
  if (!(l > LAG_MAX)) return 0;
  return fire(h, r, t, t, l, "lag_mean %.3g versions at step %ld (lag_max %.3g), above %g", l,
              r->step[t], rows_get(r, t, SERIES_COL(lag_max)), LAG_MAX);
}

/* Mean clip fraction (low + high) over rows [lo, t], with each side's mean; NaN when no
 * row has either side. */
static double clip_mean(const struct metric_rows *r, long lo, long t, double *lo_mean, double *hi_mean) {
  int CL = SERIES_COL(pg_clipfrac_low), CH = SERIES_COL(pg_clipfrac_high);
  double s = 0;
  long n = 0;
  for (long i = lo; i <= t; i++) {
    double a = rows_get(r, i, CL), b = rows_get(r, i, CH);
    if (!isfinite(a) && !isfinite(b)) continue;
    s += (isfinite(a) ? a : 0) + (isfinite(b) ? b : 0);
    n++;
  }
  *lo_mean = mean_rows(r, CL, lo, t);
  *hi_mean = mean_rows(r, CH, lo, t);
  return n ? s / (double)n : NAN;
}

static int check_clip_high(const struct metric_rows *r, long t, struct check_hit *h) {
  if (t < CLIP_WIN - 1) return 0;
  long lo = t - CLIP_WIN + 1;
  double a, b, c = clip_mean(r, lo, t, &a, &b);
  if (!(c > CLIP_HI)) return 0;
  return fire(h, r, lo, t, c, "pg_clipfrac_low + high %.3g (%.3g + %.3g) averaged over steps %ld-%ld, "
              "above %.0f%% (healthy 5-20%%)", c, a, b, r->step[lo], r->step[t], 100 * CLIP_HI);
}

static int check_clip_low(const struct metric_rows *r, long t, struct check_hit *h) {
  if (t < CLIP_WIN - 1) return 0;
  long lo = t - CLIP_WIN + 1;
  double a, b, c = clip_mean(r, lo, t, &a, &b), dev = 0;
  for (long i = lo; i <= t; i++) {
    double x = rows_get(r, i, SERIES_COL(ratio_mean));
    if (isfinite(x)) dev = fmax(dev, fabs(x - 1));
  }
  if (!(c < CLIP_LO) || !(dev > RATIO_ON_POLICY_EPS)) return 0;
  return fire(h, r, lo, t, CLIP_LO / fmax(c, 1e-6), "pg_clipfrac_low + high %.3g averaged over steps "
              "%ld-%ld, below %.0f%% (healthy 5-20%%) while ratio_mean moves up to %.3g from 1 "
              "(off-policy updates)", c, r->step[lo], r->step[t], 100 * CLIP_LO, dev);
}

static int check_logprob(const struct metric_rows *r, long t, struct check_hit *h) {
  double d = rows_get(r, t, SERIES_COL(logprob_diff_max));
  if (!(d >= LOGPROB_DIFF_MAX)) return 0;
  int tis = isfinite(rows_get(r, t, SERIES_COL(tis_clipfrac)));
  return fire(h, r, t, t, d, "logprob_diff_max %.3g nats at step %ld, at or above %g; TIS is %s", d,
              r->step[t], LOGPROB_DIFF_MAX, tis ? "on (tis_clipfrac logged)" : "off (tis_clipfrac null)");
}

/* Why the advantages are zero, from the rows [lo, t] of a loss stuck at 0. */
static const char *zero_cause(double acc, double cfrac, double trained) {
  if (trained == 0) return "no group was trained (dynamic sampling kept none)";
  if (acc <= ACC_EDGE) return "every group all wrong";
  if (acc >= 1 - ACC_EDGE) return "every group all right";
  if (cfrac >= CONST_FRAC_HIGH) return "the reward is constant within almost every group";
  return "equal rewards within the groups";
}

static int check_loss_zero(const struct metric_rows *r, long t, struct check_hit *h) {
  int P = SERIES_COL(pg_loss);
  long n = 0;
  while (n < CHECK_LOOKBACK && t - n >= 0 && fabs(rows_get(r, t - n, P)) <= LOSS_ZERO_EPS) n++;
  if (n < LOSS_ZERO_STEPS) return 0;
  long lo = t - n + 1;
  double acc = mean_rows(r, SERIES_COL(acc), lo, t);
  double cf = mean_rows(r, SERIES_COL(reward_parts_const_frac), lo, t);
  double gf = mean_rows(r, SERIES_COL(groups_filtered), lo, t);
  double gt = mean_rows(r, SERIES_COL(groups_trained), lo, t);
  return fire(h, r, lo, t, (double)n, "pg_loss 0 on %ld%s steps in a row (steps %ld-%ld): acc %.3g, "
              "reward_parts_const_frac %.3g, groups_filtered %.3g and groups_trained %.3g per step: %s",
              n, n == CHECK_LOOKBACK ? "+" : "", r->step[lo], r->step[t], acc, cf, gf, gt,
              zero_cause(acc, cf, gt));
}

static int check_too_easy(const struct metric_rows *r, long t, struct check_hit *h) {
  long hi = t < CHECK_HEAD - 1 ? t : CHECK_HEAD - 1;
  if (hi + 1 < TREND_MIN) return 0;
  double a = mean_rows(r, SERIES_COL(acc), 0, hi);
  if (!(a >= ACC_TOO_EASY)) return 0;
  return fire(h, r, 0, hi, a, "acc %.3f averaged over steps %ld-%ld (the first RL steps), at or "
              "above %g", a, r->step[0], r->step[hi], ACC_TOO_EASY);
}

static int check_too_hard(const struct metric_rows *r, long t, struct check_hit *h) {
  struct trend w;
  if (!trend_window(t, &w)) return 0;
  double a = mean_rows(r, SERIES_COL(acc), w.lo, t);
  if (!(a <= ACC_TOO_HARD)) return 0;
  return fire(h, r, w.lo, t, 1 / (a + 1e-3), "acc %.3f averaged over steps %ld-%ld, at or below %g",
              a, r->step[w.lo], r->step[t], ACC_TOO_HARD);
}

typedef int (*check_fn)(const struct metric_rows *r, long t, struct check_hit *h);

static const check_fn checks[DK_COUNT] = {
  [DK_REWARD_HACKING] = check_reward_hacking,
  [DK_KL] = check_kl,
  [DK_ENTROPY_COLLAPSE] = check_entropy,
  [DK_THROUGHPUT] = check_throughput,
  [DK_NONFINITE] = check_nonfinite,
  [DK_DROP] = check_drop,
  [DK_LAG] = check_lag,
  [DK_CLIP_HIGH] = check_clip_high,
  [DK_CLIP_LOW] = check_clip_low,
  [DK_LOGPROB_MISMATCH] = check_logprob,
  [DK_LOSS_ZERO] = check_loss_zero,
  [DK_TOO_EASY] = check_too_easy,
  [DK_TOO_HARD] = check_too_hard,
};

int check_at(enum doctor_kind k, const struct metric_rows *rl, long t, struct check_hit *hit) {
  if (k < 0 || k >= DK_COUNT || !checks[k] || t < 0 || t >= rl->n) return 0;
  *hit = (struct check_hit){.score = 0};
  return checks[k](rl, t, hit);
}
