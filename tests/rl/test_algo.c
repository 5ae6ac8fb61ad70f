/* rl/test_algo.c: hand-computed checks of the RL algorithm math (src/rl/algo.c,
 * advantages.c, losses.c) and the edge cases of src/rl/README.md §9. Expected values are
 * literals with their arithmetic in the comments; tolerances are stated per check (1e-6
 * for values that pass through fp32, 1e-4 relative for finite differences). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/algo.h"
#include "testutil.h"

/* A packed batch from per-sequence lengths (offsets computed here). */
struct tb {
  struct algo_batch b;
  int off[64];
};
static void tb_make(struct tb *t, int n_seq, const int *len, const float *mask, const int *group,
                    int n_group) {
  t->off[0] = 0;
  for (int i = 0; i < n_seq; i++) t->off[i + 1] = t->off[i] + len[i];
  t->b = (struct algo_batch){.n_seq = n_seq, .off = t->off, .mask = mask, .group = group,
                             .n_group = n_group};
}

static struct algo_params params(int pl, int agg) {
  return (struct algo_params){.policy_loss = pl, .loss_agg = agg, .kl_estimator = KL_K3,
                              .kl_in = KL_IN_LOSS, .clip_low = 0.2, .clip_high = 0.28,
                              .dual_clip = 3.0, .kl_coef = 0.0, .entropy_coef = 0.0,
                              .vf_coef = 0.1, .value_clip = 0.0, .l_max = 4};
}

/* ---- advantages ------------------------------------------------------------------ */

static void test_adv_group(void) {
  /* group 0: {1,0,0,1}: mean 0.5, ss 1, unbiased std sqrt(1/3), biased 0.5;
   * group 1: {1,2,3}: mean 2, unbiased std 1; group 2: G = 1. */
  int len[8] = {1, 1, 1, 1, 1, 1, 1, 1}, grp[8] = {0, 0, 0, 0, 1, 1, 1, 2};
  float mask[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  double r[8] = {1, 0, 0, 1, 1, 2, 3, 5}, a[8];
  struct tb t;
  tb_make(&t, 8, len, mask, grp, 3);
  CHECK(algo_adv_outcome(&t.b, r, ADV_GRPO, STD_UNBIASED, 1e-6, a) == 1);  /* one G = 1 group */
  CHECK_NEAR(a[0], 0.866023903787, 1e-10);   /* 0.5/(sqrt(1/3) + 1e-6) */
  CHECK_NEAR(a[1], -0.866023903787, 1e-10);
  CHECK_NEAR(a[4], -0.999999000001, 1e-10);  /* -1/(1 + 1e-6) */
  CHECK(a[5] == 0.0);
  CHECK(a[7] == 0.0);                        /* G = 1 -> 0 */
  algo_adv_outcome(&t.b, r, ADV_GRPO, STD_BIASED, 1e-6, a);
  CHECK_NEAR(a[3], 0.999998000004, 1e-10);   /* 0.5/(0.5 + 1e-6) */
  algo_adv_outcome(&t.b, r, ADV_DR_GRPO, STD_UNBIASED, 1e-6, a);
  CHECK_NEAR(a[0], 0.5, 1e-12);              /* r - mean, no std */
  CHECK_NEAR(a[6], 1.0, 1e-12);
  CHECK(a[7] == 0.0);
  algo_adv_outcome(&t.b, r, ADV_RLOO, STD_UNBIASED, 1e-6, a);
  CHECK_NEAR(a[0], 1.0 - 1.0 / 3.0, 1e-12);  /* 1 - (0+0+1)/3 */
  CHECK_NEAR(a[1], -2.0 / 3.0, 1e-12);       /* 0 - (1+0+1)/3 */
  CHECK_NEAR(a[4], -1.5, 1e-12);             /* 1 - (2+3)/2 */
  CHECK(a[7] == 0.0);
  CHECK(algo_adv_outcome(&t.b, r, ADV_GAE, STD_UNBIASED, 1e-6, a) == -1);
}

/* 16 copies of 0.7: naive fp32 sums give A ~ 0.1; here A = 0 exactly, loss 0, no NaN. */
static void test_adv_all_equal(void) {
  int len[16], grp[16];
  float mask[16], lp[16], adv[16], dlp[16];
  double r[16], a[16];
  for (int i = 0; i < 16; i++) len[i] = 1, grp[i] = 0, mask[i] = 1, r[i] = (float)0.7, lp[i] = -1.0f;
  struct tb t;
  tb_make(&t, 16, len, mask, grp, 1);
  for (int est = ADV_GRPO; est <= ADV_RLOO; est++) {
    for (int s = STD_UNBIASED; s <= STD_BIASED; s++) {
      algo_adv_outcome(&t.b, r, est, s, 1e-6, a);
      for (int i = 0; i < 16; i++) CHECK(a[i] == 0.0);
    }
  }
  algo_broadcast_seq(&t.b, a, adv);
  struct algo_params p = params(PL_PPO_CLIP, AGG_TOKEN_MEAN);
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp, .adv = adv};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, &st);
  CHECK(loss == 0.0);
  for (int i = 0; i < 16; i++) CHECK(dlp[i] == 0.0f);
}

