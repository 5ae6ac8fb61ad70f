/* deck/presets.h: the presets behind [algo] name. A preset fills every [algo] knob that
 * the deck and the overrides did not set (cfg->src[row] == 0); config_parse applies it
 * after the deck and the overrides, before the cross-key checks.
 *   grpo:   grpo adv, unbiased std, adv_eps 1e-6, ppo_clip 0.2/0.2, token-mean,
 *           KL k3 in the loss, coef 0.001 (veRL)
 *   dr_grpo: dr_grpo adv (no std), seq-mean-token-sum-norm, clip 0.2/0.2, no KL
 *   dapo:   grpo adv, clip 0.2/0.28, token-mean, no KL, dynamic sampling,
 *           overlong shaping with Lcache = max_new_tokens/5 (at least 1), penalty 1
 *   gspo:   grpo adv, gspo sequence ratio, clip 3e-4/4e-4, seq-mean-token-mean, no KL
 *   ppo:    gae, gamma = lam = 1, whitened advantages, value clip 0.5, vf_coef 0.1,
 *           clip 0.2/0.2, token-mean, KL k1 in the reward, coef 0.001
 *   rloo:   rloo adv, clip 0.2/0.2, token-mean, KL k3 in the loss, coef 0.001
 *   reinforce_pp: reinforce_pp returns (gamma 1) whitened over the batch, clip 0.2/0.2,
 *           token-mean, KL k1 in the reward, coef 0.001 (the paper's placement)
 *   dpo:    beta 0.1, sigmoid loss, no KL term (the reference enters the loss)
 *   ipo:    beta 0.1, ipo loss, no KL term
 *   rm:     no KL term (a Bradley-Terry reward model: no reference)
 * Every preset also sets dynamic_sampling and overlong_buffer (off except DAPO). */
#ifndef RLPT_PRESETS_H
#define RLPT_PRESETS_H

struct config;

/* Applies the preset of cfg->algo.name. Returns the number of preset values the deck's
 * parser refused, each printed as "rlpt: internal: preset ...": 0, unless the preset
 * table itself is wrong (tests/deck/test_presets.c applies every preset). */
int preset_apply(struct config *cfg);

#endif
