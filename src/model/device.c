/* model/device.c: device discovery and backend choice that work with and without the
 * CUDA backend. */
#include "model/device.h"

#include <stdio.h>
#include <string.h>

#include "deck/config.h"

#ifdef RLPT_HAVE_CUDA
int cuda_device_count(void);         /* kernels/cuda_device.c */
int cuda_device_use(int local_rank);
extern const struct backend_ops cuda_backend, cuda_backend_bf16; /* kernels/cuda_ops.c */
int device_cuda_built(void) { return 1; }
int device_cuda_count(void) { return cuda_device_count(); }
static const struct backend_ops *cuda_ops(int dtype) {
  return dtype == DTYPE_BF16 ? &cuda_backend_bf16 : &cuda_backend;
}
#else
int device_cuda_built(void) { return 0; }
int device_cuda_count(void) { return 0; }
static const struct backend_ops *cuda_ops(int dtype) { (void)dtype; return NULL; }
#endif

/* The backend for auto|cpu|cuda and fp32|bf16; `what` names the setting in the refusal
 * message. */
static const struct backend_ops *pick(int run_device, int dtype, const char *what, char *err,
                                      size_t errlen) {
  if (run_device == DEVICE_CPU) return &cpu_backend;
  int usable = device_cuda_built() && device_cuda_count() > 0;
  if (run_device == DEVICE_AUTO) return usable ? cuda_ops(dtype) : &cpu_backend;
  if (!usable) {
    snprintf(err, errlen, "%s: %s", what, device_cuda_built()
             ? "no CUDA device is visible on this machine (use device = auto or cpu)"
             : "this rlpt was built without the CUDA backend (configure with -DRLPT_CUDA=ON, "
               "or use device = auto or cpu)");
    return NULL;
  }
  return cuda_ops(dtype);
}

const struct backend_ops *device_backend(int run_device, int dtype, char *err, size_t errlen) {
  return pick(run_device, dtype, "[run] device = cuda", err, errlen);
}

const struct backend_ops *device_backend_named(const char *name, char *err, size_t errlen) {
  if (!strcmp(name, "auto")) return pick(DEVICE_AUTO, DTYPE_FP32, "--device auto", err, errlen);
  if (!strcmp(name, "cpu")) return pick(DEVICE_CPU, DTYPE_FP32, "--device cpu", err, errlen);
  if (!strcmp(name, "cuda")) return pick(DEVICE_CUDA, DTYPE_FP32, "--device cuda", err, errlen);
  snprintf(err, errlen, "--device '%s': expected auto, cpu or cuda", name);
  return NULL;
}

int device_use(int local_rank) {
#ifdef RLPT_HAVE_CUDA
  return cuda_device_use(local_rank);
#else
  (void)local_rank;
  return -1;
#endif
}
