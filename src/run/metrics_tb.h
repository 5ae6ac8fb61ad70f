/* run/metrics_tb.h: a metrics line (rl/metrics.h) as TensorBoard scalars, one event at
 * the line's step in the controller's event file ([log] tensorboard_dir). Finite values
 * only, as float32 (a JSONL null has no point); the tags:
 *   RL step lines  each field under its table tag (metric_fields[].tb), time_s as
 *                  timing_s/step, weight_version as training/weight_version,
 *                  reward_parts.<name> as critic/reward_parts/<name>, and veRL's
 *                  actor/pg_clipfrac = pg_clipfrac_low + pg_clipfrac_high (the tokens
 *                  clipped on either side);
 *   SFT lines      the same under sft/ (their steps count SFT steps, so they do not
 *                  collide with RL steps; pg_loss is the SFT loss there, as in the JSONL);
 *   eval lines     eval/pass@1 (greedy), eval/acc (sampled pass@1), eval/pass@k,
 *                  eval/k, the rest under eval/ (step 0: the post-SFT eval).
 * The JSONL keeps its own names. */
#ifndef RLPT_METRICS_TB_H
#define RLPT_METRICS_TB_H

#include "io/tb_events.h"
#include "rl/metrics.h"

#define METRICS_TB_STEP_TIME "timing_s/step"
#define METRICS_TB_VERSION "training/weight_version"
#define METRICS_TB_PARTS "critic/reward_parts/"
#define METRICS_TB_CLIPFRAC "actor/pg_clipfrac"

/* Write m's scalars as one event. Returns 0, or -1 (errno set). */
int metrics_tb_write(const struct tb_events *w, const struct step_metrics *m, double wall_time);

#endif
