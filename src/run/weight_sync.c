/* run/weight_sync.c: the weight broadcast after an update (run/weight_sync.h), from
 * train dp 0 (weight_comm rank 0, the root) to every rollout rank, on one of two paths
 * chosen once per run:
 *   NCCL  every rank of weight_comm runs its model on a GPU of its own: the root
 *         broadcasts the device copy of its policy's weights (model/weights.h: the
 *         trainer's device master, made current first) straight into each rollout
 *         model's device buffer (weights_device_target), which becomes the truth (bf16
 *         working copy remade; rollout_weights_on_device). A rank that is both
 *         (colocated layout) gets them device to device (the broadcast's out-of-place
 *         copy). The rollout ranks' host params go stale: nothing in a run reads them
 *         (generation, eval and the logprob check run on the device; the train ranks
 *         write the checkpoints from their own copy), and a reader would make them
 *         current first (weights_to_host).
 *   MPI   the root makes its policy's host weights current (weights_to_host),
 *         xfer_bcast_weights moves them (with [run] weight_sync_dtype = bf16 as bf16: half
 *         the bytes, the rollout ranks holding the rounded weights; always this path), and
 *         each rollout rank uploads them at its next forward (rollout_weights_changed): CPU
 *         runs, [run] weight_sync = mpi, and device runs NCCL cannot serve (a member on the CPU, two members of a node on one GPU).
 *         With [ranks] train_tp > 1 the train members (dp 0's TP group) gather their
 *         shards tensor by tensor into a scratch of one tensor (trainer_tensor_full), which
 *         the root broadcasts (xfer_bcast_weights_each): no train rank holds the model
 *         whole; each member sends or receives the same full bytes. With rollout_tp > 1
 *         each rollout rank receives exactly its shard of each tensor, over its TP rank's
 *         shard group (run/weight_reshard.h).
 * The metrics are the root's: t_sync from entering the sync (the wait for the peers
 * included) to the end of the copy, the MPI path's download included; sync_gbps the
 * parameter bytes over the time after the wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "mpi/nccl_comm.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "rollout/engine.h"
#include "run/partial.h"
#include "run/run.h"
#include "run/weight_reshard.h"
#include "run/weight_sync.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

struct weight_sync {
  int nccl;              /* 1: the NCCL path (the same on every rank of weight_comm) */
  struct reshard *rs;    /* rollout_tp > 1: the shard groups (run/weight_reshard.h) */
#ifdef RLPT_HAVE_CUDA
  struct nccl_comm nc;   /* mirrors weight_comm (nccl == 1) */
#endif
};

/* The model whose weights this rank sends or receives (the root's: the policy). */
static struct model *sync_model(struct run *r) {
  return r->is_train ? &r->trainer->policy : r->rmodel;
}

#ifdef RLPT_HAVE_CUDA
/* 1 when this member can take part in a device broadcast: the root's policy and a
 * receiver's rollout model on the device (a member that is neither cannot occur with
 * train_tp = train_pp = 1, and takes the MPI path if it did). */
static int member_on_device(const struct run *r, int root) {
  if (!root && !r->is_rollout) return 0;
  if (root && !r->trainer->policy.on_device) return 0;
  return !r->is_rollout || r->rmodel->on_device;
}

/* Collective over wc, once: the path every member agrees on. The communicator is made
 * over weight_comm itself (one unique id broadcast inside it) rather than split from a
 * world NCCL communicator: on a cluster only the members then need distinct GPUs and take
 * part in the bootstrap (a world communicator would pull in the controller and reward
 * ranks, which may share a GPU with a member or have none), and no NCCL state is held
 * for ranks that never broadcast. */
