/* model/test_gpu_select.c: which GPU each rank takes, and the ZeRO-1 slice collectives of
 * mpi/nccl_comm.h against MPI, on 1 or more ranks.
 *
 * Selection: comms_node_rank(MPI_COMM_WORLD) returns the rank's node-local rank, counted
 * here independently (the ranks of lower world rank with the same MPI processor name), and
 * device_use of it (what rlpt run calls before any device memory) leaves the current device
 * at that local rank % the node's devices (cudaGetDevice).
 * Slices (when the node has one device per rank, as NCCL needs): over uneven slices,
 * one of them empty in the second layout, nccl_reduce_slices leaves each rank's own
 * slice equal to the MPI sum of that slice (1e-6 relative: NCCL sums in another order)
 * and nccl_gather_slices gives every rank every slice exactly as its owner held it.
 * Skips (exit 77 on every rank) without the CUDA backend or without a device. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device.h"
#include "mpi/comm.h"
#include "mpi/nccl_comm.h"

#ifdef RLPT_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda_backend.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */

/* Ranks of lower world rank on this rank's host. */
static int local_rank_by_name(int rank, int size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0, local = 0;
  MPI_Get_processor_name(name, &len);
  char *all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                MPI_COMM_WORLD);
  for (int r = 0; r < rank; r++) local += !strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, name);
  free(all);
  return local;
}

static void select_check(int rank, int size) {
  int want = local_rank_by_name(rank, size), local = comms_node_rank(MPI_COMM_WORLD), dev = -1;
  CHECK_MSG(local == want, "rank %d: comms_node_rank gave local rank %d, want %d", rank, local,
            want);
  int used = device_use(local);
  CHECK(cudaGetDevice(&dev) == cudaSuccess);
  CHECK_MSG(dev == want % device_cuda_count() && used == dev,
            "rank %d: device_use gave %d, current device %d, want %d %% %d", rank, used, dev, want,
            device_cuda_count());
}

/* Exact in fp32 and distinct per (rank, i): multiples of 1/512 in [-2, 2). */
static float value(int rank, size_t i) {
  return (float)((int)((i * 7919u + (size_t)rank * 104729u) % 2001u) - 1000) / 512.0f;
}

/* One slice layout lo[size + 1] over n floats. */
static void slices_check(struct nccl_comm *nc, size_t n, const size_t *lo) {
  const struct backend_ops *G = &cuda_backend;
  int me = nc->rank;
  float *x = malloc(4 * n), *sum = malloc(4 * n), *got = malloc(4 * n);
  for (size_t i = 0; i < n; i++) x[i] = value(me, i);
  MPI_Allreduce(x, sum, (int)n, MPI_FLOAT, MPI_SUM, nc->mpi);
  float *d = G->alloc(4 * n);
  G->upload(d, x, 4 * n);
  nccl_reduce_slices(nc, d, lo);
  G->download(got, d, 4 * n);
  size_t a = lo[me], len = lo[me + 1] - a;
  double e = len ? tu_rel_err(got + a, sum + a, len) : 0.0;
  CHECK_MSG(e <= 1e-6, "rank %d: reduce_slices [%zu, %zu): relative error %.3g", me, a, a + len, e);
  /* gather: every slice from its owner; the rest of each rank's buffer is garbage */
  for (size_t i = 0; i < n; i++) x[i] = i >= a && i < a + len ? value(100 + me, i) : NAN;
  G->upload(d, x, 4 * n);
  nccl_gather_slices(nc, d, lo);
  G->download(got, d, 4 * n);
  size_t bad = 0;
  for (int r = 0; r < nc->size; r++)
    for (size_t i = lo[r]; i < lo[r + 1]; i++) bad += got[i] != value(100 + r, i);
  CHECK_MSG(bad == 0, "rank %d: gather_slices: %zu of %zu values differ from their owner's", me,
            bad, n);
  G->free(d);
  free(x), free(sum), free(got);
}

static void zero_slices(int size) {
  struct nccl_comm nc;
  nccl_comm_init(&nc, MPI_COMM_WORLD);
  size_t n = 100003, *lo = calloc((size_t)size + 1, sizeof *lo);
  for (int r = 1; r < size; r++) lo[r] = n * (size_t)r / (size_t)size + (size_t)r * 17; /* uneven */
  lo[size] = n;
  slices_check(&nc, n, lo);
  for (int r = 1; r < size; r++) lo[r] = r == 1 ? 0 : lo[r]; /* rank 0 owns nothing */
  slices_check(&nc, n, lo);
  free(lo);
  nccl_comm_free(&nc);
}

/* 1 where every rank has a device; *per_rank 1 where every node has one per rank. */
static int devices_everywhere(int *per_rank) {
  MPI_Comm node;
  int nlocal = 0, has = device_cuda_count() > 0, all = 0, enough = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nlocal);
  MPI_Comm_free(&node);
  int each = device_cuda_count() >= nlocal;
  MPI_Allreduce(&has, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&each, &enough, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  *per_rank = enough;
  return all;
}

static int run_all(int rank, int size) {
  int per_rank = 0;
  if (!devices_everywhere(&per_rank)) {
    if (rank == 0) printf("test_gpu_select: no CUDA device: skipped\n");
    return 77;
  }
  select_check(rank, size);
  if (per_rank)
    zero_slices(size);
  else if (rank == 0)
    printf("test_gpu_select: ZeRO-1 slices not run (NCCL needs one device per rank)\n");
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = all;
  return rank == 0 ? TEST_RESULT("test_gpu_select") : (all ? 1 : 0);
}
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifndef RLPT_HAVE_CUDA
  if (rank == 0) printf("test_gpu_select: CUDA backend not built: skipped\n");
  rc = 77;
#else
  rc = run_all(rank, size);
#endif
  MPI_Finalize();
  return rc;
}
