/* rl/metrics.h: one step's metrics, the record the train ranks, the rollout and reward
 * ranks and the controller fill, and the metric field table: the one list of names,
 * units and help that the writers (run/metrics_log.h) and anyone reducing metrics across
 * ranks walk. Names are those of the JSONL lines (README "Metrics"); times are seconds,
 * rates per second.
 *
 * Every number is a double that starts as NaN, meaning "not measured this step". */
#ifndef RLPT_METRICS_H
#define RLPT_METRICS_H

#include <stddef.h>

enum metrics_phase { PHASE_SFT, PHASE_RL };

struct metric_part {
  char *name;   /* owned; written as reward_parts.<name> */
  double value;
};

struct step_metrics {
  long step, weight_version;
  enum metrics_phase phase;
  double time_s;                        /* wall seconds of this step */
  double reward_mean, reward_std, acc;
  int n_parts;
  struct metric_part *parts;            /* mean of each named reward component */
  double resp_len_mean, resp_len_max, truncated_frac;
  double kl, entropy, pg_loss, pg_clipfrac_low, pg_clipfrac_high, ratio_mean, grad_norm, lr;
  double logprob_diff_max, lag_mean, lag_max, drop_ratio, tis_clipfrac;
  double buffer_groups, idle_train, idle_rollout;  /* separate_async (run/async_step.c) */
  double weight_sync_overlap_frac;                /* free-running separate_async (run/async_free.c) */
  double rss_train_gb, rss_rollout_gb;
  double logprob_diff_mean, logprob_diff_frac;       /* the mismatch's mean and share past 1e-3 */               /* peak resident memory, max over the role's ranks */
  double version_mixed_frac, stale_kept;             /* separate_async in_flight: trained samples spanning versions */
  double groups_filtered, skipped_nonfinite, params_nonfinite, reward_nonfinite, reward_parts_const_frac;
  double reward_errors;                  /* failed sandbox starts and [reward] command requests */
  double gen_rounds, groups_trained;     /* dynamic sampling: generation rounds, groups in the update */
  double prompts_filtered;              /* difficulty filter: draws skipped this step */
  double sft_generated, sft_kept;       /* rejection SFT: a round's samples, those kept */
  double sc_label_acc;                  /* self_consistency: majority answers the reference accepts */
  double t_gen, t_reward, t_ref, t_train, t_sync, t_ckpt;
  double gen_tok_per_s, train_tok_per_s, sync_gbps, sync_mb, mfu;
  /* preference steps ([algo] name = dpo | ipo | rm; train/pref_step.h): means over the pairs */
  double pref_loss, pref_chosen, pref_rejected, pref_margin, pref_acc, pref_eval_acc;
  double sandbox_exec_per_s;             /* code verifier: sandbox executions per second */
  double num_turns_mean, tool_calls, tool_errors, t_tool;  /* [env] multi-turn rollouts */
  /* eval lines only (has_eval = 1) */
  int has_eval;
  int eval_k;
  double eval_pass1, eval_passk;        /* written as eval_pass@1, eval_pass@k */
};

/* The double fields after time_s, in output order (time_s itself is first). tb is the
 * field's TensorBoard tag (run/metrics_tb.h): veRL's name where veRL logs the same
 * quantity (critic/score/mean, response_length/clip_ratio, actor/kl_loss, actor/entropy,
 * actor/pg_loss, actor/grad_norm, actor/lr, timing_s/gen, timing_s/update_actor,
 * timing_s/update_weights, timing_s/save_checkpoint, perf/mfu/actor, ...), else the
 * field's own name under the nearest veRL group. */
struct metric_field {
  const char *name;
  size_t offset;       /* of the double in struct step_metrics */
  const char *tb;      /* TensorBoard tag */
  const char *help;    /* with the unit */
};
extern const struct metric_field metric_fields[];
extern const int metric_fields_len;
/* The i-th field of m, to write / to read. */
double *metrics_field(struct step_metrics *m, int i);
double metrics_field_value(const struct step_metrics *m, int i);

/* Every number NaN, step 0, no parts, no eval. */
void metrics_init(struct step_metrics *m);
void metrics_free(struct step_metrics *m);
/* dst = a deep copy of src (dst's parts freed first). Returns 0, or -1 on allocation
 * failure (dst then holds no parts). */
int metrics_copy(struct step_metrics *dst, const struct step_metrics *src);
/* Set (or add) reward_parts.<name>. Returns 0, or -1 on allocation failure. */
int metrics_set_part(struct step_metrics *m, const char *name, double value);
/* "sft" / "rl". */
const char *metrics_phase_name(enum metrics_phase p);

#endif
