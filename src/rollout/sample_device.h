/* rollout/sample_device.h: the rollout engine's sampling on a device backend (lm_ops.sample,
 * rollout/scheduler.h). The forward leaves the logits of its rows in a device buffer
 * (model_forward_kv_dev), the device sampler (kernels/sampling.cu, rollout/sampling.h's
 * semantics and arithmetic) draws from them with the engine's keyed uniforms, and only a
 * token and a logprob per sequence come back to the host: a decode step moves
 * 12 bytes per sequence instead of vocab floats (196 KB for SmolLM2's 49152).
 *
 * Device memory: the logits [max_rows, vocab] fp32 and the sampler's scratch, 24 bytes per
 * logit ([max_rows, vocab] doubles and ints, twice: the sort's input and output). */
#ifndef RLPT_SAMPLE_DEVICE_H
#define RLPT_SAMPLE_DEVICE_H

#include <stddef.h>

#include "rollout/sampling.h"

struct model;
struct sample_device;

/* A sampler for m's vocabulary and up to max_rows rows per step. *out = NULL when m runs on
 * the host or the build has no CUDA backend (the engine samples on the host). Returns 0, or
 * 1 with a message in err when the device memory is short. */
int sample_device_create(struct sample_device **out, const struct model *m, int max_rows,
                         char *err, size_t errlen);
void sample_device_free(struct sample_device *sd);
/* The device buffer [max_rows, vocab] that model_forward_kv_dev writes the logits into. */
float *sample_device_logits(struct sample_device *sd);
/* lm_ops.sample over that buffer (rollout/scheduler.h): src[i] >= 0 a row of it, < 0 the host row
 * host[-1 - src[i]], uploaded after the buffer's highest row in use. 0, or -1 when the rows
 * do not fit max_rows. */
int sample_device_sample(struct sample_device *sd, int n, const int *src, const float *host,
                         const struct sampling_params *sp, const double *u, int *tokens,
                         double *logprob);
/* lm_ops.logits_row: row `row` of the buffer into host dst[vocab]. 0, or -1 out of range. */
int sample_device_row(struct sample_device *sd, int row, float *dst);

#endif
