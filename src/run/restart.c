/* run/restart.c: the run state a checkpoint carries beyond the tensors, resuming a
 * run from it on any layout, and the metrics JSONL continuation (run/restart.h). */
#include "run/restart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/ckpt.h"
#include "run/difficulty_sync.h"
#include "run/async_step.h"
#include "run/run.h"
#include "train/trainer.h"
#include "train/zero.h"
#include "util/error.h"

static void ctrl_put(struct ckpt_state *st, const char *name, double v) {
  if (st->n_ctrl >= CKPT_CTRL_MAX) die_local("restart: more than %d controller values", CKPT_CTRL_MAX);
  snprintf(st->ctrl_name[st->n_ctrl], CKPT_NAME_MAX, "%s", name);
  st->ctrl[st->n_ctrl++] = v;
}

/* The value `name` of st's /controller, or NaN when absent (a checkpoint of another tool). */
static double ctrl_get(const struct ckpt_state *st, const char *name) {
  for (int i = 0; i < st->n_ctrl; i++)
    if (!strcmp(st->ctrl_name[i], name)) return st->ctrl[i];
  return NAN;
}

void restart_fill(const struct run *r, struct ckpt_state *st, long step, int phase_rl) {
  const struct trainer *t = r->trainer;
  uint64_t P = (uint64_t)r->cfg->algo.prompts_per_step;
  int in_sft = !phase_rl && r->sft_ckpt_step > 0;  /* the trainer's state is SFT's */
  st->n_ctrl = 0;
  ctrl_put(st, "phase_rl", phase_rl);
  ctrl_put(st, "trainer_step", phase_rl || in_sft ? (double)t->step : 0);
  ctrl_put(st, "trainer_update", phase_rl || in_sft ? (double)t->update : 0);
  /* NaN never reaches a checkpoint: -1 stands for "no post-SFT eval" */
  ctrl_put(st, "sft_pass1", isfinite(r->sft_pass1) ? r->sft_pass1 : -1);
  ctrl_put(st, "prompts_per_step", (double)P);
  ctrl_put(st, "sft_step", in_sft ? (double)r->sft_ckpt_step : -1);
  if (!phase_rl) st->has_ref = 0;  /* the reference is snapshotted when RL begins */
  st->n_rng = 0;  /* every random draw is keyed by (seed, step, ...): no generator state */
  st->data = (struct ckpt_data_cursor){ .cursor = (uint64_t)step * P, .epoch = 0,
                                        .shuffle_seed = (uint64_t)r->cfg->run.seed };
  /* the difficulty filter's per-prompt rates (freed by the caller after the write) */
  st->has_difficulty = r->diff.on;
  if (r->diff.on && difficulty_save(&r->diff, &st->difficulty, &st->difficulty_len) != 0)
    die_local("out of memory saving the difficulty filter");
  async_ckpt_fill(r, st);  /* separate_async: the scored groups of the steps after this one */
}

/* The checkpoint [run] restart names, into path (rank 0 resolves; the verdict is agreed). */
static int restart_resolve(struct run *r, char *path, size_t len) {
  const char *want = r->cfg->run.restart;
  int rc = 0;
  if (r->comms.world_rank == 0) {
    if (!strcmp(want, "latest")) snprintf(path, len, "%s", r->cfg->checkpoint.dir);
    else rc = ckpt_resolve(want, want, path, len);
  }
  rc = error_agree(MPI_COMM_WORLD, rc);
  if (!rc) MPI_CHECK(MPI_Bcast(path, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD));
  return rc;
}

/* The SFT step of a mid-SFT checkpoint (SFT steps done), else 0 (SFT complete: an RL or a
 * boundary checkpoint, or one written before SFT checkpoints existed). */
static long sft_step_of(const struct ckpt_state *st) {
  double k = ctrl_get(st, "sft_step");
  return isfinite(k) && k > 0 && ctrl_get(st, "phase_rl") == 0 ? (long)k : 0;
}

