/* mpi/nccl_comm.h: NCCL communicators bootstrapped over MPI, mirroring rlpt's MPI groups.
 *
 * Each rank drives the GPU local_rank % devices of its node (model/device.h device_use,
 * with mpi/comm.h comms_node_rank), set before any NCCL init. A
 * communicator's unique id is made on its rank 0 and broadcast over MPI.
 * Sub-groups (DP, TP, weight_comm, ...) mirror an existing MPI communicator:
 * same ranks, same order, by ncclCommSplit (NCCL >= 2.18) or one id per group.
 * Counts are elements, not bytes. Collectives run on the communicator's own
 * (blocking) stream, so they order after kernels on the default stream, and the
 * calls below return when the collective is complete: the wait polls
 * ncclCommGetAsyncError, so a dead peer gives a message instead of a hang.
 *
 * Built only with the CUDA backend (RLPT_HAVE_CUDA); nccl_built() says which. */
#ifndef RLPT_NCCL_COMM_H
#define RLPT_NCCL_COMM_H

#include <mpi.h>
#include <stddef.h>

/* 1 when NCCL support was compiled in. */
int nccl_built(void);

#ifdef RLPT_HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>

struct nccl_comm {
  ncclComm_t comm;   /* NULL on a rank outside a mirrored group */
  MPI_Comm mpi;      /* the MPI communicator mirrored (not owned) */
  int rank, size;
  cudaStream_t stream;
};

/* Collective over mpi: one NCCL communicator with the ranks of mpi. */
void nccl_comm_init(struct nccl_comm *nc, MPI_Comm mpi);
/* Collective over parent->mpi: child mirrors child_mpi (a sub-communicator of
 * parent->mpi, e.g. from MPI_Comm_split); ranks outside any group pass
 * MPI_COMM_NULL and get child->comm == NULL. */
void nccl_comm_mirror(struct nccl_comm *child, const struct nccl_comm *parent, MPI_Comm child_mpi);
void nccl_comm_free(struct nccl_comm *nc);

/* In place: buf[count] (device, fp32) becomes the sum over the ranks (the gradient
 * allreduce: a sum, as allreduce_sum_floats, since the losses are divided by global counts). */
void nccl_allreduce_sum(struct nccl_comm *nc, float *buf, size_t count);
/* In place: buf[count] (device, fp32) on every rank becomes root's (weight broadcast). */
void nccl_broadcast(struct nccl_comm *nc, float *buf, size_t count, int root);
/* The same out of place: recv[count] on every rank becomes root's send[count] (read on
 * root only; it may equal recv), so the root can copy into a buffer of its own too. */
void nccl_broadcast_to(struct nccl_comm *nc, const float *send, float *recv, size_t count,
                       int root);
/* Collective over comm: 1 when this rank has a CUDA device that no other rank of comm on
 * its node drives, 0 otherwise (a local verdict: combine it over comm). NCCL refuses a
 * communicator with two ranks on one GPU. Devices are compared by PCI bus id, so ranks
 * that each see only their own GPU (CUDA_VISIBLE_DEVICES per task) count as distinct. */
int nccl_device_unshared(MPI_Comm comm);
/* ZeRO-1 over contiguous slices of buf (device, fp32) that may differ in size: rank r
 * owns [lo[r], lo[r + 1]), lo[size] the end. nccl_reduce_slices: each rank's slice
 * becomes the sum over the ranks (the rest is left undefined: a reduce-scatter with
 * uneven slices, one ncclReduce per slice in one group); nccl_gather_slices: every
 * rank gets every slice from its owner (an all-gather: grouped ncclBroadcast). */
void nccl_reduce_slices(struct nccl_comm *nc, float *buf, const size_t *lo);
void nccl_gather_slices(struct nccl_comm *nc, float *buf, const size_t *lo);
/* Wait for the queued collectives of nc; what names them in messages. A note goes to
 * stderr every 60 s of waiting; an asynchronous NCCL error aborts with its message. */
void nccl_wait(struct nccl_comm *nc, const char *what);
#endif

#endif
