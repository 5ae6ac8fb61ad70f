/* run/pref_mode.h: preference runs ([algo] name = dpo | ipo | rm). Their steps are the
 * loop's RL steps (run/loop.c: checkpoints, stop checks, restarts, evals), with a step of
 * their own (pref_mode_ops, run/mode.h): the train ranks take the step's pairs from the
 * preference set, one update (train/pref_step.h), and on eval steps the held-out pair
 * accuracy; train dp 0 reports, the controller logs. No rollouts: the rollout ranks get the
 * weights only before an eval (the loop's generation eval of [task]). */
#ifndef RLPT_PREF_MODE_H
#define RLPT_PREF_MODE_H

#include <stddef.h>

struct run;

/* Every rank, at setup: [data] pref_path (and pref_eval_path) loaded into r->pref and
 * checked against [model] max_seq, [algo] dpo_ref against the deck's model. 0, or 2 / 1
 * with a message naming the file (and line) or key. */
int pref_mode_setup(struct run *r, char *err, size_t errlen);
void pref_mode_free(struct run *r);

#endif
