/* model/weights.h: one owner for a set of weights and for which copy of them is current.
 *
 * A struct weights holds a model's fp32 weights on the host, their device copy, and on a
 * mixed-precision backend ([model] dtype = bf16: matmul_w16 and to_bf16, model/backend.h)
 * the bf16 working copy of the device buffer that the products read. `state` says which
 * copy is the truth, and only the four transitions below change it:
 *
 *   weights_host_written    a writer rewrote the host buffer           -> RESIDENCY_HOST
 *   weights_device_written  a writer filled the device buffer          -> RESIDENCY_DEVICE
 *   weights_to_device       make the device copy current: from RESIDENCY_HOST upload
 *                           (bf16 working copy remade)                 -> RESIDENCY_BOTH
 *   weights_to_host         make the host copy current: from RESIDENCY_DEVICE
 *                           download                                   -> RESIDENCY_BOTH
 * (from any other state the last two copy nothing).
 *
 * Writers of the host buffer either say so (weights_track_host_writes: the rollout engine,
 * which rewrites it at each weight sync, and the trainer's frozen KL reference) or need
 * not (weights_create's default: the loaders, `rlpt score`, tests, the trainer's models):
 * then every weights_to_device while the host is the truth uploads, and the state stays
 * RESIDENCY_HOST. Once a device writer has made the device copy the truth, every host
 * writer says so (the trainer's: trainer_host_changed).
 *
 * On a host backend (ops->upload NULL) the device buffer is the host buffer: nothing is
 * copied, the state is kept for its readers all the same.
 *
 * The buffers span the whole parameter table (model/params.h). A tensor- or
 * pipeline-parallel shard is a struct weights over its slice of the table: the transitions
 * then act on that slice alone, and a broadcast or an update moves each shard between its
 * own copies. */
#ifndef RLPT_WEIGHTS_H
#define RLPT_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/backend.h"

/* Which copy of a host / device pair is the truth (the weights here; train/device_update.c
 * tracks the AdamW moments with the same states). */
enum residency {
  RESIDENCY_HOST,   /* the host copy is the truth; the device copy is stale (or not made) */
  RESIDENCY_BOTH,   /* the two agree */
  RESIDENCY_DEVICE  /* the device copy is the truth; the host copy is stale */
};

/* What a device writer did to the bf16 working copy (weights_device_written). */
enum weights_bf16 {
  WEIGHTS_BF16_STALE,   /* only the fp32 buffer was written: the working copy is remade */
  WEIGHTS_BF16_WRITTEN  /* the writer wrote it too (the device AdamW's fused pass) */
};

struct weights {
  const struct backend_ops *ops;
  size_t n;                /* floats in each buffer */
  float *host;             /* fp32 host buffer */
  float *dev;              /* fp32 device buffer: the host buffer on a host backend; NULL
                              until made (weights_device_alloc, or the first transition that
                              needs it) */
  uint16_t *dev16;         /* bf16 working copy of dev; NULL on an fp32 backend */
  enum residency state;
  int host_writes_tracked; /* 1: every host write is followed by weights_host_written */
};

/* n zeroed host floats for a backend; the device buffers come later. 0, or -1 out of memory. */
int weights_create(struct weights *w, size_t n, const struct backend_ops *ops);
/* The device buffers now (a no-op once made, and on a host backend). 0, or -1 out of
 * device memory. */
int weights_device_alloc(struct weights *w);
void weights_free(struct weights *w);
/* From now on the host buffer's writers call weights_host_written; it is the truth now. */
void weights_track_host_writes(struct weights *w);

void weights_host_written(struct weights *w);
void weights_device_written(struct weights *w, enum weights_bf16 bf16);
/* 0, or -1 when the device buffers cannot be made (message printed). */
int weights_to_device(struct weights *w);
void weights_to_host(struct weights *w);

/* The device fp32 buffer for a writer that fills all of it (then weights_device_written):
 * made if need be; NULL out of device memory (message printed). */
float *weights_device_target(struct weights *w);

#endif
