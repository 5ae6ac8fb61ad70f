/* run/run.h: the state of one `rlpt run` job — the one struct passed down through
 * the controller and the role loops (no global mutable state).
 *
 * Sync mode, per RL step k (every rank runs run_rl_step; each does the parts
 * its roles own, in this order):
 *   controller  prompts (k-1)*P .. k*P-1 of the train split (later rounds:
 *               dynsamp_prompt_id), split into contiguous slices, one per
 *               rollout engine instance                              -> rollout
 *   rollout     G samples per prompt (rollout_generate)             -> reward
 *               (instance i sends to reward rank i % reward ranks)
 *   reward      reward_score_batch; keeps the round's groups (all of them, or
 *               with [algo] dynamic_sampling those with a reward spread)
 *   (dynamic sampling: each reward rank sends its kept group numbers to the
 *   controller, which broadcasts them to every rank; while fewer than P are kept
 *   and rounds are left, all of the above runs again on P new prompts: rl/dynsamp.h)
 *   rollout     its metrics partial to the controller, then the weight sync
 *   reward      the first min(P, kept) groups, renumbered to their slots 0..n-1,
 *               each whole to train DP rank run_slot_dp(n, slot)     -> train
 *               then its metrics partial
 *   train       trainer_rl_step (DP all-reduce inside), weight broadcast over
 *               weight_comm from its rank 0 (train dp 0; NCCL or MPI: run/weight_sync.c),
 *               metrics partial
 * Who sends what to whom is a pure function of the layout (and of the kept
 * groups every rank was told), so every receiver knows its senders; the
 * reward -> train batches move in (DP rank, reward rank) order, which cannot
 * deadlock when a rank is both. A message whose sender and receiver are the same rank
 * (colocated layout, or a rank with several roles) moves through the local
 * inbox instead of MPI, so one code path serves both layouts.
 *
 * Watchdog: the controller collects every rank's partial of a step (or SFT
 * step, or eval) with a deadline of [run] phase_timeout_s. Ranks report as soon
 * as their part of the step is done (rollout before the weight sync), so the
 * earliest pipeline stage that has not reported is the stalled one; the
 * controller names it (role, rank, phase) and aborts the job. With dynamic
 * sampling the controller also waits, with the same deadline, for the kept
 * groups of each round, naming the reward rank that did not send them. */
#ifndef RLPT_RUN_H
#define RLPT_RUN_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "deck/config.h"
#include "model/params.h"
#include "mpi/comm.h"
#include "rl/dynsamp.h"
#include "rl/experience.h"
#include "rl/reward.h"
#include "run/metrics.h"
#include "run/threads.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"

struct trainer;
struct rollout_engine;
struct reward_model;
struct weight_sync;

/* Local inbox slots (messages a rank sends to itself). */
enum run_box { BOX_PROMPTS, BOX_SAMPLES, BOX_REWARDS, BOX_COUNT };

/* Slots of a metrics partial (doubles). Up to PS_MAX_BEGIN they are summed over
 * ranks; from PS_MAX_BEGIN to PS_TRAIN_BEGIN they are maxed; the block from
 * PS_TRAIN_BEGIN (metric_fields order) is the trainer's, taken from train dp 0. */
enum part_slot {
  PS_STEP, PS_RANK, PS_KIND,   /* header (not merged) */
  PS_ROUNDS, PS_FILTERED, PS_SELECTED,  /* dynamic sampling: set by the controller on the merged partial */
  PS_N, PS_R_SUM, PS_R2_SUM, PS_CORRECT, PS_LEN_SUM, PS_TRUNC, PS_NONFINITE,
  PS_PART_SUM, PS_PART_CONST = PS_PART_SUM + REWARD_NCOMPONENTS, PS_GROUPS = PS_PART_CONST + REWARD_NCOMPONENTS,
  PS_GEN_TOK, PS_LAG_SUM, PS_TRAINED,
  /* eval */
  PS_EV_GREEDY_N, PS_EV_GREEDY_OK, PS_EV_BAND_N, PS_EV_BAND_OK, PS_EV_N, PS_EV_PASS1, PS_EV_PASSK,
  PS_MAX_BEGIN,
  PS_LEN_MAX = PS_MAX_BEGIN, PS_T_GEN, PS_T_REWARD, PS_LPDIFF_ROLLOUT, PS_LAG_MAX, PS_VERSION,
  PS_HAS_TRAIN,
  PS_TRAIN_BEGIN
};
#define PS_LEN(nfields) (PS_TRAIN_BEGIN + (nfields))

enum part_kind { PK_RL, PK_SFT, PK_EVAL };

