/* run/metrics_log.c: the JSONL, console and Prometheus writers of a run's metrics, and the
 * run's set of writers with the TensorBoard event file (run/metrics_log.h). */
#include "run/metrics_log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/metrics_tb.h"

/* ---- JSONL -------------------------------------------------------------------------- */

/* Non-finite numbers become null: JSON has no NaN. */
static int add_num(cJSON *o, const char *key, double v) {
  return (isfinite(v) ? cJSON_AddNumberToObject(o, key, v) : cJSON_AddNullToObject(o, key)) != NULL;
}

static int add_parts(cJSON *o, const struct step_metrics *m) {
  int ok = 1;
  for (int i = 0; i < m->n_parts; i++) {
    size_t len = strlen(m->parts[i].name) + sizeof "reward_parts.";
    char *key = malloc(len);
    if (!key) return 0;
    snprintf(key, len, "reward_parts.%s", m->parts[i].name);
    ok &= add_num(o, key, m->parts[i].value);
    free(key);
  }
  return ok;
}

static cJSON *metrics_to_json(const struct step_metrics *m) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  int ok = add_num(o, "step", (double)m->step) && add_num(o, "weight_version", (double)m->weight_version) &&
           cJSON_AddStringToObject(o, "phase", metrics_phase_name(m->phase)) &&
           add_num(o, "time_s", m->time_s);
  for (int i = 0; ok && i < metric_fields_len; i++) {
    ok = add_num(o, metric_fields[i].name, metrics_field_value(m, i));
    /* the reward parts follow acc (README "Metrics") */
    if (ok && strcmp(metric_fields[i].name, "acc") == 0) ok = add_parts(o, m);
  }
  if (ok && m->has_eval)
    ok = add_num(o, "eval_pass@1", m->eval_pass1) && add_num(o, "eval_pass@k", m->eval_passk) &&
         add_num(o, "eval_k", m->eval_k);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

int metrics_write_jsonl(FILE *f, const struct step_metrics *m) {
  cJSON *o = metrics_to_json(m);
  char *s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (!s) return -1;
  int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 ? -1 : 0;
  cJSON_free(s);
  return rc;
}

/* ---- console ------------------------------------------------------------------------ */

struct sbuf {
  char *p;
  size_t cap, n;
};

