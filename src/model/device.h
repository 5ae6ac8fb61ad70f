/* model/device.h: which compute devices this build and this machine have, and the
 * backend that [run] device selects. */
#ifndef RLPT_DEVICE_H
#define RLPT_DEVICE_H

#include <stddef.h>

#include "model/backend.h"

/* 1 when the CUDA backend was compiled in. */
int device_cuda_built(void);
/* Visible CUDA devices (0 without a driver or GPU, or without the backend). */
int device_cuda_count(void);

/* The backend for [run] device (enum run_device in deck/config.h) and [model] dtype (enum
 * model_dtype): cpu -> cpu_backend; cuda -> cuda_backend, or cuda_backend_bf16 (mixed
 * precision, cuda_backend.h) for dtype bf16; auto -> that CUDA backend when the build has
 * it and a GPU is visible, else cpu_backend (fp32: config_check refuses bf16 only with
 * device = cpu). NULL with a message in err when cuda is asked for and this build or this
 * machine has none (bad input: exit code 2). */
const struct backend_ops *device_backend(int run_device, int dtype, char *err, size_t errlen);
/* The same for a command's --device NAME (auto|cpu|cuda), always fp32; NULL with a message
 * in err for another name, or as above. */
const struct backend_ops *device_backend_named(const char *name, char *err, size_t errlen);
/* Before any device memory: with the CUDA backend and a visible GPU, this rank drives GPU
 * local_rank % devices of its node (local_rank: its rank among the job's ranks on the node,
 * mpi/comm.h comms_node_rank), so the ranks of a node spread over its GPUs whatever their
 * roles. Returns the device, or -1 (CPU build, no GPU). */
int device_use(int local_rank);

#endif
