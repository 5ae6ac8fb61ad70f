/* train/device_update.h: the AdamW update of a model on its device ([run] device = cuda).
 *
 * When a model runs on a device backend, its update runs there too: the gradients stay in
 * device memory (model.grads_on_device: no per-step download), the ranks of the DP group
 * sum them with NCCL as the host path does with MPI (the losses are divided by global
 * counts; the communicator mirrors the group and is made at the first update of a group
 * of more than one rank), then the global norm (cuda_sumsq), the non-finite skip,
 * clipping (optim_clip_factor) and AdamW (cuda_adamw_step) on device moments. The update
 * writes the device copy of the weights (model/weights.h), and their bf16 working copy in
 * the same pass when the model has one: from the first update on the device copy is the
 * truth (RESIDENCY_DEVICE) until a reader makes the host copy current (weights_to_host)
 * and a writer of the host copy says so (weights_host_written). The host struct adamw
 * keeps its step count t (authoritative) and its m and v as the checkpoint's staging copy;
 * their device copies follow the same states (enum residency).
 *
 * ZeRO-1 (zero = 1 over more than one rank, train/zero.h): the device keeps the moments
 * of this rank's slice only; the gradient slices are summed to their owners (grouped
 * ncclReduce: the slices are uneven), the norm is the DP sum of the slices' sums of
 * squares, AdamW updates the slice, and the slices are gathered back to every rank
 * (grouped ncclBroadcast), with the bf16 copy remade.
 *
 * Without the CUDA backend no model is on a device: device_update_on is 0 and
 * device_update_step is never called. */
#ifndef RLPT_DEVICE_UPDATE_H
#define RLPT_DEVICE_UPDATE_H

#include <mpi.h>

struct adamw;
struct config;
struct model;

/* The device side of the updates over one DP group: the NCCL communicator and, for each
 * model updated (told apart by the caller's index k < DEVICE_UPDATE_MODELS), its device
 * moments. */
struct device_update;

#define DEVICE_UPDATE_MODELS 2

/* 1 when m's update runs on the device (m on a device backend of a CUDA build). */
int device_update_on(const struct model *m);
/* 1 when every parameter of m's device weights is finite (one device sum of squares);
 * only for a model whose update runs on the device. */
int device_update_params_finite(struct model *m);

/* The updates over dp with [optim] settings of cfg (kept: it must outlive the object);
 * zero: ZeRO-1 slices (train/zero.h zero_opt_range's). Dies when out of memory. */
struct device_update *device_update_create(const struct config *cfg, MPI_Comm dp, int zero);
void device_update_free(struct device_update *du);

/* One update of model k (m, with the AdamW state opt over m's slice) at lr: returns 1
 * when applied, 0 when skipped for a non-finite gradient norm (weights, moments and
 * opt->t unchanged); *grad_norm gets the norm before clipping. The same numbers as the
 * host update up to the device's summation order. */
int device_update_step(struct device_update *du, int k, struct model *m, struct adamw *opt,
                       double lr, double *grad_norm);

/* opt's host m and v brought up to date from model k's device moments (a no-op when they
 * are current). */
void device_update_moments_to_host(struct device_update *du, int k, struct adamw *opt);
/* Every model's host m and v were written: the next update uploads them. */
void device_update_moments_written(struct device_update *du);

#endif
