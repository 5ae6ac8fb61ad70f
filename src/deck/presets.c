/* deck/presets.c: the preset table behind [algo] name and its application to a parsed
 * deck (see deck/presets.h). Values are deck text, written through the deck's own parser. */
#include "deck/presets.h"

#include <stdio.h>

#include "deck/config.h"

struct preset_row { const char *key, *value; };

/* Every preset starts from these (the GRPO values, which are also the schema
 * defaults) so that switching `name` never inherits another preset's choice. */
static const struct preset_row preset_base[] = {
  {.key = "adv_estimator", .value = "grpo"}, {.key = "std", .value = "unbiased"},
  {.key = "adv_eps", .value = "1e-6"}, {.key = "policy_loss", .value = "ppo_clip"},
  {.key = "clip_low", .value = "0.2"}, {.key = "clip_high", .value = "0.2"},
  {.key = "loss_agg", .value = "token-mean"}, {.key = "kl_estimator", .value = "k3"},
  {.key = "kl_in", .value = "loss"}, {.key = "kl_coef", .value = "0.001"},
  {.key = "gamma", .value = "1.0"}, {.key = "lam", .value = "1.0"},
  {.key = "whiten_adv", .value = "false"}, {.key = "dynamic_sampling", .value = "false"},
  {.key = "overlong_buffer", .value = "0"}, {.key = "dpo_beta", .value = "0.1"},
  {.key = "dpo_loss", .value = "sigmoid"}, {.key = NULL}};

static const struct preset_row preset_grpo[] = {{.key = NULL}};
static const struct preset_row preset_dr_grpo[] = {
  {.key = "adv_estimator", .value = "dr_grpo"},
  {.key = "loss_agg", .value = "seq-mean-token-sum-norm"}, {.key = "kl_coef", .value = "0"},
  {.key = NULL}};
static const struct preset_row preset_dapo[] = {
  {.key = "clip_high", .value = "0.28"}, {.key = "kl_coef", .value = "0"},
  {.key = "dynamic_sampling", .value = "true"}, {.key = "overlong_penalty", .value = "1.0"},
  {.key = NULL}};
static const struct preset_row preset_gspo[] = {
  {.key = "policy_loss", .value = "gspo"}, {.key = "clip_low", .value = "3e-4"},
  {.key = "clip_high", .value = "4e-4"}, {.key = "loss_agg", .value = "seq-mean-token-mean"},
  {.key = "kl_coef", .value = "0"}, {.key = NULL}};
static const struct preset_row preset_ppo[] = {
  {.key = "adv_estimator", .value = "gae"}, {.key = "whiten_adv", .value = "true"},
  {.key = "value_clip", .value = "0.5"}, {.key = "vf_coef", .value = "0.1"},
  {.key = "kl_estimator", .value = "k1"}, {.key = "kl_in", .value = "reward"}, {.key = NULL}};
static const struct preset_row preset_rloo[] = {
  {.key = "adv_estimator", .value = "rloo"}, {.key = NULL}};
static const struct preset_row preset_reinforce_pp[] = {
  {.key = "adv_estimator", .value = "reinforce_pp"}, {.key = "kl_estimator", .value = "k1"},
  {.key = "kl_in", .value = "reward"}, {.key = NULL}};
static const struct preset_row preset_dpo[] = {
  {.key = "dpo_beta", .value = "0.1"}, {.key = "dpo_loss", .value = "sigmoid"},
  {.key = "kl_coef", .value = "0"}, {.key = NULL}};

static const struct preset_row preset_ipo[] = {
  {.key = "dpo_beta", .value = "0.1"}, {.key = "dpo_loss", .value = "ipo"},
  {.key = "kl_coef", .value = "0"}, {.key = NULL}};
static const struct preset_row preset_rm[] = {{.key = "kl_coef", .value = "0"}, {.key = NULL}};

static const struct preset_row *const presets[] = {
  [ALGO_GRPO] = preset_grpo, [ALGO_DR_GRPO] = preset_dr_grpo, [ALGO_DAPO] = preset_dapo,
  [ALGO_GSPO] = preset_gspo, [ALGO_PPO] = preset_ppo, [ALGO_RLOO] = preset_rloo,
  [ALGO_REINFORCE_PP] = preset_reinforce_pp, [ALGO_DPO] = preset_dpo, [ALGO_IPO] = preset_ipo,
  [ALGO_RM] = preset_rm};

/* Writes a preset value into [algo] key unless the user set it. Returns 1 when the
 * deck's parser refuses the value (a wrong preset table), else 0. */
static int preset_set(struct config *cfg, const char *key, const char *value) {
  char msg[256];
  int r = config_find("algo", key);
  if (r < 0 || cfg->src[r] != 0) return 0;
  if (!config_set_value(cfg, r, value, msg, sizeof msg)) return 0;
  fprintf(stderr, "rlpt: internal: preset [algo] %s = %s: %s\n", key, value, msg);
  return 1;
}

static int preset_set_rows(struct config *cfg, const struct preset_row *rows) {
  int refused = 0;
  for (const struct preset_row *p = rows; p->key; p++) refused += preset_set(cfg, p->key, p->value);
  return refused;
}

int preset_apply(struct config *cfg) {
  int name = cfg->algo.name;
  if (name < 0 || name > ALGO_RM) return 0;
  int refused = preset_set_rows(cfg, preset_base) + preset_set_rows(cfg, presets[name]);
  if (name == ALGO_DAPO) {
    /* veRL's DAPO recipe: Lcache = 4096 of Lmax = 20480, i.e. a fifth of the budget. */
    long lc = cfg->rollout.max_new_tokens / 5;
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", lc > 0 ? lc : 1);
    refused += preset_set(cfg, "overlong_buffer", buf);
  }
  return refused;
}
