/* train/zero.h: ZeRO stage 1 ([optim] zero = 1): the AdamW moments sharded
 * over the data-parallel train ranks.
 *
 * DP rank r of P owns one contiguous slice [lo, hi) of the flat parameter
 * buffer (zero_shard) and keeps m and v for that slice only (a struct adamw of
 * hi - lo values): the optimizer state per rank is 1/P of the replicated one.
 * An update is: reduce-scatter of the gradient sum (each rank gets the global
 * sum over its slice; like allreduce_sum_floats, a sum: the losses are already
 * divided by global counts), the global norm from the slices' sums of squares,
 * clip, AdamW on the slice, then an all-gather of the updated slices so every
 * rank holds the whole parameter buffer again (the forward needs it). A
 * non-finite global norm skips the update on every rank alike.
 *
 * The collectives walk the buffer in the all-reduce's buckets
 * (ALLREDUCE_BUCKET_BYTES), each a nonblocking collective finished by a polite
 * wait (wait.h), for the reasons mpi/allreduce.h gives. */
#ifndef RLPT_OPTIM_ZERO_H
#define RLPT_OPTIM_ZERO_H

#include <mpi.h>
#include <stddef.h>

#include "train/optim.h"

#define ZERO_ALIGN 16 /* shard boundaries on multiples of 16 floats (64 bytes: cache lines, AVX) */

/* The slice [*lo, *hi) of a buffer of n floats that rank `rank` of `size`
 * owns: the ranks' slices tile [0, n) in rank order, each boundary but n a
 * multiple of ZERO_ALIGN, sizes as even as that allows. Ranks may own nothing
 * (*lo == *hi) when n < size * ZERO_ALIGN. */
void zero_shard(long n, int rank, int size, long *lo, long *hi);
/* The slice [*lo, *hi) of n parameters whose AdamW moments DP rank `rank` of `size`
 * holds: all of them without ZeRO-1 (zero == 0), else its zero_shard. A restart copies
 * that slice of the checkpoint's full moments. */
void zero_opt_range(int zero, long n, int rank, int size, long *lo, long *hi);

/* In place over comm: on rank r, g[lo_r, hi_r) = the sum over comm of every
 * rank's g there; the rest of g is left undefined. bucket_floats as in
 * allreduce_sum_floats (0: ALLREDUCE_BUCKET_BYTES). A one-rank comm returns at once. */
void zero_reduce_scatter(float *g, long n, size_t bucket_floats, MPI_Comm comm);
/* In place over comm: p[lo_r, hi_r) from rank r, for every r, on every rank. */
void zero_allgather(float *p, long n, size_t bucket_floats, MPI_Comm comm);

/* One sharded update of p[0..n) from this rank's gradient g[0..n) (whose
 * contents it consumes): o holds the moments of this rank's slice (o->n ==
 * hi - lo). *norm gets the global norm before clipping; clip as
 * optim_clip_scale. Returns OPTIM_OK (p updated on every rank) or
 * OPTIM_NONFINITE on every rank (p, m, v and o->t unchanged). */
int zero_update(struct adamw *o, float *p, float *g, long n, double clip,
                const struct adamw_hparams *h, MPI_Comm comm, double *norm);

/* The full moments of a buffer of n floats from every rank's slice (o on each
 * rank): *m and *v get n floats each, allocated here (free both). Collective;
 * returns 0, or 1 on every rank when any rank is out of memory (both NULL). */
int zero_gather_moments(const struct adamw *o, long n, MPI_Comm comm, float **m, float **v);

#endif
