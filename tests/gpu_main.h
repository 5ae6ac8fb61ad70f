/* gpu_main.h: the main of a single-process GPU test. It returns CTest's skip code 77
 * (SKIP_RETURN_CODE in tests/CMakeLists.txt) with a line that says why, where this build
 * has no CUDA backend or this machine no visible device, and otherwise runs the test:
 *   GPU_TEST_MAIN("test_gpu_ops", run_all)     run_all: int (void), the failure count's verdict
 * run_all is referenced only in a CUDA build, so it may live inside #ifdef RLPT_HAVE_CUDA. */
#ifndef RLPT_TESTS_GPU_MAIN_H
#define RLPT_TESTS_GPU_MAIN_H

#include <stdio.h>

#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#define GPU_TEST_MAIN(name, run)                           \
  int main(void) {                                         \
    if (device_cuda_count() == 0) {                        \
      printf("%s: no CUDA device: skipped\n", name);       \
      return 77;                                           \
    }                                                      \
    return run();                                          \
  }
#else
#define GPU_TEST_MAIN(name, run)                           \
  int main(void) {                                         \
    printf("%s: CUDA backend not built: skipped\n", name); \
    return 77;                                             \
  }
#endif

#endif
