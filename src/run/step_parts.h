/* run/step_parts.h: the parts of a step that the modes share (run/sync_step.c); the async
 * mode (run/async_step.c) schedules them differently. */
#ifndef RLPT_STEP_PARTS_H
#define RLPT_STEP_PARTS_H

#include "rl/dynsamp.h"
#include "run/run.h"

/* Every rank: the generation rounds of step `step`'s prompts (one without dynamic
 * sampling), then the trained groups to the train ranks (into *in); returns with ds
 * holding what every rank agreed. */
void run_rounds(struct run *r, long step, struct dynsamp *ds, struct sample_batch *in);
/* Train ranks: train the batch b_in (this DP rank's share of the step's trained groups;
 * emptied), its lag and the trainer's metrics into the partial. */
void train_share(struct run *r, const struct dynsamp *ds, struct sample_batch *b_in);
/* Reward ranks: score b in place (reward, parts) and add the scoring statistics to the
 * partial. */
void run_score_batch(struct run *r, struct sample_batch *b);
/* ds initialised to train all P groups of a batch (no dynamic sampling). */
void step_all_groups(struct dynsamp *ds, long P);
/* The rollout engine's prompt array over the n prompts of b (calloc'd, n + 1 entries; the
 * tokens point into b). */
struct rollout_prompt *rollout_prompts_of(const struct sample_batch *b);
/* qsort order of samples: by group (slot), then index. */
int sample_cmp_slot(const void *a, const void *b);
/* Controller: the step's partials collected and its line logged (t0: the step's start). */
void log_step(struct run *r, const struct dynsamp *ds, long step, double t0);

#endif
