/* run/loop.c: the phase loop of `rlpt run` (run/loop.h). Every rank runs it; each does
 * the parts its roles own:
 *
 *   restart_load                  resume from [run] restart, or else
 *   sft_phase_run                 the SFT warm start ([sft] steps)
 *   run_sync_weights              the policy to the rollout ranks
 *   eval_in_run (sft, step 0)     post-SFT eval and the [sft] target_band verdict
 *   stop_check (step 0)           checkpoint at the SFT -> RL boundary if stopping
 *   mode->begin
 *   for each RL step s:
 *     mode->step                  prompts -> rollout -> reward -> train -> weight sync ->
 *                                 the metrics line (run/mode.h; sync: run/sync_step.c)
 *     eval_in_run                 every [eval] every steps
 *     stop_check                  [checkpoint] every; a signal or [run] stop_after stops
 *   mode->end
 *   eval_in_run (rl, last step)   and the summary: post-SFT vs post-RL pass@1 */
#include "run/loop.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>

#include "io/ckpt.h"
#include "mpi/wait.h"
#include "run/checkpoint.h"
#include "run/controller.h"
#include "run/eval.h"
#include "run/mode.h"
#include "run/restart.h"
#include "run/run.h"
#include "run/sft_phase.h"
#include "run/signals.h"
#include "run/weight_sync.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"

/* After RL step `step` (0: the SFT -> RL boundary) and its eval, every rank: the
 * [checkpoint] every cadence, then stop when a rank got SIGTERM/SIGUSR1 or [run]
 * stop_after says so, with a checkpoint of this step. The checkpoint comes after
 * signals_agree, a world collective the controller enters only once it has logged the
 * step: a crash can then never leave a checkpoint whose step has no metrics line.
 * 1 = stop. */
static int stop_check(struct run *r, long step) {
  int sig = signals_agree(MPI_COMM_WORLD);
  int stop = sig || (step > 0 && step == r->cfg->run.stop_after);
  int due = step > 0 && run_ckpt_due(r, step);
  if (r->is_train && (due || (stop && step != r->cfg->run.steps))) run_checkpoint(r, step);
  if (!stop || step == r->cfg->run.steps) return 0;
  if (r->is_ctl) {
    char path[4200];
    ckpt_step_path(r->cfg->checkpoint.dir, step, path, sizeof path);
    printf("rlpt: run: %s after %s step %ld: checkpoint %s written; every rank exits 0 "
           "(resume: rlpt run DECK --restart latest)\n", sig ? signals_name(sig) : "[run] stop_after",
           step ? "RL" : "SFT (boundary), RL", step, path);
    fflush(stdout);
  }
  return 1;
}

/* Controller, resuming: the metrics file cut back to the checkpoint's step (a run killed
 * after it logged more), then reopened for appending; the other writers stay open. */
static void restart_metrics(struct run *r, const struct restart_point *rp) {
  const char *path = r->cfg->log.metrics_path;
  char err[1024];
  if (!path[0]) return;
  metrics_log_close_jsonl(&r->mlog);
  if (restart_trim_metrics(path, rp->step, rp->phase_rl) != 0)
    fprintf(stderr, "rlpt: run: WARNING: could not cut %s back to step %ld; appending\n", path, rp->step);
  if (metrics_log_reopen_jsonl(&r->mlog, path, err, sizeof err) != 0)
    die_local("%s", err);
}

/* SFT, the post-SFT eval and the boundary check: a fresh run's start. 1 = stop. */
static int warm_start(struct run *r) {
  sft_phase_run(r);
  run_sync_weights(r);
  r->sft_pass1 = eval_in_run(r, PHASE_SFT, 0);
  /* the train ranks put it into their checkpoints (run/restart.h) */
  wait_bcast(&r->sft_pass1, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return r->cfg->run.steps > 0 && stop_check(r, 0);
}

/* Before the first RL step: the RL phase of the trainer (fresh moments, the schedule,
 * the reference snapshot; a restart's state on top), the controller's ETA reset. */
static void begin_rl(struct run *r, struct restart_point *rp) {
  if (r->is_train) trainer_begin_rl(r->trainer);
  if (r->is_train) restart_apply_rl(r, rp);
  if (r->is_ctl) {
    r->mlog.total_steps = r->cfg->run.steps;
    r->mlog.n_timed = 0;
    r->mlog.sum_step_s = 0;
  }
}

/* The RL steps after `done`, with their evals and stop checks. 1 when a stop check
 * ended the run early. */
static int rl_steps(struct run *r, long done) {
  long S = r->cfg->run.steps, every = r->cfg->eval.every;
  int stopped = 0;
  if (r->mode->begin) r->mode->begin(r);
  for (long s = done + 1; s <= S && !stopped; s++) {
    r->mode->step(r, s);
    if (every > 0 && s % every == 0 && s < S) eval_in_run(r, PHASE_RL, s);
    stopped = stop_check(r, s);
  }
  if (r->mode->end) r->mode->end(r);
  return stopped;
}

int run_loop(struct run *r) {
  struct restart_point rp;
  int rc = restart_load(r, &rp);
  if (rc) return rc;
  r->t_start = clock_seconds();
  r->sft_pass1 = r->rl_pass1 = NAN;
  long S = r->cfg->run.steps;
  if (rp.active) {
    r->sft_pass1 = rp.sft_pass1;
    if (r->is_ctl) restart_metrics(r, &rp);
  } else if (warm_start(r)) {
    return 0;
  }
  if (S > 0) begin_rl(r, &rp);
  if (rp.active) run_sync_weights(r);  /* the restored policy to the rollout ranks */
  if (rp.active && rp.step == S) {
    if (r->is_ctl) printf("restart: the checkpoint is of the last RL step (%ld); nothing left to run\n", S);
    fflush(stdout);
    return 0;
  }
  if (rl_steps(r, rp.active ? rp.step : 0)) return 0;
  if (S > 0) r->rl_pass1 = eval_in_run(r, PHASE_RL, S);
  if (r->is_ctl) controller_summary(r);
  return 0;
}