static void test_whiten_and_reinforce_pp(void) {
  /* seq 0: prompt + 2 response tokens, reward 1; seq 1: 3 response tokens, reward 0. */
  int len[2] = {3, 3};
  float mask[6] = {0, 1, 1, 1, 1, 1}, r_tok[6], adv[6], ret[6];
  double r_seq[2] = {1.0, 0.0};
  struct tb t;
  tb_make(&t, 2, len, mask, NULL, 0);
  algo_place_outcome(&t.b, r_seq, r_tok);
  CHECK(r_tok[2] == 1.0f && r_tok[1] == 0.0f && r_tok[5] == 0.0f);
  /* gamma 1: valid returns {1, 1 | 0, 0, 0}: mean 0.4, ss 2*0.36 + 3*0.16 = 1.2,
   * var 1.2/4 = 0.3: A = 0.6/sqrt(0.3 + 1e-8) = 1.0954451, -0.4/sqrt(..) = -0.7302967. */
  algo_adv_reinforce_pp(&t.b, r_tok, 1.0, adv, ret);
  CHECK_NEAR(adv[1], 1.0954451, 1e-6);
  CHECK_NEAR(adv[2], 1.0954451, 1e-6);
  CHECK_NEAR(adv[3], -0.7302967, 1e-6);
  CHECK(adv[0] == 0.0f);  /* masked */
  /* gamma 0.5: seq 0 returns 1 at the last token, 0 + 0.5*1 = 0.5 before it */
  algo_adv_reinforce_pp(&t.b, r_tok, 0.5, adv, ret);
  CHECK_NEAR(ret[2], 1.0, 1e-7);
  CHECK_NEAR(ret[1], 0.5, 1e-7);

  /* -baseline: one group {1, 0}, valid lengths 2 and 3: A_seq = +-0.5 broadcast,
   * tokens {.5,.5,-.5,-.5,-.5}: mean -0.1, ss 2*0.36 + 3*0.16 = 1.2, var 0.3:
   * 0.6/sqrt(0.3 + 1e-8) = 1.0954451 -> an all-equal group would be 0, but unequal
   * lengths shift the mean: the documented behaviour of the algorithm. */
  int grp[2] = {0, 0};
  t.b.group = grp, t.b.n_group = 1;
  CHECK(algo_adv_reinforce_pp_baseline(&t.b, r_seq, adv) == 0);
  CHECK_NEAR(adv[1], 1.0954451, 1e-6);
  CHECK_NEAR(adv[4], -0.7302967, 1e-6);
  double eq[2] = {1.0, 1.0};
  algo_adv_reinforce_pp_baseline(&t.b, eq, adv);
  for (int i = 0; i < 6; i++) CHECK(adv[i] == 0.0f);  /* all-equal, one group: x - mu = 0 */
}

static void test_gae(void) {
  int len[1] = {3};
  float mask[3] = {1, 1, 1}, r[3] = {0, 0, 1}, v[3] = {0.5f, 0.6f, 0.7f}, adv[3], ret[3];
  struct tb t;
  tb_make(&t, 1, len, mask, NULL, 0);
  /* gamma = lam = 1: delta = {0.6-0.5, 0.7-0.6, 1-0.7} = {0.1, 0.1, 0.3};
   * A = {0.5, 0.4, 0.3}; returns = A + V = 1 everywhere */
  algo_adv_gae(&t.b, r, v, 1.0, 1.0, 0, adv, ret);
  CHECK_NEAR(adv[0], 0.5, 1e-6);
  CHECK_NEAR(adv[1], 0.4, 1e-6);
  CHECK_NEAR(adv[2], 0.3, 1e-6);
  for (int i = 0; i < 3; i++) CHECK_NEAR(ret[i], 1.0, 1e-6);
  /* gamma 0.9, lam 0.8: A2 = 0.3; delta1 = 0.9*0.7 - 0.6 = 0.03, A1 = 0.03 + 0.72*0.3 = 0.246;
   * delta0 = 0.9*0.6 - 0.5 = 0.04, A0 = 0.04 + 0.72*0.246 = 0.21712 */
  algo_adv_gae(&t.b, r, v, 0.9, 0.8, 0, adv, ret);
  CHECK_NEAR(adv[1], 0.246, 1e-6);
  CHECK_NEAR(adv[0], 0.21712, 1e-6);
  CHECK_NEAR(ret[0], 0.71712, 1e-6);
  /* whitened: {0.21712, 0.246, 0.3} mean 0.25437333, unbiased var 0.0017563... ->
   * zero mean, unit (unbiased) variance */
  algo_adv_gae(&t.b, r, v, 0.9, 0.8, 1, adv, ret);
  double m = (adv[0] + adv[1] + adv[2]) / 3.0;
  double var = ((adv[0] - m) * (adv[0] - m) + (adv[1] - m) * (adv[1] - m) + (adv[2] - m) * (adv[2] - m)) / 2.0;
  CHECK_NEAR(m, 0.0, 1e-6);
  CHECK_NEAR(var, 1.0, 1e-4);  /* 1e-8 in the denominator: var/(var + 1e-8) */
  /* a masked token in the middle is skipped: r = {0, 5, 1}, V = {0.5, 9, 0.7}, mask {1,0,1}:
   * A2 = 0.3; A0 = (0 + 0.7 - 0.5) + 0.3 = 0.5 */
  float mask2[3] = {1, 0, 1}, r2[3] = {0, 5, 1}, v2[3] = {0.5f, 9.0f, 0.7f};
  t.b.mask = mask2;
  algo_adv_gae(&t.b, r2, v2, 1.0, 1.0, 0, adv, ret);
  CHECK_NEAR(adv[0], 0.5, 1e-6);
  CHECK(adv[1] == 0.0f);
  CHECK_NEAR(ret[0], 1.0, 1e-6);
}

/* ---- policy losses ---------------------------------------------------------------- */

