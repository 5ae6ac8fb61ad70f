/* run/pregen.h: colocate_async's generation ahead, on a second thread while the main thread
 * trains (run/pregen.c). */
#ifndef RLPT_PREGEN_H
#define RLPT_PREGEN_H

#include "run/run.h"

/* Every rank: batch b's prompts sent (controller) and received (rollout instances), and their
 * generation started on a thread of its own; the calling thread then runs on the other share
 * of the rank's `threads` until pregen_join. */
void pregen_start(struct run *r, long b, int threads);
/* Waits for the generation (a failure stops this rank with its message); the calling thread
 * back on the rank's pool. */
void pregen_join(struct run *r);
/* Controller: 1 when batch b's prompts went out in pregen_start (run_rounds skips them). */
int pregen_prompts_sent(const struct run *r, long b);
/* Rollout instance: 1 and batch b's prompts, samples and generation seconds (moved out) when
 * it was generated ahead; 0 otherwise. */
int pregen_take(struct run *r, long b, struct sample_batch *prompts, struct sample_batch *out, double *t_gen);
/* After batch b's hand-off: nothing is ahead any more. */
void pregen_done(struct run *r);
void pregen_free(struct run *r);

#endif
