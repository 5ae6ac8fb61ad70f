/* train/trainer.h: what the train ranks do with a batch — the SFT step and the RL
 * step (reference/old logprobs, advantages, ppo_epochs x mini_batches updates
 * of the policy loss), with the data-parallel gradient all-reduce over the DP
 * communicator, global-norm clipping and AdamW. One flat parameter buffer
 * (model/params.h) is what the optimizer, the all-reduce, the weight broadcast and
 * the checkpoint walk.
 *
 * Conventions (train/trainer.c, train/rl_step.c):
 * - Losses are divided by counts summed over the DP group before the backward,
 *   so the DP all-reduce SUMS the gradients (mpi/allreduce.h); micro-batching and
 *   DP give the gradient of one big batch.
 * - Micro-batches: at most [ranks] micro_batch_seqs sequences and max_tokens
 *   packed tokens each (a sequence longer than max_tokens is an error).
 * - The LR of a step comes from the phase schedule at `step` (the phase's step
 *   count, advanced by every SFT/RL step call, and by the step loop for a DAPO
 *   step that kept no group: one schedule step per RL step); every update of an RL step
 *   (ppo_epochs x mini_batches) uses that step's LR. A restart restores step,
 *   update, weight_version and the AdamW state.
 * - RL needs whole groups on one rank (GRPO/RLOO/Dr. GRPO statistics are per
 *   group and computed locally): the step loop must distribute whole groups.
 *   Batch-wide statistics (REINFORCE++ and whiten_adv whitening, counts, metrics)
 *   are all-reduced over dp. Every DP rank must call the step, even with no samples.
 * - The model runs on [run] device's backend. On a device the update runs there too
 *   (train/device_update.h): the device copies of the weights and moments are then the
 *   truth, and the host ones are made current for their readers (trainer_sync_host).
 * - [model] init: scratch ([run] seed), ckpt:PATH (the /model weights of an
 *   rlpt model file from `rlpt init` or of a checkpoint; the shape must match
 *   the deck), or gguf:PATH / hf:DIR (imported, model/import.h).
 * - [optim] zero = 1 with more than one DP rank: ZeRO-1 (train/zero.h), the AdamW
 *   moments sharded over dp, gradients reduce-scattered and parameters all-gathered;
 *   the same update as zero = 0 up to fp32 summation order. On one rank it is zero = 0.
 * - [algo] adv_estimator = gae (PPO) trains a critic beside the policy (has_critic);
 *   a checkpoint holds its weights in /critic and its AdamW moments in /critic_optim. */
#ifndef RLPT_TRAINER_H
#define RLPT_TRAINER_H

#include <mpi.h>
#include <stdint.h>

#include "model/model.h"
#include "model/tp.h"
#include "rl/experience.h"
#include "rl/metrics.h"
#include "train/optim.h"

struct config;
struct task;
struct tokenizer;

struct trainer {
  const struct config *cfg;
  struct model policy;       /* params, grads, activations */
  struct weights ref;        /* frozen reference policy, the policy's table (ref.host):
                                only when [run] steps > 0 and [algo] kl_coef > 0 or
                                name = dpo | ipo (else
                                ref.host is NULL, and the kl metric is NaN) */
  struct adamw opt;
  struct optim_sched sched;  /* of the current phase */
  long update;               /* optimizer updates applied in the current phase */
  int64_t weight_version;    /* bumped by every RL step that applied an update */
  MPI_Comm dp;               /* data-parallel group (MPI_COMM_SELF for one rank) */
  int dp_rank, dp_size;
  /* tensor parallelism ([ranks] train_tp > 1, model/tp.h): the policy is this rank's shard
   * (its table param_table_build_tp), and so are the gradients, AdamW moments and the
   * reference; full_table is the full model's (built only with tp.size > 1). No rank holds
   * the model whole: its readers move it tensor by tensor (trainer_tensor_full). */
  struct tp_group tp;
  struct param_table full_table;
  struct model_config full_table_cfg;  /* the full model's config (the deck's) */
  int restored;              /* a restart read the checkpoint's AdamW moments (and with
                                restored_ref the reference) into opt and ref in place
                                (run/restart.c, train_tp > 1): the next trainer_begin_sft /
                                trainer_begin_rl keeps them instead of resetting */
  int restored_ref;
  int zero;                  /* [optim] zero = 1 over dp_size > 1: opt and critic_opt hold
                                this rank's ZeRO-1 slice only (train/zero.h zero_opt_range) */
  long skipped_nonfinite;     /* updates skipped for a non-finite gradient norm, since create */
  long params_nonfinite[2];   /* NaN/Inf parameters after the latest update of the policy [0]
                                 and the critic [1] (AdamW with eps = 0 divides 0 by 0) */
  long step;                  /* steps taken in the current phase (indexes the LR schedule) */
  int warned_single_groups;   /* the G = 1 warning was printed */
  int max_tokens;             /* packed tokens per micro-batch */
  /* PPO ([algo] adv_estimator = gae, [run] steps > 0): the value model, the
   * policy's shape plus score.weight, set from the policy at trainer_begin_rl,
   * with its own AdamW state ([optim] lr and clipping) */
  int has_critic;
  struct model critic;
  struct adamw critic_opt;
  /* the update on the device (train/device_update.h): device moments, NCCL; NULL until the
   * first device update */
  struct device_update *dev;
  /* scratch of one SFT micro-batch (max_tokens floats / max_tokens + 1 ints) */
  float *lp, *ent, *dlp;
  int *cu_mb;
};

