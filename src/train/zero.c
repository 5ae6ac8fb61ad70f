/* train/zero.c: the ZeRO-1 shards, their bucketed reduce-scatter and
 * all-gather, the sharded AdamW update and the gather of the moments for a
 * checkpoint (train/zero.h). */
#include "train/zero.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/allreduce.h"
#include "mpi/wait.h"
#include "util/alloc.h"
#include "util/error.h"

void zero_shard(long n, int rank, int size, long *lo, long *hi) {
  long blocks = (n + ZERO_ALIGN - 1) / ZERO_ALIGN;
  long a = blocks * rank / size * ZERO_ALIGN, b = blocks * (rank + 1) / size * ZERO_ALIGN;
  *lo = a < n ? a : n;
  *hi = b < n ? b : n;
}

void zero_opt_range(int zero, long n, int rank, int size, long *lo, long *hi) {
  *lo = 0;
  *hi = n;
  if (zero) zero_shard(n, rank, size, lo, hi);
}

/* One bucket [b0, b1) of the buffer cut by the ranks' slices: counts[r] floats
 * of it belong to rank r, starting displs[r] floats into the bucket. */
struct zero_cut {
  int size;
  long n;
  int *counts, *displs;
};

static void cut_init(struct zero_cut *c, long n, MPI_Comm comm) {
  MPI_CHECK(MPI_Comm_size(comm, &c->size));
  c->n = n;
  c->counts = malloc_check(sizeof(int) * (size_t)c->size);
  c->displs = malloc_check(sizeof(int) * (size_t)c->size);
}

static void cut_free(struct zero_cut *c) {
  free(c->counts);
  free(c->displs);
}

static void cut_bucket(struct zero_cut *c, long b0, long b1) {
  for (int r = 0; r < c->size; r++) {
    long lo, hi;
    zero_shard(c->n, r, c->size, &lo, &hi);
    long a = lo > b0 ? lo : b0, e = hi < b1 ? hi : b1;
    c->counts[r] = e > a ? (int)(e - a) : 0;
    c->displs[r] = e > a ? (int)(a - b0) : 0;
  }
}

static long bucket_len(size_t bucket_floats) {
  if (bucket_floats == 0) bucket_floats = ALLREDUCE_BUCKET_BYTES / sizeof(float);
  if (bucket_floats > (size_t)1 << 30) bucket_floats = (size_t)1 << 30; /* fits an int count */
  return (long)bucket_floats;
}

/* In place: the sum of the bucket lands at the start of g + b0 (MPI_IN_PLACE's
 * rule for a reduce-scatter) and is moved to this rank's part of the bucket. */
void zero_reduce_scatter(float *g, long n, size_t bucket_floats, MPI_Comm comm) {
  struct zero_cut c;
  cut_init(&c, n, comm);
  int rank;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  long len = bucket_len(bucket_floats);
  for (long b0 = 0; c.size > 1 && b0 < n; b0 += len) {
    long b1 = n - b0 < len ? n : b0 + len;
    cut_bucket(&c, b0, b1);
    MPI_Request req;
    MPI_CHECK(MPI_Ireduce_scatter(MPI_IN_PLACE, g + b0, c.counts, MPI_FLOAT, MPI_SUM, comm, &req));
    wait_request(&req, MPI_STATUS_IGNORE);
    if (c.counts[rank] > 0 && c.displs[rank] > 0)
      memmove(g + b0 + c.displs[rank], g + b0, sizeof(float) * (size_t)c.counts[rank]);
  }
  cut_free(&c);
}

void zero_allgather(float *p, long n, size_t bucket_floats, MPI_Comm comm) {
  struct zero_cut c;
  cut_init(&c, n, comm);
  long len = bucket_len(bucket_floats);
  for (long b0 = 0; c.size > 1 && b0 < n; b0 += len) {
    long b1 = n - b0 < len ? n : b0 + len;
    cut_bucket(&c, b0, b1);
    MPI_Request req;
    MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, p + b0, c.counts, c.displs, MPI_FLOAT,
                              comm, &req));
    wait_request(&req, MPI_STATUS_IGNORE);
  }
  cut_free(&c);
}

int zero_update(struct adamw *o, float *p, float *g, long n, double clip,
                const struct adamw_hparams *h, MPI_Comm comm, double *norm) {
  int rank, size;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  long lo, hi;
  zero_shard(n, rank, size, &lo, &hi);
  if (o->n != hi - lo)
    die_local("ZeRO-1: AdamW state of %ld values for a shard of %ld (internal error)", o->n,
              hi - lo);
  zero_reduce_scatter(g, n, 0, comm);
  /* the slices tile the buffer: their sums of squares add up to the global one,
   * so every rank reaches the same norm and the same skip decision */
  double sumsq = optim_sumsq(g + lo, hi - lo);
  allreduce_polite(&sumsq, 1, MPI_DOUBLE, MPI_SUM, comm);
  *norm = sqrt(sumsq);
  if (optim_clip_scale(g + lo, hi - lo, *norm, clip) == OPTIM_NONFINITE) return OPTIM_NONFINITE;
  adamw_step(o, p + lo, g + lo, h);
  zero_allgather(p, n, 0, comm);
  return OPTIM_OK;
}

int zero_gather_moments(const struct adamw *o, long n, MPI_Comm comm, float **m, float **v) {
  int rank, size;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  *m = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (error_agree(comm, !*m || !*v)) {
    free(*m);
    free(*v);
    *m = *v = NULL;
    return 1;
  }
  long lo, hi;
  zero_shard(n, rank, size, &lo, &hi);
  memcpy(*m + lo, o->m, sizeof(float) * (size_t)(hi - lo));
  memcpy(*v + lo, o->v, sizeof(float) * (size_t)(hi - lo));
  zero_allgather(*m, n, 0, comm);
  zero_allgather(*v, n, 0, comm);
  return 0;
}
