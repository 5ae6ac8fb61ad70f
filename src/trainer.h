/* trainer.h: what the train ranks do with a batch — the SFT step and the RL
 * step (reference/old logprobs, advantages, ppo_epochs x mini_batches updates
 * of the policy loss), with the data-parallel gradient all-reduce over the DP
 * communicator, global-norm clipping and AdamW. One flat parameter buffer
 * (params.h) is what the optimizer, the all-reduce, the weight broadcast and
 * the checkpoint walk. */
#ifndef RLPT_TRAINER_H
#define RLPT_TRAINER_H

#include <mpi.h>
#include <stdint.h>

#include "experience.h"
#include "metrics.h"
#include "model.h"
#include "optim.h"

struct config;

struct trainer {
  const struct config *cfg;
  struct model policy;       /* params, grads, activations */
  float *ref_params;         /* frozen reference policy (NULL when kl_coef = 0 and no KL metric) */
  struct adamw opt;
  struct optim_sched sched;  /* of the current phase */
  long update;               /* optimizer updates applied in the current phase */
  int64_t weight_version;    /* bumped by every RL step that applied an update */
  MPI_Comm dp;               /* data-parallel group (MPI_COMM_SELF for one rank) */
  int dp_rank, dp_size;
  long skipped_nonfinite;
};

/* Build the policy for mc with room for max_tokens packed tokens (per micro-batch),
 * init from the deck ([model] init, [run] seed), AdamW state, over dp.
 * Returns 0, or 2 with a message. */
int trainer_create(struct trainer *t, const struct config *cfg, const struct model_config *mc,
                   int max_tokens, MPI_Comm dp, char *err, size_t errlen);
void trainer_free(struct trainer *t);

/* Start a phase: fresh AdamW moments and the phase's LR schedule (SFT: [sft]
 * lr/warmup over sft.steps; RL: [optim] over run.steps). Snapshots the
 * reference policy at the start of RL. */
void trainer_begin_sft(struct trainer *t);
void trainer_begin_rl(struct trainer *t);

/* One SFT update on this rank's share of the global batch: loss = mean over
 * the global batch's completion tokens of -logprob (loss_mask 1 on completion
 * targets: mask[t] = 1 when token t+1 is a completion token). The divisor is the
 * global token count (allreduced). Fills loss, grad_norm, lr, train_tok_per_s. */
int trainer_sft_step(struct trainer *t, const int *tokens, const int *cu_seqlens,
                     const float *loss_mask, int nseq, struct step_metrics *m);

/* One RL step on this rank's share of the step's samples (rewards set; the
 * groups whole on one rank, or advantages already computed by the caller for
 * the whole batch — see trainer.c). Computes old/ref logprobs, advantages, then
 * ppo_epochs x mini_batches updates; fills kl, entropy, pg_loss, clip fractions,
 * ratio_mean, grad_norm, lr, logprob_diff_max, skipped_nonfinite, t_ref, t_train.
 * Returns 0, or nonzero on an internal failure. */
int trainer_rl_step(struct trainer *t, struct sample_batch *b, struct step_metrics *m);

#endif
