/* device.h: which compute devices this build and this machine have. */
#ifndef RLPT_DEVICE_H
#define RLPT_DEVICE_H

/* 1 when the CUDA backend was compiled in. */
int device_cuda_built(void);
/* Visible CUDA devices (0 without a driver or GPU, or without the backend). */
int device_cuda_count(void);

#endif
