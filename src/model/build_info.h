/* model/build_info.h: what this build contains (rlpt's version, the MPI, HDF5 and BLAS
 * libraries it runs on, the CUDA backend) and the GPUs this machine shows it. */
#ifndef RLPT_BUILD_INFO_H
#define RLPT_BUILD_INFO_H

/* The lines of `rlpt version` on stdout. Needs no MPI_Init. Returns 0. */
int build_info_print(void);

#endif
