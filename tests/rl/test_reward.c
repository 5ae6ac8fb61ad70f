/* rl/test_reward.c: reward components and weights, DAPO overlong shaping at its
 * breakpoints, answer tags, non-finite handling and the batch statistics
 * (reward_parts_const_frac per component). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rl/reward.h"
#include "testutil.h"

static struct config arith_config(void) {
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.task.name, sizeof cfg.task.name, "arith");
  cfg.rollout.max_new_tokens = 20;
  return cfg;
}

static void test_overlong(void) {
  /* Lmax 20, Lcache 5: 0 up to 15, then (15 - len)/5, -1 at 20 and beyond; scaled by penalty */
  CHECK(reward_overlong(0, 20, 5, 1.0) == 0.0);
  CHECK(reward_overlong(15, 20, 5, 1.0) == 0.0);
  CHECK_NEAR(reward_overlong(16, 20, 5, 1.0), -0.2, 1e-15);
  CHECK_NEAR(reward_overlong(18, 20, 5, 1.0), -0.6, 1e-15);
  CHECK_NEAR(reward_overlong(20, 20, 5, 1.0), -1.0, 1e-15);
  CHECK_NEAR(reward_overlong(21, 20, 5, 1.0), -1.0, 1e-15);
  CHECK_NEAR(reward_overlong(18, 20, 5, 0.5), -0.3, 1e-15);
  CHECK(reward_overlong(1000, 20, 0, 1.0) == 0.0);  /* off */
}

static void test_components(void) {
  struct config cfg = arith_config();
  cfg.reward.correct_weight = 1.0;
  cfg.reward.format_weight = 0.5;
  cfg.reward.length_weight = 0.1;
  cfg.algo.overlong_buffer = 5;
  cfg.algo.overlong_penalty = 1.0;
  snprintf(cfg.reward.format_tags, sizeof cfg.reward.format_tags, "<a>,</a>");
  struct reward_cfg rc;
  struct task t;
  char err[256];
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0);
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  CHECK(strcmp(rc.open_tag, "<a>") == 0 && strcmp(rc.close_tag, "</a>") == 0);
  struct task_prompt p = {0};
  snprintf(p.text, sizeof p.text, "12+34=");
  snprintf(p.answer, sizeof p.answer, "46");
  double parts[REWARD_NCOMPONENTS];
  int bad = 7;
  /* right, in tags, 10 tokens: 1 + 0.5 - 0.1*0.5 + 0 */
  struct reward_item it = {.prompt = &p, .text = "x <a>46</a>", .len = 11, .n_tokens = 10, .group = 0};
  double r = reward_score_one(&rc, &t, &it, parts, &bad);
  CHECK(bad == 0);
  CHECK(parts[REWARD_CORRECT] == 1.0 && parts[REWARD_FORMAT] == 1.0);
  CHECK_NEAR(parts[REWARD_LENGTH], -0.5, 1e-15);
  CHECK(parts[REWARD_OVERLONG] == 0.0);
  CHECK_NEAR(r, 1.45, 1e-12);
  /* right but no tags: the whole response is verified; format 0; 18 tokens -> overlong -0.6 */
  struct reward_item it2 = {&p, "46", 2, 18, 0};
  r = reward_score_one(&rc, &t, &it2, parts, &bad);
  CHECK(parts[REWARD_CORRECT] == 1.0 && parts[REWARD_FORMAT] == 0.0);
  CHECK_NEAR(r, 1.0 + 0.0 - 0.1 * 0.9 - 0.6, 1e-12);
  /* two blocks: format 0, whole text "<a>46</a><a>46</a>" is not an integer */
  struct reward_item it3 = {&p, "<a>46</a><a>46</a>", 18, 5, 0};
  r = reward_score_one(&rc, &t, &it3, parts, &bad);
  CHECK(parts[REWARD_CORRECT] == 0.0 && parts[REWARD_FORMAT] == 0.0);
  /* wrong inside tags */
  struct reward_item it4 = {&p, "<a>47</a>", 9, 5, 0};
  r = reward_score_one(&rc, &t, &it4, parts, &bad);
  CHECK(parts[REWARD_CORRECT] == 0.0 && parts[REWARD_FORMAT] == 1.0);
  CHECK_NEAR(r, 0.5 - 0.1 * 0.25, 1e-12);
  /* NULL text = empty response */
  struct reward_item it5 = {&p, NULL, 0, 0, 0};
  r = reward_score_one(&rc, &t, &it5, parts, &bad);
  CHECK(parts[REWARD_CORRECT] == 0.0 && r == 0.0);

  /* defaults: correct only, no tags -> format is 1 and constant, weight 0 */
  cfg = arith_config();
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0);
  CHECK(rc.weight[REWARD_CORRECT] == 1.0 && rc.weight[REWARD_FORMAT] == 0.0 && rc.weight[REWARD_OVERLONG] == 0.0);
  r = reward_score_one(&rc, &t, &it2, parts, &bad);
  CHECK(r == 1.0 && parts[REWARD_FORMAT] == 1.0 && parts[REWARD_OVERLONG] == 0.0);
}

