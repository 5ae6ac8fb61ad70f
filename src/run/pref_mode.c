/* run/pref_mode.c: the step of a preference run (run/pref_mode.h, run/mode.h). */
#include "run/pref_mode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/model_h5.h"
#include "model/device.h"
#include "run/controller.h"
#include "run/mode.h"
#include "run/partial.h"
#include "run/run.h"
#include "run/weight_sync.h"
#include "train/pref_step.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

struct pref_state {
  struct pref_set set;
  struct sft_batch batch, eval;  /* train ranks: this step's pairs, this rank's held-out share */
  char *expect;                   /* the controller waits for train dp 0 only */
  double *merged;
};

/* The trainer would run on a device ([run] device; a refusal is left to the trainer's setup). */
static int on_device(const struct config *cfg) {
  char msg[256];
  const struct backend_ops *ops = device_backend(cfg->run.device, cfg->model.dtype, msg, sizeof msg);
  return ops && ops->upload;
}

int pref_mode_setup(struct run *r, char *err, size_t errlen) {
  r->pref = calloc(1, sizeof *r->pref);
  if (!r->pref) return snprintf(err, errlen, "out of memory"), 1;
  const struct chat_template *chat = r->task.chat ? &r->task.chat_tpl : NULL;
  int rc = pref_load(&r->pref->set, r->cfg, chat, r->comms.world_rank == 0 ? stderr : NULL, err, errlen);
  if (!rc) rc = pref_check_fit(&r->pref->set, &r->tok, r->mc.max_seq, err, errlen);
  if (!rc && r->cfg->algo.dpo_ref[0])
    rc = trainer_check_file(&r->mc, r->cfg->algo.dpo_ref, "[algo] dpo_ref = ", err, errlen);
  if (!rc && r->cfg->algo.name == ALGO_RM && !r->cfg->algo.rm_train_body && on_device(r->cfg)) {
    snprintf(err, errlen, "[algo] rm_train_body = false: the body's gradients are zeroed on the host, so it "
             "runs on the CPU trainer only: set [run] device = cpu");
    rc = 2;
  }
  return rc;
}

void pref_mode_free(struct run *r) {
  if (!r->pref) return;
  pref_free(&r->pref->set);
  sft_batch_free(&r->pref->batch);
  sft_batch_free(&r->pref->eval);
  free(r->pref->expect);
  free(r->pref->merged);
  free(r->pref);
  r->pref = NULL;
}

/* Train ranks: [algo] dpo_ref replaces the reference the trainer snapshotted (a restart
 * restored that same file's weights). */
static void load_ref(struct run *r) {
  struct trainer *t = r->trainer;
  if (!r->cfg->algo.dpo_ref[0] || !t->ref.host) return;
  if (model_h5_read_params(r->cfg->algo.dpo_ref, &t->policy.table, t->ref.host))
    die_local("[algo] dpo_ref = %s: could not read /model (see above)", r->cfg->algo.dpo_ref);
  weights_host_written(&t->ref);
}

static void pref_begin(struct run *r) {
  struct pref_state *p = r->pref;
  p->expect = calloc_check((size_t)r->comms.world_size, 1);
  p->expect[r->train_world[0]] = 1;
  p->merged = malloc_check(sizeof(double) * (size_t)r->partial_len);
  if (!r->is_train) return;
  load_ref(r);
  long k0, n;
  char err[512];
  trainer_sft_share(p->set.n[TASK_EVAL], r->comms.place.dp, r->comms.counts.train_dp, &k0, &n);
  if (pref_batch_build(&p->eval, &p->set, &r->tok, TASK_EVAL, (uint64_t)k0, n, err, sizeof err))
    die_local("preference eval pairs: %s", err);
}

static void pref_end(struct run *r) {
  free(r->pref->expect);
  free(r->pref->merged);
  r->pref->expect = NULL;
  r->pref->merged = NULL;
}

/* An eval follows this step (run/loop.c), or the run ends with one. */
static int eval_step(const struct run *r, long step) {
  long every = r->cfg->eval.every;
  return step == r->cfg->run.steps || (every > 0 && step % every == 0);
}

/* Train ranks: the step's update (and on eval steps the held-out accuracy). */
static void train_share(struct run *r, long step) {
  struct pref_state *p = r->pref;
  long P = r->cfg->algo.prompts_per_step, k0, n;
  char err[512];
  trainer_sft_share(P, r->comms.place.dp, r->comms.counts.train_dp, &k0, &n);
  uint64_t first = (uint64_t)(step - 1) * (uint64_t)P + (uint64_t)k0;
  if (pref_batch_build(&p->batch, &p->set, &r->tok, TASK_TRAIN, first, n, err, sizeof err))
    die_local("step %ld: %s", step, err);
  struct step_metrics m;
  metrics_init(&m);
  if (trainer_pref_step(r->trainer, &p->batch, &m) != 0) die_local("preference step %ld failed", step);
  if (eval_step(r, step) && trainer_pref_eval(r->trainer, &p->eval, &m.pref_eval_acc) != 0)
    die_local("preference eval at step %ld failed", step);
  if (r->comms.place.dp == 0)
    for (int i = 0; i < metric_fields_len; i++) r->partial[PS_TRAIN_BEGIN + i] = *metrics_field(&m, i);
  r->partial[PS_HAS_TRAIN] = 1;
  r->partial[PS_VERSION] = (double)r->trainer->weight_version;
  metrics_free(&m);
}

static void pref_step(struct run *r, long step) {
  double t0 = clock_seconds();
  partial_reset(r, step, PK_RL);
  if (r->is_train) train_share(r, step);
  if (eval_step(r, step)) run_sync_weights(r);  /* the loop's generation eval reads them */
  if (r->comms.world_rank == r->train_world[0]) partial_report(r);
  if (r->is_ctl) {
    controller_collect(r, r->pref->expect, "preference step", step, r->pref->merged);
    controller_log_step(r, r->pref->merged, PHASE_RL, step, clock_seconds() - t0);
  }
}

const struct mode_ops pref_mode_ops = {
  .name = "preference", .begin = pref_begin, .end = pref_end, .step = pref_step};
