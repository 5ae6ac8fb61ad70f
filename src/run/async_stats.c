/* run/async_stats.c: the reward statistics of a trained batch, taken from its samples
 * (run/async_step.h). In sync mode the reward rank adds them to the step's partial as it
 * scores (run/sync_step.c partial_add_rewards); in separate_async the groups a step trains
 * were scored steps earlier, so the train rank adds the same sums from the rewards and
 * parts the samples carry: a step's line then describes the batch it trained. Non-finite
 * rewards are still counted by the reward rank when it meets them (they are replaced by 0
 * before a sample leaves it). */
#include <math.h>

#include "rl/reward.h"
#include "run/async_step.h"
#include "run/partial.h"
#include "run/run.h"

/* The value of component c in s (0 when the sample has no such part, as the scorer's). */
static double part_of(const struct sample *s, int c) {
  double v = 0;
  return sample_get_part(s, reward_component_name(c), &v) == 0 ? v : 0.0;
}

/* Samples [i0, i1) are one group: 1 for each component constant over it, into q. */
static void add_group_const(double *q, const struct sample_batch *b, int i0, int i1) {
  for (int c = 0; c < REWARD_NCOMPONENTS; c++) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = i0; i < i1; i++) {
      double x = part_of(&b->s[i], c);
      lo = fmin(lo, x);
      hi = fmax(hi, x);
    }
    q[PS_PART_CONST + c] += lo == hi;
  }
}

void async_partial_add_trained(struct run *r, const struct sample_batch *b) {
  double *q = r->partial;
  for (int k = 0; k < b->n; k++) {
    const struct sample *s = &b->s[k];
    q[PS_R_SUM] += s->reward;
    q[PS_R2_SUM] += s->reward * s->reward;
    q[PS_LEN_SUM] += s->n_resp;
    q[PS_TRUNC] += s->finish == FINISH_LENGTH;
    q[PS_LEN_MAX] = fmax(q[PS_LEN_MAX], s->n_resp);
    q[PS_CORRECT] += part_of(s, REWARD_CORRECT) == 1.0;
    for (int c = 0; c < REWARD_NCOMPONENTS; c++) q[PS_PART_SUM + c] += part_of(s, c);
  }
  q[PS_N] += b->n;
  /* b is sorted by (group, index): a group is a run of equal group numbers */
  for (int i0 = 0, i1; i0 < b->n; i0 = i1) {
    for (i1 = i0 + 1; i1 < b->n && b->s[i1].group == b->s[i0].group; i1++) {}
    add_group_const(q, b, i0, i1);
    q[PS_GROUPS] += 1;
  }
}
