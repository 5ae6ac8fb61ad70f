/* run/checkpoint.h: the checkpoint cadence of a run (run/checkpoint.c): when a checkpoint
 * is due, and writing it collectively from the train ranks. */
#ifndef RLPT_RUN_CHECKPOINT_H
#define RLPT_RUN_CHECKPOINT_H

struct run;

/* 1 when a checkpoint is due after RL step `step` ([checkpoint] every, and the last step). */
int run_ckpt_due(const struct run *r, long step);
/* Train ranks, collective over them: the checkpoint of RL step `step` (0: the SFT -> RL
 * boundary, or with r->sft_ckpt_step set the SFT step's); its seconds are reported in the
 * next RL step's line (t_ckpt). Returns CKPT_OK or the io/ckpt.h error (the same on every
 * train rank; the reason printed); [checkpoint] on_error is the caller's (run/loop.c). */
int run_checkpoint(struct run *r, long step);
/* Every rank, collective over the world, at start-up: the train ranks make [checkpoint]
 * dir (rank 0 of them) and each creates and removes a file in it. 0, or 2 on every rank
 * with one message (the lowest failing train rank's). */
int run_ckpt_dir_check(struct run *r);

#endif
