/* mpi/test_nccl.c: NCCL over MPI (mpi/nccl_comm.h) against MPI's own results, on 2+ ranks
 * with one GPU each: the mean allreduce of a gradient-sized buffer equals
 * MPI_Allreduce(SUM) / size (1e-6 relative: NCCL's reduction order differs),
 * a broadcast from the last rank equals MPI_Bcast (exact), a communicator
 * mirrored from an MPI_Comm_split group (ncclCommSplit) reduces and broadcasts over
 * that group only, and so does one made over the group's MPI communicator itself
 * (nccl_comm_init: the weight broadcast's communicator), with an out-of-place broadcast
 * (nccl_broadcast_to: root's source copied into its own destination too) equal to
 * MPI_Bcast; nccl_device_unshared says 1 on every rank (one GPU per rank). On one
 * rank (test_nccl_1, for a single-GPU machine) the same calls run on one-rank
 * communicators: the bootstrap, the split and the collectives' plumbing, with trivial
 * results. Skips (exit 77 on every rank) without the CUDA backend, or
 * when the node has fewer GPUs than ranks (NCCL refuses two ranks on one device). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device.h"
#include "mpi/comm.h"
#include "mpi/nccl_comm.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */

static float *fill(size_t n, int rank, unsigned salt) {
  float *x = malloc(sizeof(float) * n);
  unsigned s = 2654435761u * (unsigned)(rank + 1) + salt;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((s >> 8) * (1.0 / 16777216.0) - 0.5);
  }
  return x;
}

/* Sum allreduce over nc against MPI on nc->mpi. */
static void check_allreduce(struct nccl_comm *nc, size_t n, unsigned salt, const char *what) {
  const struct backend_ops *G = &cuda_backend;
  float *x = fill(n, nc->rank, salt), *want = malloc(sizeof(float) * n), *got = malloc(4 * n);
  MPI_Allreduce(x, want, (int)n, MPI_FLOAT, MPI_SUM, nc->mpi);
  float *d = G->alloc(4 * n);
  G->upload(d, x, 4 * n);
  nccl_allreduce_sum(nc, d, n);
  G->download(got, d, 4 * n);
  double e = tu_rel_err(got, want, n);
  CHECK_MSG(e <= 1e-6, "%s allreduce of %zu floats: relative error %.3g", what, n, e);
  G->free(d);
  free(x), free(want), free(got);
}

/* In place, or out of place (into a second buffer that starts as other data). */
static void check_broadcast(struct nccl_comm *nc, size_t n, int root, int out_of_place) {
  const struct backend_ops *G = &cuda_backend;
  float *x = fill(n, nc->rank, 7u), *got = malloc(4 * n), *other = fill(n, nc->rank, 9u);
  float *d = G->alloc(4 * n), *dst = out_of_place ? G->alloc(4 * n) : d;
  G->upload(d, x, 4 * n);
  if (out_of_place) G->upload(dst, other, 4 * n);
  if (out_of_place) nccl_broadcast_to(nc, d, dst, n, root);
  else nccl_broadcast(nc, d, n, root);
  G->download(got, dst, 4 * n);
  MPI_Bcast(x, (int)n, MPI_FLOAT, root, nc->mpi);
  CHECK_MSG(!memcmp(got, x, 4 * n), "broadcast%s of %zu floats from rank %d differs",
            out_of_place ? " (out of place)" : "", n, root);
  if (out_of_place) G->free(dst);
  G->free(d);
  free(x), free(got), free(other);
}

static int run_all(int rank, int size) {
  struct nccl_comm world, half;
  nccl_comm_init(&world, MPI_COMM_WORLD);
  CHECK(world.rank == rank && world.size == size);
  check_allreduce(&world, 1, 1u, "world");
  check_allreduce(&world, 1000003, 2u, "world");
  check_broadcast(&world, 300007, size - 1, 0);
  CHECK_MSG(nccl_device_unshared(MPI_COMM_WORLD) == 1, "rank %d: its GPU reported as shared", rank);
  /* groups {0, 2, ...} and {1, 3, ...}, ranks ordered by world rank */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
  nccl_comm_mirror(&half, &world, sub);
  check_allreduce(&half, 4099, 3u, "split");
  check_broadcast(&half, 513, 0, 0);
  nccl_comm_free(&half);
  struct nccl_comm direct;  /* bootstrapped inside the group alone */
  nccl_comm_init(&direct, sub);
  CHECK(direct.rank == rank / 2 && direct.size == (size - rank % 2 + 1) / 2);
  check_allreduce(&direct, 2053, 4u, "group");
  check_broadcast(&direct, 1031, direct.size - 1, 1);
  nccl_comm_free(&direct);
  MPI_Comm_free(&sub);
  nccl_comm_free(&world);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = all;
  return rank == 0 ? TEST_RESULT("test_nccl") : (all ? 1 : 0);
}
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifndef RLPT_HAVE_CUDA
  if (rank == 0) printf("test_nccl: CUDA backend not built: skipped\n");
  rc = 77;
#else
  /* every rank must agree to skip: the smallest per-node device count decides */
  int local = device_use(comms_node_rank(MPI_COMM_WORLD)) < 0 ? -1 : 0, ok = local >= 0, all_ok = 0;
  if (ok) {
    MPI_Comm node;
    int nlocal = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_free(&node);
    ok = device_cuda_count() >= nlocal; /* one GPU per rank: NCCL refuses shared devices */
  }
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int any_dev = local >= 0, all_dev = 0;
  MPI_Allreduce(&any_dev, &all_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_dev) {
    if (rank == 0) printf("test_nccl: no CUDA device: skipped\n");
    rc = 77;
  } else if (!all_ok) {
    if (rank == 0) printf("test_nccl: needs one CUDA device per rank: skipped\n");
    rc = 77;
  } else {
    rc = run_all(rank, size);
  }
#endif
  MPI_Finalize();
  return rc;
}
