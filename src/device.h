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

/* The backend for [run] device (enum run_device in config.h): cpu -> cpu_backend;
 * cuda -> cuda_backend; auto -> cuda_backend when the build has it and a GPU is
 * visible, else cpu_backend. NULL with a message in err when cuda is asked for and
 * this build or this machine has none (bad input: exit code 2). */
const struct backend_ops *device_backend(int run_device, char *err, size_t errlen);
/* The same for a command's --device NAME (auto|cpu|cuda); NULL with a message in err
 * for another name, or as above. */
const struct backend_ops *device_backend_named(const char *name, char *err, size_t errlen);

#endif
