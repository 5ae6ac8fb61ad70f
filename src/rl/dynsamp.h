/* rl/dynsamp.h: DAPO dynamic sampling (rl/README.md §6, [algo] dynamic_sampling):
 * a group whose rewards are all equal has advantage 0 and teaches nothing, so it
 * is dropped and more prompts are generated until prompts_per_step groups are
 * kept, at most 1 + [algo] max_resample_rounds generation rounds per step.
 *
 * A step runs in rounds. Every round the controller hands out P new prompts
 * (dynsamp_prompt_id), the rollout ranks generate them, the reward ranks score
 * them and keep the groups with a reward spread (dynsamp_round_groups); the
 * controller gathers the kept group numbers and broadcasts them, so every rank
 * holds the same struct dynsamp and takes the same decisions from it: whether
 * another round runs (dynsamp_done) and which kept groups are trained — the
 * first min(P, kept) in (round, group) order, each at its slot of the trained
 * batch (dynsamp_slot). With dynamic sampling off a step is one round that keeps
 * every group, which is the plain sync step. */
#ifndef RLPT_DYNSAMP_H
#define RLPT_DYNSAMP_H

#include <stdint.h>

#include "rl/experience.h"

/* Prompt ids of rounds >= 1 start here, apart from the first-round ids
 * (step - 1) * P + g, which stay the dataset cursor of the checkpoint. */
#define DYNSAMP_ID_BASE (UINT64_C(1) << 31)

struct dynsamp {
  long P;            /* groups per round, and groups wanted for the update */
  long max_rounds;   /* 1 + [algo] max_resample_rounds; 1 when off */
  int on;            /* [algo] dynamic_sampling */
  int rounds;        /* generation rounds done so far this step */
  long n_kept;       /* groups kept so far (all of them when off) */
  long n_filtered;   /* groups dropped for equal rewards this step */
  int64_t *kept;     /* [2P] codes round * P + group, ascending */
};

/* A step's state. Returns 0, or -1 when out of memory. */
int dynsamp_init(struct dynsamp *d, long P, int on, long max_resample_rounds);
void dynsamp_free(struct dynsamp *d);

/* The task prompt id of group g in round `round` of RL step `step` (>= 1). Round 0
 * takes the next P prompts of the train stream, (step - 1) * P + g, as without
 * dynamic sampling; the later rounds take theirs from a second stream from
 * DYNSAMP_ID_BASE on, a pure function of (step, round), so a restart draws the same
 * prompts without a cursor in the checkpoint. */
uint64_t dynsamp_prompt_id(long step, int round, long g, long P, long max_resample_rounds);

/* The groups of scored batch b (groups 0..P-1, several samples each) that this round
 * keeps, ascending into groups[] (room for P): all of them when off, else those whose
 * rewards are not all equal (algo_group_keep; a group of one is dropped). Returns the
 * number kept, or -1 when out of memory or a sample's group is outside 0..P-1. */
int dynsamp_round_groups(const struct dynsamp *d, const struct sample_batch *b, int32_t *groups);

/* Sort group numbers ascending; whether ascending groups[0..n) holds g. */
void dynsamp_sort_groups(int32_t *groups, int n);
int dynsamp_has_group(const int32_t *groups, int n, int32_t g);

/* Record the kept groups of the round just done (ascending, from every reward rank
 * together; n <= P) and count the round. */
void dynsamp_add_round(struct dynsamp *d, const int32_t *groups, int n);
/* 1 when no further round runs this step: P groups are kept, or the rounds are spent. */
int dynsamp_done(const struct dynsamp *d);
/* Groups in the update: min(P, kept). */
long dynsamp_selected(const struct dynsamp *d);
/* Slot (0 .. selected-1) of group g of round `round` in the trained batch, or -1 when
 * that group is not trained (dropped, or beyond the first P kept). */
long dynsamp_slot(const struct dynsamp *d, int round, long g);

#endif
