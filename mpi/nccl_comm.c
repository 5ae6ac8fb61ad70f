/* mpi/nccl_comm.c: NCCL bootstrap over MPI, mirrored sub-communicators and the
 * collectives the trainer and the weight broadcast need (see nccl_comm.h). Compiled
 * in every build; the NCCL part only with the CUDA backend. */
#include "mpi/nccl_comm.h"

#ifndef RLPT_HAVE_CUDA
int nccl_built(void) { return 0; }
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda_check.h"
#include "util/alloc.h"
#include "util/error.h"

int nccl_built(void) { return 1; }

void nccl_comm_init(struct nccl_comm *nc, MPI_Comm mpi) {
  ncclUniqueId id;
  memset(nc, 0, sizeof *nc);
  nc->mpi = mpi;
  MPI_CHECK(MPI_Comm_rank(mpi, &nc->rank));
  MPI_CHECK(MPI_Comm_size(mpi, &nc->size));
  if (nc->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, mpi));
  NCCL_CHECK(ncclCommInitRank(&nc->comm, nc->size, id, nc->rank));
  CUDA_CHECK(cudaStreamCreate(&nc->stream));
}

void nccl_comm_mirror(struct nccl_comm *child, const struct nccl_comm *parent, MPI_Comm child_mpi) {
  memset(child, 0, sizeof *child);
  child->mpi = child_mpi;
  if (child_mpi != MPI_COMM_NULL) {
    MPI_CHECK(MPI_Comm_rank(child_mpi, &child->rank));
    MPI_CHECK(MPI_Comm_size(child_mpi, &child->size));
  }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  /* color: the parent rank of the group's rank 0 (unique per group, the same on its
   * members); key: the rank in the group, so NCCL ranks equal MPI ranks. */
  int color = NCCL_SPLIT_NOCOLOR;
  if (child_mpi != MPI_COMM_NULL) {
    color = parent->rank;
    MPI_CHECK(MPI_Bcast(&color, 1, MPI_INT, 0, child_mpi));
  }
  NCCL_CHECK(ncclCommSplit(parent->comm, color, child->rank, &child->comm, NULL));
  if (child_mpi != MPI_COMM_NULL) CUDA_CHECK(cudaStreamCreate(&child->stream));
#else
  (void)parent;
  if (child_mpi != MPI_COMM_NULL) nccl_comm_init(child, child_mpi);
#endif
}

void nccl_comm_free(struct nccl_comm *nc) {
  if (nc->comm) {
    CUDA_CHECK(cudaStreamSynchronize(nc->stream));
    NCCL_CHECK(ncclCommDestroy(nc->comm));
    CUDA_CHECK(cudaStreamDestroy(nc->stream));
  }
  memset(nc, 0, sizeof *nc);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleep-polls the stream (nothing spins against the ranks that work). */
void nccl_wait(struct nccl_comm *nc, const char *what) {
  const struct timespec nap = {.tv_sec = 0, .tv_nsec = 200000}; /* 0.2 ms */
  double t0 = now_s(), next_note = 60.0;
  for (;;) {
    cudaError_t e = cudaStreamQuery(nc->stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CUDA_CHECK(e);
    ncclResult_t st;
    NCCL_CHECK(ncclCommGetAsyncError(nc->comm, &st));
    if (st != ncclSuccess && st != ncclInProgress) {
      ncclCommAbort(nc->comm);
      nc->comm = NULL;
      cuda_fail("NCCL", what, ncclGetErrorString(st),
                "a peer rank died or the network failed; see that rank's log (NCCL_DEBUG=WARN)",
                __FILE__, __LINE__);
    }
    double waited = now_s() - t0;
    if (waited >= next_note) {
      fprintf(stderr, "rlpt: NCCL %s (rank %d of %d) still waiting after %.0f s: a peer may be "
              "stuck before the collective\n", what, nc->rank, nc->size, waited);
      next_note += 60.0;
    }
    nanosleep(&nap, NULL);
  }
}

void nccl_allreduce_sum(struct nccl_comm *nc, float *buf, size_t count) {
  NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, nc->comm, nc->stream));
  nccl_wait(nc, "allreduce");
}

void nccl_broadcast(struct nccl_comm *nc, float *buf, size_t count, int root) {
  nccl_broadcast_to(nc, buf, buf, count, root);
}

void nccl_broadcast_to(struct nccl_comm *nc, const float *send, float *recv, size_t count,
                       int root) {
  NCCL_CHECK(ncclBroadcast(send, recv, count, ncclFloat32, root, nc->comm, nc->stream));
  nccl_wait(nc, "broadcast");
}

int nccl_device_unshared(MPI_Comm comm) {
  enum { ID_LEN = 32 }; /* "0000:00:00.0": 13 bytes; CUDA asks for at least 13 */
  char me[ID_LEN] = "";
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(me, ID_LEN, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    me[0] = '\0';
  }
  MPI_Comm node;
  int n = 0, rank = 0;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_size(node, &n));
  MPI_CHECK(MPI_Comm_rank(node, &rank));
  char *all = malloc_check((size_t)n * ID_LEN);
  MPI_CHECK(MPI_Allgather(me, ID_LEN, MPI_CHAR, all, ID_LEN, MPI_CHAR, node));
  int ok = me[0] != '\0';
  for (int i = 0; i < n; i++)
    if (i != rank && !strncmp(all + (size_t)i * ID_LEN, me, ID_LEN)) ok = 0;
  free(all);
  MPI_CHECK(MPI_Comm_free(&node));
  return ok;
}

/* One collective per slice, rooted at its owner, grouped so NCCL runs them together;
 * in place: a slice's owner reduces into it, the other ranks only read it. */
void nccl_reduce_slices(struct nccl_comm *nc, float *buf, const size_t *lo) {
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < nc->size; r++)
    if (lo[r + 1] > lo[r])
      NCCL_CHECK(ncclReduce(buf + lo[r], buf + lo[r], lo[r + 1] - lo[r], ncclFloat32, ncclSum, r,
                            nc->comm, nc->stream));
  NCCL_CHECK(ncclGroupEnd());
  nccl_wait(nc, "reduce (ZeRO-1 slices)");
}

void nccl_gather_slices(struct nccl_comm *nc, float *buf, const size_t *lo) {
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < nc->size; r++)
    if (lo[r + 1] > lo[r])
      NCCL_CHECK(ncclBroadcast(buf + lo[r], buf + lo[r], lo[r + 1] - lo[r], ncclFloat32, r,
                               nc->comm, nc->stream));
  NCCL_CHECK(ncclGroupEnd());
  nccl_wait(nc, "broadcast (ZeRO-1 slices)");
}
#endif
