/* run/progress.c: the RL step's stage markers and the stall hook (run/progress.h). */
#include "run/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/xfer.h"
#include "run/mode.h"
#include "run/route.h"
#include "run/run.h"
#include "util/alloc.h"
#include "util/error.h"

struct progress {
  long step;
  int rounds;                     /* generation rounds the controller started */
  int *gen, *trained, *synced;    /* per world rank: markers received this step */
  char what[160];                 /* progress_stage's description */
};

/* Markers describe one step at a time: sync mode in the separate layout. separate_async has
 * the rollout ranks a step or more ahead of the train ranks, so its watchdog goes by roles. */
static int markers_on(const struct run *r) { return !r->comms.counts.colocated && r->mode == &sync_mode_ops; }

void progress_mark(struct run *r, enum progress_kind k, long step, int round) {
  if (!markers_on(r) || r->comms.world_rank == 0) return;
  double msg[3] = {(double)step, (double)k, (double)round};
  MPI_CHECK(MPI_Send(msg, 3, MPI_DOUBLE, 0, XFER_TAG_PROGRESS, r->comms.world));
}

void progress_stall_point(struct run *r, const char *point, long step) {
  const char *v = getenv("RLPT_TEST_STALL");
  size_t n = strlen(point);
  if (!v || strncmp(v, point, n) || v[n] != ':' || atol(v + n + 1) != step) return;
  fprintf(stderr, "rlpt: rank %d: RLPT_TEST_STALL: stalling at %s of RL step %ld\n",
          r->comms.world_rank, point, step);
  fflush(stderr);
  for (;;) sleep(1);
}

static struct progress *book(struct run *r) {
  if (!r->progress) {
    size_t W = (size_t)r->comms.world_size;
    r->progress = calloc_check(1, sizeof *r->progress);
    r->progress->gen = calloc_check(W, sizeof(int));
    r->progress->trained = calloc_check(W, sizeof(int));
    r->progress->synced = calloc_check(W, sizeof(int));
  }
  return r->progress;
}

void progress_begin(struct run *r, long step) {
  struct progress *p = book(r);
  size_t W = (size_t)r->comms.world_size;
  p->step = step;
  p->rounds = 0;
  memset(p->gen, 0, W * sizeof(int));
  memset(p->trained, 0, W * sizeof(int));
  memset(p->synced, 0, W * sizeof(int));
}

void progress_rounds(struct run *r, int rounds) { book(r)->rounds = rounds; }

void progress_poll(struct run *r) {
  struct progress *p = book(r);
  for (;;) {
    int found = 0;
    MPI_Status st;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, XFER_TAG_PROGRESS, r->comms.world, &found, &st));
    if (!found) return;
    double msg[3];
    MPI_CHECK(MPI_Recv(msg, 3, MPI_DOUBLE, st.MPI_SOURCE, XFER_TAG_PROGRESS, r->comms.world,
                       MPI_STATUS_IGNORE));
    int w = st.MPI_SOURCE, k = (int)msg[1];
    if (msg[0] != (double)p->step || w <= 0 || w >= r->comms.world_size)
      die_local("a progress marker of step %g from rank %d during step %ld", msg[0], w, p->step);
    if (k == PROG_GEN) p->gen[w]++;
    else if (k == PROG_TRAINED) p->trained[w]++;
    else if (k == PROG_SYNCED) p->synced[w]++;
    else die_local("a progress marker of kind %d from rank %d", k, w);
  }
}

/* 1 when rollout instance i has prompts in each round (a non-empty slice). */
static int instance_busy(const struct run *r, int i) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances;
  return route_slice_lo(P, R, i) < route_slice_lo(P, R, i + 1);
}

static int weight_root(const struct run *r) { return r->train_world[0]; }

int progress_missing(const struct run *r) {
  const struct progress *p = r->progress;
  if (!p || !markers_on(r)) return 0;
  int missing = 0, R = r->comms.counts.rollout;
  for (int i = 0; i < R; i++) {
    int w = r->rollout_world[i];
    if (w == 0) continue;
    if (instance_busy(r, i)) missing += p->rounds - p->gen[w];
    missing += 1 - p->synced[w];
  }
  if (weight_root(r) != 0) missing += 1 - p->trained[weight_root(r)];
  return missing;
}

int progress_stage(const struct run *r, int w, int reported, const char **what) {
  struct progress *p = r->progress;
  struct rank_place pl;
  roles_place(&r->comms.counts, w, &pl);
  *what = "";
  if (!p || !markers_on(r)) return -1;
  int root = weight_root(r), root_trained = root == 0 || p->trained[root];
  if (pl.roles & ROLE_BIT(ROLE_ROLLOUT)) {
    if (instance_busy(r, pl.instance) && p->gen[w] < p->rounds) {
      *what = "generation";
      return 0;
    }
    if (!reported || p->synced[w] || !root_trained) return -1; /* handing on, done, or waiting */
    snprintf(p->what, sizeof p->what, "the weight sync (it has not received the weights of "
             "rank %d, train dp 0, which has trained the step)", root);
    *what = p->what;
    return 3;
  }
  if (reported) return -1;
  if (pl.roles & ROLE_BIT(ROLE_REWARD)) {
    *what = "reward scoring";
    return 1;
  }
  if (pl.roles & ROLE_BIT(ROLE_TRAIN)) {
    *what = w == root && p->trained[w] ? "the weight sync (sending the weights)" : "training";
    return w == root && p->trained[w] ? 4 : 2;
  }
  return -1;
}

void progress_free(struct run *r) {
  if (!r->progress) return;
  free(r->progress->gen);
  free(r->progress->trained);
  free(r->progress->synced);
  free(r->progress);
  r->progress = NULL;
}
