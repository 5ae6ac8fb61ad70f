/* rl/test_algo_golden.c: GRPO (token-mean, k3 KL in the loss, clip 0.2/0.28, dual clip,
 * entropy bonus), GSPO and DPO/IPO losses and their gradients against torch
 * autograd in float64 (tests/ref/algo_ref.py -> golden_algo.h5). Tolerance: 1e-6
 * absolute on losses, advantages and per-token gradients (the C side takes fp32
 * inputs, which the reference rounded to first, and returns fp32 gradients). */
#include <math.h>
#include <stdlib.h>

#include "algo_h5.h"
#include "rl/algo.h"
#include "testutil.h"

#define TOL 1e-6

struct golden {
  hid_t f;
  long n_seq, n_tok;
  int *off, *group;
  float *mask, *lp, *lp_old, *lp_ref, *ent, *gspo_lp;
  double *rewards, *adv;
  struct algo_batch b;
};

static void golden_load(struct golden *g) {
  long n_off;
  g->off = golden_read(g->f, "off", H5T_NATIVE_INT, &n_off);
  g->n_seq = n_off - 1;
  g->group = golden_read(g->f, "group", H5T_NATIVE_INT, NULL);
  g->mask = golden_read(g->f, "mask", H5T_NATIVE_FLOAT, &g->n_tok);
  g->lp = golden_read(g->f, "lp", H5T_NATIVE_FLOAT, NULL);
  g->lp_old = golden_read(g->f, "lp_old", H5T_NATIVE_FLOAT, NULL);
  g->lp_ref = golden_read(g->f, "lp_ref", H5T_NATIVE_FLOAT, NULL);
  g->ent = golden_read(g->f, "entropy", H5T_NATIVE_FLOAT, NULL);
  g->gspo_lp = golden_read(g->f, "gspo_lp", H5T_NATIVE_FLOAT, NULL);
  g->rewards = golden_read(g->f, "rewards", H5T_NATIVE_DOUBLE, NULL);
  g->adv = golden_read(g->f, "adv", H5T_NATIVE_DOUBLE, NULL);
  g->b = (struct algo_batch){.n_seq = (int)g->n_seq, .off = g->off, .mask = g->mask,
                             .group = g->group, .n_group = (int)golden_attr(g->f, "/", "n_group")};
  CHECK(g->off[g->n_seq] == g->n_tok);
}

static void golden_free(struct golden *g) {
  free(g->off), free(g->group), free(g->mask), free(g->lp), free(g->lp_old), free(g->lp_ref);
  free(g->ent), free(g->gspo_lp), free(g->rewards), free(g->adv);
}

static void check_tokens(const char *what, const float *got, const double *want, long n) {
  double err = 0.0;
  for (long t = 0; t < n; t++) err = fmax(err, fabs(got[t] - want[t]));
  CHECK_MSG(err <= TOL, "%s: max |C - torch| = %.3g", what, err);
}

/* GRPO advantages, then the full GRPO loss; returns the fp32 per-token advantages. */
static float *test_grpo(struct golden *g) {
  double *a = malloc((size_t)g->n_seq * sizeof *a);
  float *adv = malloc((size_t)g->n_tok * sizeof *adv), *dlp = malloc((size_t)g->n_tok * sizeof *dlp);
  float *dent = malloc((size_t)g->n_tok * sizeof *dent);
  CHECK(algo_adv_outcome(&g->b, g->rewards, ADV_GRPO, STD_UNBIASED,
                         golden_attr(g->f, "/", "adv_eps"), a) == 0);
  for (long i = 0; i < g->n_seq; i++) CHECK_NEAR(a[i], g->adv[i], 1e-12);
  /* the reference broadcasts to every token of the sequence, masked or not */
  for (long i = 0; i < g->n_seq; i++)
    for (int t = g->off[i]; t < g->off[i + 1]; t++) adv[t] = (float)a[i];

  struct algo_params p = {.policy_loss = PL_PPO_CLIP, .loss_agg = AGG_TOKEN_MEAN,
                          .kl_estimator = KL_K3, .kl_in = KL_IN_LOSS,
                          .clip_low = golden_attr(g->f, "/", "clip_low"),
                          .clip_high = golden_attr(g->f, "/", "clip_high"),
                          .dual_clip = golden_attr(g->f, "/", "dual_clip"),
                          .kl_coef = golden_attr(g->f, "/", "kl_coef"),
                          .entropy_coef = golden_attr(g->f, "/", "entropy_coef"), .l_max = 16};
  struct algo_counts c;
  algo_counts_local(&g->b, &c);
  struct algo_tokens in = {.lp = g->lp, .lp_old = g->lp_old, .lp_ref = g->lp_ref, .adv = adv,
                           .entropy = g->ent};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &g->b, &c, &in, dlp, dent, &st);
  CHECK_NEAR(loss, golden_attr(g->f, "/", "grpo_loss"), TOL);
  CHECK_NEAR(st.pg_loss, golden_attr(g->f, "/", "grpo_pg_loss"), TOL);
  CHECK(st.n_clip_low == golden_attr(g->f, "/", "grpo_clip_low"));
  CHECK(st.n_clip_high == golden_attr(g->f, "/", "grpo_clip_high"));
  double *want = golden_read(g->f, "grpo_dlp", H5T_NATIVE_DOUBLE, NULL);
  check_tokens("grpo d loss/d lp", dlp, want, g->n_tok);
  free(want);
  want = golden_read(g->f, "grpo_dent", H5T_NATIVE_DOUBLE, NULL);
  check_tokens("grpo d loss/d entropy", dent, want, g->n_tok);
  free(want), free(a), free(dlp), free(dent);
  return adv;
}