/* Append formatted text; silently stops at the end of the buffer. */
__attribute__((format(printf, 2, 3))) static void cat(struct sbuf *b, const char *fmt, ...) {
  if (b->n + 1 >= b->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  if (k > 0) b->n = b->n + (size_t)k < b->cap ? b->n + (size_t)k : b->cap - 1;
}

/* " name value" for each finite value, after a " |" separator when any is. */
static void cat_group(struct sbuf *b, const char *unit, int n, const char *const *names,
                      const double *v, const char *fmt) {
  int first = 1;
  for (int i = 0; i < n; i++) {
    if (!isfinite(v[i])) continue;
    cat(b, first ? " | %s " : " %s ", names[i]);
    cat(b, fmt, v[i]);
    first = 0;
  }
  if (!first && unit[0]) cat(b, " %s", unit);
}

static void cat_duration(struct sbuf *b, double s) {
  long t = (long)(s + 0.5);
  if (t >= 3600) cat(b, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60) cat(b, "%ldm%02lds", t / 60, t % 60);
  else cat(b, "%lds", t);
}

void metrics_format_console(const struct step_metrics *m, long total_steps, double mean_step_s,
                            char *buf, size_t len) {
  struct sbuf b = {.p = buf, .cap = len, .n = 0};
  if (len == 0) return;
  buf[0] = 0;
  if (total_steps > 0) cat(&b, "step %ld/%ld %s", m->step, total_steps, metrics_phase_name(m->phase));
  else cat(&b, "step %ld %s", m->step, metrics_phase_name(m->phase));
  cat_group(&b, "", 3, (const char *const[]){"reward", "sd", "acc"},
            (double[]){m->reward_mean, m->reward_std, m->acc}, "%.3f");
  cat_group(&b, "", 2, (const char *const[]){"kl", "ent"}, (double[]){m->kl, m->entropy}, "%.4g");
  cat_group(&b, "", 2, (const char *const[]){"len", "max"},
            (double[]){m->resp_len_mean, m->resp_len_max}, "%.1f");
  /* clip: the whole clipped fraction, both sides */
  double clip = isfinite(m->pg_clipfrac_low) || isfinite(m->pg_clipfrac_high)
                    ? (isfinite(m->pg_clipfrac_low) ? m->pg_clipfrac_low : 0) +
                          (isfinite(m->pg_clipfrac_high) ? m->pg_clipfrac_high : 0)
                    : NAN;
  cat_group(&b, "", 1, (const char *const[]){"clip"}, &clip, "%.3f");
  cat_group(&b, "", 4, (const char *const[]){"pref loss", "margin", "pref acc", "eval acc"},
            (double[]){m->pref_loss, m->pref_margin, m->pref_acc, m->pref_eval_acc}, "%.4g");
  cat_group(&b, "", 2, (const char *const[]){"gnorm", "lr"}, (double[]){m->grad_norm, m->lr},
            "%.3g");
  cat_group(&b, "tok/s", 2, (const char *const[]){"gen", "train"},
            (double[]){m->gen_tok_per_s, m->train_tok_per_s}, "%.0f");
  cat_group(&b, "s", 6, (const char *const[]){"t gen", "rwd", "ref", "train", "sync", "ckpt"},
            (double[]){m->t_gen, m->t_reward, m->t_ref, m->t_train, m->t_sync, m->t_ckpt},
            "%.2f");
  cat_group(&b, "", 2, (const char *const[]){"lag", "drop"}, (double[]){m->lag_mean, m->drop_ratio},
            "%.2f");
  /* separate_async: groups buffered, idle shares of the train and rollout ranks */
  cat_group(&b, "", 3, (const char *const[]){"buf", "idle train", "rollout"},
            (double[]){m->buffer_groups, m->idle_train, m->idle_rollout}, "%.2f");
  if (m->has_eval) {
    cat_group(&b, "", 1, (const char *const[]){"pass@1"}, &m->eval_pass1, "%.3f");
    if (isfinite(m->eval_passk)) cat(&b, " pass@%d %.3f", m->eval_k, m->eval_passk);
  }
  if (mean_step_s >= 0 && isfinite(mean_step_s)) {
    cat(&b, " | %.2f s/step", mean_step_s);
    if (total_steps > 0) {
      cat(&b, " ETA ");
      cat_duration(&b, mean_step_s * (double)(total_steps > m->step ? total_steps - m->step : 0));
    }
  }
}

/* ---- Prometheus textfile --------------------------------------------------------------- */

/* "# HELP" (help not NULL: the first sample of the metric), then "name{labels} value". */
static void prom_value(FILE *f, const char *name, const char *labels, double v, const char *help) {
  if (help) fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
  fprintf(f, "%s%s ", name, labels);
  if (isnan(v)) fprintf(f, "NaN\n");  /* not measured */
  else if (isinf(v)) fprintf(f, "%cInf\n", v > 0 ? '+' : '-');
  else {  /* the shortest of %.15g / %.17g that reads back exactly */
    char num[32];
    snprintf(num, sizeof num, "%.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
    fprintf(f, "%s\n", num);
  }
}

/* A label value with \, " and newline escaped, as the exposition format asks. */
static void prom_part(FILE *f, const struct metric_part *p, int first) {
  size_t n = strlen(p->name);
  char *lab = malloc(2 * n + sizeof "{name=\"\"}");
  if (!lab) return;
  char *q = lab + sprintf(lab, "{name=\"");
  for (size_t i = 0; i < n; i++) {
    char c = p->name[i];
    if (c == '\\' || c == '"' || c == '\n') *q++ = '\\';
    *q++ = c == '\n' ? 'n' : c;
  }
  strcpy(q, "\"}");
  prom_value(f, "rlpt_reward_part", lab, p->value,
             first ? "mean of a named reward component" : NULL);
  free(lab);
}

/* The gauges of the latest step line; m NULL: none yet, every value NaN. */
static void prom_step(FILE *f, const struct step_metrics *m) {
  struct step_metrics none;
  int known = m != NULL;
  if (!known) metrics_init(&none), m = &none;
  char name[96];
  prom_value(f, "rlpt_step", "", known ? (double)m->step : NAN,
             "step of the latest line (SFT or RL)");
  prom_value(f, "rlpt_weight_version", "", known ? (double)m->weight_version : NAN,
             "policy weight version");
  prom_value(f, "rlpt_phase_rl", "", known ? m->phase == PHASE_RL : NAN, "1 in RL, 0 in SFT");
  prom_value(f, "rlpt_time_s", "", m->time_s, "wall time of the step (s)");
  for (int i = 0; i < metric_fields_len; i++) {
    snprintf(name, sizeof name, "rlpt_%s", metric_fields[i].name);
    prom_value(f, name, "", metrics_field_value(m, i), metric_fields[i].help);
  }
  for (int i = 0; i < m->n_parts; i++) prom_part(f, &m->parts[i], i == 0);
  prom_value(f, "rl_sample_mean_lag", "", m->lag_mean,
             "mean weight-version lag of trained samples (versions; = rlpt_lag_mean)");
  prom_value(f, "rl_sample_drop_ratio", "", m->drop_ratio,
             "fraction of samples dropped as too stale (= rlpt_drop_ratio)");
}

/* The gauges of the latest eval line; e NULL: none yet, every value NaN. */
static void prom_eval(FILE *f, const struct step_metrics *e) {
  struct step_metrics none;
  int known = e != NULL;
  if (!known) metrics_init(&none), e = &none;
  prom_value(f, "rlpt_eval_step", "", known ? (double)e->step : NAN,
             "RL step of the latest eval (0: after SFT)");
  prom_value(f, "rlpt_eval_pass_at_1", "", e->eval_pass1, "eval greedy pass@1");
  prom_value(f, "rlpt_eval_acc", "", e->acc, "eval sampled pass@1");
  prom_value(f, "rlpt_eval_pass_at_k", "", e->eval_passk,
             "eval pass@k (unbiased), k = rlpt_eval_k");
  prom_value(f, "rlpt_eval_k", "", known ? e->eval_k : NAN, "k of rlpt_eval_pass_at_k");
}

int metrics_write_prom(const char *path, const struct step_metrics *step,
                       const struct step_metrics *eval) {
  size_t n = strlen(path) + sizeof ".tmp";
  char *tmp = malloc(n);
  if (!tmp) return -1;
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int rc = -1;
  if (f) {
    prom_step(f, step);
    prom_eval(f, eval);
    int bad = ferror(f) || fflush(f) != 0;
    bad |= fclose(f) != 0;
    rc = bad ? -1 : rename(tmp, path);
    if (rc) {
      int e = errno;
      unlink(tmp);
      errno = e;
    }
  }
  free(tmp);
  return rc;
}

/* ---- the run's writers ---------------------------------------------------------------- */

/* The textfile's directory takes path.tmp (created and removed), so the first rename works. */
static int prom_check(const char *path, char *err, size_t errlen) {
  size_t n = strlen(path) + sizeof ".tmp";
  char *tmp = malloc(n);
  if (!tmp) return snprintf(err, errlen, "out of memory"), -1;
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f) {
    fclose(f);
    unlink(tmp);
  } else {
    snprintf(err, errlen, "[log] prometheus_path = %s: cannot create %s: %s", path, tmp,
             strerror(errno));
  }
  free(tmp);
  return f ? 0 : -1;
}

static int open_monitors(struct metrics_log *log, const struct metrics_log_paths *paths, char *err,
                         size_t errlen) {
  char why[1024];
  if (paths->tb_dir && paths->tb_dir[0] &&
      tb_events_open(&log->tb, paths->tb_dir, ".rlpt", tb_wall_time(), why, sizeof why) != 0) {
    snprintf(err, errlen, "[log] tensorboard_dir: %s", why);
    return -1;
  }
  if (paths->prom && paths->prom[0]) {
    if (prom_check(paths->prom, err, errlen) != 0) return -1;
    if (!(log->prom_path = strdup(paths->prom))) return snprintf(err, errlen, "out of memory"), -1;
  }
  return 0;
}

static int open_jsonl(struct metrics_log *log, const char *path, const char *mode, char *err,
                      size_t errlen) {
  if ((log->jsonl = fopen(path, mode))) return 0;
  snprintf(err, errlen, "[log] metrics_path = %s: cannot open: %s", path, strerror(errno));
  return -1;
}

int metrics_log_open(struct metrics_log *log, const struct metrics_log_paths *paths,
                     long total_steps, int append, char *err, size_t errlen) {
  memset(log, 0, sizeof *log);
  log->total_steps = total_steps;
  metrics_init(&log->prom_step);
  metrics_init(&log->prom_eval);
  if ((paths->jsonl && paths->jsonl[0] &&
       open_jsonl(log, paths->jsonl, append ? "a" : "w", err, errlen) != 0) ||
      open_monitors(log, paths, err, errlen) != 0) {
    metrics_log_close(log);
    return -1;
  }
  return 0;
}

void metrics_log_close_jsonl(struct metrics_log *log) {
  if (log->jsonl) fclose(log->jsonl);
  log->jsonl = NULL;
}

int metrics_log_reopen_jsonl(struct metrics_log *log, const char *jsonl_path, char *err,
                             size_t errlen) {
  metrics_log_close_jsonl(log);
  return open_jsonl(log, jsonl_path, "a", err, errlen);
}

/* A monitor's failed write: one warning per writer, naming the key. */
static void monitor_failed(int *warned, const char *key, const char *path) {
  if (*warned) return;
  *warned = 1;
  fprintf(stderr, "rlpt: run: WARNING: [log] %s = %s: write failed: %s; the run goes on without "
          "further updates there\n", key, path, strerror(errno));
}

/* The event file and the textfile (which keeps the latest step and eval lines). */
static void write_monitors(struct metrics_log *log, const struct step_metrics *m) {
  if (log->tb.f && !log->tb_warned && metrics_tb_write(&log->tb, m, tb_wall_time()) != 0)
    monitor_failed(&log->tb_warned, "tensorboard_dir", log->tb.path);
  if (!log->prom_path || log->prom_warned) return;
  int *have = m->has_eval ? &log->have_eval : &log->have_step;
  *have = metrics_copy(m->has_eval ? &log->prom_eval : &log->prom_step, m) == 0;
  if (metrics_write_prom(log->prom_path, log->have_step ? &log->prom_step : NULL,
                         log->have_eval ? &log->prom_eval : NULL) != 0)
    monitor_failed(&log->prom_warned, "prometheus_path", log->prom_path);
}

int metrics_log_step(struct metrics_log *log, const struct step_metrics *m, FILE *console) {
  if (isfinite(m->time_s)) {
    log->n_timed++;
    log->sum_step_s += m->time_s;
  }
  int rc = log->jsonl && metrics_write_jsonl(log->jsonl, m) ? -1 : 0;
  write_monitors(log, m);
  if (console) {
    char line[512];
    double mean = log->n_timed ? log->sum_step_s / (double)log->n_timed : -1;
    /* an eval line is not a step: no "/total" and no ETA on it */
    metrics_format_console(m, m->has_eval ? 0 : log->total_steps, mean, line, sizeof line);
    fprintf(console, "%s\n", line);
    fflush(console);
  }
  return rc;
}

void metrics_log_close(struct metrics_log *log) {
  metrics_log_close_jsonl(log);
  tb_events_close(&log->tb);
  free(log->prom_path);
  metrics_free(&log->prom_step);
  metrics_free(&log->prom_eval);
  memset(log, 0, sizeof *log);
}