/* 7 valid tokens + 1 masked one, clip 0.2/0.28, dual clip 3, token-mean. */
#define PPO_N 8
static const float ppo_adv[PPO_N] = {1, 1, -1, -1, -1, 2, -1, 5};
static const double ppo_ratio[PPO_N] = {1.0, 1.5, 0.5, 5.0, 2.0, 0.5, 1.1, 100.0};
static const float ppo_mask[PPO_N] = {1, 1, 1, 1, 1, 1, 1, 0};

static double ppo_eval(const float *lp, const float *lp_old, float *dlp, struct algo_stats *st) {
  int len[1] = {PPO_N};
  struct tb t;
  tb_make(&t, 1, len, ppo_mask, NULL, 0);
  struct algo_params p = params(PL_PPO_CLIP, AGG_TOKEN_MEAN);
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp_old, .adv = ppo_adv};
  return algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, st);
}

static void test_ppo_clip(void) {
  float lp[PPO_N], lp_old[PPO_N], dlp[PPO_N];
  for (int i = 0; i < PPO_N; i++) lp_old[i] = -1.0f, lp[i] = (float)(-1.0 + log(ppo_ratio[i]));
  struct algo_stats st = {0};
  /* per token: t0 A=1 r=1: -1 | t1 A=1 r=1.5 > 1.28: clipped -1.28 | t2 A=-1 r=0.5 < 0.8:
   * clipped 0.8 | t3 A=-1 r=5: max(5, 1.28) = 5, dual min(5, 3) = 3 | t4 A=-1 r=2: 2 (< 3) |
   * t5 A=2 r=0.5: max(-1, -1.6) = -1 | t6 A=-1 r=1.1: 1.1 | t7 masked.
   * sum = -1 - 1.28 + 0.8 + 3 + 2 - 1 + 1.1 = 3.62, over N_tok = 7 (not the padded 8) */
  double loss = ppo_eval(lp, lp_old, dlp, &st);
  CHECK_NEAR(loss, 3.62 / 7.0, 1e-6);
  CHECK_NEAR(st.pg_loss, 3.62 / 7.0, 1e-6);
  /* d/dlp = -A r on unclipped tokens: {-1, 0, 0, 0, 2, -1, 1.1, 0}/7 */
  const double want[PPO_N] = {-1, 0, 0, 0, 2, -1, 1.1, 0};
  for (int i = 0; i < PPO_N; i++) CHECK_NEAR(dlp[i], want[i] / 7.0, 1e-6);
  /* clip fractions with asymmetric clipping: low = t2 (A<0, r<0.8); high = t1 (A>0, r>1.28);
   * t5 has r < 0.8 but A > 0 and is not clipped. dual = t3. */
  CHECK(st.n_tok == 7.0);
  CHECK(st.n_clip_low == 1.0);
  CHECK(st.n_clip_high == 1.0);
  CHECK(st.n_dual_clip == 1.0);
  CHECK_NEAR(st.ratio_sum, 11.6, 1e-5);  /* 1 + 1.5 + 0.5 + 5 + 2 + 0.5 + 1.1 */
  CHECK_NEAR(algo_frac(st.n_clip_low, st.n_tok), 1.0 / 7.0, 1e-12);

  /* The gradient flows through lp only: central differences of the loss in lp[t]
   * with lp_old fixed (h = 1e-2 keeps every token away from its kink; 1e-4 relative). */
  for (int i = 0; i < PPO_N; i++) {
    float lp2[PPO_N], d2[PPO_N];
    memcpy(lp2, lp, sizeof lp2);
    struct algo_stats s2 = {0};
    lp2[i] = lp[i] + 0.01f;
    double up = ppo_eval(lp2, lp_old, d2, &s2);
    double h = (double)lp2[i] - lp[i];
    lp2[i] = lp[i] - 0.01f;
    double h2 = (double)lp[i] - lp2[i];
    double down = ppo_eval(lp2, lp_old, d2, &s2);
    double fd = (up - down) / (h + h2);
    CHECK_NEAR(fd, dlp[i], 1e-4);  /* O(h^2) curvature of exp: ~5e-6 here */
  }

  /* Huge log-ratio: clamped at +-20 before exp, everything finite. */
  lp[0] = 1000.0f, lp[2] = 1000.0f, lp[4] = -1000.0f;
  memset(&st, 0, sizeof st);
  loss = ppo_eval(lp, lp_old, dlp, &st);
  CHECK(isfinite(loss));
  for (int i = 0; i < PPO_N; i++) CHECK(isfinite(dlp[i]));
  CHECK(dlp[0] == 0.0f);  /* A=1, r=e^20 > 1.28: clipped */
  /* t4: A=-1, r = e^-20: l1 = e^-20 < l2 = 0.8: clipped, 0 gradient */
  CHECK(dlp[4] == 0.0f);
}

static void test_cispo(void) {
  int len[1] = {3};
  float mask[3] = {1, 1, 1}, adv[3] = {1, 1, -2}, lp_old[3] = {0, 0, 0}, dlp[3];
  float lp[3] = {(float)log(1.5), (float)log(1.1), (float)log(0.5)};
  struct tb t;
  tb_make(&t, 1, len, mask, NULL, 0);
  struct algo_params p = params(PL_CISPO, AGG_TOKEN_MEAN);
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp_old, .adv = adv};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, &st);
  /* d/dlp = -sg(clip(r, 0.8, 1.28)) A: {-1.28, -1.1, -(0.8)(-2) = 1.6} / 3; the ratio
   * saturates but the gradient does not vanish (CISPO's point) */
  CHECK_NEAR(dlp[0], -1.28 / 3.0, 1e-6);
  CHECK_NEAR(dlp[1], -1.1 / 3.0, 1e-6);
  CHECK_NEAR(dlp[2], 1.6 / 3.0, 1e-6);
  /* loss = sum -clip(r) A lp / 3 = (-1.28 ln1.5 - 1.1 ln1.1 + 1.6 ln0.5)/3 */
  CHECK_NEAR(loss, (-1.28 * log(1.5) - 1.1 * log(1.1) + 1.6 * log(0.5)) / 3.0, 1e-6);
  CHECK(st.n_clip_high == 1.0 && st.n_clip_low == 1.0);
}