static void choose_path(struct run *r, struct weight_sync *ws, MPI_Comm wc, int root) {
  if (r->cfg->run.weight_sync_dtype == WSYNC_BF16) {
    if (root) printf("weight sync: MPI through host memory, as bf16 ([run] weight_sync_dtype = bf16)\n");
    fflush(stdout);
    return;
  }
  if (r->cfg->run.weight_sync == WSYNC_MPI) {
    if (root) printf("weight sync: MPI through host memory ([run] weight_sync = mpi)\n");
    fflush(stdout);
    return;
  }
  int on_dev = member_on_device(r, root);
  int unshared = nccl_device_unshared(wc);  /* collective: every member calls it */
  long long n = (long long)sync_model(r)->table.total;
  /* min of (on device, unshared, on device, n, -n): all members' verdicts and one table size */
  long long mine[5] = {on_dev && unshared, on_dev, -(long long)on_dev, n, -n}, all[5];
  MPI_CHECK(MPI_Allreduce(mine, all, 5, MPI_LONG_LONG, MPI_MIN, wc));
  ws->nccl = all[0] == 1 && all[3] == -all[4];
  int size = 0;
  MPI_CHECK(MPI_Comm_size(wc, &size));
  if (ws->nccl) nccl_comm_init(&ws->nc, wc);
  if (root && ws->nccl)
    printf("weight sync: NCCL, device to device (weight_comm: %d rank%s)\n", size,
           size > 1 ? "s" : "");
  else if (root && -all[2] == 1)  /* some member is on a device: say why not NCCL */
    printf("weight sync: MPI through host memory (%s)\n",
           all[1] == 0 ? "a rank of weight_comm runs on the CPU"
                       : "two ranks of weight_comm share a GPU; NCCL needs one GPU per rank");
  fflush(stdout);
}

/* The root's weights in device memory: the device master, or (the host params are the
 * truth: before the first update, after a restart) the host params uploaded. */
static const float *root_weights(struct trainer *t) {
  struct weights *w = &t->policy.weights;
  if (weights_to_device(w)) die_local("out of device memory for the weight broadcast");
  return w->dev;
}

static void sync_nccl(struct run *r, struct weight_sync *ws, int root, int64_t v,
                      struct xfer_stats *st) {
  size_t n = sync_model(r)->table.total;
  double t0 = clock_seconds();
  wait_barrier(r->comms.weight_comm);  /* politely: the NCCL wait would otherwise hold the peers */
  double t1 = clock_seconds();
  float *recv = r->is_rollout ? weights_device_target(&r->rmodel->weights) : NULL;
  if (r->is_rollout && !recv) die_local("out of device memory for the weight broadcast");
  const float *send = root ? root_weights(r->trainer) : recv;
  nccl_broadcast_to(&ws->nc, send, recv ? recv : (float *)send, n, 0);
  if (r->is_rollout) rollout_weights_on_device(r->engine, v);
  double t2 = clock_seconds();
  *st = (struct xfer_stats){ .t_sync = t2 - t0, .t_wait = t1 - t0,
                             .bytes = (double)n * sizeof(float), .chunks = 1 };
  st->sync_gbps = t2 > t1 ? st->bytes / (t2 - t1) / 1e9 : 0.0;
}
#endif

/* xfer_fill_fn: full tensor i of the policy's weights on the TP group's rank 0 (the sync's
 * root; the others' x is left as it is: they only send), gathered a bucket of tensors at a
 * time (one gather per FILL_BUCKET_FLOATS, each rank sending only its shards): a tensor
 * outside the bucket held gathers the bucket that starts with it. Every TP rank asks for
 * the tensors in the same order, so all make the same gathers. */
#define FILL_BUCKET_FLOATS ((size_t)16 << 20)
struct fill_cache {
  struct trainer *t;
  int i0, i1;  /* the tensors held */
  float *buf;
};

