/* monitor/watch.h: the doctor's checks on a running job: `rlpt run`'s controller feeds
 * each RL metrics line to a watcher, which runs every per-step check (monitor/checks.h) at
 * that step and prints "doctor: step N: <finding>" the first time each kind fires. The
 * rows it keeps are bounded: the first CHECK_HEAD and the last CHECK_LOOKBACK, which is all
 * a check reads, so it finds what `rlpt doctor` finds on the finished file, at the same
 * steps. */
#ifndef RLPT_WATCH_H
#define RLPT_WATCH_H

#include <stdio.h>

#include "monitor/series.h"

struct doctor_watch {
  struct metric_rows rl;
  unsigned seen;  /* bit k: kind k already printed */
};

/* A new watcher (malloc_check'd; free with watch_free). */
struct doctor_watch *watch_new(void);
void watch_free(struct doctor_watch *w);
/* Add one RL step's metrics and run the checks at it; each kind firing for the first time
 * is printed to out (when not NULL) as one line. Returns the bit mask of the kinds that
 * fired for the first time at this step. */
unsigned watch_step(struct doctor_watch *w, const struct step_metrics *m, FILE *out);

#endif
