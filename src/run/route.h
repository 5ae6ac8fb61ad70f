/* run/route.h: who sends what to whom in a step. A pure function of the layout (and of
 * the kept groups every rank was told), so every receiver knows its senders:
 *   controller -> rollout  the prompts of a round, contiguous slices, one per instance
 *   rollout -> reward      instance i's samples to reward rank i % reward ranks
 *   reward -> train        each trained group whole to train DP rank route_slot_dp
 * A message whose sender and receiver are the same rank (colocated layout, or a rank
 * with several roles) moves through the local inbox instead of MPI, so one code path
 * serves both layouts. */
#ifndef RLPT_ROUTE_H
#define RLPT_ROUTE_H

#include "run/run.h"

/* Slice [lo, hi) of n items for part i of parts (contiguous, sizes differ by at most 1). */
long route_slice_lo(long n, int parts, int i);
/* The part i (0..parts-1) of route_slice_lo whose slice holds item j of n. */
int route_slice_of(long n, int parts, long j);
/* Rollout instance that generates group g of a round; reward rank that scores instance i;
 * train DP rank that trains slot j of a trained batch of n groups. */
int route_group_instance(const struct run *r, long g);
int route_instance_reward(const struct run *r, int instance);
int route_slot_dp(const struct run *r, long n, long j);
/* Send batch b (emptied) to world rank dest: MPI, or the local inbox when dest is this rank. */
void route_send(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag);
/* The same with a deadline on dest's taking it (timeout_s <= 0: none): XFER_OK, or
 * XFER_TIMEOUT (b kept) when dest did not start receiving in time (the controller's
 * watchdog on a rank that never came back for its prompts). */
int route_send_until(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag,
                     double timeout_s);
/* Receive one batch from world rank src (local inbox when src is this rank) and append it
 * to out. A transfer error is fatal (die_local); no deadline: the controller's watchdog
 * names a stalled peer. */
void route_recv(struct run *r, struct sample_batch *out, int src, enum run_box box, int tag);

#endif
