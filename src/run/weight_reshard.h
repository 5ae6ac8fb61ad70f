/* run/weight_reshard.h: the weight sync to rollout engines of rollout_tp > 1 ranks, each
 * rollout rank receiving exactly its shard (run/weight_reshard.c).
 *
 * weight_comm is split once into rollout_tp shard groups: group j holds the sync's root
 * (weight_comm rank 0, rank 0 of each group) and every rollout rank of TP rank j. Bucket by
 * bucket (consecutive tensors, 64 MB of full tensors), the root holds the full tensors (its
 * own policy's, or with train_tp > 1 gathered from its TP group through fill: every train
 * member calls it in table order), cuts shard j of each and broadcasts them over group j in
 * one call; the rollout ranks receive straight into their shards (a bucket's shards are
 * contiguous in the shard table). So no rollout rank receives or holds more than its shard, from any train TP size
 * to any rollout TP size; the root sends each tensor's bytes once per shard group (the
 * replicated norms rollout_tp times). */
#ifndef RLPT_WEIGHT_RESHARD_H
#define RLPT_WEIGHT_RESHARD_H

#include "mpi/xfer.h"

struct run;
struct reshard;

/* Collective over weight_comm (every member), once. */
struct reshard *reshard_create(struct run *r);
void reshard_free(struct reshard *rs);

/* One sync, collective over weight_comm: fill (NULL: the root's policy params are full)
 * with fill_ctx as xfer_bcast_weights_each's. st: bytes is what each rollout rank received
 * (metric sync_mb), chunks the root's broadcasts. */
void reshard_sync(struct run *r, struct reshard *rs, xfer_fill_fn fill, void *fill_ctx,
                  struct xfer_stats *st);

#endif
