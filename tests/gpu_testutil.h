/* gpu_testutil.h: helpers of the CUDA-backend op tests (kernels/test_gpu_shapes.c,
 * kernels/test_gpu_edge.c): random host vectors, device copies through the backend table,
 * the relative error of a device tensor against a host reference, and the host's
 * bf16 rounding. Include after testutil.h, only in a build with the CUDA backend. */
#ifndef RLPT_TESTS_GPU_TESTUTIL_H
#define RLPT_TESTS_GPU_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "testutil.h"

static uint64_t gt_rng = 0x243f6a8885a308d3ull;

static inline double gt_urand(void) { /* [0, 1), xorshift64 */
  gt_rng ^= gt_rng << 13;
  gt_rng ^= gt_rng >> 7;
  gt_rng ^= gt_rng << 17;
  return (double)(gt_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* n values uniform in [-scale, scale). */
static inline float *gt_randv(size_t n, float scale) {
  float *x = malloc(sizeof(float) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) x[i] = (float)(scale * (2.0 * gt_urand() - 1.0));
  return x;
}

/* Device copy of host bytes through the table (exit 1 when the device is full). */
static inline void *gt_up(const struct backend_ops *o, const void *h, size_t bytes) {
  void *d = o->alloc(bytes);
  if (!d) {
    fprintf(stderr, "out of device memory (%zu bytes)\n", bytes);
    exit(1);
  }
  o->upload(d, h, bytes);
  return d;
}

/* max |dev - ref| / max |ref| of a device fp32 tensor (tu_rel_err: NaN fails). */
static inline double gt_rel_err(const struct backend_ops *o, const void *dev, const float *ref,
                                size_t n) {
  float *h = malloc(sizeof(float) * (n ? n : 1));
  o->download(h, dev, sizeof(float) * n);
  double e = tu_rel_err(h, ref, n);
  free(h);
  return e;
}

/* CHECK_MSG on gt_rel_err(...) <= tol; the rest of the arguments name the tensor (printf). */
#define GT_CHECK_REL(o, dev, ref, n, tol, ...) do { double _e = gt_rel_err(o, dev, ref, n); \
  char _w[200]; snprintf(_w, sizeof _w, __VA_ARGS__); \
  CHECK_MSG(_e <= (tol), "%s: relative error %.3g > %.3g", _w, _e, (double)(tol)); } while (0)

/* bf16 bits of f, round to nearest even; a NaN stays a (quiet) NaN with its sign. */
static inline uint16_t gt_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float gt_bf16_value(uint16_t b) {
  uint32_t w = (uint32_t)b << 16;
  float f;
  memcpy(&f, &w, 4);
  return f;
}

#endif
