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
 * reward_parts.correct, resp_len_mean and kl beside it (the reward-hacking signature). */
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

/* Mean of field over the first / last 10 RL training lines of path. */
static int first_last(const char *path, const char *field, double *first, double *last) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static double v[8192];
  int n = 0;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0 && n < 8192) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
    if (o && cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") && !cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1"))
      v[n++] = num(o, field);
    cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  if (n < 20) return -1;
  *first = *last = 0;
  for (int i = 0; i < 10; i++) *first += v[i] / 10, *last += v[n - 10 + i] / 10;
  return 0;
}

static int check_rise(const char *path, const char *field, double min_rise) {
  const char *shown[4] = {field, "reward_parts.correct", "resp_len_mean", "kl"};
  double a[4], b[4];
  for (int i = 0; i < 4; i++) {
    CHECK_MSG(first_last(path, shown[i], &a[i], &b[i]) == 0, "%s: fewer than 20 RL lines", path);
    printf("test_pref_run: %-22s first 10 steps %.3f, last 10 %.3f (%+.3f)\n", shown[i], a[i], b[i], b[i] - a[i]);
    CHECK(isfinite(a[i]) && isfinite(b[i]));
  }
  CHECK(b[0] - a[0] >= min_rise);
  return TEST_RESULT("test_pref_run");
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--rise")) return check_rise(argv[2], argv[3], atof(argv[4]));
  if (argc != 6) {
    fprintf(stderr, "usage: test_pref_run METRICS.jsonl LOSS1 TOL MIN_RISE MIN_EVAL\n");
    return 2;
  }
  double loss1 = atof(argv[2]), tol = atof(argv[3]), rise = atof(argv[4]), min_eval = atof(argv[5]);
  FILE *f = fopen(argv[1], "r");
  CHECK(f != NULL);
  if (!f) return 1;
  double acc[4096], first_loss = NAN, eval = NAN;
  int n = 0;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0 && n < 4096) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
    int train = o && cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") &&
                !cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1");
    if (train) {
      for (size_t i = 0; i < sizeof must / sizeof *must; i++)
        CHECK_MSG(isfinite(num(o, must[i])), "step %d: %s is not a number", (int)num(o, "step"), must[i]);
      CHECK(!isfinite(num(o, "reward_mean")));
      if (n == 0) first_loss = num(o, "pref_loss");
      acc[n++] = num(o, "pref_acc");
      if (isfinite(num(o, "pref_eval_acc"))) eval = num(o, "pref_eval_acc");
    }
    cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  CHECK(n >= 15);
  double a0 = 0, a1 = 0;
  for (int i = 0; i < 5 && n >= 15; i++) a0 += acc[i] / 5;
  for (int i = n - 10; i < n && n >= 15; i++) a1 += acc[i] / 10;
  printf("test_pref_run: %d steps, step 1 pref_loss %.9f, pref_acc first 5 %.3f -> last 10 %.3f (%+.3f), "
         "held-out pair accuracy %.3f\n", n, first_loss, a0, a1, a1 - a0, eval);
  if (loss1 >= 0 && tol >= 0) CHECK_NEAR(first_loss, loss1, tol);
  if (loss1 >= 0 && tol < 0) CHECK(fabs(first_loss - loss1) > -tol);
  CHECK(a1 - a0 >= rise);
  CHECK(eval >= min_eval);
  return TEST_RESULT("test_pref_run");
}