/* Build the policy for mc with room for max_tokens packed tokens (per micro-batch),
 * init from the deck ([model] init, [run] seed), AdamW state, over dp.
 * Returns 0, 2 with a message (bad deck or model file), or 1 (out of memory);
 * on failure *t is left zeroed (trainer_free on it is harmless). */
int trainer_create(struct trainer *t, const struct config *cfg, const struct model_config *mc,
                   int max_tokens, MPI_Comm dp, char *err, size_t errlen);
/* The same with the policy split over the TP group tp (MPI_COMM_NULL or a one-rank comm:
 * trainer_create): model_create_tp, the initial weights built or read in the full layout
 * and scattered ([model] init = scratch gives the one-rank run's weights), the gradient
 * norm over the group (tp_sumsq). Host backend, zero = 0 and no critic (run/setup.c refuses
 * the rest at deck time). Every rank of dp and tp calls the steps with its group's data. */
int trainer_create_tp(struct trainer *t, const struct config *cfg, const struct model_config *mc,
                      int max_tokens, MPI_Comm dp, MPI_Comm tp, char *err, size_t errlen);
/* 1 when the policy is split over a TP group of more than one rank. */
static inline int trainer_tp(const struct trainer *t) { return t->tp.size > 1; }
/* The full model's table (the policy's without tp); its entries are the policy table's, in
 * the same order. */
const struct param_table *trainer_full_table(const struct trainer *t);
/* out (full_table e[i].numel floats) <- full tensor i of a vector laid out by the policy's
 * table (weights, AdamW moments, the reference): with tp gathered over the group (collective:
 * every rank of it calls with the same i), else copied. */
void trainer_tensor_full(const struct trainer *t, const float *local, int i, float *out);
/* The same for the consecutive tensors [i0, i1) into out (laid out from tensor i0 as in the
 * full table), with tp gathered to the group's rank 0 only (tp_gather_range: out is not
 * written on the others). */
void trainer_range_full(const struct trainer *t, const float *local, int i0, int i1, float *out);
/* This rank's shard of full tensor i (full: its e[i].numel floats) into local, a vector
 * laid out by the policy's table (no communication). */
void trainer_tensor_local(const struct trainer *t, int i, const float *full, float *local);
void trainer_free(struct trainer *t);
/* path is an rlpt model file or checkpoint whose /meta model config is mc (init_std aside):
 * 0, or 2 with a message starting with what (e.g. "[model] init = ckpt:"). */
int trainer_check_file(const struct model_config *mc, const char *path, const char *what, char *err,
                       size_t errlen);

/* Start a phase: fresh AdamW moments and the phase's LR schedule (SFT: [sft]
 * lr/warmup over sft.steps; RL: [optim] over run.steps). Snapshots the
 * reference policy at the start of RL. */
void trainer_begin_sft(struct trainer *t);
void trainer_begin_rl(struct trainer *t);

/* One SFT update on this rank's share of the global batch: loss = mean over
 * the global batch's completion tokens of -logprob (loss_mask 1 on completion
 * targets: mask[t] = 1 when token t+1 is a completion token). The divisor is the
 * global token count (allreduced). Fills pg_loss (the SFT loss, nats per
 * completion token: struct step_metrics has no separate loss field), entropy
 * (mean over completion tokens), grad_norm, lr, skipped_nonfinite (this step's
 * count), params_nonfinite, t_train, train_tok_per_s (global packed tokens / t_train).
 * Returns 0, or 1 on an internal failure (a batch the model refuses). */
int trainer_sft_step(struct trainer *t, const int *tokens, const int *cu_seqlens,
                     const float *loss_mask, int nseq, struct step_metrics *m);

/* One RL step on this rank's share of the step's samples (rewards set; the
 * groups whole on one rank, or advantages already set on every sample by the
 * caller: sample.n_adv = 1 or n_resp). Samples flagged SAMPLE_FILTERED are left
 * out; SAMPLE_MASKED ones count as sequences with no loss tokens.
 * Computes old logprobs ([algo] old_logprobs) and reference logprobs
 * (kl_coef > 0); advantages ([algo] adv_estimator; KL in the reward when
 * kl_in = reward; gae with the critic's values, which the value loss then fits
 * on every mini-batch); TIS weights ([algo] tis; with tis = off, SAMPLE_STALE
 * samples still get token-truncated weights at tis_cap); then ppo_epochs x
 * mini_batches updates (mini-batch j = the samples whose group slot is
 * j mod mini_batches, in batch order: the same sets whatever the DP layout; a
 * mini-batch empty on every rank is no update).
 * Fills kl (mean over response tokens of the [algo] kl_estimator at
 * lp_old - lp_ref; NaN without a reference), entropy, pg_loss (means over the
 * updates), pg_clipfrac_low/high, ratio_mean, tis_clipfrac, grad_norm (last
 * update), lr, logprob_diff_max (|rollout lp - old lp| over samples generated
 * at the current weight_version), skipped_nonfinite (this step), params_nonfinite, t_ref
 * (reference, old logprob and critic value passes), t_train, train_tok_per_s.
 * Returns 0, 1 on an internal failure (a batch the model refuses, no memory). */
