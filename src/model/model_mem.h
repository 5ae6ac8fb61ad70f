/* model/model_mem.h: where a model's op buffers live, shared by model/model.c (the passes)
 * and model/model_alloc.c (the allocation); internal to model/. */
#ifndef RLPT_MODEL_MEM_H
#define RLPT_MODEL_MEM_H

#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* The ops' buffers live where the backend wants them (model/backend.h); a host backend
 * leaves alloc/upload/... NULL and gets malloc/memcpy, so its path is unchanged. */

static inline void *dmem_alloc(const struct model *m, size_t bytes) {
  if (m->on_device) return m->ops->alloc(bytes ? bytes : 1);
  return aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
}

static inline void dmem_free(const struct model *m, void *p) {
  if (m->on_device) { if (p) m->ops->free(p); } else free(p);
}

static inline void dmem_zero(const struct model *m, void *p, size_t bytes) {
  if (m->on_device) m->ops->zero(p, bytes); else memset(p, 0, bytes);
}

/* host -> op memory; nothing to do on a host backend when both are the same buffer */
static inline void to_dev(const struct model *m, void *dst, const void *src, size_t bytes) {
  if (m->on_device) m->ops->upload(dst, src, bytes);
  else if (dst != src) memcpy(dst, src, bytes);
}

static inline void to_host(const struct model *m, void *dst, const void *src, size_t bytes) {
  if (m->on_device) m->ops->download(dst, src, bytes);
  else if (dst != src) memcpy(dst, src, bytes);
}

/* dst[n] = src[n] within op memory: the backend has no copy op, so zero then add
 * (0 + x == x) on a device */
static inline void dmem_copy(const struct model *m, float *dst, const float *src, size_t n) {
  if (!m->on_device) { memcpy(dst, src, sizeof(float) * n); return; }
  m->ops->zero(dst, sizeof(float) * n);
  m->ops->add(dst, src, n);
}

#endif
