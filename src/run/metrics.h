/* run/metrics.h: one step's metrics and where they go: a JSONL file (one line per
 * step, flushed), a short console line, and an optional Prometheus textfile.
 *
 * Every number is a double that starts as NaN, meaning "not measured this
 * step"; writers print NaN and Inf as JSON null (never invalid JSON) and the
 * console line leaves unmeasured groups out. The field table (metric_fields)
 * is the one list of names, units and help: the JSONL writer, the Prometheus
 * writer and anyone reducing metrics across ranks walk it. Names follow
 * DESIGN.md "Metrics"; times are seconds, rates per second. */
#ifndef RLPT_METRICS_H
#define RLPT_METRICS_H

#include <stddef.h>
#include <stdio.h>

enum metrics_phase { PHASE_SFT, PHASE_RL };

struct metric_part {
  char *name;   /* owned; written as reward_parts.<name> */
  double value;
};

struct step_metrics {
  long step, weight_version;
  enum metrics_phase phase;
  double time_s;                        /* wall seconds of this step */
  double reward_mean, reward_std, acc;
  int n_parts;
  struct metric_part *parts;            /* mean of each named reward component */
  double resp_len_mean, resp_len_max, truncated_frac;
  double kl, entropy, pg_loss, pg_clipfrac_low, pg_clipfrac_high, ratio_mean, grad_norm, lr;
  double logprob_diff_max, lag_mean, lag_max, drop_ratio, tis_clipfrac;
  double groups_filtered, skipped_nonfinite, reward_nonfinite, reward_parts_const_frac;
  double gen_rounds, groups_trained;     /* dynamic sampling: generation rounds, groups in the update */
  double t_gen, t_reward, t_ref, t_train, t_sync, t_ckpt;
  double gen_tok_per_s, train_tok_per_s, sync_gbps, mfu;
  /* eval lines only (has_eval = 1) */
  int has_eval;
  int eval_k;
  double eval_pass1, eval_passk;        /* written as eval_pass@1, eval_pass@k */
};

/* The double fields after time_s, in output order (time_s itself is first). */
struct metric_field {
  const char *name;
  size_t offset;       /* of the double in struct step_metrics */
  const char *help;    /* with the unit */
};
extern const struct metric_field metric_fields[];
extern const int metric_fields_len;
/* The i-th field of m. */
double *metrics_field(struct step_metrics *m, int i);

/* Every number NaN, step 0, no parts, no eval. */
void metrics_init(struct step_metrics *m);
void metrics_free(struct step_metrics *m);
/* Set (or add) reward_parts.<name>. Returns 0, or -1 on allocation failure. */
int metrics_set_part(struct step_metrics *m, const char *name, double value);
/* "sft" / "rl". */
const char *metrics_phase_name(enum metrics_phase p);

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
