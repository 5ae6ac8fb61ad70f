/* rl/test_dynsamp.c: DAPO dynamic sampling bookkeeping (src/rl/dynsamp.c) on hand-made
 * reward vectors: groups whose rewards are all equal are dropped (a group of one
 * too), the round's kept groups come out ascending whatever the sample order,
 * rounds stop at P kept or at 1 + max_resample_rounds, the trained groups are the
 * first P kept in (round, group) order at slots 0..n-1, groups_filtered counts the
 * drops, and the prompt ids of the rounds never collide. Exact integer checks. */
#include <stdlib.h>

#include "rl/dynsamp.h"
#include "testutil.h"

/* A batch of samples with the given groups and rewards. */
static void make_batch(struct sample_batch *b, const int *group, const double *reward, int n) {
  sample_batch_init(b);
  for (int k = 0; k < n; k++) {
    struct sample *s = sample_batch_add(b);
    s->group = group[k];
    s->reward = reward[k];
  }
}

/* Groups 0..3 of 3 samples, shuffled: 0 all 1.0 (drop), 1 mixed (keep), 2 all 0 (drop),
 * 3 mixed only in its last sample (keep); plus group 5 with one sample (drop). */
static void test_round_groups(void) {
  const int group[] = {3, 1, 0, 2, 1, 0, 3, 2, 5, 0, 1, 2, 3};
  const double rew[] = {0.5, 1, 1, 0, 0, 1, 0.5, 0, 1, 1, 1, 0, 0.25};
  struct sample_batch b;
  make_batch(&b, group, rew, 13);
  struct dynsamp d;
  CHECK(dynsamp_init(&d, 6, 1, 2) == 0);
  int32_t g[6] = {-1, -1, -1, -1, -1, -1};
  int n = dynsamp_round_groups(&d, &b, g);
  CHECK(n == 2 && g[0] == 1 && g[1] == 3);
  CHECK(dynsamp_has_group(g, n, 1) && dynsamp_has_group(g, n, 3) && !dynsamp_has_group(g, n, 0));
  dynsamp_free(&d);
  /* off: every group present is kept, ascending */
  CHECK(dynsamp_init(&d, 6, 0, 2) == 0);
  n = dynsamp_round_groups(&d, &b, g);
  CHECK(n == 5 && g[0] == 0 && g[1] == 1 && g[2] == 2 && g[3] == 3 && g[4] == 5);
  /* a group number outside 0..P-1 is refused */
  b.s[4].group = 6;
  CHECK(dynsamp_round_groups(&d, &b, g) == -1);
  dynsamp_free(&d);
  sample_batch_free(&b);
}

/* P = 4, 2 extra rounds: round 0 keeps {1, 3}, round 1 keeps {0, 2, 3} -> done with 5 kept;
 * the trained groups are r0g1, r0g3, r1g0, r1g2 at slots 0..3; r1g3 is surplus. */
static void test_rounds_full(void) {
  struct dynsamp d;
  CHECK(dynsamp_init(&d, 4, 1, 2) == 0);
  CHECK(d.max_rounds == 3 && !dynsamp_done(&d));
  const int32_t k0[] = {1, 3}, k1[] = {0, 2, 3};
  dynsamp_add_round(&d, k0, 2);
  CHECK(!dynsamp_done(&d) && d.rounds == 1 && d.n_kept == 2 && d.n_filtered == 2);
  CHECK(dynsamp_selected(&d) == 2);
  dynsamp_add_round(&d, k1, 3);
  CHECK(dynsamp_done(&d) && d.rounds == 2 && d.n_kept == 5 && d.n_filtered == 3);
  CHECK(dynsamp_selected(&d) == 4);
  CHECK(dynsamp_slot(&d, 0, 1) == 0 && dynsamp_slot(&d, 0, 3) == 1);
  CHECK(dynsamp_slot(&d, 1, 0) == 2 && dynsamp_slot(&d, 1, 2) == 3);
  CHECK(dynsamp_slot(&d, 1, 3) == -1);  /* kept but beyond the first P */
  CHECK(dynsamp_slot(&d, 0, 0) == -1 && dynsamp_slot(&d, 0, 2) == -1 && dynsamp_slot(&d, 1, 1) == -1);
  dynsamp_free(&d);
}

/* The rounds run out: 1 + 1 rounds keeping 1 then 0 -> done, 1 group trained, 7 filtered;
 * and a step that keeps nothing trains nothing. Off: one round, all kept, none filtered. */
static void test_rounds_short(void) {
  struct dynsamp d;
  CHECK(dynsamp_init(&d, 4, 1, 1) == 0);
  const int32_t k0[] = {2};
  dynsamp_add_round(&d, k0, 1);
  CHECK(!dynsamp_done(&d));
  dynsamp_add_round(&d, NULL, 0);
  CHECK(dynsamp_done(&d) && d.rounds == 2 && d.n_filtered == 7 && dynsamp_selected(&d) == 1);
  CHECK(dynsamp_slot(&d, 0, 2) == 0);
  dynsamp_free(&d);
  CHECK(dynsamp_init(&d, 4, 1, 0) == 0);
  dynsamp_add_round(&d, NULL, 0);
  CHECK(dynsamp_done(&d) && d.rounds == 1 && d.n_filtered == 4 && dynsamp_selected(&d) == 0);
  CHECK(dynsamp_slot(&d, 0, 0) == -1);
  dynsamp_free(&d);
  CHECK(dynsamp_init(&d, 4, 0, 5) == 0);
  CHECK(d.max_rounds == 1);
  const int32_t all[] = {0, 1, 2, 3};
  dynsamp_add_round(&d, all, 4);
  CHECK(dynsamp_done(&d) && d.n_filtered == 0 && dynsamp_selected(&d) == 4);
  for (int g = 0; g < 4; g++) CHECK(dynsamp_slot(&d, 0, g) == g);
  dynsamp_free(&d);
}

/* Round 0 is the plain cursor (step - 1) * P + g; the ids of every (step, round, group)
 * of 20 steps x (1 + 3) rounds x P = 5 are distinct, and the same call gives the same id. */
static void test_prompt_ids(void) {
  const long P = 5, M = 3;
  CHECK(dynsamp_prompt_id(1, 0, 0, P, M) == 0 && dynsamp_prompt_id(3, 0, 4, P, M) == 14);
  CHECK(dynsamp_prompt_id(1, 1, 0, P, M) == DYNSAMP_ID_BASE);
  CHECK(dynsamp_prompt_id(2, 1, 0, P, M) == DYNSAMP_ID_BASE + (uint64_t)(M * P));
  int n = 0;
  uint64_t *ids = malloc(sizeof *ids * 20 * 4 * 5);
  for (long s = 1; s <= 20; s++)
    for (int r = 0; r <= M; r++)
      for (long g = 0; g < P; g++) ids[n++] = dynsamp_prompt_id(s, r, g, P, M);
  int dup = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) dup += ids[i] == ids[j];
  CHECK(dup == 0);
  free(ids);
}

int main(void) {
  test_round_groups();
  test_rounds_full();
  test_rounds_short();
  test_prompt_ids();
  return TEST_RESULT("test_dynsamp");
}
