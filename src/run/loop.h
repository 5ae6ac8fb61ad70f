/* run/loop.h: the phase loop of `rlpt run` (run/loop.c). */
#ifndef RLPT_LOOP_H
#define RLPT_LOOP_H

struct run;

/* Every rank, after run_setup: SFT (or a restart), the post-SFT eval, the RL steps of
 * r->mode with their evals, checkpoints and stop checks, the final eval and the summary.
 * 0, or the agreed exit code of a failed restart. */
int run_loop(struct run *r);

#endif