/* The checkpoint's run state against the deck; the train root prints why not. 0 or 2. */
static int restart_check(const struct run *r, const struct ckpt_state *st, const char *path) {
  double phase = ctrl_get(st, "phase_rl"), P = ctrl_get(st, "prompts_per_step");
  const char *why = NULL;
  char buf[256];
  if (!isfinite(phase) || !isfinite(ctrl_get(st, "trainer_step")))
    why = "it holds no run state (/controller phase_rl, trainer_step): not written by `rlpt run`";
  else if (st->step > r->cfg->run.steps) {
    snprintf(buf, sizeof buf, "it is of RL step %ld but [run] steps = %ld", st->step, r->cfg->run.steps);
    why = buf;
  } else if (P != (double)r->cfg->algo.prompts_per_step) {
    snprintf(buf, sizeof buf, "its run used [algo] prompts_per_step = %g, the deck says %ld (the data "
             "cursor would not continue)", P, r->cfg->algo.prompts_per_step);
    why = buf;
  } else if (phase == 1 && st->data.cursor != (uint64_t)st->step * (uint64_t)P) {
    snprintf(buf, sizeof buf, "/data cursor %llu is not step x prompts_per_step",
             (unsigned long long)st->data.cursor);
    why = buf;
  } else if (phase == 1 && !st->has_optim) {
    why = "it has no /optim (AdamW moments) for an RL step";
  } else if (sft_step_of(st) > r->cfg->sft.steps) {
    snprintf(buf, sizeof buf, "it is of SFT step %ld but [sft] steps = %ld", sft_step_of(st),
             r->cfg->sft.steps);
    why = buf;
  } else if (sft_step_of(st) > 0 && !st->has_optim) {
    why = "it has no /optim (AdamW moments) for an SFT step";
  } else if (sft_step_of(st) > 0 && r->cfg->sft.source == SFT_SOURCE_REJECTION) {
    why = "it stopped inside rejection-sampling SFT, whose round of kept samples is not in a checkpoint "
          "(restart from the run's start or from an RL step's checkpoint)";
  }
  if (why && r->comms.place.role_rank[ROLE_TRAIN] == 0)
    fprintf(stderr, "rlpt: run: restart from %s: %s\n", path, why);
  return why ? 2 : 0;
}

/* What every rank learns of the checkpoint (from the train root, which read it). */
struct restart_summary {
  long step, weight_version, sft_step;
  int phase_rl;
  double sft_pass1;
  char path[4096], desc[512];
};

/* Rank 0: what was restored. */
static void restart_print(const struct run *r, const struct restart_summary *m) {
  printf("restart: %s\nrestart: %s\n", m->path, m->desc);
  if (m->phase_rl)
    printf("restart: phase rl, step %ld (weight_version %ld) done; continuing with RL step %ld of %ld on "
           "%d train rank(s); metrics appended to %s\n", m->step, m->weight_version, m->step + 1,
           r->cfg->run.steps, r->comms.counts.train, r->cfg->log.metrics_path);
  else if (m->sft_step > 0)
    printf("restart: phase sft, step %ld of %ld done; continuing SFT with step %ld on %d train "
           "rank(s); metrics appended to %s\n", m->sft_step, r->cfg->sft.steps, m->sft_step + 1,
           r->comms.counts.train, r->cfg->log.metrics_path);
  else
    printf("restart: phase sft done (post-SFT greedy pass@1 %.3f); starting RL on %d train rank(s); "
           "metrics appended to %s\n", m->sft_pass1, r->comms.counts.train, r->cfg->log.metrics_path);
  fflush(stdout);
}

/* ckpt_read_shards take with train_tp > 1: this rank's shard of full tensor i. */
static void tp_take(void *ctx, int i, const float *x, float *local) {
  trainer_tensor_local(ctx, i, x, local);
}

/* Train ranks: read and check the checkpoint at `where` over the train communicator
 * (the tensors are full logical ones, so any number of train ranks can). 0, 1 or 2. */
