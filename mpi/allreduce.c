/* mpi/allreduce.c: polite small all-reduces and the bucketed gradient sum (allreduce.h). */
#include "mpi/allreduce.h"

#include "mpi/wait.h"
#include "util/error.h"

static int comm_size(MPI_Comm comm) {
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}

void allreduce_polite(void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (count <= 0 || comm_size(comm) == 1) return;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, count, type, op, comm, &req));
  wait_request(&req, MPI_STATUS_IGNORE);
}

void allreduce_sum_floats(float *g, size_t n, size_t bucket_floats, MPI_Comm comm) {
  if (n == 0 || comm_size(comm) == 1) return;
  if (bucket_floats == 0) bucket_floats = ALLREDUCE_BUCKET_BYTES / sizeof(float);
  if (bucket_floats > (size_t)1 << 30) bucket_floats = (size_t)1 << 30; /* fits an int count */
  for (size_t off = 0; off < n; off += bucket_floats) {
    size_t len = n - off < bucket_floats ? n - off : bucket_floats;
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, g + off, (int)len, MPI_FLOAT, MPI_SUM, comm, &req));
    wait_request(&req, MPI_STATUS_IGNORE);
  }
}
