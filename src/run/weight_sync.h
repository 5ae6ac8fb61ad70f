/* run/weight_sync.h: the weight broadcast after an update, over weight_comm from train
 * dp 0 (weight_comm rank 0) to every rollout rank, and the new version the rollout
 * engines see. Over NCCL device to device when every member runs on a GPU of its own
 * (and [run] weight_sync = auto), else over MPI through host memory; the path is agreed
 * at the first call (run/weight_sync.c). t_sync and sync_gbps go into the train root's
 * partial. */
#ifndef RLPT_WEIGHT_SYNC_H
#define RLPT_WEIGHT_SYNC_H

struct run;

/* Every rank (a no-op outside weight_comm). */
void run_sync_weights(struct run *r);
/* The NCCL communicator of the sync path (teardown). */
void run_sync_free(struct run *r);

#endif
