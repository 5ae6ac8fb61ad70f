/* run/metrics_log.h: where a run's metrics go: a JSONL file (one line per step,
 * flushed), a short console line, and an optional Prometheus textfile. Writers print
 * NaN and Inf as JSON null (never invalid JSON); the console line leaves unmeasured
 * groups out. */
#ifndef RLPT_METRICS_LOG_H
#define RLPT_METRICS_LOG_H

#include <stdio.h>

#include "rl/metrics.h"

/* One JSON object, one line, flushed. Returns 0, or -1 on a write error. */
int metrics_write_jsonl(FILE *f, const struct step_metrics *m);
/* The console form into buf (no newline): step/total, reward, acc, kl, len,
 * clip, grad norm, tok/s, phase times, s/step and ETA. mean_step_s < 0 or
 * total_steps <= 0: no ETA. */
void metrics_format_console(const struct step_metrics *m, long total_steps, double mean_step_s,
                            char *buf, size_t len);
/* Prometheus text exposition (gauges named rlpt_<field>), written to
 * path.tmp then renamed over path so a scraper never sees half a file.
 * Unmeasured (NaN) fields are left out. Returns 0, or -1 (errno set). */
int metrics_write_prom(const char *path, const struct step_metrics *m);

/* The writers of a run, with the running mean step time for the ETA. */
struct metrics_log {
  FILE *jsonl;          /* NULL: no JSONL */
  char *prom_path;      /* NULL: no textfile */
  long total_steps;
  long n_timed;
  double sum_step_s;
};

/* Open the writers (an empty or NULL path disables one). append = 1 when
 * resuming a run, so earlier lines are kept. Returns 0, or -1 with the reason
 * (naming the path) in err. */
int metrics_log_open(struct metrics_log *log, const char *jsonl_path, const char *prom_path,
                     long total_steps, int append, char *err, size_t errlen);
/* Write one step (or eval) line everywhere; the console line goes to console when
 * not NULL (an eval line, has_eval, is not a step: no "/total" and no ETA on it).
 * Returns 0, or -1 when a file write failed. */
int metrics_log_step(struct metrics_log *log, const struct step_metrics *m, FILE *console);
void metrics_log_close(struct metrics_log *log);

#endif
