/* monitor/metrics_read.h: a run's metrics JSONL (README "Metrics", run/metrics_log.h)
 * read back into column tables (monitor/series.h).
 *
 * Each non-blank line must be a JSON object with "phase" "sft" or "rl" and an integer
 * "step"; a line with "eval_pass@1" is an eval line, the others step lines. Every field of
 * the metric table, time_s, weight_version, eval_pass@1, eval_pass@k and eval_k, when
 * present, must be a number or null (null and absent read as NaN); other keys
 * (reward_parts.<name>, fields of a newer build) are ignored. A step at or below the last
 * one of its table replaces the rows from that step on, as a restart from an earlier
 * checkpoint writes them again. A file with no line is bad input too. */
#ifndef RLPT_METRICS_READ_H
#define RLPT_METRICS_READ_H

#include <stddef.h>

#include "monitor/series.h"

/* Read path into m (initialised here; run_metrics_free it, also after an error).
 * Returns 0, or 2 with "FILE:LINE: what is wrong" (or "FILE: ...") in err. */
int metrics_read(const char *path, struct run_metrics *m, char *err, size_t errlen);

#endif