/* GSPO's sequence objective, in double: max(-A s, -A clip(s, 1-el, 1+er)),
 * s = exp(mean over valid tokens of lp - lp_old). */
static double gspo_objective(const double *lp, const float *lp_old, const float *mask, int n,
                             double a, double el, double er) {
  double s = 0.0, l = 0.0;
  for (int i = 0; i < n; i++) s += mask[i] * (lp[i] - lp_old[i]), l += mask[i];
  s = exp(s / l);
  double c = s < 1.0 - el ? 1.0 - el : s > 1.0 + er ? 1.0 + er : s;
  return fmax(-a * s, -a * c);
}

static void test_gspo(void) {
  int len[2] = {4, 3};
  float mask[7] = {0, 1, 1, 1, 1, 1, 1}, lp_old[7] = {-1, -1, -2, -0.5f, -1, -1, -1}, dlp[7];
  float adv[7] = {-1, -1, -1, -1, 1, 1, 1};
  /* seq 0: lp - lp_old = {x, 0.003, -0.001, 0.001}: log s = 0.003/3 = 0.001, s = 1.0010005;
   * A = -1: l1 = 1.0010005 > l2 = 1.0004: unclipped, gradient -A s/L = 1.0010005/3 per token.
   * seq 1: log s = 0.001 again, A = 1: l1 = -1.0010005 < l2 = -1.0004: clipped, gradient 0. */
  double dlt[7] = {0.7, 0.003, -0.001, 0.001, 0.002, 0.0, 0.001};
  float lp[7];
  for (int i = 0; i < 7; i++) lp[i] = (float)(lp_old[i] + dlt[i]);
  struct tb t;
  tb_make(&t, 2, len, mask, NULL, 0);
  struct algo_params p = params(PL_GSPO, AGG_SEQ_MEAN_TOKEN_MEAN);
  p.clip_low = 3e-4, p.clip_high = 4e-4;
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp_old, .adv = adv};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, &st);
  /* seq-mean-token-mean over 2 sequences: (1.0010005 - 1.0004)/2 */
  CHECK_NEAR(loss, (1.0010005 - 1.0004) / 2.0, 1e-6);
  CHECK(dlp[0] == 0.0f);  /* prompt token */
  for (int i = 1; i < 4; i++) CHECK_NEAR(dlp[i], 1.0010005 / 3.0 / 2.0, 1e-6);
  for (int i = 4; i < 7; i++) CHECK(dlp[i] == 0.0f);
  CHECK(st.n_clip_high == 3.0);  /* the clipped sequence's 3 tokens */
  /* The per-token gradient equals the finite-difference gradient of the sequence
   * objective (double, h = 1e-7, 1e-6 absolute). */
  double lpd[4];
  for (int i = 0; i < 4; i++) lpd[i] = lp[i];
  for (int i = 1; i < 4; i++) {
    double s = lpd[i];
    lpd[i] = s + 1e-7;
    double up = gspo_objective(lpd, lp_old, mask, 4, -1.0, 3e-4, 4e-4);
    lpd[i] = s - 1e-7;
    double down = gspo_objective(lpd, lp_old, mask, 4, -1.0, 3e-4, 4e-4);
    lpd[i] = s;
    CHECK_NEAR((up - down) / 2e-7 / 2.0, dlp[i], 1e-6);  /* /2: the seq-mean over 2 sequences */
  }
}

/* ---- aggregation ---------------------------------------------------------------------- */

