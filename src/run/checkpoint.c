/* run/checkpoint.c: the checkpoint cadence of a run. The train ranks write
 * [checkpoint] dir/step_%08d.h5 collectively (io/ckpt.h) every [checkpoint]
 * every RL steps and after the last one: the policy, the AdamW moments and
 * step, the reference policy when there is one, the data cursor (the next RL
 * prompt index), the PPO critic, the run state of run/restart.h (with the difficulty
 * filter's state) and the canonical deck. A failed write follows [checkpoint] on_error (run/loop.c): abort stops the
 * job with exit 2 on every rank, continue warns, trains on and counts it for the
 * end of the run. The directory is checked at start-up, by every rank that writes.
 * With [ranks] train_tp > 1 the policy, its moments and the reference are gathered into full
 * logical tensors one tensor at a time while the file is written (ckpt_write_opts tensor: the
 * file a one-rank run writes, and no rank holds a full copy; run/restart.c reads each rank's
 * shards back the same way). */
#include "run/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "run/partial.h"
#include "run/restart.h"
#include "run/run.h"
#include "train/trainer.h"
#include "train/zero.h"
#include "util/clock.h"
#include "util/error.h"

int run_ckpt_due(const struct run *r, long step) {
  long every = r->cfg->checkpoint.every;
  return step == r->cfg->run.steps || (every > 0 && step % every == 0);
}

/* The full AdamW moments of m for the checkpoint, whose format does not depend
 * on the rank layout: the trainer's own buffers, or with [optim] zero = 1 every
 * DP rank's shard gathered into temporaries (*tmp_m, *tmp_v, freed by the
 * caller after the write; with LoRA, the adapters' moments placed in full-size temporaries
 * whose frozen base part is zero). That costs a transient full-size m and v on every
 * train rank while the checkpoint is written, which ZeRO-1 otherwise avoids. */
static void full_moments(const struct trainer *t, const struct model *m, const struct adamw *o,
                         float **mm, float **vv, float **tmp_m, float **tmp_v) {
  *mm = o->m;
  *vv = o->v;
  size_t off = m->table.trainable;
  if (off) { /* LoRA: the moments of the adapters alone, the frozen base's written as zeros */
    *tmp_m = calloc(m->table.total, sizeof(float));
    *tmp_v = calloc(m->table.total, sizeof(float));
    if (!*tmp_m || !*tmp_v) die_local("out of memory for the checkpoint's AdamW moments");
    memcpy(*tmp_m + off, o->m, sizeof(float) * (m->table.total - off));
    memcpy(*tmp_v + off, o->v, sizeof(float) * (m->table.total - off));
    *mm = *tmp_m;
    *vv = *tmp_v;
    return;
  }
  if (!t->zero) return;
  if (zero_gather_moments(o, (long)m->table.total, t->dp, tmp_m, tmp_v))
    die_local("out of memory gathering the ZeRO-1 AdamW moments for the checkpoint");
  *mm = *tmp_m;
  *vv = *tmp_v;
}

/* ckpt_write_opts tensor with train_tp > 1: full tensor i of the policy, a moment or the
 * reference (buf, laid out by this rank's shard table) gathered over the TP group. */
static void tp_tensor(void *ctx, const float *buf, int i, float *x) {
  trainer_tensor_full(ctx, buf, i, x);
}

int run_checkpoint(struct run *r, long step) {
  struct trainer *t = r->trainer;
  struct ckpt_state st;
  memset(&st, 0, sizeof st);
  float *tmp[4] = {NULL};
  trainer_sync_host(t, 1);  /* the host weights and moments made current */
  st.step = step;
  st.weight_version = t->weight_version;
  st.mc = r->mc;
  st.params = t->policy.params;
  st.has_optim = 1;
  full_moments(t, &t->policy, &t->opt, &st.adam_m, &st.adam_v, &tmp[0], &tmp[1]);
  st.adam_t = t->opt.t;
  st.lr = optim_lr_at(&t->sched, t->step > 0 ? t->step - 1 : 0);
  st.has_ref = t->ref.host != NULL;
  st.ref_params = t->ref.host;
  st.has_critic = t->has_critic;
  st.critic_mc = t->critic.cfg;
  st.critic_params = t->critic.params;
  st.has_critic_optim = t->has_critic;
  if (t->has_critic)
    full_moments(t, &t->critic, &t->critic_opt, &st.critic_adam_m, &st.critic_adam_v, &tmp[2],
                 &tmp[3]);
  st.critic_adam_t = t->critic_opt.t;
  /* the run state a restart needs (run/restart.h); step 0 = the SFT -> RL boundary */
  restart_fill(r, &st, step, step > 0);
  if (ckpt_deck_text(r->cfg, &st.deck, &st.used_keys) != 0) die_local("out of memory");
  struct ckpt_write_opts o = { .keep_last = (int)r->cfg->checkpoint.keep_last,
                              .tensor = trainer_tp(t) ? tp_tensor : NULL, .ctx = t };
  double t0 = clock_seconds();
  int rc = ckpt_write(r->cfg->checkpoint.dir, &st, &o, r->comms.role_comm[ROLE_TRAIN]);
  partial_time(r, RUN_PHASE_CKPT, clock_seconds() - t0);
  free(st.deck);
  free(st.used_keys);
  free(st.difficulty);
  for (int i = 0; i < 4; i++) free(tmp[i]);
  if (rc != CKPT_OK && r->comms.place.dp == 0 && r->comms.place.tp == 0 &&
      r->cfg->checkpoint.on_error == CKPT_ON_ERROR_CONTINUE)
    fprintf(stderr, "rlpt: step %ld: checkpoint not written; training on ([checkpoint] on_error = "
            "continue)\n", step);
  return rc;
}

/* mkdir -p of dir by rank 0 of comm, then a probe file created and removed by every rank
 * of it (MPI-IO writes from all of them; another node may mount it differently). The
 * lowest failing rank prints the reason. 0 or 2 on every rank of comm. */
static int dir_writable(const struct run *r, const char *dir, MPI_Comm comm) {
  int me = 0, rc = 0;
  char why[512] = "", probe[4200];
  MPI_Comm_rank(comm, &me);
  if (me == 0 && ckpt_mkdirs(dir)) {
    snprintf(why, sizeof why, "cannot create the directory: %s", strerror(errno));
    rc = 2;
  }
  if (!error_agree(comm, rc)) {
    char host[256] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    snprintf(probe, sizeof probe, "%s/.rlpt_probe.%d.%ld", dir, r->comms.world_rank, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || close(fd) || unlink(probe)) {
      snprintf(why, sizeof why, "rank %d (host %s) cannot write in it: %s", r->comms.world_rank,
               host, strerror(errno));
      rc = 2;
    }
  }
  int mine = rc ? me : INT_MAX, first = INT_MAX;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (rc && me == first)
    fprintf(stderr, "rlpt: run: [checkpoint] dir = %s: %s (checked at start-up: a checkpoint, "
            "even a signal's, would fail)\n", dir, why);
  return error_agree(comm, rc);
}

int run_ckpt_dir_check(struct run *r) {
  int rc = r->is_train ? dir_writable(r, r->cfg->checkpoint.dir, r->comms.role_comm[ROLE_TRAIN]) : 0;
  return error_agree(MPI_COMM_WORLD, rc);
}
