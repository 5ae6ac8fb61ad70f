/* monitor/series.h: a run's metrics as arrays, for watching a run. One table per kind of
 * metrics line (RL steps, SFT steps, evals), one column per metric: the fields of
 * rl/metrics.h's table, in its order, then the columns outside it (series_extra). A value
 * a line has as null, or lacks, is NaN. The reader (monitor/metrics_read.h) and the run's
 * watcher (monitor/watch.h) fill the tables; the doctor's checks (monitor/checks.h) and
 * the report (monitor/report.h) read them. */
#ifndef RLPT_SERIES_H
#define RLPT_SERIES_H

#include <stddef.h>

#include "rl/metrics.h"

/* The columns after metric_fields[]: column metric_fields_len + e. */
enum series_extra {
  SERIES_TIME_S,          /* time_s */
  SERIES_WEIGHT_VERSION,  /* weight_version */
  SERIES_PASS1,           /* eval_pass@1 (eval lines) */
  SERIES_PASSK,           /* eval_pass@k */
  SERIES_EVAL_K,          /* eval_k */
  SERIES_PHASE_RL,        /* 1 for "phase":"rl", 0 for "sft" */
  SERIES_EXTRA_N
};

/* Lines of one kind in step order. */
struct metric_rows {
  long n, cap;
  long *step;
  double **col;  /* series_ncols() columns of cap values each */
};

/* A run's metrics file read back. */
struct run_metrics {
  struct metric_rows rl;    /* "phase":"rl" step lines */
  struct metric_rows sft;   /* "phase":"sft" step lines */
  struct metric_rows eval;  /* lines with eval_pass@1, either phase */
};

int series_ncols(void);
/* The name a column has in the JSONL lines ("kl", "time_s", "eval_pass@1"). */
const char *series_col_name(int c);
/* The column of that name, or -1. */
int series_col_by_name(const char *name);
/* The column of the struct step_metrics double at this offset (rl/metrics.h's table). */
int series_col_of(size_t offset);
#define SERIES_COL(field) series_col_of(offsetof(struct step_metrics, field))
#define SERIES_EXTRA(e) (metric_fields_len + (e))

void rows_init(struct metric_rows *r);
void rows_free(struct metric_rows *r);
/* A new last row for step (every value NaN); returns its index. */
long rows_add(struct metric_rows *r, long step);
double rows_get(const struct metric_rows *r, long i, int c);
void rows_set(struct metric_rows *r, long i, int c, double v);
/* Keep the first head and the last tail rows, dropping those between (no-op when there
 * are no more than head + tail). */
void rows_keep_ends(struct metric_rows *r, long head, long tail);
/* Append m as a row: its fields, time_s, weight_version, the eval columns and phase. */
void rows_add_metrics(struct metric_rows *r, const struct step_metrics *m);
/* Number of finite values of column c. */
long rows_count_finite(const struct metric_rows *r, int c);

void run_metrics_init(struct run_metrics *m);
void run_metrics_free(struct run_metrics *m);

#endif
