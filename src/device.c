/* device.c: device discovery that works with and without the CUDA backend. */
#include "device.h"

#ifdef RLPT_HAVE_CUDA
int cuda_device_count(void); /* kernels/cuda_device.c */
int device_cuda_built(void) { return 1; }
int device_cuda_count(void) { return cuda_device_count(); }
#else
int device_cuda_built(void) { return 0; }
int device_cuda_count(void) { return 0; }
#endif
