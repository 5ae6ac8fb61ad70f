/* run/test_pref_run.c: checks a preference run's metrics JSONL ([algo] name = dpo | ipo | rm;
 * tests/run/tests.cmake).
 *   test_pref_run METRICS.jsonl LOSS1 TOL MIN_RISE MIN_EVAL
 * - every training line (phase rl, no eval_pass@1) carries finite pref_loss, pref_chosen,
 *   pref_rejected, pref_margin, pref_acc, grad_norm, lr, and no rollout metric (reward_mean
 *   null);
 * - step 1's pref_loss is LOSS1 within TOL (policy = reference: log 2 for DPO, 1/(4 beta^2)
 *   for IPO; a negative LOSS1 skips it: the reward model starts anywhere); a negative TOL
 *   asks for the opposite, more than |TOL| away (a reference that is not the policy);
 * - mean pref_acc of the last 10 steps - of the first 5 >= MIN_RISE;
 * - the last pref_eval_acc (held-out pairs) >= MIN_EVAL.
 * Prints what it measured.
 *   test_pref_run --rise METRICS.jsonl FIELD MIN_RISE
 * the RLHF check (inputs/rm_train.ini then inputs/rlhf_ppo.ini): over the RL training lines,
 * mean FIELD of the last 10 - of the first 10 >= MIN_RISE; prints the same for
 * reward_parts.correct, resp_len_mean and kl beside it (the reward-hacking signature).
 *   test_pref_run --compare A.jsonl B.jsonl RTOL
 * two runs of one deck on two devices (tests/run/test_gpu_pref.sh): the same number of RL
 * lines, pref_loss, pref_chosen, pref_rejected, pref_margin, grad_norm within RTOL relative
 * (+ 1e-6 absolute), pref_acc and pref_eval_acc equal. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *const must[] = {"pref_loss", "pref_chosen", "pref_rejected", "pref_margin", "pref_acc",
                                   "grad_norm", "lr"};

#define MAX_LINES 8192

/* The RL training lines (phase rl, not an eval line) of path, parsed, at most MAX_LINES;
 * -1 when the file cannot be read. The caller frees them with free_lines. */
static int rl_lines(const char *path, cJSON **out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0 && n < MAX_LINES) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
    if (o && cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") && !cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1"))
      out[n++] = o;
    else
      cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  return n;
}

static void free_lines(cJSON **o, int n) {
  for (int i = 0; i < n; i++) cJSON_Delete(o[i]);
}

/* Mean of field over lines [i0, i0 + k). */
static double mean_of(cJSON *const *o, int i0, int k, const char *field) {
  double sum = 0;
  for (int i = i0; i < i0 + k; i++) sum += num(o[i], field) / k;
  return sum;
}

static cJSON *g_lines[MAX_LINES];

static int check_rise(const char *path, const char *field, double min_rise) {
  const char *shown[4] = {field, "reward_parts.correct", "resp_len_mean", "kl"};
  int n = rl_lines(path, g_lines);
  CHECK_MSG(n >= 20, "%s: %d RL lines, fewer than 20", path, n);
  if (n < 20) return TEST_RESULT("test_pref_run");
  double a[4], b[4];
  for (int i = 0; i < 4; i++) {
    a[i] = mean_of(g_lines, 0, 10, shown[i]);
    b[i] = mean_of(g_lines, n - 10, 10, shown[i]);
    printf("test_pref_run: %-22s first 10 steps %.3f, last 10 %.3f (%+.3f)\n", shown[i], a[i], b[i], b[i] - a[i]);
    CHECK(isfinite(a[i]) && isfinite(b[i]));
  }
  CHECK(b[0] - a[0] >= min_rise);
  free_lines(g_lines, n);
  return TEST_RESULT("test_pref_run");
}

static int compare(const char *pa, const char *pb, double rtol) {
  static cJSON *lb[MAX_LINES];
  static const char *const close_[] = {"pref_loss", "pref_chosen", "pref_rejected", "pref_margin", "grad_norm"};
  int na = rl_lines(pa, g_lines), nb = rl_lines(pb, lb);
  CHECK_MSG(na > 0 && na == nb, "%s has %d RL lines, %s %d", pa, na, pb, nb);
  double worst = 0;
  for (int k = 0; k < na && k < nb; k++) {
    for (size_t i = 0; i < sizeof close_ / sizeof *close_; i++) {
      double x = num(g_lines[k], close_[i]), y = num(lb[k], close_[i]), e = fabs(x - y) / (fabs(x) + 1e-12);
      CHECK_MSG(fabs(x - y) <= rtol * fabs(x) + 1e-6, "step %d %s: %.9g vs %.9g", k + 1, close_[i], x, y);
      if (isfinite(e) && fabs(x) > 1e-6) worst = fmax(worst, e);
    }
    CHECK(num(g_lines[k], "pref_acc") == num(lb[k], "pref_acc"));
    double ea = num(g_lines[k], "pref_eval_acc"), eb = num(lb[k], "pref_eval_acc");
    CHECK(ea == eb || (isnan(ea) && isnan(eb)));
  }
  printf("test_pref_run: %d steps compared, worst relative difference %.2e (rtol %g)\n", na, worst, rtol);
  free_lines(g_lines, na);
  free_lines(lb, nb);
  return TEST_RESULT("test_pref_run");
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--rise")) return check_rise(argv[2], argv[3], atof(argv[4]));
  if (argc == 5 && !strcmp(argv[1], "--compare")) return compare(argv[2], argv[3], atof(argv[4]));
  if (argc != 6) {
    fprintf(stderr, "usage: test_pref_run METRICS.jsonl LOSS1 TOL MIN_RISE MIN_EVAL\n");
    return 2;
  }
  double loss1 = atof(argv[2]), tol = atof(argv[3]), rise = atof(argv[4]), min_eval = atof(argv[5]);
  int n = rl_lines(argv[1], g_lines);
  CHECK_MSG(n >= 15, "%s: %d RL lines, fewer than 15", argv[1], n);
  if (n < 15) return TEST_RESULT("test_pref_run");
  double eval = NAN;
  for (int k = 0; k < n; k++) {
    for (size_t i = 0; i < sizeof must / sizeof *must; i++)
      CHECK_MSG(isfinite(num(g_lines[k], must[i])), "step %d: %s is not a number", k + 1, must[i]);
    CHECK(!isfinite(num(g_lines[k], "reward_mean")));
    if (isfinite(num(g_lines[k], "pref_eval_acc"))) eval = num(g_lines[k], "pref_eval_acc");
  }
  double first_loss = num(g_lines[0], "pref_loss");
  double a0 = mean_of(g_lines, 0, 5, "pref_acc"), a1 = mean_of(g_lines, n - 10, 10, "pref_acc");
  free_lines(g_lines, n);
  printf("test_pref_run: %d steps, step 1 pref_loss %.9f, pref_acc first 5 %.3f -> last 10 %.3f (%+.3f), "
         "held-out pair accuracy %.3f\n", n, first_loss, a0, a1, a1 - a0, eval);
  if (loss1 >= 0 && tol >= 0) CHECK_NEAR(first_loss, loss1, tol);
  if (loss1 >= 0 && tol < 0) CHECK(fabs(first_loss - loss1) > -tol);
  CHECK(a1 - a0 >= rise);
  CHECK(eval >= min_eval);
  return TEST_RESULT("test_pref_run");
}
