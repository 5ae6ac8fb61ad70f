/* kernels/cuda_check.h: check macros for the CUDA libraries. Each prints the rank-free
 * location (file:line), the call, the library's error string and a hint, then
 * aborts the job: a CUDA fault on one rank must not leave the others waiting. */
#ifndef RLPT_CUDA_CHECK_H
#define RLPT_CUDA_CHECK_H
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" /* one C definition (cuda_device.c) for the C and the CUDA sources */
#endif
void cuda_fail(const char *lib, const char *call, const char *what, const char *hint,
               const char *file, int line);

#define CUDA_CHECK(call) do { cudaError_t _e = (call); if (_e != cudaSuccess) \
  cuda_fail("CUDA", #call, cudaGetErrorString(_e), \
            "check the device is visible (CUDA_VISIBLE_DEVICES) and has free memory", \
            __FILE__, __LINE__); } while (0)

#define CUBLAS_CHECK(call) do { cublasStatus_t _s = (call); if (_s != CUBLAS_STATUS_SUCCESS) \
  cuda_fail("cuBLASLt", #call, cublasLtGetStatusString(_s), \
            "an unsupported shape/alignment/type combination, or out of device memory", \
            __FILE__, __LINE__); } while (0)

#define NCCL_CHECK(call) do { ncclResult_t _r = (call); if (_r != ncclSuccess) \
  cuda_fail("NCCL", #call, ncclGetErrorString(_r), \
            "rerun with NCCL_DEBUG=WARN; check every rank reached the same collective", \
            __FILE__, __LINE__); } while (0)
#endif
