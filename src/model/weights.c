/* model/weights.c: the host / device / bf16 copies of a set of weights and the transitions
 * between them (model/weights.h). */
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/huge_alloc.h"

static int on_device(const struct weights *w) { return w->ops->upload != NULL; }

/* The backend keeps a bf16 working copy of the weights its products read. */
static int mixed_precision(const struct weights *w) {
  return on_device(w) && w->ops->matmul_w16 && w->ops->to_bf16;
}

int weights_create(struct weights *w, size_t n, const struct backend_ops *ops) {
  *w = (struct weights){ .ops = ops, .n = n, .state = RESIDENCY_HOST };
  w->host = huge_floats(n);
  if (!w->host) return -1;
  if (!on_device(w)) w->dev = w->host;
  return 0;
}

int weights_device_alloc(struct weights *w) {
  if (!w->dev) w->dev = w->ops->alloc(sizeof(float) * w->n);
  if (w->dev && !w->dev16 && mixed_precision(w))
    w->dev16 = w->ops->alloc(sizeof(uint16_t) * w->n);
  return w->dev && (w->dev16 || !mixed_precision(w)) ? 0 : -1;
}

void weights_free(struct weights *w) {
  if (w->ops && on_device(w)) {
    if (w->dev) w->ops->free(w->dev);
    if (w->dev16) w->ops->free(w->dev16);
  }
  free(w->host);
  memset(w, 0, sizeof *w);
}

void weights_track_host_writes(struct weights *w) { w->host_writes_tracked = 1; }

/* The bf16 working copy remade from the device fp32 buffer. */
static void bf16_refresh(const struct weights *w) {
  if (w->dev16) w->ops->to_bf16(w->dev16, w->dev, w->n);
}

void weights_host_written(struct weights *w) { w->state = RESIDENCY_HOST; }

void weights_device_written(struct weights *w, enum weights_bf16 bf16) {
  if (bf16 == WEIGHTS_BF16_STALE) bf16_refresh(w);
  w->state = RESIDENCY_DEVICE;
}

/* Out of device memory for the weights: said once per call that needed the buffers. */
static int device_alloc_loud(struct weights *w) {
  if (weights_device_alloc(w) == 0) return 0;
  fprintf(stderr, "rlpt: out of device memory for a copy of the weights (%zu parameters)\n",
          w->n);
  return -1;
}

int weights_to_device(struct weights *w) {
  if (w->state != RESIDENCY_HOST) return 0;
  if (on_device(w)) {
    if (device_alloc_loud(w)) return -1;
    w->ops->upload(w->dev, w->host, sizeof(float) * w->n);
    bf16_refresh(w);
  }
  if (w->host_writes_tracked) w->state = RESIDENCY_BOTH;
  return 0;
}

void weights_to_host(struct weights *w) {
  if (w->state != RESIDENCY_DEVICE) return;
  if (on_device(w)) w->ops->download(w->host, w->dev, sizeof(float) * w->n);
  w->state = RESIDENCY_BOTH;
}

float *weights_device_target(struct weights *w) {
  return device_alloc_loud(w) ? NULL : w->dev;
}
