/* run/metrics_log.h: where a run's metrics go: a JSONL file (one line per step,
 * flushed; [log] metrics_path), a short console line, a TensorBoard event file
 * ([log] tensorboard_dir, run/metrics_tb.h) and a Prometheus textfile for
 * node_exporter ([log] prometheus_path). Writers print NaN and Inf as JSON null (never
 * invalid JSON); the console line leaves unmeasured groups out. The JSONL is the
 * record: a failed write of it fails the step; the event file and the textfile are
 * monitors: a failed write warns once (naming the key and path) and the run goes on. */
#ifndef RLPT_METRICS_LOG_H
#define RLPT_METRICS_LOG_H

#include <stdio.h>

#include "io/tb_events.h"
#include "rl/metrics.h"

/* One JSON object, one line, flushed. Returns 0, or -1 on a write error. */
int metrics_write_jsonl(FILE *f, const struct step_metrics *m);
/* The console form into buf (no newline): step/total, reward, acc, kl, len,
 * clip, grad norm, tok/s, phase times, s/step and ETA. mean_step_s < 0 or
 * total_steps <= 0: no ETA. */
void metrics_format_console(const struct step_metrics *m, long total_steps, double mean_step_s,
                            char *buf, size_t len);
/* Prometheus text exposition, written to path.tmp then renamed over path so a scraper
 * never sees half a file: a gauge rlpt_<field> for every field of the latest step line
 * (step: an SFT or RL line; NULL: none yet), with rlpt_step, rlpt_weight_version,
 * rlpt_phase_rl, rlpt_time_s and rlpt_reward_part{name="..."}, the alert names
 * rl_sample_mean_lag and rl_sample_drop_ratio (= lag_mean, drop_ratio), and the latest
 * eval line's rlpt_eval_step, rlpt_eval_pass_at_1, rlpt_eval_acc, rlpt_eval_pass_at_k
 * and rlpt_eval_k (eval NULL: none yet). Each with # HELP and # TYPE; a value not
 * measured is NaN, so every gauge is always there. Returns 0, or -1 (errno set). */
int metrics_write_prom(const char *path, const struct step_metrics *step,
                       const struct step_metrics *eval);

/* The deck's [log] outputs; NULL or empty: that writer is off. */
struct metrics_log_paths {
  const char *jsonl;   /* [log] metrics_path */
  const char *tb_dir;  /* [log] tensorboard_dir */
  const char *prom;    /* [log] prometheus_path */
};

/* The writers of a run, with the running mean step time for the ETA. */
struct metrics_log {
  FILE *jsonl;                    /* NULL: no JSONL */
  struct tb_events tb;            /* tb.f NULL: no event file */
  char *prom_path;                /* NULL: no textfile */
  struct step_metrics prom_step;  /* the latest step and eval lines, for the textfile */
  struct step_metrics prom_eval;
  int have_step, have_eval;
  int tb_warned, prom_warned;     /* a failed write was reported */
  long total_steps;
  long n_timed;
  double sum_step_s;
};

/* Open the writers. append = 1 when resuming a run, so earlier JSONL lines are kept;
 * the event file is always a new one (TensorBoard reads a directory's files in name
 * order, and its data server keeps, per tag, only the newest record of a step: steps a
 * restart logs again replace those of the run it resumes). The textfile's directory
 * must be writable (checked by creating path.tmp). Returns 0, or -1 with the reason
 * (naming the key and the path) in err. */
int metrics_log_open(struct metrics_log *log, const struct metrics_log_paths *paths,
                     long total_steps, int append, char *err, size_t errlen);
/* The JSONL file alone, closed, and opened again for appending (a restart cuts it back
 * in between); the other writers stay open. Reopening returns 0, or -1 with the reason
 * in err. */
void metrics_log_close_jsonl(struct metrics_log *log);
int metrics_log_reopen_jsonl(struct metrics_log *log, const char *jsonl_path, char *err,
                             size_t errlen);
/* Write one step (or eval) line everywhere; the console line goes to console when
 * not NULL (an eval line, has_eval, is not a step: no "/total" and no ETA on it).
 * Returns 0, or -1 when the JSONL write failed. */
int metrics_log_step(struct metrics_log *log, const struct step_metrics *m, FILE *console);
void metrics_log_close(struct metrics_log *log);

#endif
