/* run/async_step.h: [run] mode = separate_async (run/async_step.c), the parts the rest of
 * the run calls: the set-up's verdict, the checkpoint's /buffer and the teardown. */
#ifndef RLPT_ASYNC_STEP_H
#define RLPT_ASYNC_STEP_H

#include <stddef.h>

struct run;
struct ckpt_state;
struct sample_batch;

/* What separate_async needs of the layout and the deck beyond deck/config_check.c's
 * checks: 0, or 2 with a message in err (the same verdict on every rank). */
int async_supported(const struct run *r, char *err, size_t len);
/* Train ranks (collective over them), writing a checkpoint: every DP rank's buffered groups
 * (the batches of the steps after this one, already scored) gathered into train rank 0's
 * st /buffer; nothing outside separate_async. The bytes stay owned by r->async until the
 * next call. */
void async_ckpt_fill(const struct run *r, struct ckpt_state *st);
/* Train ranks, resuming: this DP rank's share of the checkpoint's /buffer (whatever the
 * layout that wrote it) kept for the mode's begin. */
void async_ckpt_restore(struct run *r, const struct ckpt_state *st);
/* The train ranks' share of the reward statistics of a trained batch, from the samples
 * (run/async_stats.c): in separate_async a step's line describes what it trained, which
 * was scored steps earlier. */
void async_partial_add_trained(struct run *r, const struct sample_batch *b);
/* Rollout ranks, after this rank's generation of a batch (or in place of it: nothing to
 * generate): the step's weight update when [async] in_flight armed it and generation ended
 * before taking it (run/async_step.c); returns the seconds the generation itself spent
 * taking it (waiting for train dp 0 included: not generation time), else 0. */
double async_after_generate(struct run *r);
/* Frees r->async (a no-op when NULL). */
void async_free(struct run *r);

#endif
