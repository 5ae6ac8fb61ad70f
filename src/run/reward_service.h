/* run/reward_service.h: the reward ranks' reward model in a run ([reward] rm_path,
 * rl/reward_model.h): checked once at setup, loaded on the reward ranks on the [run]
 * device's backend, and asked for the scores of each batch the ranks score. */
#ifndef RLPT_RUN_REWARD_SERVICE_H
#define RLPT_RUN_REWARD_SERVICE_H

#include <stddef.h>

struct run;
struct sample_batch;

/* World rank 0 checks [reward] rm_path against the policy (r->mc) at setup, so a bad reward
 * model is one message from rank 0 before anything runs: 0 or 2 (every other rank: 0). */
int reward_service_check(const struct run *r, char *err, size_t errlen);
/* r->rm from [reward] rm_path on a reward rank (NULL when unset or not a reward rank).
 * 0, or 2/1 with a message in err. */
int reward_service_setup(struct run *r, char *err, size_t errlen);
/* The scores of b's samples as a malloc'd array of b->n, or NULL without a reward model.
 * A failure is fatal (die_local). */
double *reward_service_scores(struct run *r, const struct sample_batch *b);

#endif
