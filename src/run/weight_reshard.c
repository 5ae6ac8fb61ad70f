/* run/weight_reshard.c: the weight sync that reshards to rollout_tp > 1 (run/weight_reshard.h). */
#include "run/weight_reshard.h"

#include <stdlib.h>

#include "model/model.h"
#include "model/tp.h"
#include "mpi/wait.h"
#include "run/run.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

#define RESHARD_BUCKET_FLOATS ((size_t)16 << 20)  /* 64 MB of full tensors per broadcast */

struct reshard {
  int n;                    /* rollout_tp: shard groups */
  MPI_Comm *comm;           /* [n]; MPI_COMM_NULL where this rank is not a member */
  struct param_table full;  /* the full model's table */
  struct param_table shard; /* one shard's (every TP rank's has the same sizes) */
};

struct reshard *reshard_create(struct run *r) {
  struct reshard *rs = calloc_check(1, sizeof *rs);
  MPI_Comm wc = r->comms.weight_comm;
  int me;
  MPI_CHECK(MPI_Comm_rank(wc, &me));
  rs->n = r->comms.counts.rollout_tp;
  rs->comm = calloc_check((size_t)rs->n, sizeof *rs->comm);
  for (int j = 0; j < rs->n; j++) {
    int member = me == 0 || (r->is_rollout && r->comms.place.instance_rank == j);
    MPI_CHECK(MPI_Comm_split(wc, member ? 0 : MPI_UNDEFINED, me, &rs->comm[j]));
  }
  param_table_build(&rs->full, &r->mc);
  param_table_build_tp(&rs->shard, &r->mc, rs->n);
  return rs;
}

void reshard_free(struct reshard *rs) {
  if (!rs) return;
  for (int j = 0; j < rs->n; j++)
    if (rs->comm[j] != MPI_COMM_NULL) MPI_Comm_free(&rs->comm[j]);
  free(rs->comm);
  param_table_free(&rs->full);
  param_table_free(&rs->shard);
  free(rs);
}

/* The tensors [i0, end) of one bucket: as many as fit RESHARD_BUCKET_FLOATS full floats,
 * at least one. Both tables lay tensors out one after the other, so a bucket's full
 * tensors and each of its shards are contiguous. */
static int bucket_end(const struct reshard *rs, int i0) {
  size_t used = 0;
  int i = i0;
  while (i < rs->full.n && (i == i0 || used + rs->full.e[i].numel <= RESHARD_BUCKET_FLOATS))
    used += rs->full.e[i++].numel;
  return i;
}

static size_t span(const struct param_table *t, int i0, int i1) {
  return t->e[i1 - 1].offset + t->e[i1 - 1].numel - t->e[i0].offset;
}

/* The root: shard j of the bucket's full tensors x (laid out from tensor i0) into y, then
 * broadcast over group j, for every j. */
static void send_bucket(const struct reshard *rs, int i0, int i1, const float *x, float *y) {
  size_t f0 = rs->full.e[i0].offset, s0 = rs->shard.e[i0].offset;
  for (int j = 0; j < rs->n; j++) {
    struct tp_group g = {.comm = MPI_COMM_NULL, .rank = j, .size = rs->n};
    for (int i = i0; i < i1; i++)
      tp_scatter_tensor(&g, &rs->full.e[i], x + (rs->full.e[i].offset - f0), &rs->shard.e[i],
                        y + (rs->shard.e[i].offset - s0));
    wait_bcast(y, (int)span(&rs->shard, i0, i1), MPI_FLOAT, 0, rs->comm[j]);
  }
}

void reshard_sync(struct run *r, struct reshard *rs, xfer_fill_fn fill, void *fill_ctx,
                  struct xfer_stats *st) {
  MPI_Comm wc = r->comms.weight_comm;
  int me, chunks = 0;
  MPI_CHECK(MPI_Comm_rank(wc, &me));
  double t0 = clock_seconds();
  wait_barrier(wc);
  double t1 = clock_seconds();
  size_t most = RESHARD_BUCKET_FLOATS;
  for (int i = 0; i < rs->full.n; i++) most = rs->full.e[i].numel > most ? rs->full.e[i].numel : most;
  float *x = fill ? malloc_check(sizeof(float) * most) : NULL, *y = me == 0 ? malloc_check(sizeof(float) * most) : NULL;
  struct model *m = r->is_rollout ? r->rmodel : NULL;
  for (int i0 = 0, i1; i0 < rs->full.n; i0 = i1) {
    i1 = bucket_end(rs, i0);
    size_t f0 = rs->full.e[i0].offset;
    for (int i = i0; fill && i < i1; i++) fill(fill_ctx, i, x + (rs->full.e[i].offset - f0));
    if (me == 0) send_bucket(rs, i0, i1, fill ? x : r->trainer->policy.params + f0, y);
    if (m)
      wait_bcast(m->params + rs->shard.e[i0].offset, (int)span(&rs->shard, i0, i1), MPI_FLOAT, 0,
                 rs->comm[r->comms.place.instance_rank]);
    chunks += rs->n;
  }
  free(x);
  free(y);
  double t2 = clock_seconds(), bytes = (double)rs->shard.total * sizeof(float);
  *st = (struct xfer_stats){.t_sync = t2 - t0, .t_wait = t1 - t0, .bytes = bytes, .chunks = chunks};
  st->sync_gbps = t2 > t1 ? bytes / (t2 - t1) / 1e9 : 0.0;
}
