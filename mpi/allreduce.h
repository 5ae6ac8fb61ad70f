/* mpi/allreduce.h: the data-parallel reductions of the train ranks.
 *
 * Small reductions (token counts, loss sums, statistics) happen where ranks
 * arrive at different times, so they go through MPI_Iallreduce and a polite
 * wait (wait.h): a rank that finished its share early sleeps instead of
 * stealing the core of a rank that still computes.
 *
 * The gradient all-reduce walks the flat gradient buffer in buckets of
 * ALLREDUCE_BUCKET_BYTES, each an MPI_Iallreduce finished by a polite wait.
 * Buckets bound the size of one message and of the MPI library's temporaries.
 * Measured (2 ranks on a shared 2-core machine under load 8-13, one rank
 * arriving 100 ms late; rank 0 wall per call including that wait, 5 reps):
 *   3 MB:   Iallreduce + polite 120-125 ms | polite barrier + blocking buckets
 *           139-174 ms | plain MPI_Allreduce 116-140 ms
 *   100 MB: 733-900 ms | 860-1346 ms | 1098-2019 ms
 * so this form is kept, although wait.h found a sleeping waiter slows a large
 * MPI_Ibcast: 8 MiB buckets keep each collective short. */
#ifndef RLPT_ALLREDUCE_H
#define RLPT_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>

#define ALLREDUCE_BUCKET_BYTES (8u << 20) /* 8 MiB per MPI_Iallreduce */

/* In place: buf = op over comm of every rank's buf (count items of type),
 * waiting politely. A one-rank comm returns at once. */
void allreduce_polite(void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

/* In place: g[0..n) = sum over comm of every rank's g, in buckets of
 * bucket_floats floats (0: ALLREDUCE_BUCKET_BYTES). A one-rank comm returns at once.
 * Callers divide their losses by global counts first, so the sum is the
 * gradient of the global batch (no division by the rank count here). */
void allreduce_sum_floats(float *g, size_t n, size_t bucket_floats, MPI_Comm comm);

#endif
