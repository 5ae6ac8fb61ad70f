/* run/difficulty_sync.h: the difficulty filter (rl/difficulty.h) in a run. Every rank holds
 * the same filter state (struct run's diff): after each generation round the groups'
 * correct counts are summed over the world (one all-reduce), and every rank records them
 * under the prompt's text. The controller's draws skip the filtered prompts; the train
 * ranks save the state in the checkpoint, and a restart gives every rank the saved state. */
#ifndef RLPT_DIFFICULTY_SYNC_H
#define RLPT_DIFFICULTY_SYNC_H

#include <stdint.h>

struct run;
struct sample_batch;
struct task_prompt;

/* Attempts per slot before the filter gives up and takes the first candidate. */
#define DIFFICULTY_MAX_DRAWS 64

/* Every rank: the filter from the deck ([algo] difficulty_*). 0, or 1 out of memory. */
int difficulty_run_init(struct run *r);

/* Controller: the prompt id of group g of round `round` of RL step `step` and its prompt
 * in *tp: dynsamp_prompt_id's, or while the filter skips it replacements keyed by
 * (seed, step, round, g, attempt); skips add to r->diff_skipped. */
uint64_t difficulty_draw(struct run *r, long step, int round, long g, struct task_prompt *tp);

/* Reward ranks: the groups of scored batch b (groups 0..P-1) into pass[3 g ..]: prompt id,
 * correct samples, samples. pass has 3 P entries, zeroed by the caller. */
void difficulty_group_pass(const struct run *r, const struct sample_batch *b, int64_t *pass);

/* Every rank, after a round: pass summed over the world, every group recorded. */
void difficulty_round_sync(struct run *r, int64_t *pass);

/* Restart, every rank: the train root's saved state (bytes, len; NULL = the checkpoint has
 * none) to every rank, loaded into the filter. 0, or 2 with one message from rank 0. */
int difficulty_restore(struct run *r, const unsigned char *bytes, uint64_t len);

#endif