static void test_aggregation(void) {
  /* seq 0: prompt + 2 valid; seq 1: prompt + 1 valid; seq 2: no valid tokens (prompt only). */
  int len[3] = {3, 2, 2};
  float mask[7] = {0, 1, 1, 0, 1, 0, 0}, w[7];
  struct tb t;
  tb_make(&t, 3, len, mask, NULL, 0);
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  CHECK(c.n_tok == 3.0 && c.n_seq == 3.0 && c.n_seq_valid == 2.0);
  algo_agg_weights(&t.b, AGG_TOKEN_MEAN, &c, 4, w);           /* 1/N_tok = 1/3 */
  CHECK_NEAR(w[1], 1.0 / 3.0, 1e-7);
  CHECK(w[0] == 0.0f && w[5] == 0.0f);
  algo_agg_weights(&t.b, AGG_SEQ_MEAN_TOKEN_SUM, &c, 4, w);   /* 1/N_seq_valid = 1/2 */
  CHECK_NEAR(w[1], 0.5, 1e-7);
  CHECK_NEAR(w[4], 0.5, 1e-7);
  algo_agg_weights(&t.b, AGG_SEQ_MEAN_TOKEN_MEAN, &c, 4, w);  /* 1/(2 L_i): L = 2 (not 3), 1 */
  CHECK_NEAR(w[1], 0.25, 1e-7);
  CHECK_NEAR(w[2], 0.25, 1e-7);
  CHECK_NEAR(w[4], 0.5, 1e-7);
  algo_agg_weights(&t.b, AGG_SEQ_MEAN_TOKEN_SUM_NORM, &c, 4, w);  /* 1/(N_seq l_max) = 1/12 */
  CHECK_NEAR(w[1], 1.0 / 12.0, 1e-7);
  CHECK_NEAR(w[4], 1.0 / 12.0, 1e-7);
  CHECK(w[5] == 0.0f);
  algo_agg_weights(&t.b, AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL, &c, 4, w);  /* veRL: 1/l_max = 1/4 */
  CHECK_NEAR(w[1], 0.25, 1e-7);
  CHECK_NEAR(w[4], 0.25, 1e-7);
  CHECK(w[0] == 0.0f && w[5] == 0.0f);

  /* No valid token anywhere: divisors max(count, 1), loss 0, no NaN. */
  float none[7] = {0}, lp[7] = {-1, -1, -1, -1, -1, -1, -1}, adv[7] = {1, 1, 1, 1, 1, 1, 1}, dlp[7];
  t.b.mask = none;
  algo_counts_local(&t.b, &c);
  CHECK(c.n_tok == 0.0 && c.n_seq_valid == 0.0);
  for (int mode = AGG_TOKEN_MEAN; mode <= AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL; mode++) {
    struct algo_params p = params(PL_PPO_CLIP, mode);
    struct algo_tokens in = {.lp = lp, .lp_old = lp, .lp_ref = lp, .adv = adv};
    struct algo_stats st = {0};
    double loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, &st);
    CHECK(loss == 0.0);
    for (int i = 0; i < 7; i++) CHECK(dlp[i] == 0.0f);
  }
}

/* Splitting a batch into 2 micro-batches with the global counts gives the same loss
 * and gradient as one batch, for every aggregation mode and for GSPO (1e-7). */
static void test_micro_batches(void) {
  int len[4] = {3, 5, 2, 4};
  float mask[14] = {0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1};
  float lp[14], lp_old[14], lp_ref[14], adv[14], ent[14], dlp[14], dent[14], dlp2[14], dent2[14];
  for (int i = 0; i < 14; i++) {
    lp_old[i] = -0.1f * (float)(i % 5) - 0.3f;
    lp[i] = lp_old[i] + 0.05f * (float)((i * 7) % 9 - 4);
    lp_ref[i] = lp_old[i] + 0.03f * (float)((i * 5) % 7 - 3);
    adv[i] = (i < 8 ? 0.7f : -1.2f) * (float)((i % 3) + 1) / 2.0f;
    ent[i] = 0.1f * (float)(i % 4);
  }
  struct tb whole, m1, m2;
  tb_make(&whole, 4, len, mask, NULL, 0);
  tb_make(&m1, 2, len, mask, NULL, 0);
  tb_make(&m2, 2, len + 2, mask + 8, NULL, 0);
  struct algo_counts g, c1, c2;
  algo_counts_local(&whole.b, &g);
  algo_counts_local(&m1.b, &c1);
  algo_counts_local(&m2.b, &c2);
  CHECK(c1.n_tok + c2.n_tok == g.n_tok && c1.n_seq + c2.n_seq == g.n_seq);
  for (int pl = PL_PPO_CLIP; pl <= PL_GSPO; pl++)
    for (int mode = AGG_TOKEN_MEAN; mode <= AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL; mode++) {
      struct algo_params p = params(pl, mode);
      p.kl_coef = 0.1, p.entropy_coef = 0.01;
      struct algo_tokens in = {.lp = lp, .lp_old = lp_old, .lp_ref = lp_ref, .adv = adv,
                               .entropy = ent};
      struct algo_tokens in2 = {.lp = lp + 8, .lp_old = lp_old + 8, .lp_ref = lp_ref + 8,
                                .adv = adv + 8, .entropy = ent + 8};
      struct algo_stats s = {0}, s2 = {0};
      double one = algo_policy_loss(&p, &whole.b, &g, &in, dlp, dent, &s);
      double two = algo_policy_loss(&p, &m1.b, &g, &in, dlp2, dent2, &s2) +
                   algo_policy_loss(&p, &m2.b, &g, &in2, dlp2 + 8, dent2 + 8, &s2);
      CHECK_MSG(fabs(one - two) <= 1e-7, "pl %d agg %d: %.9g vs %.9g", pl, mode, one, two);
      CHECK_NEAR(s.loss, s2.loss, 1e-7);
      CHECK_NEAR(s.kl, s2.kl, 1e-7);
      for (int i = 0; i < 14; i++) {
        CHECK_NEAR(dlp[i], dlp2[i], 1e-7);
        CHECK_NEAR(dent[i], dent2[i], 1e-7);
      }
    }
}

/* ---- KL and entropy -------------------------------------------------------------------- */

