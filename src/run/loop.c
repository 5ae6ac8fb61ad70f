/* run/loop.c: the phase loop of `rlpt run` (run/loop.h). Every rank runs it; each does
 * the parts its roles own:
 *
 *   restart_load                  resume from [run] restart (an SFT checkpoint: into SFT)
 *   sft_phase_run                 the SFT warm start ([sft] steps); after each SFT step
 *                                 run_sft_stop_check: a signal stops it with a checkpoint
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
 *   eval_in_run (rl, last step)   and the summary: post-SFT vs post-RL pass@1
 *   the count of checkpoints not written ([checkpoint] on_error = continue), if any
 * Every boundary also agrees on the trainer's parameters: NaN/Inf ones stop every rank
 * with exit 2 (no checkpoint can hold them), and so does a checkpoint that could not be
 * written with [checkpoint] on_error = abort. */
#include "run/loop.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "deck/config.h"
#include "io/ckpt.h"
#include "mpi/allreduce.h"
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

/* What every rank learns at a step boundary in one all-reduce: the largest signal any rank
 * got, and whether the trainer's parameters hold a NaN or Inf (the train ranks know; they
 * all hold the whole model). */
struct boundary { int sig, nonfinite; };

static struct boundary boundary_agree(struct run *r) {
  int v[2] = {signals_local(), r->is_train && trainer_params_nonfinite(r->trainer) > 0};
  allreduce_polite(v, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return (struct boundary){.sig = v[0], .nonfinite = v[1]};
}

/* Every rank: 1 when the parameters hold a NaN or Inf (before an eval, which would fail on
 * them). */
static int params_bad(struct run *r) {
  int bad = r->is_train && trainer_params_nonfinite(r->trainer) > 0;
  allreduce_polite(&bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return bad;
}

/* NaN/Inf parameters after `phase` step `step`: rank 0 says so, every rank exits 2. */
static int nonfinite_stop(struct run *r, const char *phase, long step) {
  if (r->is_ctl) {
    fprintf(stderr, "rlpt: run: %s step %ld: parameters are NaN or Inf after the update "
            "(params_nonfinite in the metrics; [optim] eps = 0 makes 0/0 of a parameter whose "
            "gradient and moments are 0, a learning rate too high overflows): training cannot go "
            "on and no checkpoint can hold them; every rank exits 2 (%s/latest names the last "
            "good checkpoint, if any)\n", phase, step, r->cfg->checkpoint.dir);
    fflush(stderr);
  }
  return 2;
}

/* Train ranks write the checkpoint of RL step `step` (0: the SFT -> RL boundary, or with
 * r->sft_ckpt_step set an SFT checkpoint); every rank learns the outcome (one all-reduce:
 * the other roles must know too) and counts it. 0 or the CKPT_ERR_* code. */
static int checkpoint_agreed(struct run *r, long step) {
  int rc = error_agree(MPI_COMM_WORLD, r->is_train ? run_checkpoint(r, step) : 0);
  r->ckpt_tried++;
  r->ckpt_failed += rc != 0;
  return rc;
}

/* After a checkpoint that was not written: with [checkpoint] on_error = abort every rank
 * exits 2 (rank 0 says so; the train root said why); continue goes on (0). */
static int ckpt_abort(struct run *r, const char *what) {
  if (r->cfg->checkpoint.on_error != CKPT_ON_ERROR_ABORT) return 0;
  if (r->is_ctl) {
    fprintf(stderr, "rlpt: run: %s: the checkpoint could not be written ([checkpoint] on_error = "
            "abort): every rank exits 2; the previous checkpoints and %s/latest are unchanged "
            "(free space or fix the directory, then rlpt run DECK --restart latest)\n", what,
            r->cfg->checkpoint.dir);
    fflush(stderr);
  }
  return 2;
}

/* After RL step `step` (0: the SFT -> RL boundary) and its eval, every rank: the
 * [checkpoint] every cadence, then stop when a rank got SIGTERM/SIGUSR1 or [run]
 * stop_after says so, with a checkpoint of this step. The checkpoint comes after
 * the boundary's agreement, a world collective the controller enters only once it has
 * logged the step: a crash can then never leave a checkpoint whose step has no metrics
 * line. 1 = stop, with the exit code in *rc. */
static int stop_check(struct run *r, long step, int *rc) {
  struct boundary b = boundary_agree(r);
  if (b.nonfinite) return *rc = nonfinite_stop(r, step ? "RL" : "SFT (boundary), RL", step), 1;
  int sig = b.sig;
  int stop = sig || (step > 0 && step == r->cfg->run.stop_after);
  int due = step > 0 && run_ckpt_due(r, step);
  int ck = 0;
  char what[64];
  snprintf(what, sizeof what, "RL step %ld", step);
  if (due || (stop && step != r->cfg->run.steps)) ck = checkpoint_agreed(r, step);
  if (ck && (*rc = ckpt_abort(r, what))) return 1;
  if (!stop || step == r->cfg->run.steps) return 0;
  if (r->is_ctl) {
    char path[4200];
    ckpt_step_path(r->cfg->checkpoint.dir, step, path, sizeof path);
    printf("rlpt: run: %s after %s step %ld: checkpoint %s %s; every rank exits 0 "
           "(resume: rlpt run DECK --restart latest)\n", sig ? signals_name(sig) : "[run] stop_after",
           step ? "RL" : "SFT (boundary), RL", step, path,
           ck ? "NOT written ([checkpoint] on_error = continue): a restart takes the one "
                "DIR/latest names" : "written");
    fflush(stdout);
  }
  *rc = 0;
  return 1;
}

/* The SFT steps' agreement runs one step behind, so that the train ranks never wait for
 * the idle ranks' polling (a blocking all-reduce per step doubled a tiny model's SFT step):
 * the all-reduce posted after step s - 1 is completed after step s (by then every rank has
 * long joined it), and the next one posted. The verdict is that of step s - 1's flags. */
static struct boundary sft_agree_lagged(struct run *r, int last) {
  struct boundary b = {0, 0};
  if (r->sft_agree_req != MPI_REQUEST_NULL) {
    wait_request(&r->sft_agree_req, MPI_STATUS_IGNORE);
    b = (struct boundary){.sig = r->sft_agree[0], .nonfinite = r->sft_agree[1]};
  }
  if (last) return b;
  r->sft_agree[0] = signals_local();
  r->sft_agree[1] = r->is_train && trainer_params_nonfinite(r->trainer) > 0;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, r->sft_agree, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                           &r->sft_agree_req));
  return b;
}

