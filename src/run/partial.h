/* run/partial.h: the metrics partial, what every rank reports to the controller for one
 * phase (an RL step, an SFT step, an eval): a flat array of doubles the controller
 * merges slot by slot into one metrics line (run/controller.h).
 *
 * Up to PS_MAX_BEGIN the slots are summed over ranks; from PS_MAX_BEGIN to PS_TRAIN_BEGIN
 * they are maxed; the block from PS_TRAIN_BEGIN (rl/metrics.h metric_fields order) is the
 * trainer's, taken from train dp 0. */
#ifndef RLPT_PARTIAL_H
#define RLPT_PARTIAL_H

#include "rl/reward.h"

struct run;

enum partial_slot {
  PS_STEP, PS_RANK, PS_KIND,   /* header (not merged) */
  PS_ROUNDS, PS_FILTERED, PS_SELECTED,  /* dynamic sampling: set by the controller on the merged partial */
  PS_PROMPTS_FILTERED,                  /* difficulty filter: set by the controller likewise */
  PS_N, PS_R_SUM, PS_R2_SUM, PS_CORRECT, PS_LEN_SUM, PS_TRUNC, PS_NONFINITE,
  PS_PART_SUM, PS_PART_CONST = PS_PART_SUM + REWARD_NCOMPONENTS,
  PS_GROUPS = PS_PART_CONST + REWARD_NCOMPONENTS,
  PS_GEN_TOK, PS_LAG_SUM, PS_TRAINED,
  PS_SC_LABELED, PS_SC_LABEL_OK,       /* self_consistency: groups with a reference, majority right */
  PS_REWARD_ERRORS, PS_EXECS, PS_ERR_SOURCES,  /* PS_ERR_SOURCES: ranks with a sandbox or command */
  PS_EPISODES, PS_TURNS, PS_TOOL_CALLS, PS_TOOL_ERRORS, PS_TOOL_S,  /* [env] (env/episode.h) */
  /* eval */
  PS_EV_GREEDY_N, PS_EV_GREEDY_OK, PS_EV_BAND_N, PS_EV_BAND_OK, PS_EV_N, PS_EV_PASS1, PS_EV_PASSK,
  PS_MAX_BEGIN,
  PS_LEN_MAX = PS_MAX_BEGIN, PS_T_GEN, PS_T_REWARD, PS_LPDIFF_ROLLOUT, PS_LAG_MAX, PS_VERSION,
  PS_EXEC_WALL,  /* seconds of sandbox pool runs */
  PS_RSS_TRAIN, PS_RSS_ROLLOUT,  /* peak resident bytes of the train / rollout ranks */
  PS_HAS_TRAIN,
  PS_TRAIN_BEGIN
};
#define PS_LEN(nfields) (PS_TRAIN_BEGIN + (nfields))

enum partial_kind { PK_RL, PK_SFT, PK_EVAL };

/* The timed phases of a step, stamped through partial_time: generation and reward
 * scoring add up over a step's rounds on a rank and are maxed over ranks; the weight
 * sync is the train root's (with its rate); a checkpoint's time goes into the next RL
 * step's line (it is written after the step is logged). The trainer times its own
 * reference and update passes (t_ref, t_train). */
enum run_phase { RUN_PHASE_GEN, RUN_PHASE_REWARD, RUN_PHASE_SYNC, RUN_PHASE_CKPT };

/* This rank's partial: reset (NaN in the max block and the trainer block, 0 elsewhere). */
void partial_reset(struct run *r, long step, enum partial_kind kind);
/* Send this rank's partial to the controller (world rank 0; kept locally on rank 0). */
void partial_report(struct run *r);
/* merged += p, slot by slot (sum block, max block, the trainer block when p has one). */
void partial_merge(const struct run *r, double *merged, const double *p);
/* Add `seconds` of phase `phase` to this rank's partial (the one place phase times land). */
void partial_time(struct run *r, enum run_phase phase, double seconds);
/* Put the trainer's value of metric `name` into this rank's partial (train dp 0). */
void partial_set_train(struct run *r, const char *name, double value);
/* Index of a metric in metric_fields (a missing name is a programming error: die_local). */
int partial_metric_index(const char *name);

#endif