static void test_gspo(struct golden *g, const float *adv) {
  float *dlp = malloc((size_t)g->n_tok * sizeof *dlp);
  struct algo_params p = {.policy_loss = PL_GSPO, .loss_agg = AGG_SEQ_MEAN_TOKEN_MEAN,
                          .kl_estimator = KL_K3, .kl_in = KL_IN_LOSS,
                          .clip_low = golden_attr(g->f, "/", "gspo_clip_low"),
                          .clip_high = golden_attr(g->f, "/", "gspo_clip_high"), .l_max = 16};
  struct algo_counts c;
  algo_counts_local(&g->b, &c);
  struct algo_tokens in = {.lp = g->gspo_lp, .lp_old = g->lp_old, .adv = adv};
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&p, &g->b, &c, &in, dlp, NULL, &st);
  CHECK_NEAR(loss, golden_attr(g->f, "/", "gspo_loss"), TOL);
  double *want = golden_read(g->f, "gspo_dlp", H5T_NATIVE_DOUBLE, NULL);
  check_tokens("gspo d loss/d lp", dlp, want, g->n_tok);
  free(want), free(dlp);
}

/* DPO and IPO on pairs (0,1), (2,3), ...: sequence sums, pair loss, broadcast back. */
static void test_dpo(struct golden *g) {
  int n_pairs = (int)g->n_seq / 2;
  double *logp = malloc((size_t)g->n_seq * sizeof(double)), *ref = malloc((size_t)g->n_seq * sizeof(double));
  double *d_seq = malloc((size_t)g->n_seq * sizeof(double));
  double *dw = malloc((size_t)n_pairs * sizeof(double)), *dl = malloc((size_t)n_pairs * sizeof(double));
  struct algo_dpo_pair *q = malloc((size_t)n_pairs * sizeof *q);
  float *dlp = malloc((size_t)g->n_tok * sizeof *dlp);
  algo_seq_sum(&g->b, g->lp, logp);
  algo_seq_sum(&g->b, g->lp_ref, ref);
  for (int k = 0; k < n_pairs; k++)
    q[k] = (struct algo_dpo_pair){.logp_w = logp[2 * k], .logp_l = logp[2 * k + 1],
                                  .ref_w = ref[2 * k], .ref_l = ref[2 * k + 1],
                                  .n_w = algo_seq_len(&g->b, 2 * k),
                                  .n_l = algo_seq_len(&g->b, 2 * k + 1)};
  const char *names[2][3] = {{"dpo_loss", "dpo_dlp", "dpo d loss/d lp"},
                             {"ipo_loss", "ipo_dlp", "ipo d loss/d lp"}};
  for (int kind = DPO_SIGMOID; kind <= DPO_IPO; kind++) {
    struct algo_dpo_stats st = {0};
    double loss = algo_dpo_loss(kind, golden_attr(g->f, "/", "beta"), q, n_pairs, n_pairs, dw, dl, &st);
    CHECK_NEAR(loss, golden_attr(g->f, "/", names[kind][0]), kind == DPO_IPO ? 1e-5 : TOL);
    if (kind == DPO_SIGMOID)
      CHECK_NEAR(st.n_correct / st.n_pairs, golden_attr(g->f, "/", "dpo_acc"), 1e-12);
    for (int k = 0; k < n_pairs; k++) d_seq[2 * k] = dw[k], d_seq[2 * k + 1] = dl[k];
    algo_broadcast_seq(&g->b, d_seq, dlp);
    double *want = golden_read(g->f, names[kind][1], H5T_NATIVE_DOUBLE, NULL);
    check_tokens(names[kind][2], dlp, want, g->n_tok);
    free(want);
  }
  free(logp), free(ref), free(d_seq), free(dw), free(dl), free(q), free(dlp);
}

int main(void) {
  struct golden g = {0};
  g.f = golden_open("golden_algo.h5");
  CHECK(g.f >= 0);
  if (g.f < 0) return TEST_RESULT("test_algo_golden");
  golden_load(&g);
  float *adv = test_grpo(&g);
  test_gspo(&g, adv);
  test_dpo(&g);
  free(adv);
  golden_free(&g);
  H5Fclose(g.f);
  return TEST_RESULT("test_algo_golden");
}
