/* run/route.c: who sends what to whom in a step, and the local inbox for messages a rank
 * sends to itself (run/route.h). */
#include "run/route.h"

#include "mpi/xfer.h"
#include "util/error.h"

long route_slice_lo(long n, int parts, int i) { return n * (long)i / parts; }

int route_slice_of(long n, int parts, long j) {
  /* the part i with slice_lo(i) <= j < slice_lo(i + 1) (an empty slice is skipped) */
  int i = (int)((j * parts) / n);
  while (i + 1 < parts && route_slice_lo(n, parts, i + 1) <= j) i++;
  while (i > 0 && route_slice_lo(n, parts, i) > j) i--;
  return i;
}

int route_group_instance(const struct run *r, long g) {
  return route_slice_of(r->cfg->algo.prompts_per_step, r->comms.counts.rollout_instances, g);
}

int route_instance_reward(const struct run *r, int instance) {
  return instance % r->comms.counts.reward;
}

int route_slot_dp(const struct run *r, long n, long j) {
  /* contiguous slices: with n = prompts_per_step (divisible by train_dp) this is j / (n / dp) */
  return route_slice_of(n, r->comms.counts.train_dp, j);
}

void route_send(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag) {
  if (route_send_until(r, b, dest, box, tag, 0) != XFER_OK)
    die_local("sending %d samples to rank %d timed out", b->n, dest);
}

int route_send_until(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag,
                     double timeout_s) {
  if (dest == r->comms.world_rank) {
    if (sample_batch_move_all(&r->box[box], b) != 0) die_local("out of memory in the local inbox");
    return XFER_OK;
  }
  int rc = xfer_send_batch_until(b, dest, tag, r->comms.world, timeout_s);
  if (rc == XFER_TIMEOUT) return rc;
  if (rc != XFER_OK)
    die_local("sending %d samples to rank %d failed: %s", b->n, dest, xfer_strerror(rc));
  sample_batch_clear(b);
  return XFER_OK;
}

void route_recv(struct run *r, struct sample_batch *out, int src, enum run_box box, int tag) {
  if (src == r->comms.world_rank) {
    if (sample_batch_move_all(out, &r->box[box]) != 0) die_local("out of memory in the local inbox");
    return;
  }
  char err[256] = "";
  int rc = xfer_recv_batch(out, src, tag, r->comms.world, 0, NULL, err, sizeof err);
  if (rc != XFER_OK)
    die_local("receiving samples from rank %d failed: %s %s", src, xfer_strerror(rc), err);
}
