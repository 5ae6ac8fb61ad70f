/* run/test_metrics.c: JSONL lines parse back with cJSON and carry the values,
 * non-finite numbers are null, the console line holds its fields, the
 * Prometheus textfile is complete and the run log appends on resume. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/metrics_log.h"
#include "testutil.h"

static void sample_metrics(struct step_metrics *m) {
  metrics_init(m);
  m->step = 3;
  m->weight_version = 3;
  m->time_s = 2.0;
  m->reward_mean = 0.5;
  m->reward_std = 0.25;
  m->acc = 0.375;
  m->kl = 0.0125;
  m->resp_len_mean = 42.5;
  m->resp_len_max = 128;
  m->pg_clipfrac_low = 0.02;
  m->pg_clipfrac_high = 0.01;
  m->grad_norm = 0.75;
  m->gen_tok_per_s = 1234;
  m->t_gen = 1.5;
  m->t_train = 0.25;
  m->entropy = NAN;        /* not measured: null */
  m->mfu = INFINITY;       /* non-finite: null too */
  m->groups_filtered = 2;
  CHECK(metrics_set_part(m, "correct", 0.5) == 0);
  CHECK(metrics_set_part(m, "format \"x\"", 1.0) == 0);
  CHECK(metrics_set_part(m, "correct", 0.625) == 0 && m->n_parts == 2);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = calloc(1 << 16, 1);
  size_t n = fread(s, 1, (1 << 16) - 1, f);
  s[n] = 0;
  fclose(f);
  return s;
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void check_line(const char *line, int has_eval) {
  cJSON *o = cJSON_Parse(line);
  CHECK_MSG(o != NULL, "not JSON: %s", line);
  if (!o) return;
  CHECK(num(o, "step") == 3 && num(o, "weight_version") == 3 && num(o, "time_s") == 2.0);
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
  CHECK(cJSON_IsString(ph) && strcmp(ph->valuestring, "rl") == 0);
  CHECK(num(o, "reward_mean") == 0.5 && num(o, "acc") == 0.375 && num(o, "kl") == 0.0125);
  CHECK(num(o, "groups_filtered") == 2 && num(o, "grad_norm") == 0.75);
  CHECK(num(o, "reward_parts.correct") == 0.625 && num(o, "reward_parts.format \"x\"") == 1.0);
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "entropy")));
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "mfu")));
  for (int i = 0; i < metric_fields_len; i++) /* every field is there, number or null */
    CHECK_MSG(cJSON_GetObjectItemCaseSensitive(o, metric_fields[i].name) != NULL, "%s missing",
              metric_fields[i].name);
  CHECK(!!cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1") == has_eval);
  if (has_eval) CHECK(num(o, "eval_pass@k") == 0.75 && num(o, "eval_k") == 8);
  cJSON_Delete(o);
}

static void test_jsonl(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/m.jsonl", dir);
  struct step_metrics m;
  sample_metrics(&m);
  FILE *f = fopen(path, "w");
  CHECK(f && metrics_write_jsonl(f, &m) == 0);
  m.has_eval = 1, m.eval_k = 8, m.eval_pass1 = 0.5, m.eval_passk = 0.75;
  CHECK(metrics_write_jsonl(f, &m) == 0);
  fclose(f);
  char *text = read_all(path);
  CHECK(text != NULL);
  char *nl = text ? strchr(text, '\n') : NULL;
  CHECK(nl && strchr(nl + 1, '\n') && strchr(nl + 1, '\n')[1] == 0); /* exactly two lines */
  if (nl) {
    *nl = 0;
    check_line(text, 0);
    check_line(nl + 1, 1);
  }
  CHECK(text && !strstr(nl + 1, "nan") && !strstr(nl + 1, "inf"));
  free(text);
  metrics_free(&m);
}

