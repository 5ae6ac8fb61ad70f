/* run/sft_phase.c: the SFT warm start of a run (run/sft_phase.h). The train ranks run it on their own
 * (each DP rank packs its contiguous share of every step's global batch from
 * the task's train split, train/trainer.h's SFT data path); train dp 0 reports each
 * step's metrics to the controller, which logs a `phase sft` line and watches
 * the step's deadline. The other ranks take part in each step's stop check (run/loop.h
 * run_sft_stop_check: a signal stops SFT at the next step with a checkpoint) and, with
 * [sft] source = rejection, the rollout ranks generate each round's examples
 * (run/rejection_sft.h); then all wait for the weight broadcast that follows SFT. A restart
 * from an SFT checkpoint continues with the step after it, the trainer's SFT state restored
 * (run/restart.h; not inside rejection SFT, whose pool is not checkpointed). */
#include "run/sft_phase.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "run/controller.h"
#include "run/loop.h"
#include "run/partial.h"
#include "run/rejection_sft.h"
#include "run/restart.h"
#include "run/run.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

/* pool: [sft] source = rejection's examples (run/rejection_sft.h), else NULL: the task's. */
static void sft_train_step(struct run *r, struct sft_batch *b, long step, struct rejection_pool *pool) {
  long k0, n, B = r->cfg->sft.batch_size;
  char err[512];
  trainer_sft_share(B, r->comms.place.dp, r->comms.counts.train_dp, &k0, &n);
  int rc = pool ? rejection_sft_batch(pool, b, B, step, k0, n, r->mc.max_seq, err, sizeof err)
                : trainer_sft_batch_from_task(b, r->cfg, &r->task, &r->tok, r->mc.max_seq, step, k0, n,
                                              err, sizeof err);
  if (rc) die_local("SFT step %ld: %s", step, err);
  struct step_metrics m;
  metrics_init(&m);
  int empty = pool && pool->kept.n == 0;  /* a rejection round that kept nothing */
  if (!empty && trainer_sft_step(r->trainer, b->tokens, b->cu_seqlens, b->mask, b->nseq, &m) != 0)
    die_local("SFT step %ld failed", step);
  rejection_sft_metrics(pool, &m);
  if (r->comms.place.dp == 0) {
    for (int i = 0; i < metric_fields_len; i++) r->partial[PS_TRAIN_BEGIN + i] = *metrics_field(&m, i);
    r->partial[PS_HAS_TRAIN] = 1;
  }
  metrics_free(&m);
}

int sft_phase_run(struct run *r, struct restart_point *rp, int *rc) {
  long S = r->cfg->sft.steps, done = rp ? rp->sft_step : 0;
  int stopped = 0;
  if (S <= 0) return 0;
  r->sft_agree_req = MPI_REQUEST_NULL;  /* no lagged stop agreement yet (run/loop.h) */
  struct sft_batch b;
  sft_batch_init(&b);
  if (r->is_train) trainer_begin_sft(r->trainer);
  if (r->is_train && rp) restart_apply_sft(r, rp);
  int train0 = r->train_world[0];
  struct rejection_pool *pool = rejection_pool_new(r);
  char *expect = calloc_check((size_t)r->comms.world_size, 1);
  double *q = malloc_check(sizeof(double) * (size_t)r->partial_len);
  expect[train0] = 1;
  if (r->is_ctl) {
    r->mlog.total_steps = S;
    printf("sft: %ld steps of %ld examples (lr %g, warm-up %ld) on %d train rank(s)%s\n", S,
           r->cfg->sft.batch_size, r->cfg->sft.lr, r->cfg->sft.warmup_steps, r->comms.counts.train,
           done ? ", continuing after the checkpoint's step" : "");
    fflush(stdout);
  }
  for (long s = done + 1; s <= S && !stopped; s++) {
    double t0 = clock_seconds();
    rejection_sft_round(r, pool, s - 1);
    partial_reset(r, s, PK_SFT);
    if (r->is_train) {
      /* trainer_sft_example keys examples by the 0-based step */
      sft_train_step(r, &b, s - 1, pool);
      if (r->comms.world_rank == train0) partial_report(r);
    }
    if (r->is_ctl) {
      controller_collect(r, expect, "sft", s, q);
      controller_log_step(r, q, PHASE_SFT, s, clock_seconds() - t0);
    }
    /* every rank: a signal stops SFT here (the last step's boundary is the SFT -> RL one) */
    if (s < S) stopped = run_sft_stop_check(r, s, rc);
  }
  if (!stopped) run_sft_stop_end(r);
  rejection_pool_free(pool);
  free(expect);
  free(q);
  sft_batch_free(&b);
  return stopped;
}
