/* run/run.h: the state of one `rlpt run` job, the one struct passed down through the loop
 * (run/loop.c), the mode's step (run/mode.h) and the roles' phases; no global mutable
 * state. Who sends what to whom is run/route.h; what every rank reports to the
 * controller, run/partial.h. */
#ifndef RLPT_RUN_H
#define RLPT_RUN_H

#include <stdint.h>

#include "deck/config.h"
#include "model/params.h"
#include "model/tp.h"
#include "mpi/comm.h"
#include "rl/difficulty.h"
#include "rl/experience.h"
#include "rl/reward.h"
#include "run/metrics_log.h"
#include "run/threads.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"

struct trainer;
struct rollout_engine;
struct reward_model;
struct weight_sync;
struct mode_ops;
struct doctor_watch;
struct pref_state;
struct async_state;
struct progress;
struct env;
struct sandbox;

/* Local inbox slots: messages a rank sends to itself (run/route.h). */
enum run_box { BOX_PROMPTS, BOX_SAMPLES, BOX_REWARDS, BOX_COUNT };

struct run {
  const struct config *cfg;
  const char *deck_path;
  const struct mode_ops *mode;      /* the step of [run] mode (run/mode.h) */
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
  struct tp_group rtp;              /* rollout_tp > 1: this engine's TP group (run/tp_run.h) */
  struct rollout_engine *engine;
  struct env *env;                  /* rollout ranks with [env] enabled: the tools (env/episode.h) */
  struct sandbox *env_sandbox;      /* its python tool's sandbox, or NULL */
  struct reward_model *rm;          /* reward ranks: [reward] rm_path (rl/reward_model.h), or NULL */
  struct weight_sync *wsync;        /* weight_comm members: the sync path, from the first sync */
  struct async_state *async;        /* separate_async: the schedule and the train ranks' buffer
                                       (run/async_step.h); NULL in sync mode */
  int64_t weight_version;           /* of the weights the rollout ranks hold */
  struct sample_batch box[BOX_COUNT];
  double *partial;                  /* this rank's metrics partial of the current phase */
  int partial_len;                  /* PS_LEN(metric_fields_len) doubles (run/partial.h) */
  /* controller */
  struct metrics_log mlog;
  double t_start;
  double sft_pass1, rl_pass1;       /* greedy pass@1 after SFT and at the end (NaN: not run) */
  int ds_warned;                    /* dynamic sampling fell short once (warned on the console) */
  struct difficulty diff;           /* every rank: the difficulty filter (run/difficulty_sync.h) */
  long diff_skipped;                /* controller: draws the filter skipped this step */
  int diff_warned;                  /* controller: the filter ran out of draws once (warned) */
  struct doctor_watch *watch;       /* the doctor's checks on each RL line (monitor/watch.h);
                                       created at the first one */
  double t_ckpt_last;               /* train dp 0: seconds of the last checkpoint, reported in
                                       the next RL step's line (it is written after the log) */
  struct pref_state *pref;          /* preference runs (run/pref_mode.h): the pairs; NULL otherwise */
  struct tb_events samples_tb;      /* train dp 0: [log] tensorboard_dir's samples file (run/
                                       samples_log.h); .f NULL: none */
  long sft_ckpt_step;               /* train ranks, while an SFT checkpoint is written: its SFT
                                       step (run/restart.h); 0 otherwise */
  int ckpt_tried, ckpt_failed;      /* every rank: checkpoints attempted, and not written
                                       (agreed; the end-of-run warning) */
  int nonfinite_warned;             /* controller: skipped-update warnings printed so far */
  MPI_Request sft_agree_req;        /* every rank: the SFT steps' pending agreement (run/loop.c) */
  int sft_agree[2];                 /* its buffer: signal, NaN/Inf parameters */
  struct progress *progress;        /* controller: the RL step's stage markers (run/progress.h) */
  struct pregen *pregen;            /* colocate_async: the batch generated ahead (run/pregen.h) */
};

#endif
