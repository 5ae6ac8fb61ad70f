/* rl/metrics.c: one step's metrics record and the metric field table (rl/metrics.h). */
#include "rl/metrics.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define F(field, tb_, help_) \
  {.name = #field, .offset = offsetof(struct step_metrics, field), .tb = tb_, .help = help_}
const struct metric_field metric_fields[] = {
    F(reward_mean, "critic/score/mean", "mean reward of the step's samples"),
    F(reward_std, "critic/score/std", "standard deviation of the step's rewards"),
    F(acc, "critic/acc", "fraction of samples the verifier accepted"),
    F(resp_len_mean, "response_length/mean", "mean response length (tokens)"),
    F(resp_len_max, "response_length/max", "longest response (tokens)"),
    F(truncated_frac, "response_length/clip_ratio", "fraction of responses cut at max_new_tokens"),
    F(kl, "actor/kl_loss", "KL estimate to the reference policy (nats per token)"),
    F(entropy, "actor/entropy", "mean token entropy of the policy (nats)"),
    F(pg_loss, "actor/pg_loss", "policy-gradient loss"),
    F(pg_clipfrac_low, "actor/pg_clipfrac_low", "fraction of tokens clipped at 1 - clip_low"),
    F(pg_clipfrac_high, "actor/pg_clipfrac_high", "fraction of tokens clipped at 1 + clip_high"),
    F(ratio_mean, "actor/ratio_mean", "mean importance ratio pi / pi_old"),
    F(grad_norm, "actor/grad_norm", "global gradient norm before clipping"),
    F(lr, "actor/lr", "learning rate"),
    F(logprob_diff_max, "training/rollout_logprob_diff_max",
      "max |trainer - rollout| logprob at equal weights (nats)"),
    F(lag_mean, "staleness/mean_lag", "mean weight-version lag of trained samples (versions)"),
    F(lag_max, "staleness/max_lag", "largest weight-version lag of a trained sample (versions)"),
    F(drop_ratio, "staleness/drop_ratio", "fraction of samples dropped as too stale"),
    F(tis_clipfrac, "rollout_corr/tis_clipfrac",
      "fraction of truncated-importance-sampling weights clipped"),
    F(groups_filtered, "training/groups_filtered", "groups filtered out (e.g. equal rewards)"),
    F(gen_rounds, "training/gen_rounds",
      "generation rounds of the step (dynamic sampling resamples)"),
    F(groups_trained, "training/groups_trained",
      "groups in the update (prompts_per_step unless dynamic sampling fell short)"),
    F(skipped_nonfinite, "training/skipped_nonfinite",
      "optimizer steps skipped for a non-finite gradient"),
    F(params_nonfinite, "training/params_nonfinite",
      "policy and critic parameters that are NaN or Inf after the step's updates (0 when healthy)"),
    F(reward_nonfinite, "training/reward_nonfinite", "NaN/Inf rewards replaced by 0"),
    F(reward_parts_const_frac, "training/reward_parts_const_frac",
      "fraction of (group, reward part) pairs constant over the group"),
    F(t_gen, "timing_s/gen", "rollout generation time (s)"),
    F(t_reward, "timing_s/reward", "reward time (s)"),
    F(t_ref, "timing_s/ref", "reference logprob time (s)"),
    F(t_train, "timing_s/update_actor", "training time (s)"),
    F(t_sync, "timing_s/update_weights", "weight broadcast time (s)"),
    F(t_ckpt, "timing_s/save_checkpoint",
      "time of the checkpoint written after the previous step (s)"),
    F(gen_tok_per_s, "perf/gen_tokens_per_s", "generated tokens per second (tokens/s)"),
    F(train_tok_per_s, "perf/train_tokens_per_s", "trained tokens per second (tokens/s)"),
    F(sync_gbps, "perf/update_weights_gbps", "weight broadcast bandwidth (GB/s)"),
    F(mfu, "perf/mfu/actor", "train model FLOPs utilisation (fraction of peak)"),
};
#undef F
const int metric_fields_len = (int)(sizeof metric_fields / sizeof metric_fields[0]);

double *metrics_field(struct step_metrics *m, int i) {
  return (double *)((char *)m + metric_fields[i].offset);
}

double metrics_field_value(const struct step_metrics *m, int i) {
  return *(const double *)((const char *)m + metric_fields[i].offset);
}

void metrics_init(struct step_metrics *m) {
  memset(m, 0, sizeof *m);
  m->phase = PHASE_RL;
  m->time_s = m->eval_pass1 = m->eval_passk = NAN;
  for (int i = 0; i < metric_fields_len; i++) *metrics_field(m, i) = NAN;
}

void metrics_free(struct step_metrics *m) {
  for (int i = 0; i < m->n_parts; i++) free(m->parts[i].name);
  free(m->parts);
  m->parts = NULL;
  m->n_parts = 0;
}

int metrics_copy(struct step_metrics *dst, const struct step_metrics *src) {
  metrics_free(dst);
  *dst = *src;
  dst->parts = NULL;
  dst->n_parts = 0;
  for (int i = 0; i < src->n_parts; i++)
    if (metrics_set_part(dst, src->parts[i].name, src->parts[i].value) != 0) {
      metrics_free(dst);
      return -1;
    }
  return 0;
}

int metrics_set_part(struct step_metrics *m, const char *name, double value) {
  for (int i = 0; i < m->n_parts; i++)
    if (strcmp(m->parts[i].name, name) == 0) {
      m->parts[i].value = value;
      return 0;
    }
  char *nm = strdup(name);
  struct metric_part *p = nm ? realloc(m->parts, (size_t)(m->n_parts + 1) * sizeof *p) : NULL;
  if (!p) {
    free(nm);
    return -1;
  }
  p[m->n_parts].name = nm;
  p[m->n_parts].value = value;
  m->parts = p;
  m->n_parts++;
  return 0;
}

const char *metrics_phase_name(enum metrics_phase p) { return p == PHASE_SFT ? "sft" : "rl"; }

