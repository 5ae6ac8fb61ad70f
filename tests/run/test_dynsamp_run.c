/* run/test_dynsamp_run.c: the checker of the dynamic-sampling runs (tests/run/tests.cmake
 * runs `rlpt run tests/decks/dynsamp_tiny.ini` under mpirun, then this on its files).
 *
 *   test_dynsamp_run METRICS.jsonl SAMPLES.jsonl on|on_dp|off P MAX_RESAMPLE_ROUNDS
 *
 * Every RL step line (eval lines aside) must carry consistent dynamic-sampling counts:
 *   on:  1 <= gen_rounds <= 1 + MAX, 0 <= groups_trained <= P, groups_filtered +
 *        groups_trained <= gen_rounds * P, a short batch only after the last round, a
 *        second round only after a drop; groups_filtered > 0 on some step; and every
 *        trained group in the samples log (the deck logs them all) has rewards that are
 *        not all equal, with as many groups logged as groups_trained says (max 2 a step;
 *        on_dp: with several train DP ranks the log holds DP rank 0's share, at most that);
 *   off: gen_rounds 1, groups_filtered 0, groups_trained P, and some logged group has
 *        all-equal rewards (so the samples check above can fail: the filter is what
 *        removes them). Counts are exact integers. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_STEPS 64
#define MAX_GROUPS 8   /* groups logged per step (the samples log writes 2) */
#define MAX_G 64       /* samples per group */

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The trained groups of one step from the samples log: rewards by group. */
struct step_groups {
  int n;
  int group[MAX_GROUPS], count[MAX_GROUPS];
  double reward[MAX_GROUPS][MAX_G];
};

static void add_sample(struct step_groups *sg, int group, double reward) {
  int i = 0;
  while (i < sg->n && sg->group[i] != group) i++;
  if (i == sg->n) {
    CHECK(sg->n < MAX_GROUPS);
    if (sg->n >= MAX_GROUPS) return;
    sg->group[sg->n] = group;
    sg->count[sg->n++] = 0;
  }
  CHECK(sg->count[i] < MAX_G);
  if (sg->count[i] < MAX_G) sg->reward[i][sg->count[i]++] = reward;
}

/* Reads the samples log into steps[1..]; returns 0 or -1. */
static int read_samples(const char *path, struct step_groups *steps) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    cJSON *o = cJSON_Parse(line);
    CHECK(o != NULL);
    if (!o) continue;
    double s = num(o, "step"), g = num(o, "group"), r = num(o, "reward");
    CHECK(s >= 1 && s < MAX_STEPS && g >= 0 && isfinite(r));
    if (s >= 1 && s < MAX_STEPS && g >= 0) add_sample(&steps[(int)s], (int)g, r);
    cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  return 0;
}

static int all_equal(const double *r, int n) {
  for (int j = 1; j < n; j++)
    if (r[j] != r[0]) return 0;
  return 1;
}

/* One RL step line; returns its groups_filtered. */
static double check_step(const cJSON *o, int on, int dp, long P, long M, const struct step_groups *sg,
                         int *n_equal) {
  long step = (long)num(o, "step");
  double rounds = num(o, "gen_rounds"), filt = num(o, "groups_filtered"), tr = num(o, "groups_trained");
  printf("step %ld: gen_rounds %g groups_filtered %g groups_trained %g logged groups %d\n", step, rounds,
         filt, tr, sg->n);
  if (on) {
    CHECK(rounds >= 1 && rounds <= 1 + M);
    CHECK(tr >= 0 && tr <= P && filt >= 0);
    CHECK(filt + tr <= rounds * P);
    if (tr < P) CHECK(rounds == 1 + M);
    if (rounds > 1) CHECK(filt > 0);
    if (dp) CHECK(sg->n <= tr);
    else CHECK(sg->n == (tr < 2 ? (int)tr : 2));
  } else {
    CHECK(rounds == 1 && filt == 0 && tr == P);
  }
  for (int i = 0; i < sg->n; i++) {
    int eq = all_equal(sg->reward[i], sg->count[i]);
    *n_equal += eq;
    if (on && eq) printf("FAIL: step %ld: trained group %d has all-equal rewards\n", step, sg->group[i]);
    if (on) CHECK(!eq);
  }
  return filt;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s METRICS.jsonl SAMPLES.jsonl on|on_dp|off P MAX_RESAMPLE_ROUNDS\n", argv[0]);
    return 2;
  }
  int dp = !strcmp(argv[3], "on_dp"), on = dp || !strcmp(argv[3], "on");
  long P = atol(argv[4]), M = atol(argv[5]);
  struct step_groups *steps = calloc(MAX_STEPS, sizeof *steps);
  CHECK(steps && read_samples(argv[2], steps) == 0);
  FILE *f = fopen(argv[1], "r");
  CHECK(f != NULL);
  if (!f || !steps) return TEST_RESULT("test_dynsamp_run");
  char *line = NULL;
  size_t cap = 0;
  int n_steps = 0, n_equal = 0;
  double filtered = 0;
  while (getline(&line, &cap, f) > 0) {
    cJSON *o = cJSON_Parse(line);
    CHECK(o != NULL);
    const cJSON *ph = o ? cJSON_GetObjectItemCaseSensitive(o, "phase") : NULL;
    int rl = cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") &&
             !cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1");
    long s = rl ? (long)num(o, "step") : 0;
    if (rl && s >= 1 && s < MAX_STEPS) {
      filtered += check_step(o, on, dp, P, M, &steps[s], &n_equal);
      n_steps++;
    }
    cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  free(steps);
  printf("%d RL steps, %g groups filtered, %d logged groups with all-equal rewards\n", n_steps, filtered,
         n_equal);
  CHECK(n_steps >= 1);
  if (on) CHECK(filtered > 0 && n_equal == 0);
  else CHECK(filtered == 0 && n_equal > 0);
  return TEST_RESULT("test_dynsamp_run");
}