int trainer_rl_step(struct trainer *t, struct sample_batch *b, struct step_metrics *m);

/* After the micro-batches' backward: sum the gradients over dp, global norm,
 * clip ([optim] grad_clip), AdamW at lr. A non-finite norm skips the update
 * (params and moments unchanged) and counts it in skipped_nonfinite; after an applied
 * update the model's NaN/Inf parameters are counted (params_nonfinite). *grad_norm
 * gets the norm before clipping. Returns 1 when the update was applied, 0 when skipped. */
int trainer_apply_update(struct trainer *t, double lr, double *grad_norm);
/* The update of a one-update step (SFT, preference): the LR of t->step's schedule, the
 * update, t->step + 1; fills grad_norm, lr, skipped_nonfinite, t_train (seconds since t0)
 * and train_tok_per_s (n_tok / t_train). 1 when the update was applied. */
int trainer_step_update(struct trainer *t, double t0, double n_tok, struct step_metrics *m);
/* The same for any model of the trainer (the policy or the critic) and its
 * AdamW state; does not touch t->update. */
int trainer_update_model(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                         double *grad_norm);
/* NaN/Inf parameters of the policy and the critic after their latest updates (the same on
 * every DP rank: each holds the whole model). */
long trainer_params_nonfinite(const struct trainer *t);

/* The host copies of the policy's and the critic's weights (and with with_optim their
 * AdamW m and v) made current from the device when it trains there; each is
 * downloaded at most once per update. */
void trainer_sync_host(struct trainer *t, int with_optim);
/* The host weights or moments of the policy and the critic were written: they are the
 * truth again (a device trainer uploads them at the next forward and update). Make them
 * current first with trainer_sync_host when keeping part of them. */
void trainer_host_changed(struct trainer *t);

/* Micro-batching over packed sequences (cu[nseq + 1] offsets): the end of the
 * micro-batch that starts at sequence s0 (at most micro_batch_seqs sequences and
 * max_tokens tokens; always at least one sequence). */
int trainer_micro_end(const struct trainer *t, const int *cu, int s0, int nseq);
/* model_forward_with of m (the policy or the critic) and weights w (m's own, or the
 * reference) on sequences [s0, s1) of a packed batch; lp, ent and val (may be NULL)
 * receive the cu[s1] - cu[s0] logprobs, entropies and values of those tokens. 0 or -1. */
int trainer_forward_micro(struct trainer *t, struct model *m, struct weights *w,
                          const int *tokens, const int *cu, int s0, int s1, float *lp, float *ent,
                          float *val);

/* ---- SFT data ---------------------------------------------------------------
 * A packed SFT batch: [BOS] prompt answer [EOS] per sequence, mask[t] = 1 when
 * token t+1 is a completion token (answer or EOS). */
struct sft_batch {
  int nseq, n_tok;
  int *tokens, *cu_seqlens;  /* cu_seqlens[nseq + 1] */
  float *mask;
  int cap_seq, cap_tok;
};
void sft_batch_init(struct sft_batch *b);
void sft_batch_free(struct sft_batch *b);
/* Room for seqs sequences and toks tokens (kept when larger). 0, or 1 out of memory. */
int sft_batch_reserve(struct sft_batch *b, int seqs, int toks);
/* Append one sequence ids[0..n_total) whose first n_prompt tokens are the prompt (the loss
 * covers the rest); empty b with b->nseq = b->n_tok = 0. 0, or 1 out of memory. */
int sft_batch_append(struct sft_batch *b, const int *ids, size_t n_prompt, size_t n_total);
/* Task index of example k (0 <= k < [sft] batch_size) of SFT step `step`:
 * step * batch_size + k (fresh examples), or with [sft] pool > 0 a draw from
 * [0, pool) keyed by (seed, RNG_STREAM_SFT, step, k). Every rank gets the same. */
uint64_t trainer_sft_example(const struct config *cfg, long step, long k);
/* This DP rank's contiguous share [*k0, *k0 + *n) of a global batch of `batch`. */
void trainer_sft_share(long batch, int rank, int size, long *k0, long *n);
/* Fill b with examples k0 .. k0+n-1 of SFT step `step` from the task's train
 * split. Returns 0, or 2 with a message (an example that does not tokenize or
 * exceeds max_seq), or 1 when out of memory. */
int trainer_sft_batch_from_task(struct sft_batch *b, const struct config *cfg,
                                const struct task *task, const struct tokenizer *tok, int max_seq,
                                long step, long k0, long n, char *err, size_t errlen);

#endif
