/* run/route.c: who sends what to whom in a sync step (run/run.h), the local inbox
 * for messages a rank sends to itself, and the metrics partial every rank
 * reports to the controller. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/xfer.h"
#include "run/run.h"
#include "util/error.h"

long run_slice_lo(long n, int parts, int i) { return n * (long)i / parts; }

int run_slice_of(long n, int parts, long j) {
  /* the part i with slice_lo(i) <= j < slice_lo(i + 1) (an empty slice is skipped) */
  int i = (int)((j * parts) / n);
  while (i + 1 < parts && run_slice_lo(n, parts, i + 1) <= j) i++;
  while (i > 0 && run_slice_lo(n, parts, i) > j) i--;
  return i;
}

int run_group_instance(const struct run *r, long g) {
  return run_slice_of(r->cfg->algo.prompts_per_step, r->comms.counts.rollout_instances, g);
}

int run_instance_reward(const struct run *r, int instance) {
  return instance % r->comms.counts.reward;
}

int run_slot_dp(const struct run *r, long n, long j) {
  /* contiguous slices: with n = prompts_per_step (divisible by train_dp) this is j / (n / dp) */
  return run_slice_of(n, r->comms.counts.train_dp, j);
}

void run_send(struct run *r, struct sample_batch *b, int dest, enum run_box box, int tag) {
  if (dest == r->comms.world_rank) {
    if (sample_batch_move_all(&r->box[box], b) != 0) die_local("out of memory in the local inbox");
    return;
  }
  int rc = xfer_send_batch(b, dest, tag, r->comms.world);
  if (rc != XFER_OK)
    die_local("sending %d samples to rank %d failed: %s", b->n, dest, xfer_strerror(rc));
  sample_batch_clear(b);
}

void run_recv(struct run *r, struct sample_batch *out, int src, enum run_box box, int tag) {
  if (src == r->comms.world_rank) {
    if (sample_batch_move_all(out, &r->box[box]) != 0) die_local("out of memory in the local inbox");
    return;
  }
  char err[256] = "";
  /* no deadline here: the controller's watchdog names a stalled peer and aborts the job */
  int rc = xfer_recv_batch(out, src, tag, r->comms.world, 0, NULL, err, sizeof err);
  if (rc != XFER_OK)
    die_local("receiving samples from rank %d failed: %s %s", src, xfer_strerror(rc), err);
}

void run_part_reset(struct run *r, long step, enum part_kind kind) {
  for (int i = 0; i < r->part_len; i++) r->part[i] = i >= PS_MAX_BEGIN ? NAN : 0.0;
  r->part[PS_STEP] = (double)step;
  r->part[PS_RANK] = r->comms.world_rank;
  r->part[PS_KIND] = kind;
  r->part[PS_HAS_TRAIN] = 0;
}

void run_part_report(struct run *r) {
  if (r->comms.world_rank == 0) return;  /* the controller merges its own partial in place */
  /* eval partials have their own tag: a rollout rank can finish an eval before the
   * controller has the last train partial of the step before it */
  int tag = r->part[PS_KIND] == PK_EVAL ? XFER_TAG_EVAL : XFER_TAG_METRICS;
  int rc = xfer_send_bytes(r->part, sizeof(double) * (size_t)r->part_len, 0, tag, r->comms.world);
  if (rc != XFER_OK) die_local("reporting metrics to the controller failed: %s", xfer_strerror(rc));
}

int run_metric_index(const char *name) {
  for (int i = 0; i < metric_fields_len; i++)
    if (!strcmp(metric_fields[i].name, name)) return i;
  die_local("no metric named %s", name);
}
