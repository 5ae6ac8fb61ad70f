/* run/tp_run.h: what `rlpt run` does differently with [ranks] train_tp > 1 (tensor-parallel
 * training, model/tp.h) and rollout_tp > 1 (engines of rollout_tp ranks): the deck-time
 * verdict, the samples' and prompts' hand-off inside a TP group, the rollout shards.
 *
 * A rollout engine instance of rollout_tp ranks (mpi/comm.h instance_comm) runs one engine
 * over a TP model (model_create_forward_tp): its instance rank 0 (the leader) receives the
 * prompts and broadcasts them to the others, every rank generates in lockstep (the same
 * batches, the whole vocabulary's logits gathered, the same keyed samples), and only the
 * leader hands the samples on; the others' metric sums are left out (run/partial.c). The
 * weight sync delivers each rank its shard (run/weight_reshard.h). */
#ifndef RLPT_TP_RUN_H
#define RLPT_TP_RUN_H

#include <stddef.h>

struct backend_ops;
struct run;
struct sample_batch;

/* Whether this build runs the deck's train_tp (with r->mc resolved): 0, or 2 with a
 * message naming the key. train_tp > 1 runs the sync mode on the separate layout with
 * train_pp = 1, SFT from the dataset and GRPO-family algorithms without a critic on the
 * CPU, [optim] zero = 0, [model] init = scratch | ckpt:; rollout_tp > 1 the sync mode on the
 * separate layout on the CPU without [env], rejection SFT or a bf16 weight sync; both need
 * heads, kv_heads, ffn_dim and vocab_size divisible by the TP size. Pure in the deck. */
int tp_run_supported(const struct run *r, char *err, size_t len);

/* Train ranks of a TP group: TP rank 0's batch b (received from the reward ranks)
 * broadcast to the others, which hold the same samples afterwards (b appended to). A
 * no-op with train_tp = 1. */
void tp_bcast_batch(struct run *r, struct sample_batch *b);

/* Rollout ranks: r->rmodel (allocated) made forward-only, with rollout_tp > 1 this rank's
 * shard over instance_comm (r->rtp). 0 or -1. */
int rollout_tp_create(struct run *r, int max_tokens, const struct backend_ops *ops);
/* 1 on the rank that receives and hands on its instance's batches (instance rank 0). */
int rollout_tp_leader(const struct run *r);
/* The leader's prompts b to its instance's other ranks (a no-op with rollout_tp = 1). */
void rollout_tp_bcast_prompts(struct run *r, struct sample_batch *b);

#endif
