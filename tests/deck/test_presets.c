/* deck/test_presets.c: the presets behind [algo] name (src/deck/presets.c): every preset's
 * table parses, each sets its knobs, switching presets resets the previous one's choices,
 * a key the user set is kept, and `rlpt check`'s deck parse applies the preset. */
#include <string.h>

#include "deck/config.h"
#include "deck/presets.h"
#include "testutil.h"

static struct config cfg;

/* cfg switched to preset name; its values all parse. */
static void apply_preset(int name) {
  cfg.algo.name = name;
  CHECK_MSG(preset_apply(&cfg) == 0, "preset %d has a value the deck refuses", name);
}

/* Every preset's values are accepted by the deck's parser. */
static void test_every_preset_parses(void) {
  for (int name = ALGO_GRPO; name <= ALGO_RM; name++) {
    config_defaults(&cfg);
    apply_preset(name);
  }
}

static void test_dapo_then_grpo(void) {
  config_defaults(&cfg);
  cfg.rollout.max_new_tokens = 16;
  apply_preset(ALGO_DAPO);
  CHECK_NEAR(cfg.algo.clip_high, 0.28, 1e-15);
  CHECK(cfg.algo.kl_coef == 0.0 && cfg.algo.dynamic_sampling == 1);
  CHECK(cfg.algo.overlong_buffer == 3);  /* 16/5 */
  CHECK(cfg.algo.loss_agg == AGG_TOKEN_MEAN);
  /* switching back to grpo resets DAPO's choices */
  apply_preset(ALGO_GRPO);
  CHECK_NEAR(cfg.algo.clip_high, 0.2, 1e-15);
  CHECK(cfg.algo.kl_estimator == KL_K3 && cfg.algo.kl_in == KL_IN_LOSS);
  CHECK_NEAR(cfg.algo.kl_coef, 0.001, 1e-15);
  CHECK_NEAR(cfg.algo.adv_eps, 1e-6, 1e-20);
  CHECK(cfg.algo.dynamic_sampling == 0 && cfg.algo.overlong_buffer == 0);
}

static void test_each_preset(void) {
  config_defaults(&cfg);
  apply_preset(ALGO_GSPO);
  CHECK(cfg.algo.policy_loss == PL_GSPO && cfg.algo.loss_agg == AGG_SEQ_MEAN_TOKEN_MEAN);
  CHECK_NEAR(cfg.algo.clip_low, 3e-4, 1e-15);
  CHECK_NEAR(cfg.algo.clip_high, 4e-4, 1e-15);
  apply_preset(ALGO_DR_GRPO);
  CHECK(cfg.algo.adv_estimator == ADV_DR_GRPO && cfg.algo.loss_agg == AGG_SEQ_MEAN_TOKEN_SUM_NORM);
  apply_preset(ALGO_PPO);
  CHECK(cfg.algo.adv_estimator == ADV_GAE && cfg.algo.whiten_adv == 1);
  CHECK(cfg.algo.kl_in == KL_IN_REWARD && cfg.algo.kl_estimator == KL_K1);
  CHECK_NEAR(cfg.algo.value_clip, 0.5, 1e-15);
  CHECK(cfg.algo.gamma == 1.0 && cfg.algo.lam == 1.0);
  apply_preset(ALGO_RLOO);
  CHECK(cfg.algo.adv_estimator == ADV_RLOO && cfg.algo.kl_in == KL_IN_LOSS);
  apply_preset(ALGO_REINFORCE_PP);
  CHECK(cfg.algo.adv_estimator == ADV_REINFORCE_PP && cfg.algo.kl_in == KL_IN_REWARD);
  apply_preset(ALGO_DPO);
  CHECK(cfg.algo.dpo_loss == DPO_SIGMOID && cfg.algo.dpo_beta == 0.1);
  apply_preset(ALGO_IPO);
  CHECK(cfg.algo.dpo_loss == DPO_IPO && cfg.algo.dpo_beta == 0.1 && cfg.algo.kl_coef == 0);
  apply_preset(ALGO_RM);
  CHECK(cfg.algo.kl_coef == 0);
}

/* A key the deck set keeps its value under any preset. */
static void test_user_key_kept(void) {
  config_defaults(&cfg);
  int r = config_find("algo", "clip_high");
  CHECK(r >= 0);
  if (r < 0) return;
  cfg.src[r] = 7;  /* deck line 7 */
  cfg.algo.clip_high = 0.3;
  apply_preset(ALGO_DAPO);
  CHECK_NEAR(cfg.algo.clip_high, 0.3, 1e-15);
  CHECK(cfg.algo.dynamic_sampling == 1);
}

/* config_parse applies the preset after the deck, keeping the deck's own values. */
static void test_parse_applies_preset(void) {
  char err[1024];
  const char *deck = "[algo]\nname = dapo\nclip_low = 0.1\n[rollout]\nmax_new_tokens = 20\n";
  CHECK_MSG(config_parse(&cfg, "t.ini", deck, 0, NULL, err, sizeof err) == 0, "%s", err);
  CHECK_NEAR(cfg.algo.clip_high, 0.28, 1e-15);
  CHECK_NEAR(cfg.algo.clip_low, 0.1, 1e-15);
  CHECK(cfg.algo.overlong_buffer == 4 && cfg.algo.dynamic_sampling == 1);
}

int main(void) {
  test_every_preset_parses();
  test_dapo_then_grpo();
  test_each_preset();
  test_user_key_kept();
  test_parse_applies_preset();
  return TEST_RESULT("test_presets");
}
