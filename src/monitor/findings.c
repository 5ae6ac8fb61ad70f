/* monitor/findings.c: the playbook's kinds of finding, their causes and the deck keys to
 * change (monitor/findings.h). Every key named here is a deck key (tests/monitor checks
 * each against the schema). */
#include "monitor/findings.h"

#include <stdio.h>

const struct finding_kind finding_kinds[DK_COUNT] = {
  [DK_REWARD_HACKING] = {
    .name = "reward_hacking", .title = "Reward hacking",
    .causes = "the policy raises the reward by a route other than solving the task: longer "
              "responses score higher (a length or format component, a reward model that favours "
              "length) while it drifts away from the reference",
    .advice = "read the samples ([log] samples_path); make reward.length_weight >= 0 (a positive "
              "weight penalises length), lower reward.format_weight, raise reward.rm_alpha (less "
              "reward model), raise algo.kl_coef, lower rollout.max_new_tokens",
    .keys = {"log.samples_path", "reward.length_weight", "reward.format_weight", "reward.rm_alpha",
             "algo.kl_coef", "rollout.max_new_tokens"}},
  [DK_KL] = {
    .name = "kl_explosion", .title = "KL explosion",
    .causes = "updates too large for the policy to stay near the reference: a learning rate too "
              "high, a loose ratio clip or a weak KL penalty; often with a collapse of the reward",
    .advice = "lower optim.lr (3-10x), raise algo.kl_coef, lower algo.clip_high / algo.clip_low, "
              "keep optim.grad_clip on",
    .keys = {"optim.lr", "algo.kl_coef", "algo.clip_high", "algo.clip_low", "optim.grad_clip"}},
  [DK_ENTROPY_COLLAPSE] = {
    .name = "entropy_collapse", .title = "Entropy collapse",
    .causes = "the policy became nearly deterministic: it stops exploring and its groups lose "
              "their reward spread (a learning rate too high, a tight upper clip, no entropy bonus)",
    .advice = "raise algo.clip_high (DAPO's clip-higher 0.28), set algo.entropy_coef (e.g. 0.001), "
              "lower optim.lr, raise rollout.temperature",
    .keys = {"algo.clip_high", "algo.entropy_coef", "optim.lr", "rollout.temperature"}},
  [DK_THROUGHPUT] = {
    .name = "throughput_decline", .title = "Rollout throughput decline",
    .causes = "generation got slower over the run: longer responses filling the KV cache (smaller "
              "batches, preemption), other jobs on the nodes, a throttled device",
    .advice = "compare resp_len_mean; raise rollout.kv_cache_mb, rollout.max_num_seqs or "
              "rollout.max_batch_tokens; cap rollout.max_new_tokens; check what else runs there",
    .keys = {"rollout.kv_cache_mb", "rollout.max_num_seqs", "rollout.max_batch_tokens",
             "rollout.max_new_tokens"}},
  [DK_NONFINITE] = {
    .name = "nonfinite", .title = "Non-finite steps",
    .causes = "NaN or Inf in the gradient, the loss or the reward: a learning rate that overflows, "
              "logprobs at -inf, a verifier or reward model returning NaN, bf16 overflow",
    .advice = "lower optim.lr, keep optim.grad_clip on, check algo.logprob_min, run `rlpt "
              "reward-check` on the deck; with model.dtype = bf16 compare fp32",
    .keys = {"optim.lr", "optim.grad_clip", "algo.logprob_min", "model.dtype"}},
  [DK_DROP] = {
    .name = "drop_ratio", .title = "Stale samples dropped",
    .causes = "the rollout runs too far ahead of the trainer (async modes): samples older than the "
              "allowed lag are thrown away with the generation they cost",
    .advice = "run.mode = sync, or more train ranks (ranks.train_dp) / fewer rollout ranks "
              "(ranks.rollout)",
    .keys = {"run.mode", "ranks.train_dp", "ranks.rollout"}},
  [DK_LAG] = {
    .name = "lag", .title = "Sample lag",
    .causes = "trained samples come from weights several versions old: the async pipeline is "
              "unbalanced and the off-policy error grows",
    .advice = "run.mode = sync, more train ranks (ranks.train_dp), algo.tis = token_truncate to "
              "correct the stale samples",
    .keys = {"run.mode", "ranks.train_dp", "algo.tis"}},
  [DK_CLIP_HIGH] = {
    .name = "clip_high", .title = "Clip fraction above 20%",
    .causes = "each update moves the policy far from the one that sampled: a learning rate too "
              "high, many passes over a batch, stale samples",
    .advice = "lower optim.lr, fewer algo.ppo_epochs or algo.mini_batches, check the lag; widen "
              "algo.clip_low / algo.clip_high only knowingly",
    .keys = {"optim.lr", "algo.ppo_epochs", "algo.mini_batches", "algo.clip_low", "algo.clip_high"}},
  [DK_CLIP_LOW] = {
    .name = "clip_low", .title = "Clip fraction below 5%",
    .causes = "off-policy updates (ratio_mean != 1) that hardly move the policy: a learning rate "
              "small for the clip range",
    .advice = "raise optim.lr, or narrow algo.clip_low / algo.clip_high",
    .keys = {"optim.lr", "algo.clip_low", "algo.clip_high"}},
  [DK_LOGPROB_MISMATCH] = {
    .name = "logprob_mismatch", .title = "Rollout vs trainer logprob mismatch",
    .causes = "the rollout engine and the trainer give the same tokens different logprobs at the "
              "same weights (bf16 vs fp32, other kernels, a weight sync that did not land): the "
              "update is off-policy without being corrected",
    .advice = "set algo.tis = token_truncate (truncated importance sampling corrects it); check "
              "model.dtype and run.weight_sync",
    .keys = {"algo.tis", "model.dtype", "run.weight_sync"}},
  [DK_LOSS_ZERO] = {
    .name = "loss_zero", .title = "Policy loss stuck at 0",
    .causes = "zero advantages: the rewards within every group are equal (all right or all wrong), "
              "so the group baseline leaves no signal; or dynamic sampling kept no group",
    .advice = "bring post-SFT accuracy into the middle (sft.steps, sft.lr), pick the task's "
              "difficulty (task.digits_max), raise algo.group_size or rollout.temperature, turn on "
              "algo.dynamic_sampling",
    .keys = {"sft.steps", "sft.lr", "task.digits_max", "algo.group_size", "rollout.temperature",
             "algo.dynamic_sampling"}},
  [DK_TOO_EASY] = {
    .name = "task_too_easy", .title = "Task too easy",
    .causes = "acc near 1 from the first RL steps: most groups are all right and carry no advantage",
    .advice = "harder problems (task.digits_max, task.ops, a dataset in data.train_path), fewer "
              "SFT steps (sft.steps)",
    .keys = {"task.digits_max", "task.ops", "data.train_path", "sft.steps"}},
  [DK_TOO_HARD] = {
    .name = "task_too_hard", .title = "Task too hard",
    .causes = "acc near 0: most groups are all wrong and the policy hardly ever finds a reward",
    .advice = "more SFT (sft.steps, sft.lr), easier problems (task.digits_max), a larger "
              "algo.group_size, a partial reward (reward.format_weight)",
    .keys = {"sft.steps", "sft.lr", "task.digits_max", "algo.group_size", "reward.format_weight"}},
  [DK_SFT_BAND] = {
    .name = "sft_band", .title = "Post-SFT accuracy outside the target band",
    .causes = "below the band SFT was too short or its lr too low and GRPO sees mostly all-wrong "
              "groups; above it the policy already solves most problems and RL has little to learn",
    .advice = "adjust sft.steps / sft.lr (or sft.target_band when the band does not fit the task)",
    .keys = {"sft.steps", "sft.lr", "sft.target_band"}},
};

const char *finding_steps(const struct finding *f, char *buf, size_t len) {
  if (f->step_lo == f->step_hi) snprintf(buf, len, "step %ld", f->step_lo);
  else snprintf(buf, len, "steps %ld-%ld", f->step_lo, f->step_hi);
  return buf;
}
