/* rollout/kv_device.h: the rollout engine's paged KV pool in device memory (a model on a
 * device backend), so that no context crosses PCIe per layer.
 *
 * The blocks live in device memory (kv_create_on with kv_device_storage); the block
 * tables, refcounts, prefix entries and versions stay host bookkeeping (rollout/kv_cache.c).
 * Once per forward, kv_device_prepare uploads the step's block tables and spans in
 * one copy; then per layer, kv_device_attend (struct model_kv_io's attend) stores the
 * new K/V rows into their blocks on the device, runs decode attention (one new row)
 * over the blocks in place, and gathers the contexts of the other sequences (prefills,
 * recomputes after a preemption, prompts after a shared cached prefix) into a
 * contiguous device buffer for the varlen attention.
 *
 * Decode rows are the leading sequences of the batch with one new token (the engine
 * puts its decodes first, rollout/scheduler.c); any later one-token sequence takes the gather
 * path, which is as correct. In a build without CUDA, or for a host model, there is no
 * device storage and the engine keeps its host paths (rollout/engine.c). */
#ifndef RLPT_KV_DEVICE_H
#define RLPT_KV_DEVICE_H

#include "model/backend.h"
#include "rollout/kv_cache.h"
#include "rollout/scheduler.h"

struct model;
struct kv_device;

/* The device memory of m's backend for kv_create_on, or NULL (host model, or a build
 * without CUDA): then the pool stays on the host. */
const struct kv_storage *kv_device_storage(const struct model *m);

/* The device state of a pool kv created on kv_device_storage(m) (its buffers grow at
 * the first steps). 0, or -1 out of memory (message printed). */
int kv_device_create(struct kv_device **out, struct model *m, const struct kv_cache *kv);
void kv_device_free(struct kv_device *d);

/* Before the step's forward: its block tables, decode lengths and prefill spans go up in
 * one copy, and the gather buffer grows to the prefills' contexts. 0, or -1 out of
 * device memory (message printed). */
int kv_device_prepare(struct kv_device *d, const struct lm_batch *b);

/* struct model_kv_io's attend for the prepared step (b, q, k_new, v_new, out, lse:
 * device memory; b laid out as the lm_batch). */
int kv_device_attend(struct kv_device *d, int layer, const struct attn_batch *b, const float *q,
                     const float *k_new, const float *v_new, float *out, float *lse, int H,
                     float scale);

#endif