static void test_kl(void) {
  double dk;
  /* x = 0.5: k1 = 0.5 (d 1), k2 = 0.125 (d 0.5), k3 = e^-0.5 + 0.5 - 1 = 0.10653066
   * (d 1 - e^-0.5 = 0.39346934), low_var_kl = k3 inside the clamps */
  CHECK_NEAR(algo_kl(KL_K1, 0.5, &dk), 0.5, 1e-12);
  CHECK_NEAR(dk, 1.0, 1e-12);
  CHECK_NEAR(algo_kl(KL_K2, 0.5, &dk), 0.125, 1e-12);
  CHECK_NEAR(dk, 0.5, 1e-12);
  CHECK_NEAR(algo_kl(KL_K3, 0.5, &dk), 0.10653065971263342, 1e-12);
  CHECK_NEAR(dk, 0.3934693402873666, 1e-12);
  CHECK_NEAR(algo_kl(KL_LOW_VAR, 0.5, &dk), 0.10653065971263342, 1e-12);
  CHECK_NEAR(dk, 0.3934693402873666, 1e-12);
  /* x = -0.3: k3 = e^0.3 - 0.3 - 1 = 0.04985881, d = 1 - e^0.3 = -0.34985881 */
  CHECK_NEAR(algo_kl(KL_K3, -0.3, &dk), 0.04985880757600314, 1e-12);
  CHECK_NEAR(dk, -0.3498588075760032, 1e-12);
  /* x = -25: low_var_kl clamps -x to 20, e^20 - 21 > 10 -> 10, no gradient */
  CHECK_NEAR(algo_kl(KL_LOW_VAR, -25.0, &dk), 10.0, 1e-12);
  CHECK(dk == 0.0);
  CHECK(algo_kl(KL_K3, -25.0, &dk) > 7e10);  /* k3 unclamped: e^25 - 26 */
  /* k3 >= 0 everywhere */
  for (double x = -5.0; x <= 5.0; x += 0.25) CHECK(algo_kl(KL_K3, x, &dk) >= 0.0);

  /* kl_in = loss with A = 0: loss = coef * k3, d lp = coef * (1 - e^-x), token-mean over 2;
   * entropy bonus 0.01 with H = 2: loss -= 0.01 * 2 per token, dent = -0.01/2 */
  int len[1] = {2};
  float mask[2] = {1, 1}, lp[2] = {-1.0f, -2.0f}, ref[2] = {-1.5f, -2.0f}, adv[2] = {0, 0};
  float ent[2] = {2.0f, 2.0f}, dlp[2], dent[2];
  struct tb t;
  tb_make(&t, 1, len, mask, NULL, 0);
  struct algo_params p = params(PL_PPO_CLIP, AGG_TOKEN_MEAN);
  p.kl_coef = 0.1, p.entropy_coef = 0.01;
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp, .lp_ref = ref, .adv = adv, .entropy = ent};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, dent, &st);
  /* (0.1*0.10653066 + 0.1*0 - 0.02 - 0.02)/2 */
  CHECK_NEAR(loss, (0.010653065971263342 - 0.04) / 2.0, 1e-7);
  CHECK_NEAR(dlp[0], 0.1 * 0.3934693402873666 / 2.0, 1e-7);
  CHECK_NEAR(dlp[1], 0.0, 1e-7);
  CHECK_NEAR(dent[0], -0.005, 1e-9);
  CHECK_NEAR(st.kl, 0.10653066 / 2.0, 1e-7);
  CHECK_NEAR(st.entropy, 2.0, 1e-7);
  /* kl_in = reward: no loss term; the per-token penalty goes into the rewards */
  p.kl_in = KL_IN_REWARD;
  memset(&st, 0, sizeof st);
  loss = algo_policy_loss(&p, &t.b, &c, &in, dlp, NULL, &st);
  CHECK_NEAR(loss, -0.02, 1e-7);
  CHECK(dlp[0] == 0.0f);
  float r_tok[2] = {0.0f, 1.0f};
  algo_kl_reward_tok(&t.b, lp, ref, 0.1, r_tok);  /* r -= 0.1 * (lp_old - ref) = {-0.05, 1} */
  CHECK_NEAR(r_tok[0], -0.05, 1e-7);
  CHECK_NEAR(r_tok[1], 1.0, 1e-7);
  double r_seq[1] = {1.0};
  algo_kl_reward_seq(&t.b, lp, ref, 0.1, r_seq);  /* 1 - 0.1 * (0.5 + 0) */
  CHECK_NEAR(r_seq[0], 0.95, 1e-7);
}

/* ---- value loss, DPO ------------------------------------------------------------------- */

static void test_value_loss(void) {
  int len[1] = {3};
  float mask[3] = {1, 1, 1}, v[3] = {1.0f, 0.2f, 1.0f}, v_old[3] = {0.8f, 0.8f, 0.5f};
  float ret[3] = {0.5f, 1.0f, 1.2f}, dv[3];
  struct tb t;
  tb_make(&t, 1, len, mask, NULL, 0);
  struct algo_params p = params(PL_PPO_CLIP, AGG_TOKEN_MEAN);
  p.vf_coef = 0.5, p.value_clip = 0.1;
  struct algo_counts c;
  algo_counts_local(&t.b, &c);
  struct algo_stats st = {0};
  /* t0: vc = 0.9: max(0.25, 0.16) -> 0.5*0.25 = 0.125, d = v - R = 0.5
   * t1: vc = 0.7: max(0.64, 0.09) -> 0.32, d = -0.8
   * t2 (clip 0.1 around 0.5): vc = 0.6: max(0.04, 0.36) -> 0.18, clipped, d = 0
   * loss = 0.5 * (0.125 + 0.32 + 0.18)/3 */
  double loss = algo_value_loss(&p, &t.b, &c, v, v_old, ret, dv, &st);
  CHECK_NEAR(loss, 0.5 * 0.625 / 3.0, 1e-6);
  CHECK_NEAR(dv[0], 0.5 * 0.5 / 3.0, 1e-6);
  CHECK_NEAR(dv[1], 0.5 * -0.8 / 3.0, 1e-6);
  CHECK(dv[2] == 0.0f);
  CHECK(st.n_vf_clip == 1.0);
  p.value_clip = 0.0;  /* off: plain 0.5 (v - R)^2 */
  loss = algo_value_loss(&p, &t.b, &c, v, v_old, ret, dv, &st);
  CHECK_NEAR(loss, 0.5 * (0.125 + 0.32 + 0.02) / 3.0, 1e-6);
  CHECK_NEAR(dv[2], 0.5 * -0.2 / 3.0, 1e-6);
}