static void test_console(void) {
  struct step_metrics m;
  sample_metrics(&m);
  char line[512];
  metrics_format_console(&m, 10, 2.0, line, sizeof line);
  printf("console: %s\n", line);
  const char *want[] = {"step 3/10 rl", "reward 0.500", "sd 0.250", "acc 0.375", "kl 0.0125",
                        "len 42.5", "max 128.0", "clip 0.030", "gnorm 0.75", "gen 1234 tok/s",
                        "t gen 1.50", "train 0.25 s", "2.00 s/step", "ETA 14s"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    CHECK_MSG(strstr(line, want[i]) != NULL, "'%s' not in '%s'", want[i], line);
  CHECK(strstr(line, "ent") == NULL && strstr(line, "lag") == NULL); /* NaN groups left out */
  metrics_format_console(&m, 1000, 7.5, line, sizeof line);
  CHECK_MSG(strstr(line, "ETA 2h04m") != NULL, "%s", line); /* 997 * 7.5 s = 2h04m37s */
  char small[16];
  metrics_format_console(&m, 10, 2.0, small, sizeof small);
  CHECK(strlen(small) == 15); /* truncated, terminated */
  metrics_free(&m);
}

static void test_prom(const char *dir) {
  char path[512], tmp[520];
  snprintf(path, sizeof path, "%s/rlpt.prom", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  struct step_metrics m, e;
  sample_metrics(&m);
  m.lag_mean = 1.5;
  m.drop_ratio = 0.25;
  CHECK(metrics_write_prom(path, &m, NULL) == 0);
  CHECK(access(tmp, F_OK) != 0); /* renamed away */
  char *t = read_all(path);
  CHECK(t && strstr(t, "\nrlpt_reward_mean 0.5\n"));
  CHECK(t && strstr(t, "# HELP rlpt_kl KL estimate to the reference policy (nats per token)\n"
                       "# TYPE rlpt_kl gauge\nrlpt_kl 0.0125\n"));
  CHECK(t && strstr(t, "rlpt_reward_part{name=\"correct\"} 0.625\n"));
  CHECK(t && strstr(t, "rlpt_reward_part{name=\"format \\\"x\\\"\"} 1\n"));
  CHECK(t && strstr(t, "rlpt_mfu +Inf\n"));
  CHECK(t && strstr(t, "\nrlpt_entropy NaN\n"));  /* not measured: there, NaN */
  CHECK(t && strstr(t, "# TYPE rl_sample_mean_lag gauge\nrl_sample_mean_lag 1.5\n"));
  CHECK(t && strstr(t, "# TYPE rl_sample_drop_ratio gauge\nrl_sample_drop_ratio 0.25\n"));
  CHECK(t && strstr(t, "\nrlpt_eval_pass_at_1 NaN\n") && strstr(t, "\nrlpt_eval_step NaN\n"));
  free(t);
  /* with an eval line: its gauges beside the step line's */
  metrics_init(&e);
  e.step = 2, e.has_eval = 1, e.eval_k = 4, e.eval_pass1 = 0.5, e.eval_passk = 0.75, e.acc = 0.25;
  CHECK(metrics_write_prom(path, &m, &e) == 0);
  t = read_all(path);
  CHECK(t && strstr(t, "\nrlpt_eval_step 2\n") && strstr(t, "\nrlpt_eval_pass_at_k 0.75\n"));
  CHECK(t && strstr(t, "\nrlpt_eval_acc 0.25\n") && strstr(t, "\nrlpt_acc 0.375\n"));
  free(t);
  /* no step line yet: every step gauge NaN, the eval's kept */
  CHECK(metrics_write_prom(path, NULL, &e) == 0);
  t = read_all(path);
  CHECK(t && strstr(t, "\nrlpt_step NaN\n") && strstr(t, "\nrlpt_phase_rl NaN\n"));
  CHECK(t && strstr(t, "\nrlpt_eval_k 4\n"));
  free(t);
  CHECK(metrics_write_prom("/nonexistent-dir/x.prom", &m, NULL) == -1);
  metrics_free(&m);
  metrics_free(&e);
}

static void test_log(const char *dir) {
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/run.jsonl", dir);
  struct metrics_log log;
  struct step_metrics m;
  sample_metrics(&m);
  CHECK(metrics_log_open(&log, &(struct metrics_log_paths){.jsonl = path}, 10, 0, err,
                         sizeof err) == 0);
  CHECK(metrics_log_step(&log, &m, stdout) == 0);
  m.step = 4;
  m.time_s = 4.0;
  CHECK(metrics_log_step(&log, &m, NULL) == 0);
  CHECK_NEAR(log.sum_step_s / (double)log.n_timed, 3.0, 1e-12);
  metrics_log_close(&log);
  CHECK(metrics_log_open(&log, &(struct metrics_log_paths){.jsonl = path, .prom = ""}, 10, 1, err,
                         sizeof err) == 0); /* resume: append */
  CHECK(metrics_log_step(&log, &m, NULL) == 0);
  metrics_log_close(&log);
  char *t = read_all(path);
  int lines = 0;
  for (char *p = t; p && *p; p++) lines += *p == '\n';
  CHECK(lines == 3);
  free(t);
  CHECK(metrics_log_open(&log, &(struct metrics_log_paths){0}, 10, 0, err, sizeof err) == 0);
  char *con = NULL;
  size_t con_len = 0;
  FILE *cf = open_memstream(&con, &con_len);
  CHECK(cf && metrics_log_step(&log, &m, cf) == 0);  /* a step line: step/total and ETA */
  m.has_eval = 1, m.eval_k = 8, m.eval_pass1 = 0.5, m.eval_passk = 0.75;
  CHECK(cf && metrics_log_step(&log, &m, cf) == 0);  /* an eval line: neither */
  if (cf) fclose(cf);
  char *nl = con ? strchr(con, '\n') : NULL;
  CHECK_MSG(nl && strstr(con, "step 4/10 rl") && strstr(con, "ETA") && strstr(con, "ETA") < nl, "%s", con ? con : "");
  CHECK_MSG(nl && strstr(nl, "step 4 rl") && !strstr(nl, "/10") && !strstr(nl, "ETA"), "%s", con ? con : "");
  CHECK(log.total_steps == 10);
  free(con);
  metrics_log_close(&log);
  CHECK(metrics_log_open(&log, &(struct metrics_log_paths){.jsonl = "/nonexistent-dir/m.jsonl"},
                         10, 0, err, sizeof err) == -1);
  CHECK(strstr(err, "[log] metrics_path = /nonexistent-dir/m.jsonl: cannot open") != NULL);
  CHECK(metrics_log_open(&log, &(struct metrics_log_paths){.prom = "/nonexistent-dir/r.prom"},
                         10, 0, err, sizeof err) == -1);
  CHECK_MSG(strstr(err, "[log] prometheus_path = /nonexistent-dir/r.prom: cannot create") != NULL,
            "%s", err);
  metrics_free(&m);
}

/* The run's monitors: the textfile keeps the latest step and eval lines; the event file
 * is created in the (new) directory; a monitor that stops working (its directory
 * removed) warns, the step goes on (the JSONL is the record). */
static void test_monitors(const char *dir) {
  char pdir[512], prom[600], tb[512], tb1[600], err[1024];
  snprintf(pdir, sizeof pdir, "%s/textfile", dir);
  snprintf(prom, sizeof prom, "%s/mon.prom", pdir);
  snprintf(tb, sizeof tb, "%s/tb", dir);
  snprintf(tb1, sizeof tb1, "%s/run1", tb);
  CHECK(mkdir(pdir, 0700) == 0);
  struct metrics_log log;
  struct step_metrics m;
  sample_metrics(&m);
  CHECK_MSG(metrics_log_open(&log, &(struct metrics_log_paths){.prom = prom, .tb_dir = tb1}, 10, 0,
                             err, sizeof err) == 0, "%s", err);
  CHECK(log.tb.f && strstr(log.tb.path, "/tb/run1/events.out.tfevents.") &&
        strstr(log.tb.path, ".rlpt"));
  CHECK(metrics_log_step(&log, &m, NULL) == 0);
  m.has_eval = 1, m.eval_k = 4, m.eval_pass1 = 0.5, m.eval_passk = 0.75, m.acc = 0.125;
  CHECK(metrics_log_step(&log, &m, NULL) == 0);
  char *t = read_all(prom);
  CHECK(t && strstr(t, "\nrlpt_acc 0.375\n") && strstr(t, "\nrlpt_eval_acc 0.125\n"));
  free(t);
  struct stat st;
  CHECK(log.tb.path && stat(log.tb.path, &st) == 0 && st.st_size > 100);
  unlink(prom);
  CHECK(rmdir(pdir) == 0);
  CHECK(metrics_log_step(&log, &m, NULL) == 0 && log.prom_warned == 1);  /* warned, not failed */
  if (log.tb.path) unlink(log.tb.path);
  metrics_log_close(&log);
  rmdir(tb1);
  rmdir(tb);
  metrics_free(&m);
}

int main(void) {
  char dir[] = "/tmp/rlpt_test_metrics_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  test_jsonl(dir);
  test_console();
  test_prom(dir);
  test_log(dir);
  test_monitors(dir);
  const char *files[] = {"m.jsonl", "rlpt.prom", "run.jsonl"};
  for (int i = 0; i < 3; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  return TEST_RESULT("test_metrics");
}
