/* device.c: device discovery and backend choice that work with and without the
 * CUDA backend. */
#include "device.h"

#include <stdio.h>

#include "config.h"

#ifdef RLPT_HAVE_CUDA
int cuda_device_count(void); /* kernels/cuda_device.c */
extern const struct backend_ops cuda_backend; /* kernels/cuda_ops.c */
int device_cuda_built(void) { return 1; }
int device_cuda_count(void) { return cuda_device_count(); }
static const struct backend_ops *cuda_ops(void) { return &cuda_backend; }
#else
int device_cuda_built(void) { return 0; }
int device_cuda_count(void) { return 0; }
static const struct backend_ops *cuda_ops(void) { return NULL; }
#endif

const struct backend_ops *device_backend(int run_device, char *err, size_t errlen) {
  if (run_device == DEVICE_CPU) return &cpu_backend;
  int usable = device_cuda_built() && device_cuda_count() > 0;
  if (run_device == DEVICE_AUTO) return usable ? cuda_ops() : &cpu_backend;
  if (!usable) {
    snprintf(err, errlen, "[run] device = cuda: %s", device_cuda_built()
             ? "no CUDA device is visible on this machine (use device = auto or cpu)"
             : "this rlpt was built without the CUDA backend (configure with -DRLPT_CUDA=ON, "
               "or use device = auto or cpu)");
    return NULL;
  }
  return cuda_ops();
}