static int restart_read(struct run *r, const char *where, struct ckpt_state *st, char *path, size_t len) {
  MPI_Comm tc = r->comms.role_comm[ROLE_TRAIN];
  struct trainer *t = r->trainer;
  /* with train_tp > 1 each rank keeps its shards of the full tensors, read one at a time */
  struct ckpt_read_shards sh = {.local_total = t->policy.table.total, .take = tp_take, .ctx = t,
                                .into = {t->policy.params, t->opt.m, t->opt.v, t->ref.host}};
  const struct ckpt_read_shards *shp = trainer_tp(t) ? &sh : NULL;
  int rc;
  if (!strcmp(r->cfg->run.restart, "latest"))
    rc = ckpt_read_latest_sharded(where, st, &r->mc, tc, path, len, shp);
  else {
    snprintf(path, len, "%s", where);
    rc = ckpt_read_sharded(where, st, &r->mc, tc, shp);
  }
  if (!rc) rc = restart_check(r, st, path);
  return rc;
}

int restart_load(struct run *r, struct restart_point *rp) {
  memset(rp, 0, sizeof *rp);
  rp->sft_pass1 = NAN;
  if (!r->cfg->run.restart[0]) return 0;
  char where[sizeof rp->path];
  int rc = restart_resolve(r, where, sizeof where);
  if (rc) return rc;
  struct ckpt_state *st = r->is_train ? calloc(1, sizeof *st) : NULL;
  struct restart_summary *m = calloc(1, sizeof *m);
  rc = !m || (r->is_train && !st) ? 1 : 0;
  if (!rc && r->is_train) rc = restart_read(r, where, st, m->path, sizeof m->path);
  rc = error_agree(MPI_COMM_WORLD, rc);
  if (!rc && r->is_train) {
    m->step = st->step;
    m->weight_version = st->weight_version;
    m->phase_rl = ctrl_get(st, "phase_rl") == 1;
    m->sft_step = sft_step_of(st);
    m->sft_pass1 = ctrl_get(st, "sft_pass1");
    ckpt_describe(st, m->desc, sizeof m->desc);
  }
  if (!rc) MPI_CHECK(MPI_Bcast(m, (int)sizeof *m, MPI_BYTE, r->train_world[0], MPI_COMM_WORLD));
  if (!rc) rc = difficulty_restore(r, st && st->has_difficulty ? st->difficulty : NULL,
                                   st && st->has_difficulty ? st->difficulty_len : 0);
  if (!rc) {
    rp->active = 1;
    rp->phase_rl = m->phase_rl;
    rp->step = m->phase_rl ? m->step : 0;
    rp->sft_step = m->sft_step;
    rp->sft_pass1 = m->sft_pass1 >= 0 ? m->sft_pass1 : NAN;
    snprintf(rp->path, sizeof rp->path, "%s", m->path);
    r->weight_version = m->weight_version;
    if (r->comms.world_rank == 0) restart_print(r, m);
  }
  if (!rc && r->is_train) {
    struct trainer *t = r->trainer;
    /* with train_tp > 1 the weights, moments and reference were read in place */
    if (st->params) memcpy(t->policy.params, st->params, sizeof(float) * t->policy.table.total);
    t->restored = !st->params && (rp->phase_rl || rp->sft_step > 0);
    t->restored_ref = t->restored && st->has_ref && t->ref.host;
    trainer_host_changed(t);
    t->weight_version = st->weight_version;
    async_ckpt_restore(r, st);  /* separate_async: the buffered groups, for the mode's begin */
    /* restart_apply_rl takes the RL state after trainer_begin_rl, restart_apply_sft the SFT
     * state after trainer_begin_sft */
    if (rp->phase_rl || rp->sft_step > 0) rp->st = st;
  }
  if (!rp->st && st) {
    ckpt_state_free(st);
    free(st);
  }
  free(m);
  return rc;
}

/* The checkpoint holds the full moments whatever the layout that wrote them;
 * this rank keeps its part (all of it, or its ZeRO-1 shard). */
