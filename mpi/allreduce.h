/* allreduce.h: the data-parallel reductions of the train ranks.
 *
 * Small reductions (token counts, loss sums, statistics) happen where ranks
 * arrive at different times, so they go through MPI_Iallreduce and a polite
 * wait (wait.h): a rank that finished its share early sleeps instead of
 * stealing the core of a rank that still computes.
 *
 * The gradient all-reduce walks the flat gradient buffer in buckets of
 * ALLREDUCE_BUCKET_BYTES. The ranks first meet in a polite barrier; once all
 * have arrived the data moves with blocking MPI_Allreduce calls, one per
 * bucket. wait.h measured that Open MPI advances a nonblocking collective only
 * inside MPI calls, so a sleeping waiter slows a large one down (2x at 16-100 MB);
 * after the barrier both ends are busy with the transfer and blocking is right.
 * Buckets bound the size of one message and of the MPI library's temporaries. */
#ifndef RLPT_ALLREDUCE_H
#define RLPT_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>

#define ALLREDUCE_BUCKET_BYTES (8u << 20) /* 8 MiB per MPI_Allreduce */

/* In place: buf = op over comm of every rank's buf (count items of type),
 * waiting politely. A one-rank comm returns at once. */
void allreduce_polite(void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

/* In place: g[0..n) = sum over comm of every rank's g, in buckets of
 * bucket_floats floats (0: ALLREDUCE_BUCKET_BYTES). A one-rank comm returns at once.
 * Callers divide their losses by global counts first, so the sum is the
 * gradient of the global batch (no division by the rank count here). */
void allreduce_sum_floats(float *g, size_t n, size_t bucket_floats, MPI_Comm comm);

#endif