struct run {
  const struct config *cfg;
  const char *deck_path;
  struct comms comms;
  struct threads_info threads;
  struct tokenizer tok;
  struct task task;
  struct reward_cfg rcfg;
  struct model_config mc;
  int is_ctl, is_rollout, is_reward, is_train;
  int *rollout_world, *reward_world, *train_world; /* role-local rank -> world rank
                                                      (train: by dp, tp = pp = 0) */
  /* role state */
  struct trainer *trainer;          /* train ranks */
  struct model *rmodel;             /* rollout ranks: the weights generation uses */
  struct rollout_engine *engine;
  struct reward_model *rm;          /* reward ranks: [reward] rm_path (rl/reward_model.h), or NULL */
  struct weight_sync *wsync;        /* weight_comm members: the sync path, from the first sync */
  int64_t weight_version;           /* of the weights the rollout ranks hold */
  struct sample_batch box[BOX_COUNT];
  double *part;                     /* this rank's partial of the current phase */
  int part_len;
  /* controller */
  struct metrics_log mlog;
  double t_start;
  double sft_pass1, rl_pass1;       /* greedy pass@1 after SFT and at the end (NaN: not run) */
  int ds_warned;                    /* dynamic sampling fell short once (warned on the console) */
  double t_ckpt_last;               /* train dp 0: seconds of the last checkpoint, reported in
                                       the next RL step's line (it is written after the log) */
};

/* Append the first groups of this rank's trained samples to [log] samples_path every
 * [log] samples_every steps (train DP rank 0; run/samples_log.c). */
void samples_log_write(const struct run *r, const struct sample_batch *b, long step);

/* ---- routing (run/route.c) ------------------------------------------------------- */
/* Slice [lo, hi) of n items for part i of parts (contiguous, sizes differ by at most 1). */
long run_slice_lo(long n, int parts, int i);
/* The part i (0..parts-1) of run_slice_lo whose slice holds item j of n. */
int run_slice_of(long n, int parts, long j);
/* Rollout instance that generates group g of a round; reward rank that scores instance i;
 * train DP rank that trains slot j of a trained batch of n groups. */
int run_group_instance(const struct run *r, long g);
int run_instance_reward(const struct run *r, int instance);
int run_slot_dp(const struct run *r, long n, long j);
/* Send batch b (emptied) to world rank dest: MPI, or the local inbox when dest is this rank. */
void run_send(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag);
/* Receive one batch from world rank src (local inbox when src is this rank) and append it
 * to out. A transfer error is fatal (die_local). */
void run_recv(struct run *r, struct sample_batch *out, int src, enum run_box box, int tag);
/* This rank's partial: reset (NaN in the max block and the trainer block, 0 elsewhere). */
void run_part_reset(struct run *r, long step, enum part_kind kind);
/* Send this rank's partial to the controller (world rank 0; kept locally on rank 0). */
void run_part_report(struct run *r);

/* Index of a metric in metric_fields (a missing name is a programming error: die_local). */
int run_metric_index(const char *name);

/* ---- the phases (run/sync_step.c, role_train.c, run/eval.c, run/controller.c) --------------- */
/* Train ranks: the SFT phase, one partial per step from train dp 0. */
int run_sft(struct run *r);
/* Weight broadcast over weight_comm (train dp 0 -> rollout ranks); the rollout engine
 * sees the new version. Over NCCL device to device when every member runs on a GPU of
 * its own (and [run] weight_sync = auto), else over MPI through host memory; the path
 * is agreed at the first call (run/weight_sync.c). t_sync / sync_gbps go into the train
 * root's partial. run_sync_free: the NCCL communicator (teardown). */
void run_sync_weights(struct run *r);
void run_sync_free(struct run *r);
/* Train ranks: a checkpoint is due after RL step `step`; write it (run/checkpoint.c). */
int run_ckpt_due(const struct run *r, long step);
void run_checkpoint(struct run *r, long step);
/* One RL step on every rank. */
void run_rl_step(struct run *r, long step);
/* The training loop: SFT, post-SFT eval, RL steps with evals, summary. Every rank. */
int run_loop(struct run *r);

/* [BOS] prompt as the prompt tokens of s. 0, or -1 (unencodable or no memory). */
int run_prompt_tokens(const struct run *r, const struct task_prompt *p, struct sample *s);

/* Controller: the prompts of generation round `round` of the step to the rollout engines. */
void controller_send_prompts(struct run *r, long step, int round);
/* Controller, dynamic sampling: the kept groups of this round from every reward rank that
 * scored some (mine, n_mine: the controller's own when it is one) within [run]
 * phase_timeout_s (else the watchdog names the missing rank), ascending into
 * out[1..], their count into out[0]. */
void controller_gather_kept(struct run *r, long step, const int32_t *mine, int n_mine, int32_t *out);
/* Controller (world rank 0): collect the partials of one phase from `expect` (world-rank
 * mask as a char array, 1 = expected) within [run] phase_timeout_s, merging into merged
 * (PS_LEN doubles). On timeout it names the stalled rank and aborts. */
void controller_collect(struct run *r, const char *expect, const char *phase, long step,
                        double *merged);
/* Controller: turn a merged RL / SFT partial into a metrics line and log it. */
void controller_log_step(struct run *r, const double *merged, enum metrics_phase phase, long step,
                         double step_s);
/* Controller: an eval line from a merged eval partial; returns greedy pass@1. */
double controller_log_eval(struct run *r, const double *merged, enum metrics_phase phase, long step,
                           double eval_s);
/* Controller: say whether post-SFT greedy pass@1 is inside [sft] target_band. */
void controller_band_check(const struct run *r, const double *merged);
/* Controller: post-SFT vs post-RL pass@1 and the gain. */
void controller_summary(const struct run *r);

#endif
