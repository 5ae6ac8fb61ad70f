/* run/tp_run.h: what `rlpt run` does differently with [ranks] train_tp > 1 (tensor-parallel
 * training, model/tp.h): the deck-time verdict and the samples' hand-off inside a TP group. */
#ifndef RLPT_TP_RUN_H
#define RLPT_TP_RUN_H

#include <stddef.h>

struct run;
struct sample_batch;

/* Whether this build runs the deck's train_tp (with r->mc resolved): 0, or 2 with a
 * message naming the key. train_tp > 1 runs the sync mode on the separate layout with
 * train_pp = rollout_tp = 1, SFT from the dataset and GRPO-family algorithms without a
 * critic on the CPU, [optim] zero = 0, [model] init = scratch | ckpt:, and heads, kv_heads,
 * ffn_dim and vocab_size divisible by train_tp. Pure in the deck. */
int tp_run_supported(const struct run *r, char *err, size_t len);

/* Train ranks of a TP group: TP rank 0's batch b (received from the reward ranks)
 * broadcast to the others, which hold the same samples afterwards (b appended to). A
 * no-op with train_tp = 1. */
void tp_bcast_batch(struct run *r, struct sample_batch *b);

#endif
