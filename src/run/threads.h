/* run/threads.h: BLAS/OpenMP threads per rank, so that ranks x threads never
 * exceeds the cores of a node.
 *
 * Policy. The deck's [ranks] threads_per_rank is what every rank uses; it is
 * never silently clamped. When ranks_on_node x threads_per_rank > cores (the
 * deck's cores_per_node, or the machine's online cores when auto), the run is
 * refused with exit code 2 and a message naming both keys and the numbers —
 * except with threads_per_rank = 1: one thread per rank is the least a rank can
 * use, so more ranks than cores is the launcher's oversubscription (mpirun
 * --oversubscribe, with mpi_yield_when_idle so waiting ranks give up their
 * core); that case is accepted and reported (oversubscribed = 1) so the caller
 * can print a note.
 *
 * The count set here is the rank's whole budget: the CPU ops and AdamW split
 * their loops over the same number of threads, on the rank's pool
 * (cpu/thread_pool.h), whose idle workers sleep while BLAS runs. */
#ifndef RLPT_THREADS_H
#define RLPT_THREADS_H

#include <mpi.h>
#include <stddef.h>

struct config;

struct threads_info {
  int cores;            /* cores of this rank's node (deck or machine) */
  int cores_from_deck;  /* 1 when [ranks] cores_per_node was set */
  int ranks_on_node;    /* ranks of this job sharing the node */
  int node_rank;        /* this rank's index among them */
  int threads;          /* BLAS/OpenMP threads this rank uses */
  int oversubscribed;   /* ranks_on_node > cores (only possible with threads = 1) */
};

/* Online cores of this machine (sysconf), at least 1. */
int threads_detect_cores(void);
/* Pure check of one node: 0, or 2 with a message in err. `host` names the node
 * in the message; cores_from_deck says where `cores` came from. */
int threads_check(int ranks_on_node, long threads_per_rank, int cores, int cores_from_deck,
                  const char *host, char *err, size_t errlen);
/* Collective over world: count the ranks on each node (MPI_COMM_TYPE_SHARED),
 * check every node, and on success set this rank's OpenBLAS threads and
 * OMP_NUM_THREADS. Every rank returns the same code and the same message (the
 * first failing rank's). */
int threads_setup(const struct config *cfg, MPI_Comm world, struct threads_info *out, char *err,
                  size_t errlen);

#endif
