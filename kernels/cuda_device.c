/* kernels/cuda_device.c: device discovery and choice, and the shared failure path of the check macros. */
#include <mpi.h>

#include "kernels/cuda_check.h"

void cuda_fail(const char *lib, const char *call, const char *what, const char *hint,
               const char *file, int line) {
  int rank = 0, init = 0;
  MPI_Initialized(&init);
  if (init) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "rlpt: rank %d: %s error at %s:%d: %s: %s\n  hint: %s\n", rank, lib, file, line,
          call, what, hint);
  if (init) MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* No driver or no GPU is not an error here: it means "0 devices". */
int cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int cuda_device_use(int local_rank) {
  int n = cuda_device_count();
  if (n < 1) return -1;
  CUDA_CHECK(cudaSetDevice(local_rank % n));
  return local_rank % n;
}
