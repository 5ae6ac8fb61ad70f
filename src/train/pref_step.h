/* train/pref_step.h: the train ranks' preference step ([algo] name = dpo | ipo | rm) on
 * packed pairs in a struct sft_batch (train/trainer.h): sequence 2k is pair k's [BOS] prompt
 * chosen [EOS], 2k + 1 its rejected one (mask[t] = 1 when token t + 1 is a response token,
 * as for SFT).
 *
 *   dpo, ipo  logp(y) = sum of the response's token logprobs under the policy and under
 *             the frozen reference (t->ref), the loss of rl/algo.h algo_dpo_loss
 *             (kind [algo] dpo_loss, beta [algo] dpo_beta); rewards r = beta (logp - ref)
 *   rm        Bradley-Terry: r = the value head at the sequence's last token (the EOS, as
 *             rl/reward_model.h scores), loss = -log sigmoid(r_w - r_l) (algo_dpo_loss with
 *             beta 1 and a zero reference); with [algo] rm_train_body = false only
 *             score.weight gets a gradient
 * Micro-batches hold whole pairs (at most [ranks] micro_batch_seqs sequences and the
 * trainer's max_tokens); the loss is divided by the pairs of the step over all DP ranks,
 * so micro-batching and DP give one big batch's gradient. */
#ifndef RLPT_PREF_STEP_H
#define RLPT_PREF_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "rl/metrics.h"
#include "tasks/preference.h"

struct trainer;
struct sft_batch;
struct tokenizer;

/* Sums over pairs (all DP ranks after a step or an eval). */
struct pref_stats {
  double loss, chosen, rejected, margin, n_correct, n_pairs;
};

/* Fill b (train/trainer.h's packed batch, 2 sequences a pair) with pairs index0 .. index0 + n - 1 of split (tasks/preference.h pref_row_at).
 * 0, 2 with a message (a pair that does not tokenize), 1 out of memory. */
int pref_batch_build(struct sft_batch *b, const struct pref_set *ps, const struct tokenizer *tok,
                     enum task_split split, uint64_t index0, long n, char *err, size_t errlen);

/* Forward (and with grads, backward into the policy's gradients, zeroed first) of b's
 * pairs; n_global = the pairs over all DP ranks; *st gets this rank's sums. 0, or 1 when
 * the model refuses a micro-batch. */
int trainer_pref_pass(struct trainer *t, const struct sft_batch *b, double n_global, int grads,
                      struct pref_stats *st);
/* One update on this rank's pairs (every DP rank calls it): the pass, the DP sum and
 * AdamW. Fills pref_loss, pref_chosen, pref_rejected, pref_margin (means over the step's
 * pairs), pref_acc (share with margin > 0), grad_norm, lr, skipped_nonfinite, t_ref (the
 * reference forwards are inside the pass; 0 here), t_train, train_tok_per_s. 0 or 1. */
int trainer_pref_step(struct trainer *t, const struct sft_batch *b, struct step_metrics *m);
/* The share of the held-out pairs with margin > 0 (b: this rank's share; every DP rank
 * calls it). 0 or 1. */
int trainer_pref_eval(struct trainer *t, const struct sft_batch *b, double *acc);

#endif