static void restore_moments(const struct trainer *t, const struct model *m, struct adamw *o,
                            const float *full_m, const float *full_v, long adam_t) {
  long lo, hi, off = (long)m->table.trainable;  /* LoRA: the adapters' moments alone */
  zero_opt_range(t->zero, (long)m->table.total - off, t->dp_rank, t->dp_size, &lo, &hi);
  o->t = adam_t;
  if (!full_m) return;  /* read in place (train_tp > 1) */
  memcpy(o->m, full_m + off + lo, sizeof(float) * (size_t)(hi - lo));
  memcpy(o->v, full_v + off + lo, sizeof(float) * (size_t)(hi - lo));
}

void restart_apply_sft(struct run *r, struct restart_point *rp) {
  struct ckpt_state *st = rp->st;
  if (!st || rp->phase_rl) return;
  struct trainer *t = r->trainer;
  restore_moments(t, &t->policy, &t->opt, st->adam_m, st->adam_v, st->adam_t);
  t->step = (long)ctrl_get(st, "trainer_step");
  t->update = (long)ctrl_get(st, "trainer_update");
  trainer_host_changed(t);
  ckpt_state_free(st);
  free(st);
  rp->st = NULL;
}

void restart_apply_rl(struct run *r, struct restart_point *rp) {
  struct ckpt_state *st = rp->st;
  if (!st || !rp->phase_rl) return;
  struct trainer *t = r->trainer;
  size_t n = t->policy.table.total;
  restore_moments(t, &t->policy, &t->opt, st->adam_m, st->adam_v, st->adam_t);
  t->step = (long)ctrl_get(st, "trainer_step");
  t->update = (long)ctrl_get(st, "trainer_update");
  t->weight_version = st->weight_version;
  /* trainer_begin_rl set the reference to the current policy; the run's is the one it had */
  if (t->ref.host && st->ref_params) {
    memcpy(t->ref.host, st->ref_params, sizeof(float) * n);
    weights_host_written(&t->ref);
  }
  if (t->has_critic && st->has_critic) {
    if (model_param_count(&st->critic_mc) != t->critic.table.total)
      die_local("restart: the checkpoint's critic does not match the deck's");
    memcpy(t->critic.params, st->critic_params, sizeof(float) * t->critic.table.total);
    if (st->has_critic_optim) {
      restore_moments(t, &t->critic, &t->critic_opt, st->critic_adam_m, st->critic_adam_v,
                      st->critic_adam_t);
    }
  }
  trainer_host_changed(t);  /* a device trainer takes them up at its next forward and update */
  ckpt_state_free(st);
  free(st);
  rp->st = NULL;
}

/* Whether a metrics line belongs to the part of the run a restart after RL step
 * `step` keeps: every SFT line and, after the SFT -> RL boundary, RL steps and evals <= step;
 * from a mid-SFT checkpoint (sft_step > 0) only the SFT step lines 1..sft_step. */
static int line_kept(const char *line, long step, int phase_rl, long sft_step) {
  cJSON *o = cJSON_Parse(line);
  if (!o) return 0;  /* a torn last line of a killed run */
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
  const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "step");
  int keep = 0;
  if (cJSON_IsString(ph) && cJSON_IsNumber(sp)) {
    int sft = !strcmp(ph->valuestring, "sft");
    if (sft_step > 0) keep = sft && sp->valuedouble >= 1 && sp->valuedouble <= (double)sft_step;
    else if (sft) keep = 1;
    else keep = phase_rl ? sp->valuedouble <= (double)step : 0;
  }
  cJSON_Delete(o);
  return keep;
}

int restart_trim_metrics(const char *path, long step, int phase_rl, long sft_step) {
  if (!path || !path[0]) return 0;
  FILE *f = fopen(path, "r");
  if (!f) return errno == ENOENT ? 0 : -1;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.restart.tmp", path);
  FILE *o = fopen(tmp, "w");
  if (!o) { fclose(f); return -1; }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int err = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] != '\n') break;  /* torn */
    if (line_kept(line, step, phase_rl, sft_step) && fputs(line, o) == EOF) err = 1;
  }
  free(line);
  fclose(f);
  if (fclose(o) != 0) err = 1;
  if (err || rename(tmp, path) != 0) { remove(tmp); return -1; }
  return 0;
}
