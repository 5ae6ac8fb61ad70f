/* run/checkpoint.h: the checkpoint cadence of a run (run/checkpoint.c): when a checkpoint
 * is due, and writing it collectively from the train ranks. */
#ifndef RLPT_RUN_CHECKPOINT_H
#define RLPT_RUN_CHECKPOINT_H

struct run;

/* 1 when a checkpoint is due after RL step `step` ([checkpoint] every, and the last step). */
int run_ckpt_due(const struct run *r, long step);
/* Train ranks, collective over them: the checkpoint of RL step `step` (0: the SFT -> RL
 * boundary); its seconds are reported in the next RL step's line (t_ckpt). */
void run_checkpoint(struct run *r, long step);

#endif
