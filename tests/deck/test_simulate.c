/* deck/test_simulate.c: `rlpt plan --simulate`'s model (deck/simulate.h) against timelines
 * worked out by hand, and its calibration reader on tests/data/sim_metrics.jsonl.
 *
 * Costs per step: gen 1, train 2, sync 0.5, other 0.1 (seconds), 4 steps:
 *   sync           4 x 3.6 = 14.4
 *   deterministic  D = 1: batch 1 first (1), then each step max(2, 1 or 0) + 0.6 = 2.6:
 *                  11.4; lags 0, 1, 1, 1
 *   free-running   buffer 2: batch 1 0-1; step 1 trains 1-3, posts at 3.5, while batches 2
 *                  (1-2) and 3 (2-3) are made; batch 4 waits for room (batch 2 trained at
 *                  3.6): 3.6-4.6; steps end at 3.6, 6.2, 8.8, 11.4; batch k made under
 *                  versions 0, 0, 0, 1: lags 0, 1, 2, 2
 *   free-running   buffer 1: batch 2 waits for batch 1 trained (1), is made 1-2 before the
 *                  update (3.5); batch 3 needs room (batch 2 trained at 3.6): steps end at 3.6,
 *                  6.2 (batch 3 3.6-4.6), 8.8, 11.4; lags 0, 1, 1, 1.
 * Exact to 1e-12 (sums of a few doubles). */
#include <math.h>
#include <stdlib.h>

#include "deck/simulate.h"
#include "testutil.h"

#define TOL 1e-12

static void test_timelines(void) {
  struct sim_step_cost step = {.gen = 1.0, .train = 2.0, .sync = 0.5, .other = 0.1};
  struct sim_costs c = {.n = 1, .step = &step};
  struct sim_result r;
  sim_sync(&c, 4, &r);
  CHECK_NEAR(r.total_s, 14.4, TOL);
  CHECK_NEAR(r.train_busy_s, 8.0, TOL);
  CHECK_NEAR(r.gen_busy_s, 4.0, TOL);
  CHECK_NEAR(r.lag_sum, 0.0, TOL);
  sim_deterministic(&c, 4, 1, &r);
  CHECK_NEAR(r.total_s, 11.4, TOL);
  CHECK_NEAR(r.lag_sum, 3.0, TOL);
  CHECK_NEAR(r.gen_busy_s, 4.0, TOL);
  sim_free(&c, 4, 2, &r);
  CHECK_NEAR(r.total_s, 11.4, TOL);
  CHECK_NEAR(r.lag_sum, 5.0, TOL);
  sim_free(&c, 4, 1, &r);
  CHECK_NEAR(r.total_s, 11.4, TOL);
  CHECK_NEAR(r.lag_sum, 3.0, TOL);
  /* generation slower than training: free-running keeps the rollout busy, the steps wait */
  step.gen = 3.0;
  sim_deterministic(&c, 4, 1, &r);
  CHECK_NEAR(r.total_s, 3.0 + 3 * 3.6 + 2.6, TOL);  /* 16.4 */
}

static void test_reader(const char *path) {
  struct sim_costs c;
  char err[512];
  CHECK(sim_costs_read(path, &c, err, sizeof err) == 0);
  /* three RL step lines, the first dropped; nulls count 0; other = time_s - the phases */
  CHECK(c.n == 2);
  if (c.n == 2) {
    CHECK_NEAR(c.step[0].gen, 1.0, TOL);
    CHECK_NEAR(c.step[0].train, 2.0, TOL);
    CHECK_NEAR(c.step[0].sync, 0.5, TOL);
    CHECK_NEAR(c.step[0].other, 0.2, 1e-12);
    CHECK_NEAR(c.step[1].other, 0.0, TOL);
  }
  sim_costs_free(&c);
  CHECK(sim_costs_read("no/such/metrics.jsonl", &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "no/such/metrics.jsonl: cannot be read"), "%s", err);
}

int main(int argc, char **argv) {
  test_timelines();
  if (argc > 1) test_reader(argv[1]);
  else CHECK_MSG(0, "usage: test_simulate tests/data/sim_metrics.jsonl");
  return TEST_RESULT("test_simulate");
}
