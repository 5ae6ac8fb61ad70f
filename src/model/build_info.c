/* model/build_info.c: the build's version and libraries, and its devices (model/build_info.h). */
#include "model/build_info.h"

#include <cblas.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

#include "model/device.h"

int build_info_print(void) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  unsigned h5maj, h5min, h5rel;
  MPI_Get_library_version(mpi, &len);
  for (int i = 0; i < len; i++)
    if (mpi[i] == '\n' || mpi[i] == ',') { mpi[i] = '\0'; break; }
  H5get_libversion(&h5maj, &h5min, &h5rel);
  printf("rlpt %s\n", RLPT_VERSION);
  printf("  mpi:      %s\n", mpi);
  printf("  hdf5:     %u.%u.%u (parallel)\n", h5maj, h5min, h5rel);
  printf("  blas:     %s\n", openblas_get_config());
  printf("  cuda:     %s\n", device_cuda_built() ? "built in" : "not built");
  if (device_cuda_built()) printf("  gpus:     %d visible\n", device_cuda_count());
  return 0;
}