static void test_dpo(void) {
  /* Delta_w = -5 - (-6) = 1, Delta_l = -7 - (-6.5) = -0.5, beta 0.1: z = 0.15,
   * loss = log(1 + e^-0.15) = 0.62095705, dz = -sigmoid(-0.15) = -0.46257015,
   * d_w = 0.1 * dz = -0.046257015 */
  const struct algo_dpo_pair pair = {.logp_w = -5, .logp_l = -7, .ref_w = -6, .ref_l = -6.5,
                                     .n_w = 2, .n_l = 4};
  const struct algo_dpo_pair q[2] = {pair, pair};
  double dw[2], dl[2];
  struct algo_dpo_stats st = {0};
  double loss = algo_dpo_loss(DPO_SIGMOID, 0.1, q, 1, 1.0, dw, dl, &st);
  CHECK_NEAR(loss, 0.6209570477895321, 1e-12);
  CHECK_NEAR(dw[0], -0.04625701546562505, 1e-12);
  CHECK_NEAR(dl[0], 0.04625701546562505, 1e-12);
  CHECK_NEAR(st.margin_sum, 0.15, 1e-12);
  CHECK(st.n_correct == 1.0 && st.n_pairs == 1.0);
  /* two equal pairs, mean: same loss, half the gradient each */
  memset(&st, 0, sizeof st);
  loss = algo_dpo_loss(DPO_SIGMOID, 0.1, q, 2, 2.0, dw, dl, &st);
  CHECK_NEAR(loss, 0.6209570477895321, 1e-12);
  CHECK_NEAR(dw[1], -0.04625701546562505 / 2.0, 1e-12);
  /* z = -1000: -log sigmoid(-1000) = 1000 without overflow, d_w = -0.1 */
  const struct algo_dpo_pair far = {.logp_w = -5000, .logp_l = 5000, .ref_w = 0, .ref_l = 0,
                                    .n_w = 1, .n_l = 1};
  loss = algo_dpo_loss(DPO_SIGMOID, 0.1, &far, 1, 1.0, dw, dl, &st);
  CHECK_NEAR(loss, 1000.0, 1e-9);
  CHECK_NEAR(dw[0], -0.1, 1e-12);
  /* IPO, n_w = 2, n_l = 4: h = 1/2 - (-0.5)/4 = 0.625; e = h - 1/(2*0.1) = -4.375;
   * loss = 19.140625; d_w = 2e/2 = -4.375; d_l = -2e/4 = 2.1875 */
  loss = algo_dpo_loss(DPO_IPO, 0.1, q, 1, 1.0, dw, dl, &st);
  CHECK_NEAR(loss, 19.140625, 1e-12);
  CHECK_NEAR(dw[0], -4.375, 1e-12);
  CHECK_NEAR(dl[0], 2.1875, 1e-12);
}

/* ---- TIS, DAPO, pass@k, sanitising, presets ----------------------------------------------- */

static void test_tis(void) {
  int len[2] = {3, 2};
  float mask[5] = {1, 1, 1, 1, 1}, lp_old[5] = {0, 0, 0, 0, 0}, w[5];
  /* log w = lp_old - lp_roll = {0, ln 3, ln 0.5 | ln 1.5, 25} */
  float lp_roll[5] = {0, (float)-log(3.0), (float)-log(0.5), (float)-log(1.5), -25.0f};
  struct tb t;
  tb_make(&t, 2, len, mask, NULL, 0);
  /* token truncate at 2: {1, 2, 0.5, 1.5, 2}, 2 truncated (ln 3, e^20) */
  CHECK(algo_tis_weights(&t.b, TIS_TOKEN_TRUNCATE, lp_old, lp_roll, 2.0, 0.0, w) == 2);
  CHECK_NEAR(w[0], 1.0, 1e-6);
  CHECK_NEAR(w[1], 2.0, 1e-6);
  CHECK_NEAR(w[2], 0.5, 1e-6);
  CHECK_NEAR(w[3], 1.5, 1e-6);
  /* token mask [0.6, 2]: {1, 0, 0, 1.5, 0} */
  CHECK(algo_tis_weights(&t.b, TIS_TOKEN_MASK, lp_old, lp_roll, 2.0, 0.6, w) == 3);
  CHECK(w[1] == 0.0f && w[2] == 0.0f && w[4] == 0.0f);
  CHECK_NEAR(w[3], 1.5, 1e-6);
  /* seq truncate: seq 0 log w = ln 3 + ln 0.5 = ln 1.5 -> 1.5; seq 1: ln 1.5 + 25 -> e^20 -> 2 */
  CHECK(algo_tis_weights(&t.b, TIS_SEQ_TRUNCATE, lp_old, lp_roll, 2.0, 0.0, w) == 2);
  CHECK_NEAR(w[0], 1.5, 1e-6);
  CHECK_NEAR(w[2], 1.5, 1e-6);
  CHECK_NEAR(w[4], 2.0, 1e-6);
  /* seq mask: seq 1 is dropped entirely */
  algo_tis_weights(&t.b, TIS_SEQ_MASK, lp_old, lp_roll, 2.0, 0.0, w);
  CHECK(w[3] == 0.0f && w[4] == 0.0f);
  CHECK_NEAR(w[1], 1.5, 1e-6);

  /* the weight multiplies loss and gradient: A = 1 on-policy token, w = 0.5 -> d lp = -0.5 */
  int l1[1] = {1};
  float m1[1] = {1}, lp[1] = {-1}, a[1] = {1}, wi[1] = {0.5f}, dlp[1];
  struct tb t1;
  tb_make(&t1, 1, l1, m1, NULL, 0);
  struct algo_params p = params(PL_PPO_CLIP, AGG_TOKEN_MEAN);
  struct algo_counts c;
  algo_counts_local(&t1.b, &c);
  struct algo_tokens in = {.lp = lp, .lp_old = lp, .adv = a, .w_is = wi};
  struct algo_stats st = {0};
  CHECK_NEAR(algo_policy_loss(&p, &t1.b, &c, &in, dlp, NULL, &st), -0.5, 1e-7);
  CHECK_NEAR(dlp[0], -0.5, 1e-7);
}

