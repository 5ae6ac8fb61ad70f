/* run/restart.h: what a run saves beyond the tensors, and how it resumes.
 *
 * A checkpoint (io/ckpt.h) written by the run holds the policy, the AdamW
 * moments and t, the reference policy, the PPO critic's weights, the data
 * cursor (next RL prompt index) and, in /controller, the run state below.
 * Everything random in a run is keyed by (seed, step, prompt, sample,
 * position) through util/rng.h, so no generator state needs saving: /rng is empty.
 *
 *   /controller  phase_rl        0: saved at the SFT -> RL boundary (SFT and the
 *                                   post-SFT eval done, RL not begun); 1: after RL step `step`
 *                trainer_step    RL steps the trainer took (indexes the LR schedule)
 *                trainer_update  optimizer updates of the RL phase
 *                sft_pass1       post-SFT greedy pass@1 (for the summary)
 *                prompts_per_step  the deck's, to check the data cursor on resume
 *                sft_step        k > 0: written during SFT after SFT step k (a signal or
 *                                   [sft] checkpoint_every): phase_rl 0, RL step 0, the
 *                                   trainer's SFT moments, step and updates; -1 otherwise
 *                                   (absent in older checkpoints: SFT done)
 *
 * Resuming (restart_load, every rank, collective over the world): the
 * checkpoint of [run] restart (`latest`: DIR/latest, falling back with a
 * warning to the newest valid step_*.h5) is read by the train ranks over their
 * communicator and checked against the deck (a model that differs: exit 2
 * naming the field); the train ranks take its state whatever their number
 * (tensors are full logical ones), the others get the step, weight version
 * and phase from the train root (the rollout ranks get the weights by the
 * usual broadcast). From a mid-SFT checkpoint the run continues SFT with step k + 1
 * (restart_apply_sft after trainer_begin_sft: bit-exact, the examples are keyed by the
 * SFT step), then runs the post-SFT eval and RL as a fresh run does. Else it skips SFT and
 * the post-SFT eval and continues with RL step `step + 1`; the controller cuts the metrics JSONL back to the lines of
 * steps <= `step` (a run killed after its last checkpoint logged more) and appends.
 * The PPO critic and its AdamW moments (/critic, /critic_optim) are restored too. */
#ifndef RLPT_RESTART_H
#define RLPT_RESTART_H

#include <stddef.h>

struct run;
struct ckpt_state;

struct restart_point {
  int active;          /* 1: this run resumes from `path` */
  int phase_rl;        /* see /controller phase_rl */
  long step;           /* RL steps done */
  long sft_step;       /* > 0: SFT steps done of a mid-SFT checkpoint (SFT continues) */
  double sft_pass1;
  char path[4096];
  struct ckpt_state *st; /* train ranks, phase rl or sft_step > 0: kept for restart_apply_rl
                            or restart_apply_sft */
};

/* Train ranks: the run-state part of a checkpoint after RL step `step` (the
 * /controller values and the data cursor); phase_rl as above. */
void restart_fill(const struct run *r, struct ckpt_state *st, long step, int phase_rl);

/* Every rank, collective over the world, before the run loop; a no-op (0) when
 * [run] restart is empty. Returns 0, or 2 / 1 (bad checkpoint / no memory; rank 0
 * printed the message), the same on every rank. */
int restart_load(struct run *r, struct restart_point *rp);

/* Train ranks after trainer_begin_rl on a resumed run: the RL-phase state of the
 * checkpoint (kept by restart_load) into the trainer; frees it. A no-op elsewhere. */
void restart_apply_rl(struct run *r, struct restart_point *rp);
/* Train ranks after trainer_begin_sft, resuming into SFT: the SFT state (AdamW moments,
 * t, the schedule's step, the update count) into the trainer; frees it. A no-op elsewhere. */
void restart_apply_sft(struct run *r, struct restart_point *rp);

/* Controller: keep the lines of path up to RL step `step` (SFT lines, the post-SFT
 * eval, RL steps and evals <= step; with sft_step > 0 only SFT steps 1..sft_step), so the
 * resumed run appends without duplicates. 0, or -1 with errno (the file cannot be read or
 * rewritten). */
int restart_trim_metrics(const char *path, long step, int phase_rl, long sft_step);

#endif