static void test_nonfinite(void) {
  struct config cfg = arith_config();
  struct reward_cfg rc;
  struct task t;
  char err[256];
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0 && task_init(&t, &cfg, err, sizeof err) == 0);
  struct task_prompt p = {0};
  snprintf(p.answer, sizeof p.answer, "5");
  double parts[REWARD_NCOMPONENTS];
  int bad = 0;
  /* a NaN component (penalty NaN) is zeroed and counted */
  rc.overlong_buffer = 5;
  rc.weight[REWARD_OVERLONG] = 1.0;
  rc.overlong_penalty = NAN;
  struct reward_item it = {.prompt = &p, .text = "5", .len = 1, .n_tokens = 18, .group = 0};
  double r = reward_score_one(&rc, &t, &it, parts, &bad);
  CHECK(bad == 1 && parts[REWARD_OVERLONG] == 0.0 && r == 1.0);
  /* an infinite weight times a finite part: the total is zeroed and counted */
  rc.overlong_penalty = 1.0;
  rc.weight[REWARD_LENGTH] = -INFINITY;
  r = reward_score_one(&rc, &t, &it, parts, &bad);
  CHECK(bad == 1 && r == 0.0);
  /* in a batch: counted in nonfinite, mean stays finite */
  struct reward_item items[2] = {it, it};
  items[1].group = 1;
  double rewards[2], bparts[2][REWARD_NCOMPONENTS];
  struct reward_stats st;
  CHECK(reward_score_batch(&rc, &t, items, 2, 2, rewards, bparts, &st) == 0);
  CHECK(st.nonfinite == 2 && isfinite(st.mean) && st.mean == 0.0);
}

static void test_batch_stats(void) {
  struct config cfg = arith_config();
  cfg.reward.format_weight = 0.2;
  snprintf(cfg.reward.format_tags, sizeof cfg.reward.format_tags, "<a>,</a>");
  struct reward_cfg rc;
  struct task t;
  char err[256];
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0 && task_init(&t, &cfg, err, sizeof err) == 0);
  struct task_prompt p0 = {0}, p1 = {0}, p2 = {0};
  snprintf(p0.answer, sizeof p0.answer, "1");
  snprintf(p1.answer, sizeof p1.answer, "2");
  snprintf(p2.answer, sizeof p2.answer, "3");
  /* group 0: mixed correctness, all formatted; group 1: all wrong, mixed format;
   * group 2: all right, all formatted, equal lengths (everything constant) */
  struct reward_item items[] = {
    {&p0, "<a>1</a>", 8, 3, 0}, {&p0, "<a>9</a>", 8, 4, 0},
    {&p1, "<a>7</a>", 8, 3, 1}, {&p1, "7", 1, 3, 1},
    {&p2, "<a>3</a>", 8, 3, 2}, {&p2, "<a>3</a>", 8, 3, 2},
  };
  double rewards[6], parts[6][REWARD_NCOMPONENTS];
  struct reward_stats st;
  CHECK(reward_score_batch(&rc, &t, items, 6, 3, rewards, parts, &st) == 0);
  CHECK(st.n == 6 && st.n_groups == 3 && st.nonfinite == 0);
  CHECK_NEAR(rewards[0], 1.2, 1e-12);
  CHECK_NEAR(rewards[3], 0.0, 1e-12);
  CHECK_NEAR(st.acc, 3.0 / 6, 1e-12);
  CHECK_NEAR(st.part_mean[REWARD_CORRECT], 0.5, 1e-12);
  CHECK_NEAR(st.part_mean[REWARD_FORMAT], 5.0 / 6, 1e-12);
  /* correct is constant in groups 1 and 2; format in 0 and 2; length in 1 and 2; overlong everywhere */
  CHECK_NEAR(st.part_const_frac[REWARD_CORRECT], 2.0 / 3, 1e-12);
  CHECK_NEAR(st.part_const_frac[REWARD_FORMAT], 2.0 / 3, 1e-12);
  CHECK_NEAR(st.part_const_frac[REWARD_LENGTH], 2.0 / 3, 1e-12);
  CHECK_NEAR(st.part_const_frac[REWARD_OVERLONG], 1.0, 1e-12);
  CHECK_NEAR(st.reward_const_frac, 1.0 / 3, 1e-12);
  double mean = (1.2 + 0.2 + 0.2 + 0.0 + 1.2 + 1.2) / 6, var = 0;
  for (int i = 0; i < 6; i++) var += (rewards[i] - mean) * (rewards[i] - mean);
  CHECK_NEAR(st.mean, mean, 1e-12);
  CHECK_NEAR(st.std, sqrt(var / 6), 1e-9);
  /* bad group id */
  items[5].group = 3;
  CHECK(reward_score_batch(&rc, &t, items, 6, 3, rewards, parts, &st) == 1);
  /* empty batch */
  CHECK(reward_score_batch(&rc, &t, items, 0, 0, rewards, parts, &st) == 0 && st.mean == 0.0);
  CHECK(strcmp(reward_component_name(REWARD_OVERLONG), "overlong") == 0 && strcmp(reward_component_name(9), "?") == 0);
}

static void test_init_errors(void) {
  struct reward_cfg rc;
  char err[256];
  const char *bad[] = {"<a>", ",</a>", "<a>,", "<a>,</a>,x", "<a>,<a>", "ans,answer"};
  for (int i = 0; i < 6; i++) {
    struct config cfg = arith_config();
    snprintf(cfg.reward.format_tags, sizeof cfg.reward.format_tags, "%s", bad[i]);
    CHECK_MSG(reward_init(&rc, &cfg, err, sizeof err) == 2 && strstr(err, "format_tags"), "tags '%s'", bad[i]);
  }
  struct config cfg = arith_config();
  cfg.algo.overlong_buffer = 20;
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 2 && strstr(err, "overlong_buffer"));
}

int main(void) {
  test_overlong();
  test_components();
  test_nonfinite();
  test_batch_stats();
  test_init_errors();
  return TEST_RESULT("test_reward");
}