static void test_dapo_helpers(void) {
  /* Lmax 20, Lcache 5: free up to 15; 16 -> (15-16)/5 = -0.2; 20 -> -1; 21 -> -1 */
  CHECK(algo_overlong_reward(15, 20, 5, 1.0) == 0.0);
  CHECK_NEAR(algo_overlong_reward(16, 20, 5, 1.0), -0.2, 1e-12);
  CHECK_NEAR(algo_overlong_reward(20, 20, 5, 1.0), -1.0, 1e-12);
  CHECK_NEAR(algo_overlong_reward(21, 20, 5, 1.0), -1.0, 1e-12);
  CHECK_NEAR(algo_overlong_reward(18, 20, 5, 0.5), -0.3, 1e-12);  /* 0.5 * (15-18)/5 */
  CHECK(algo_overlong_reward(21, 20, 0, 1.0) == 0.0);             /* buffer 0 = off */
  double same[3] = {1, 1, 1}, mixed[3] = {1, 0, 1};
  CHECK(algo_group_keep(same, 3) == 0);
  CHECK(algo_group_keep(mixed, 3) == 1);
  CHECK(algo_group_keep(mixed, 1) == 0);
  /* over a batch: groups {1,1}, {1,0}, {3} (G = 1), {0.7 x 2}, ids not contiguous */
  int len[7] = {1, 1, 1, 1, 1, 1, 1}, grp[7] = {0, 1, 0, 1, 2, 3, 3};
  float mask[7] = {1, 1, 1, 1, 1, 1, 1};
  double r[7] = {1, 1, 1, 0, 3, 0.7, 0.7};
  unsigned char keep[4];
  struct tb t;
  tb_make(&t, 7, len, mask, grp, 4);
  CHECK(algo_groups_keep(&t.b, r, keep) == 1);
  CHECK(keep[0] == 0 && keep[1] == 1 && keep[2] == 0 && keep[3] == 0);
}

static void test_pass_at_k(void) {
  CHECK_NEAR(algo_pass_at_k(4, 1, 1), 0.25, 1e-15);              /* 1 - 3/4 */
  CHECK_NEAR(algo_pass_at_k(4, 2, 2), 5.0 / 6.0, 1e-15);         /* 1 - (1/3)(1/2) */
  CHECK_NEAR(algo_pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-15);  /* 1 - C(7,5)/C(10,5) */
  CHECK(algo_pass_at_k(5, 0, 2) == 0.0);
  CHECK(algo_pass_at_k(4, 3, 2) == 1.0);                         /* n - c < k */
  CHECK_NEAR(algo_pass_at_k(8, 3, 1), 3.0 / 8.0, 1e-15);         /* pass@1 = c/n */
}

static void test_sanitize(void) {
  double r[5] = {1.0, NAN, INFINITY, -INFINITY, 2.0};
  CHECK(algo_sanitize_rewards(r, 5) == 3);
  CHECK(r[0] == 1.0 && r[1] == 0.0 && r[2] == 0.0 && r[3] == 0.0 && r[4] == 2.0);
  float lp[4] = {-INFINITY, -30.0f, -5.0f, NAN};
  CHECK(algo_clamp_logprobs(lp, 4, -20.0f) == 3);
  CHECK(lp[0] == -20.0f && lp[1] == -20.0f && lp[2] == -5.0f && lp[3] == -20.0f);
}

/* algo_params_from_config copies the loss functions' knobs from the deck. */
static void test_params_from_config(void) {
  struct config cfg;
  config_defaults(&cfg);
  cfg.rollout.max_new_tokens = 16;
  cfg.algo.clip_high = 0.3;
  cfg.algo.policy_loss = PL_GSPO;
  cfg.algo.vf_coef = 0.25;
  struct algo_params p;
  algo_params_from_config(&cfg, &p);
  CHECK(p.l_max == 16 && p.clip_high == 0.3 && p.policy_loss == PL_GSPO && p.vf_coef == 0.25);
  CHECK(p.loss_agg == cfg.algo.loss_agg && p.kl_in == cfg.algo.kl_in && p.clip_low == cfg.algo.clip_low);
}

int main(void) {
  test_adv_group();
  test_adv_all_equal();
  test_whiten_and_reinforce_pp();
  test_gae();
  test_ppo_clip();
  test_cispo();
  test_gspo();
  test_aggregation();
  test_micro_batches();
  test_kl();
  test_value_loss();
  test_dpo();
  test_tis();
  test_dapo_helpers();
  test_pass_at_k();
  test_sanitize();
  test_params_from_config();
  return TEST_RESULT("test_algo");
}