void run_sft_stop_end(struct run *r) { sft_agree_lagged(r, 1); }

int run_sft_stop_check(struct run *r, long s, int *rc) {
  struct boundary b = sft_agree_lagged(r, 0);
  if (b.sig || b.nonfinite) run_sft_stop_end(r);  /* stopping: no collective left pending */
  if (b.nonfinite) return *rc = nonfinite_stop(r, "SFT", s), 1;
  long every = r->cfg->sft.checkpoint_every;
  if (!b.sig && !(every > 0 && s % every == 0)) return 0;
  char what[64];
  snprintf(what, sizeof what, "SFT step %ld", s);
  r->sft_ckpt_step = s;
  int ck = checkpoint_agreed(r, 0);
  r->sft_ckpt_step = 0;
  if (ck && (*rc = ckpt_abort(r, what))) return 1;
  if (!b.sig) return 0;
  if (r->is_ctl) {
    char path[4200];
    ckpt_step_path(r->cfg->checkpoint.dir, 0, path, sizeof path);
    printf("rlpt: run: %s after SFT step %ld of %ld: checkpoint %s %s; every rank exits 0 "
           "(resume: rlpt run DECK --restart latest continues SFT at step %ld)\n",
           signals_name(b.sig), s, r->cfg->sft.steps, path,
           ck ? "NOT written ([checkpoint] on_error = continue)" : "written", s + 1);
    fflush(stdout);
  }
  *rc = 0;
  return 1;
}

/* Controller, at the end: the checkpoints that were not written ([checkpoint] on_error =
 * continue), said last so that it is not lost among the step lines. */
