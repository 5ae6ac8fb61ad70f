/* run/loop.h: the phase loop of `rlpt run` (run/loop.c). */
#ifndef RLPT_LOOP_H
#define RLPT_LOOP_H

struct run;

/* Every rank, after run_setup: SFT (or a restart), the post-SFT eval, the RL steps of
 * r->mode with their evals, checkpoints and stop checks, the final eval and the summary.
 * 0, or the agreed exit code: a failed restart, NaN/Inf parameters (2), a checkpoint not
 * written with [checkpoint] on_error = abort (2). */
int run_loop(struct run *r);

/* Every rank, after SFT step s < [sft] steps (run/sft_phase.c): the boundary's agreement
 * (signals, NaN/Inf parameters; one step behind: a signal stops SFT after the step that
 * follows it at the latest), the [sft] checkpoint_every checkpoint, and on a signal a
 * checkpoint of the SFT step (step_00000000.h5 recording it; run/restart.h) and the stop
 * message. 1 = stop, with the exit code in *rc; 0 = go on. */
int run_sft_stop_check(struct run *r, long s, int *rc);
/* Every rank, when SFT ends without a stop: the last lagged agreement completed (the
 * boundary after the post-SFT eval takes up a signal it carried). */
void run_sft_stop_end(struct run *r);

#endif
