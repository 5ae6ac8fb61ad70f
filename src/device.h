/* device.h: which compute devices this build and this machine have, and the
 * backend that [run] device selects. */
#ifndef RLPT_DEVICE_H
#define RLPT_DEVICE_H

#include <stddef.h>

#include "backend.h"

/* 1 when the CUDA backend was compiled in. */
int device_cuda_built(void);
/* Visible CUDA devices (0 without a driver or GPU, or without the backend). */
int device_cuda_count(void);

/* The backend for [run] device (enum run_device in config.h) and [model] dtype (enum
 * model_dtype): cpu -> cpu_backend; cuda -> cuda_backend, or cuda_backend_bf16 (mixed
 * precision, cuda_backend.h) for dtype bf16; auto -> that CUDA backend when the build has
 * it and a GPU is visible, else cpu_backend (fp32: config_check refuses bf16 only with
 * device = cpu). NULL with a message in err when cuda is asked for and this build or this
 * machine has none (bad input: exit code 2). */
const struct backend_ops *device_backend(int run_device, int dtype, char *err, size_t errlen);
/* The same for a command's --device NAME (auto|cpu|cuda), always fp32; NULL with a message
 * in err for another name, or as above. */
const struct backend_ops *device_backend_named(const char *name, char *err, size_t errlen);

#endif