static void ckpt_summary(const struct run *r) {
  if (!r->is_ctl || !r->ckpt_failed || r->cfg->checkpoint.on_error != CKPT_ON_ERROR_CONTINUE) return;
  const char *dir = r->cfg->checkpoint.dir;
  char latest[4200], name[256] = "";
  snprintf(latest, sizeof latest, "%s/latest", dir);
  FILE *f = fopen(latest, "r");
  if (f && !fgets(name, sizeof name, f)) name[0] = '\0';
  if (f) fclose(f);
  name[strcspn(name, "\n")] = '\0';
  printf("rlpt: WARNING: %d of %d checkpoints could not be written ([checkpoint] on_error = "
         "continue; the reasons are above); ", r->ckpt_failed, r->ckpt_tried);
  if (name[0]) printf("the newest complete one is %s/%s\n", dir, name);
  else printf("there is no checkpoint in %s\n", dir);
  fflush(stdout);
}

/* Controller, resuming: the metrics file cut back to the checkpoint's step (a run killed
 * after it logged more), then reopened for appending; the other writers stay open. */
static void restart_metrics(struct run *r, const struct restart_point *rp) {
  const char *path = r->cfg->log.metrics_path;
  char err[1024];
  if (!path[0]) return;
  metrics_log_close_jsonl(&r->mlog);
  if (restart_trim_metrics(path, rp->step, rp->phase_rl, rp->sft_step) != 0)
    fprintf(stderr, "rlpt: run: WARNING: could not cut %s back to step %ld; appending\n", path, rp->step);
  if (metrics_log_reopen_jsonl(&r->mlog, path, err, sizeof err) != 0)
    die_local("%s", err);
}

/* SFT (from a mid-SFT checkpoint: the rest of it), the post-SFT eval and the boundary
 * check: a fresh run's start. 1 = stop, with the exit code in *rc. */
static int warm_start(struct run *r, struct restart_point *rp, int *rc) {
  if (sft_phase_run(r, rp->active ? rp : NULL, rc)) return 1;
  if (r->cfg->sft.steps > 0 && params_bad(r)) return *rc = nonfinite_stop(r, "SFT", r->cfg->sft.steps), 1;
  run_sync_weights(r);
  r->sft_pass1 = eval_in_run(r, PHASE_SFT, 0);
  /* the train ranks put it into their checkpoints (run/restart.h) */
  wait_bcast(&r->sft_pass1, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return r->cfg->run.steps > 0 && stop_check(r, 0, rc);
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
 * ended the run early, with the exit code in *rc. */
static int rl_steps(struct run *r, long done, int *rc) {
  long S = r->cfg->run.steps, every = r->cfg->eval.every;
  int stopped = 0;
  if (r->mode->begin) r->mode->begin(r);
  for (long s = done + 1; s <= S && !stopped; s++) {
    r->mode->step(r, s);
    if (every > 0 && s % every == 0 && s < S) {
      if (params_bad(r)) {
        *rc = nonfinite_stop(r, "RL", s);
        stopped = 1;
        break;
      }
      eval_in_run(r, PHASE_RL, s);
    }
    stopped = stop_check(r, s, rc);
  }
  if (r->mode->end) r->mode->end(r);
  return stopped;
}

/* Everything after restart_load; the exit code. */
static int run_phases(struct run *r, struct restart_point *rp) {
  long S = r->cfg->run.steps;
  int rc = 0, in_sft = rp->active && rp->sft_step > 0;  /* resuming into SFT */
  if (rp->active && r->is_ctl) restart_metrics(r, rp);
  if (rp->active && !in_sft) r->sft_pass1 = rp->sft_pass1;
  else if (warm_start(r, rp, &rc)) return rc;
  if (S > 0) begin_rl(r, rp);
  if (rp->active && !in_sft) run_sync_weights(r);  /* the restored policy to the rollout ranks */
  if (rp->active && !in_sft && rp->step == S) {
    if (r->is_ctl) printf("restart: the checkpoint is of the last RL step (%ld); nothing left to run\n", S);
    fflush(stdout);
    return 0;
  }
  if (rl_steps(r, rp->active && !in_sft ? rp->step : 0, &rc)) return rc;
  if (S > 0) r->rl_pass1 = eval_in_run(r, PHASE_RL, S);
  if (r->is_ctl) controller_summary(r);
  return 0;
}

int run_loop(struct run *r) {
  struct restart_point rp;
  int rc = restart_load(r, &rp);
  if (rc) return rc;
  r->t_start = clock_seconds();
  r->sft_pass1 = r->rl_pass1 = NAN;
  rc = run_phases(r, &rp);
  ckpt_summary(r);
  return rc;
}
