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
 *   colocate_async full costs as above, split costs gen 1.5, train 2.5: batch 1 alone (1),
 *                  steps 1-3 max(2.5, 1.5) + 0.6, step 4 2.5 + 0.6: 1 + 4 x 3.1 = 13.4;
 *                  lags 0, 1, 1, 1
 * Costs from a deck ([simulate], deck/sim_costs.c) with every response 20 tokens: 4 prompts x
 * 2 samples on 2 instances, 2 prompts each: prefill 2 x 2 x 10 / 100 = 0.4, decode max(80 /
 * 40, 20 / 5) = 4 -> gen 4.4; train (8 x 10 + 8 x 20) / 50 = 4.8; sync 1e9 bytes / 1 GB/s = 1.
 * Exact to 1e-12 (sums of a few doubles); the log-normal lengths' mean within 2% (5 sigma
 * of the mean of 16000 draws at cv 0.5). */
#include <math.h>
#include <stdlib.h>

#include "deck/config.h"
#include "deck/plan.h"
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

static void test_colocate(void) {
  struct sim_step_cost full_step = {.gen = 1.0, .train = 2.0, .sync = 0.5, .other = 0.1};
  struct sim_step_cost half_step = {.gen = 1.5, .train = 2.5, .sync = 9.0, .other = 9.0};
  struct sim_costs full = {.n = 1, .step = &full_step}, half = {.n = 1, .step = &half_step};
  struct sim_result r;
  sim_colocate(&full, &half, 4, &r);
  CHECK_NEAR(r.total_s, 13.4, TOL);
  CHECK_NEAR(r.lag_sum, 3.0, TOL);
  CHECK(r.lag_hist[0] == 1 && r.lag_hist[1] == 3);
}

static void test_from_deck(void) {
  struct config *cfg = calloc(1, sizeof *cfg);
  config_defaults(cfg);
  cfg->run.steps = 3;
  cfg->algo.prompts_per_step = 4, cfg->algo.group_size = 2, cfg->algo.ppo_epochs = 1;
  cfg->rollout.max_new_tokens = 64;
  cfg->simulate.prompt_tokens = 10, cfg->simulate.response_tokens = 20, cfg->simulate.response_cv = 0;
  cfg->simulate.gen_tokens_per_s = 40, cfg->simulate.gen_seq_tokens_per_s = 5;
  cfg->simulate.prefill_tokens_per_s = 100, cfg->simulate.train_tokens_per_s = 50;
  cfg->simulate.sync_gb_per_s = 1, cfg->simulate.other_s = 0.25;
  struct plan p = {.params = 0.25e9, .counts = {.rollout_instances = 2, .train_dp = 1}};
  struct sim_costs c;
  char err[512];
  CHECK(sim_costs_from_deck(cfg, &p, &c, err, sizeof err) == 0);
  CHECK(c.n == 3);
  if (c.n == 3) {
    CHECK_NEAR(c.step[2].gen, 4.4, TOL);
    CHECK_NEAR(c.step[2].train, 4.8, TOL);
    CHECK_NEAR(c.step[2].sync, 1.0, TOL);
    CHECK_NEAR(c.step[2].other, 0.25, TOL);
  }
  sim_costs_free(&c);
  /* the lengths' mean: one instance, throughput 1 token/s, no tail: gen = the tokens */
  cfg->algo.prompts_per_step = 1000, cfg->algo.group_size = 16, cfg->simulate.response_cv = 0.5;
  cfg->rollout.max_new_tokens = 100000, cfg->simulate.gen_tokens_per_s = 1;
  cfg->simulate.gen_seq_tokens_per_s = 0, cfg->simulate.prefill_tokens_per_s = 0;
  p.counts.rollout_instances = 1;
  CHECK(sim_costs_from_deck(cfg, &p, &c, err, sizeof err) == 0);
  CHECK_MSG(c.n == 3 && fabs(c.step[0].gen / 16000.0 - 20.0) < 0.4, "mean length %g", c.n ? c.step[0].gen / 16000.0 : 0);
  sim_costs_free(&c);
  cfg->simulate.train_tokens_per_s = 0;
  CHECK(sim_costs_from_deck(cfg, &p, &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[simulate] train_tokens_per_s is 0"), "%s", err);
  cfg->simulate.train_tokens_per_s = 50, cfg->simulate.response_tokens = 200000;
  CHECK(sim_costs_from_deck(cfg, &p, &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "exceeds [rollout] max_new_tokens"), "%s", err);
  free(cfg);
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
  test_colocate();
  test_from_deck();
  if (argc > 1) test_reader(argv[1]);
  else CHECK_MSG(0, "usage: test_simulate tests/data/sim_metrics.jsonl");
  return TEST_RESULT("test_simulate");
}
