/* rollout/sample_device.c: the rollout engine's sampling on a device backend (rollout/sample_device.h).
 * Compiled in every build; a sampler exists only with the CUDA backend. */
#include "rollout/sample_device.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"

struct sample_device {
  const struct backend_ops *ops;
  int vocab, max_rows;
  float *logits;             /* device [max_rows, vocab] */
  int *rows;                 /* host [max_rows]: the logits row of each draw */
  struct cuda_sampler cs;
};

int sample_device_create(struct sample_device **out, const struct model *m, int max_rows,
                         char *err, size_t errlen) {
  *out = NULL;
  if (!m->on_device) return 0;
  struct sample_device *sd = calloc(1, sizeof *sd);
  int V = m->cfg.vocab_size;
  if (!sd) {
    snprintf(err, errlen, "rollout: out of memory");
    return 1;
  }
  sd->ops = m->ops;
  sd->vocab = V;
  sd->max_rows = max_rows;
  sd->rows = malloc(sizeof(int) * (size_t)max_rows);
  sd->logits = m->ops->alloc(sizeof(float) * (size_t)max_rows * (size_t)V);
  if (!sd->rows || !sd->logits || cuda_sampler_init(&sd->cs, V, max_rows) != 0) {
    snprintf(err, errlen, "rollout: out of device memory for sampling %d sequences x vocab %d "
             "(%.0f MiB; lower [rollout] max_num_seqs)", max_rows, V,
             28.0 * max_rows * V / (1 << 20));
    sample_device_free(sd);
    return 1;
  }
  *out = sd;
  return 0;
}

void sample_device_free(struct sample_device *sd) {
  if (!sd) return;
  if (sd->logits) sd->ops->free(sd->logits);
  if (sd->cs.vocab) cuda_sampler_free(&sd->cs);
  free(sd->rows);
  free(sd);
}

float *sample_device_logits(struct sample_device *sd) { return sd->logits; }

int sample_device_sample(struct sample_device *sd, int n, const int *src, const float *host,
                         const struct sampling_params *sp, const double *u, int *tokens,
                         double *logprob) {
  int base = 0, n_host = 0;
  for (int i = 0; i < n; i++) {
    if (src[i] >= base) base = src[i] + 1;
    if (src[i] < 0 && -src[i] > n_host) n_host = -src[i];
  }
  if (n > sd->max_rows || base + n_host > sd->max_rows) return -1;
  size_t V = (size_t)sd->vocab;
  if (n_host > 0) sd->ops->upload(sd->logits + (size_t)base * V, host, sizeof(float) * n_host * V);
  for (int i = 0; i < n; i++) sd->rows[i] = src[i] >= 0 ? src[i] : base - 1 - src[i];
  cuda_sampler_sample(&sd->cs, sd->logits, sd->rows, n, sp, u, tokens, logprob);
  return 0;
}

int sample_device_row(struct sample_device *sd, int row, float *dst) {
  if (row < 0 || row >= sd->max_rows) return -1;
  size_t V = (size_t)sd->vocab;
  sd->ops->download(dst, sd->logits + (size_t)row * V, sizeof(float) * V);
  return 0;
}

#else /* no CUDA backend: no model is on a device, the engine samples on the host */

struct sample_device {
  int unused;
};

int sample_device_create(struct sample_device **out, const struct model *m, int max_rows,
                         char *err, size_t errlen) {
  (void)m, (void)max_rows, (void)err, (void)errlen;
  *out = NULL;
  return 0;
}

void sample_device_free(struct sample_device *sd) { free(sd); }

float *sample_device_logits(struct sample_device *sd) {
  (void)sd;
  return NULL;
}

int sample_device_sample(struct sample_device *sd, int n, const int *src, const float *host,
                         const struct sampling_params *sp, const double *u, int *tokens,
                         double *logprob) {
  (void)sd, (void)n, (void)src, (void)host, (void)sp, (void)u, (void)tokens, (void)logprob;
  return -1;
}

int sample_device_row(struct sample_device *sd, int row, float *dst) {
  (void)sd, (void)row, (void)dst;
  return -1;
}
#endif
