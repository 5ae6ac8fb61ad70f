/* monitor/checks.h: the doctor's per-step checks over a run's RL lines. Each kind's check
 * is a pure function of the rows up to row t: `rlpt doctor` runs it at every row of a
 * finished run (monitor/doctor.h), the running job at each new row (monitor/watch.h), so
 * both find the same things at the same steps.
 *
 * A check at row t reads only the first CHECK_HEAD rows (the run's start, as a baseline)
 * and the CHECK_LOOKBACK rows ending at t; so a watcher may drop the rows between
 * (rows_keep_ends) and get the same answers. Rows are RL steps in order; a value that is
 * NaN (null) is left out of every mean, and a check without enough values stays silent. */
#ifndef RLPT_CHECKS_H
#define RLPT_CHECKS_H

#include "monitor/findings.h"
#include "monitor/series.h"

#define CHECK_HEAD 20
#define CHECK_LOOKBACK 20

/* What one check saw at one row. */
struct check_hit {
  long step_lo, step_hi;  /* the steps its evidence covers */
  double score;           /* larger = further past the threshold */
  char evidence[FINDING_EVIDENCE_MAX];
};

/* Run kind k's check at row t of rl: 1 = it fires (hit filled), 0 = not (or k has no
 * per-step check: DK_SFT_BAND). */
int check_at(enum doctor_kind k, const struct metric_rows *rl, long t, struct check_hit *hit);

#endif