static void tp_fill(void *ctx, int i, float *x) {
  struct fill_cache *c = ctx;
  const struct param_table *ft = trainer_full_table(c->t);
  if (i < c->i0 || i >= c->i1) {
    size_t used = 0;
    c->i0 = c->i1 = i;
    while (c->i1 < ft->n && (c->i1 == i || used + ft->e[c->i1].numel <= FILL_BUCKET_FLOATS))
      used += ft->e[c->i1++].numel;
    free(c->buf);
    c->buf = c->t->tp.rank == 0 ? malloc_check(sizeof(float) * used) : NULL;
    trainer_range_full(c->t, c->t->policy.params, c->i0, c->i1, c->buf);
  }
  if (c->t->tp.rank == 0)
    memcpy(x, c->buf + (ft->e[i].offset - ft->e[c->i0].offset), sizeof(float) * ft->e[i].numel);
}

static void sync_mpi(struct run *r, int64_t v, struct xfer_stats *st) {
  struct model *m = sync_model(r);
  double t0 = clock_seconds();  /* params trained on the device come down first: in t_sync */
  if (r->is_train) weights_to_host(&m->weights);
  double t_down = clock_seconds() - t0;
  /* a train rank sends full tensors: with train_tp > 1 (the separate layout: not a rollout
   * rank) its TP group's shards gathered a bucket of tensors at a time (tp_fill) */
  const struct param_table *table = r->is_train ? trainer_full_table(r->trainer) : &m->table;
  int tp = r->is_train && trainer_tp(r->trainer), bf16 = r->cfg->run.weight_sync_dtype == WSYNC_BF16;
  struct fill_cache fc = {.t = r->trainer, .i0 = -1, .i1 = -1};
  int rc = XFER_OK;
  if (r->comms.counts.rollout_tp > 1) {  /* each rollout rank gets exactly its shard */
    if (!r->wsync->rs) r->wsync->rs = reshard_create(r);
    reshard_sync(r, r->wsync->rs, tp ? tp_fill : NULL, &fc, st);
  } else if (r->comms.counts.train_tp > 1) {  /* every member: the same broadcasts, tensor by tensor */
    rc = xfer_bcast_weights_each(m->params, table, 0, r->comms.weight_comm, tp ? tp_fill : NULL, &fc, st);
  } else {
    rc = xfer_bcast_weights_as(m->params, table, 0, r->comms.weight_comm, bf16, st);
  }
  free(fc.buf);
  if (rc != XFER_OK) die_local("weight broadcast failed: %s", xfer_strerror(rc));
  if (r->is_rollout && r->is_train) {  /* both ends here: the rollout's copy as a receiver gets it */
    memcpy(r->rmodel->params, m->params, sizeof(float) * table->total);
    if (bf16) xfer_round_bf16(r->rmodel->params, table->total);
  }
  if (r->is_rollout) rollout_weights_changed(r->engine, v);
  st->t_sync += t_down;
}

void run_sync_weights(struct run *r) {
  MPI_Comm wc = r->comms.weight_comm;
  if (wc == MPI_COMM_NULL) return;
  int root = r->comms.place.weight_rank == 0;
  if (!r->wsync) {
    r->wsync = calloc_check(1, sizeof *r->wsync);
#ifdef RLPT_HAVE_CUDA
    choose_path(r, r->wsync, wc, root);
#endif
  }
  int64_t v = root ? r->trainer->weight_version : 0;
  wait_bcast(&v, 1, MPI_INT64_T, 0, wc);
  struct xfer_stats st;
#ifdef RLPT_HAVE_CUDA
  if (r->wsync->nccl) sync_nccl(r, r->wsync, root, v, &st);
  else
#endif
    sync_mpi(r, v, &st);
  r->weight_version = v;
  if (root) {
    partial_time(r, RUN_PHASE_SYNC, st.t_sync);
    partial_set_train(r, "sync_gbps", st.sync_gbps);
    partial_set_train(r, "sync_mb", st.bytes / 1e6);
    r->partial[PS_VERSION] = (double)v;
  }
}

void run_sync_free(struct run *r) {
#ifdef RLPT_HAVE_CUDA
  if (r->wsync && r->wsync->nccl) nccl_comm_free(&r->wsync->nc);
#endif
  if (r->wsync) reshard_free(r->wsync->rs);
  free(r->wsync);
  r->wsync = NULL;
}
