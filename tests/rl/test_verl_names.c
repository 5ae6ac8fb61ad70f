/* rl/test_verl_names.c: the veRL behaviours rlpt offers under their own names, against
 * veRL's formulas transcribed in torch (tests/ref/verl_ref.py -> golden_verl.h5):
 *   kl_estimator = low_var_kl   veRL's kl_penalty "low_var_kl" / "k3" (clamped to [-10, 10])
 *   loss_agg = seq-mean-token-sum-norm-verl   veRL's agg_loss "seq-mean-token-sum-norm"
 * on a padded batch (W = 16 = l_max) that hits both clamps, with PPO clip, dual clip and
 * the entropy bonus. Tolerances: 1e-7 absolute on the loss terms and the fp32 per-token
 * gradients, 1e-12 on the estimator alone (double). Also the stated factor between rlpt's
 * seq-mean-token-sum-norm and veRL's: rlpt = veRL * W / (N_seq * l_max). */
#include <math.h>
#include <stdlib.h>

#include "algo_h5.h"
#include "rl/algo.h"
#include "testutil.h"

#define TOL 1e-7

struct padded {
  hid_t f;
  long n_seq, width, n_tok;
  int *off;
  float *mask, *lp, *lp_old, *lp_ref, *adv, *ent;
  struct algo_batch b;
};

static float *read_f32(struct padded *p, const char *name) {
  long n;
  float *x = golden_read(p->f, name, H5T_NATIVE_FLOAT, &n);
  CHECK(n == p->n_tok);
  return x;
}

/* The (n_seq, W) matrices packed as rlpt's batch: sequence i = row i, W tokens each. */
static void padded_load(struct padded *p) {
  p->width = (long)golden_attr(p->f, "/", "width");
  p->mask = golden_read(p->f, "mask", H5T_NATIVE_FLOAT, &p->n_tok);
  p->n_seq = p->n_tok / p->width;
  p->lp = read_f32(p, "lp"), p->lp_old = read_f32(p, "lp_old"), p->lp_ref = read_f32(p, "lp_ref");
  p->adv = read_f32(p, "adv"), p->ent = read_f32(p, "entropy");
  p->off = malloc((size_t)(p->n_seq + 1) * sizeof *p->off);
  for (long i = 0; i <= p->n_seq; i++) p->off[i] = (int)(i * p->width);
  p->b = (struct algo_batch){.n_seq = (int)p->n_seq, .off = p->off, .mask = p->mask};
}

static void padded_free(struct padded *p) {
  free(p->off), free(p->mask), free(p->lp), free(p->lp_old), free(p->lp_ref), free(p->adv);
  free(p->ent);
}

static void check_tokens(const char *what, const float *got, const double *want, long n) {
  double err = 0.0;
  for (long t = 0; t < n; t++) err = fmax(err, fabs(got[t] - want[t]));
  CHECK_MSG(err <= TOL, "%s: max |C - torch| = %.3g", what, err);
}

static struct algo_params verl_params(const struct padded *p, int agg) {
  return (struct algo_params){.policy_loss = PL_PPO_CLIP, .loss_agg = agg,
                              .kl_estimator = KL_LOW_VAR, .kl_in = KL_IN_LOSS,
                              .clip_low = golden_attr(p->f, "/", "clip_low"),
                              .clip_high = golden_attr(p->f, "/", "clip_high"),
                              .dual_clip = golden_attr(p->f, "/", "dual_clip"),
                              .kl_coef = golden_attr(p->f, "/", "kl_coef"),
                              .entropy_coef = golden_attr(p->f, "/", "entropy_coef"),
                              .l_max = p->width};
}

/* The whole loss with veRL's names, and rlpt's seq-mean-token-sum-norm at the stated factor. */
static void test_loss(struct padded *p) {
  float *dlp = malloc((size_t)p->n_tok * sizeof *dlp), *dent = malloc((size_t)p->n_tok * sizeof *dent);
  struct algo_counts c;
  algo_counts_local(&p->b, &c);
  struct algo_tokens in = {.lp = p->lp, .lp_old = p->lp_old, .lp_ref = p->lp_ref, .adv = p->adv,
                           .entropy = p->ent};
  struct algo_params prm = verl_params(p, AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL);
  struct algo_stats st = {0};
  double loss = algo_policy_loss(&prm, &p->b, &c, &in, dlp, dent, &st);
  CHECK_NEAR(loss, golden_attr(p->f, "/", "loss"), TOL);
  CHECK_NEAR(st.pg_loss, golden_attr(p->f, "/", "pg_loss"), TOL);
  CHECK_NEAR(st.kl, golden_attr(p->f, "/", "kl_loss"), TOL);
  double *want = golden_read(p->f, "dlp", H5T_NATIVE_DOUBLE, NULL);
  check_tokens("veRL d loss/d lp", dlp, want, p->n_tok);
  free(want);
  want = golden_read(p->f, "dent", H5T_NATIVE_DOUBLE, NULL);
  check_tokens("veRL d loss/d entropy", dent, want, p->n_tok);
  free(want);

  /* rlpt's own seq-mean-token-sum-norm = veRL's * W / (N_seq * l_max), here 1 / N_seq */
  prm.loss_agg = AGG_SEQ_MEAN_TOKEN_SUM_NORM;
  struct algo_stats st2 = {0};
  double rlpt = algo_policy_loss(&prm, &p->b, &c, &in, dlp, dent, &st2);
  CHECK_NEAR(rlpt, golden_attr(p->f, "/", "loss") / (double)p->n_seq, TOL);
  free(dlp), free(dent);
}

/* low_var_kl alone on a grid through both clamps; rlpt's k3 agrees only inside them. */
static void test_estimator(struct padded *p) {
  long n;
  double *x = golden_read(p->f, "grid_x", H5T_NATIVE_DOUBLE, &n);
  double *k = golden_read(p->f, "grid_kl", H5T_NATIVE_DOUBLE, NULL);
  double *dk = golden_read(p->f, "grid_dkl", H5T_NATIVE_DOUBLE, NULL);
  int differs = 0;
  for (long i = 0; i < n; i++) {
    double d, v = algo_kl(KL_LOW_VAR, x[i], &d), d3;
    CHECK_MSG(fabs(v - k[i]) <= 1e-12 * fmax(1.0, fabs(k[i])), "x %g: %.17g vs %.17g", x[i], v, k[i]);
    CHECK_MSG(fabs(d - dk[i]) <= 1e-12 * fmax(1.0, fabs(dk[i])), "x %g: d %.17g vs %.17g", x[i], d, dk[i]);
    double v3 = algo_kl(KL_K3, x[i], &d3);
    if (fabs(v3 - k[i]) > 1e-9) differs++;
    else CHECK_NEAR(d3, dk[i], 1e-9);
  }
  CHECK_MSG(differs >= 4, "k3 should differ from veRL's on the clamped points (%d)", differs);
  free(x), free(k), free(dk);
}

int main(void) {
  struct padded p = {0};
  p.f = golden_open("golden_verl.h5");
  CHECK(p.f >= 0);
  if (p.f < 0) return TEST_RESULT("test_verl_names");
  padded_load(&p);
  test_loss(&p);
  test_estimator(&p);
  padded_free(&p);
  H5Fclose(p.f);
  return TEST_RESULT("test_verl_names");
}
