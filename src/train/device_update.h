/* train/device_update.h: the trainer's update on the device ([run] device = cuda).
 *
 * When the model runs on a device backend, trainer_update_model hands over to
 * trainer_update_device: the gradients stay in device memory (no per-step
 * download), the DP ranks sum them with NCCL as the host path does (the losses
 * are divided by global counts; a communicator mirroring t->dp, made at the first
 * update when dp_size > 1), then the global norm (cuda_sumsq), the non-finite
 * skip, clipping (optim_clip_factor)
 * and AdamW (cuda_adamw_step) on device moments, the device params the fp32
 * master and the bf16 working copy refreshed in the same pass when the model
 * has one. The host struct adamw keeps its step count t (authoritative) and
 * its m/v as the checkpoint's staging copy.
 *
 * From the first device update on, the device copies are the truth
 * (model_params_live): host params and moments are refreshed only when a
 * reader asks, by trainer_sync_host (checkpoint, weight sync, the reference
 * snapshot at trainer_begin_rl); whoever writes the host copies (a phase
 * start, a restart) calls trainer_host_changed, and the next forward and
 * update take them from the host again.
 *
 * [optim] zero = 1 over dp_size > 1 (ZeRO-1, train/zero.h): the device keeps the
 * moments of this rank's slice only; the gradient slices are summed to their
 * owners (grouped ncclReduce: the slices are uneven), the norm is the DP sum of
 * the slices' sums of squares, AdamW updates the slice, and the slices are
 * gathered back to every rank (grouped ncclBroadcast), with the bf16 copy remade.
 * Without the CUDA backend no model is on a device and these are no-ops (but
 * trainer_update_device, which is then never called). */
#ifndef RLPT_TRAINER_DEVICE_H
#define RLPT_TRAINER_DEVICE_H

#include "model/backend.h"

struct trainer;
struct model;
struct adamw;

/* 1 when m's update runs on the device (m on a device backend of a CUDA build). */
int trainer_device_on(const struct model *m);
/* trainer_update_model for such an m (the policy or the critic with its AdamW
 * state opt): same contract, same numbers up to the device's summation order. */
int trainer_update_device(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                          double *grad_norm);
/* The host params of the policy and the critic (and with with_optim their
 * AdamW m and v) brought up to date from the device; each copy is downloaded
 * at most once per update. */
void trainer_sync_host(struct trainer *t, int with_optim);
/* The host params, moments or reference were written: they are the truth again
 * (uploaded by the next forward and update). Read them first with
 * trainer_sync_host when keeping part of them. */
void trainer_host_changed(struct trainer *t);
/* Device moments and the NCCL communicator (trainer_free). */
void trainer_device_free(struct trainer *t);

#endif
