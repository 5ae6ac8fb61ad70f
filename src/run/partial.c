/* run/partial.c: the metrics partial every rank reports to the controller (run/partial.h). */
#include "run/partial.h"

#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include "mpi/xfer.h"
#include "run/run.h"
#include "run/tp_run.h"
#include "util/error.h"

void partial_reset(struct run *r, long step, enum partial_kind kind) {
  for (int i = 0; i < r->partial_len; i++) r->partial[i] = i >= PS_MAX_BEGIN ? NAN : 0.0;
  r->partial[PS_STEP] = (double)step;
  r->partial[PS_RANK] = r->comms.world_rank;
  r->partial[PS_KIND] = kind;
  r->partial[PS_HAS_TRAIN] = 0;
}

/* This rank's peak resident set in bytes, into its roles' slots. */
static void note_rss(struct run *r) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return;
  double bytes = (double)ru.ru_maxrss * 1024.0;  /* Linux: kilobytes */
  if (r->is_train) r->partial[PS_RSS_TRAIN] = bytes;
  if (r->is_rollout) r->partial[PS_RSS_ROLLOUT] = bytes;
}

void partial_report(struct run *r) {
  note_rss(r);
  if (r->comms.world_rank == 0) return;  /* the controller merges its own partial in place */
  /* the other ranks of a rollout engine of rollout_tp ranks counted what its leader did */
  if (r->is_rollout && !r->is_train && !r->is_reward && !rollout_tp_leader(r))
    for (int i = PS_N; i < PS_MAX_BEGIN; i++) r->partial[i] = 0.0;
  /* eval partials have their own tag: a rollout rank can finish an eval before the
   * controller has the last train partial of the step before it */
  int tag = r->partial[PS_KIND] == PK_EVAL ? XFER_TAG_EVAL : XFER_TAG_METRICS;
  int rc = xfer_send_bytes(r->partial, sizeof(double) * (size_t)r->partial_len, 0, tag,
                           r->comms.world);
  if (rc != XFER_OK) die_local("reporting metrics to the controller failed: %s", xfer_strerror(rc));
}

void partial_merge(const struct run *r, double *merged, const double *p) {
  for (int i = PS_N; i < PS_MAX_BEGIN; i++) merged[i] += p[i];
  for (int i = PS_MAX_BEGIN; i < PS_TRAIN_BEGIN; i++) merged[i] = fmax(merged[i], p[i]);
  if (p[PS_HAS_TRAIN] == 1)
    memcpy(merged + PS_TRAIN_BEGIN, p + PS_TRAIN_BEGIN,
           sizeof(double) * (size_t)(r->partial_len - PS_TRAIN_BEGIN));
}

/* seconds added to a max-block slot that starts as NaN (not measured) */
static void add_seconds(double *slot, double seconds) {
  *slot = (isnan(*slot) ? 0.0 : *slot) + seconds;
}

void partial_time(struct run *r, enum run_phase phase, double seconds) {
  switch (phase) {
  case RUN_PHASE_GEN: add_seconds(&r->partial[PS_T_GEN], seconds); break;
  case RUN_PHASE_REWARD: add_seconds(&r->partial[PS_T_REWARD], seconds); break;
  case RUN_PHASE_SYNC: partial_set_train(r, "t_sync", seconds); break;
  case RUN_PHASE_CKPT: r->t_ckpt_last = seconds; break;
  }
}

void partial_set_train(struct run *r, const char *name, double value) {
  r->partial[PS_TRAIN_BEGIN + partial_metric_index(name)] = value;
}

int partial_metric_index(const char *name) {
  for (int i = 0; i < metric_fields_len; i++)
    if (!strcmp(metric_fields[i].name, name)) return i;
  die_local("no metric named %s", name);
}
