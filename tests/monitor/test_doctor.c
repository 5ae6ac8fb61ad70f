/* monitor/test_doctor.c: the doctor's checks on synthetic runs (monitor_scenarios.h).
 *
 *   test_doctor            write monitor_data/monitor_<scenario>.jsonl (the run's JSONL writer) and the
 *                          bad files; check each scenario's findings are exactly the kinds
 *                          it shows, that the watcher fed the same records finds the same
 *                          kinds at the same first steps, the reader's restart and error
 *                          rules (FILE:LINE), the SVG gaps, and every deck key the playbook
 *                          names against the schema; monitor_sft_only.jsonl (no RL line) is
 *                          left for the report test
 *   test_doctor json FILE KIND...|none
 *                          parse `rlpt doctor --json` output in FILE and check its findings
 *                          are exactly those kinds
 *   test_doctor json-has FILE KIND...
 *                          the same, but the findings need only include those kinds */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deck/config.h"
#include "io/safetensors.h"
#include "monitor/checks.h"
#include "monitor/doctor.h"
#include "monitor/metrics_read.h"
#include "monitor/monitor_scenarios.h"
#include "monitor/svg_plot.h"
#include "monitor/watch.h"
#include "run/metrics_log.h"
#include "testutil.h"

static void sft_lines(FILE *f, double pass1) {
  struct step_metrics m;
  for (int i = 1; i <= 10; i++) {
    metrics_init(&m);
    m.step = i;
    m.phase = PHASE_SFT;
    m.pg_loss = 3 * exp(-i / 3.0);
    m.entropy = 2, m.grad_norm = 1, m.lr = 1e-3, m.t_train = 0.1, m.train_tok_per_s = 1e5;
    metrics_write_jsonl(f, &m);
  }
  metrics_init(&m);
  m.phase = PHASE_SFT;
  m.has_eval = 1, m.eval_k = 4;
  m.eval_pass1 = pass1, m.acc = pass1 - 0.05, m.eval_passk = pass1 + 0.2, m.t_gen = 1;
  metrics_write_jsonl(f, &m);
}

static void write_scenario(const struct scenario *s, const char *path) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  sft_lines(f, s->sft_pass1);
  struct step_metrics m;
  for (int i = 1; i <= s->n_rl; i++) {
    scenario_step(s, i, &m);
    metrics_write_jsonl(f, &m);
    metrics_free(&m);
  }
  metrics_init(&m);
  m.step = s->n_rl, m.has_eval = 1, m.eval_k = 4, m.eval_pass1 = 0.6, m.acc = 0.55, m.eval_passk = 0.8;
  metrics_write_jsonl(f, &m);
  fclose(f);
}

/* The kind names of d, as a set, equal to want (NULL-terminated). */
static int same_kinds(const struct diagnosis *d, const char *const *want) {
  int n = 0;
  while (n < 3 && want[n]) n++;
  if (d->n != n) return 0;
  for (int i = 0; i < n; i++) {
    int found = 0;
    for (int j = 0; j < d->n; j++) found |= !strcmp(finding_kinds[d->f[j].kind].name, want[i]);
    if (!found) return 0;
  }
  return 1;
}

/* The watcher fed the scenario's records fires each per-step kind first where the doctor
 * says it was first seen, and no other kind. */
static void check_watch(const struct scenario *s, const struct diagnosis *d) {
  struct doctor_watch *w = watch_new();
  long first[DK_COUNT];
  for (int k = 0; k < DK_COUNT; k++) first[k] = -1;
  for (int i = 1; i <= s->n_rl; i++) {
    struct step_metrics m;
    scenario_step(s, i, &m);
    unsigned fresh = watch_step(w, &m, NULL);
    for (int k = 0; k < DK_COUNT; k++)
      if (fresh >> k & 1u) first[k] = i;
    metrics_free(&m);
  }
  CHECK_MSG(w->rl.n <= CHECK_HEAD + CHECK_LOOKBACK, "%s: the watcher keeps %ld rows", s->name, w->rl.n);
  for (int k = 0; k < DK_COUNT; k++) {
    long want = -1;
    for (int j = 0; j < d->n; j++)
      if (d->f[j].kind == (enum doctor_kind)k && k != DK_SFT_BAND) want = d->f[j].step_first;
    CHECK_MSG(first[k] == want, "%s: %s: watcher first at step %ld, doctor at %ld", s->name,
              finding_kinds[k].name, first[k], want);
  }
  watch_free(w);
}

static void check_scenario(const struct scenario *s) {
  char path[256], err[2048] = "";
  snprintf(path, sizeof path, "monitor_%s.jsonl", s->name);
  write_scenario(s, path);
  struct doctor_input in;
  struct diagnosis d;
  int rc = doctor_load(path, NULL, &in, err, sizeof err);
  CHECK_MSG(rc == 0, "%s: %s", path, err);
  if (rc == 0) {
    doctor_diagnose(&in, &d);
    CHECK(in.band_src == BAND_DEFAULT && in.m.rl.n == s->n_rl && in.m.sft.n == 10 && in.m.eval.n == 2);
    if (!same_kinds(&d, s->expect)) {
      tu_failures++;
      fprintf(stderr, "%s: unexpected findings:\n", s->name);
      doctor_print_text(stderr, &in, &d);
    }
    for (int j = 0; j < d.n; j++)
      CHECK_MSG(d.f[j].step_lo <= d.f[j].step_hi && strpbrk(d.f[j].evidence, "0123456789"),
                "%s: %s", s->name, d.f[j].evidence);
    check_watch(s, &d);
  }
  doctor_input_free(&in);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) fputs(text, f), fclose(f);
}

#define RL_LINE(step, kl) "{\"step\":" #step ",\"phase\":\"rl\",\"kl\":" #kl "}\n"

/* Malformed files: one message naming the file and line, code 2. The files stay for the
 * CLI tests (tests/monitor/tests.cmake). */
static void check_bad_input(void) {
  static const struct { const char *name, *text, *msg; } bad[] = {
    {"monitor_bad_json.jsonl", RL_LINE(1, 0.1) RL_LINE(2, 0.1) "{\"step\":3,\"phase\":\"rl\",\"kl\":\n",
     "monitor_bad_json.jsonl:3: invalid JSON"},
    {"monitor_bad_type.jsonl", RL_LINE(1, 0.1) "{\"step\":2,\"phase\":\"rl\",\"kl\":\"high\"}\n",
     "monitor_bad_type.jsonl:2: \"kl\" is a string, expected a number or null"},
    {"monitor_bad_phase.jsonl", "{\"step\":1,\"kl\":0.1}\n",
     "monitor_bad_phase.jsonl:1: \"phase\" is missing, expected \"sft\" or \"rl\""},
    {"monitor_bad_step.jsonl", "{\"step\":1.5,\"phase\":\"sft\"}\n",
     "monitor_bad_step.jsonl:1: \"step\" is not a whole number >= 0"},
    {"monitor_bad_array.jsonl", "\n[1,2]\n", "monitor_bad_array.jsonl:2: expected a JSON object"},
    {"monitor_empty.jsonl", "", "monitor_empty.jsonl: no metrics lines"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct run_metrics m;
    char err[1024] = "";
    write_text(bad[i].name, bad[i].text);
    int rc = metrics_read(bad[i].name, &m, err, sizeof err);
    CHECK_MSG(rc == 2 && strstr(err, bad[i].msg) == err, "%s: rc %d, '%s'", bad[i].name, rc, err);
    run_metrics_free(&m);
  }
}

/* A restart from an earlier checkpoint writes steps again: the later lines win; null is NaN. */
static void check_restart_lines(void) {
  write_text("monitor_restart.jsonl", RL_LINE(1, 0.1) RL_LINE(2, 0.2) RL_LINE(3, 0.3) RL_LINE(2, 0.25)
             RL_LINE(3, null) RL_LINE(4, 0.4));
  struct run_metrics m;
  char err[1024] = "";
  CHECK_MSG(metrics_read("monitor_restart.jsonl", &m, err, sizeof err) == 0, "%s", err);
  int kl = SERIES_COL(kl);
  CHECK(m.rl.n == 4 && m.rl.step[1] == 2 && m.rl.step[3] == 4);
  if (m.rl.n == 4) {
    CHECK(rows_get(&m.rl, 1, kl) == 0.25 && isnan(rows_get(&m.rl, 2, kl)) && rows_get(&m.rl, 3, kl) == 0.4);
    CHECK(isnan(rows_get(&m.rl, 0, SERIES_COL(entropy))));  /* absent: NaN */
  }
  run_metrics_free(&m);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p++) n++;
  return n;
}

/* A null is a gap: two runs of values make two polylines; a value alone between gaps is a
 * dot; an all-null series says "no data". */
static void check_svg_gaps(void) {
  double x[7] = {1, 2, 3, 4, 5, 6, 7}, y[7] = {1, 2, NAN, 3, 4, NAN, 5};
  struct plot_series s = {.label = "y", .color = "#1f77b4", .x = x, .y = y, .n = 7};
  struct plot p = {.title = "t", .box = {.x = 0, .y = 0, .w = 400, .h = 200}};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(svg_plot_write(f, &p, &s, 1, 0, 0) == 1);
  fclose(f);
  CHECK_MSG(count(buf, "<polyline") == 2 && count(buf, "<circle") == 1, "%s", buf);
  CHECK_MSG(strstr(buf, ">2.0</text>") || strstr(buf, ">2</text>"), "no numeric y tick: %s", buf);
  free(buf);
  for (int i = 0; i < 7; i++) y[i] = NAN;
  f = open_memstream(&buf, &len);
  CHECK(svg_plot_write(f, &p, &s, 1, 0, 0) == 0);
  fclose(f);
  CHECK(strstr(buf, "no data") && !strstr(buf, "<polyline"));
  free(buf);
}

/* Every deck key the playbook names exists in the schema. */
static void check_keys(void) {
  for (int k = 0; k < DK_COUNT; k++)
    for (int j = 0; j < FINDING_KEYS_MAX && finding_kinds[k].keys[j]; j++) {
      char sec[64];
      const char *key = finding_kinds[k].keys[j], *dot = strchr(key, '.');
      CHECK_MSG(dot && dot - key < 64, "%s", key);
      if (!dot) continue;
      snprintf(sec, sizeof sec, "%.*s", (int)(dot - key), key);
      CHECK_MSG(config_find(sec, dot + 1) >= 0, "%s: %s is not a deck key", finding_kinds[k].name, key);
      CHECK_MSG(strstr(finding_kinds[k].advice, key) || !strcmp(key, "log.samples_path"),
                "%s: advice does not name %s", finding_kinds[k].name, key);
    }
}

/* One finding object of the --json output: its fields and types; 1 when its kind is in want. */
static int json_finding_ok(const cJSON *x, char **want, int n_want, int only) {
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(x, "kind");
  const cJSON *keys = cJSON_GetObjectItemCaseSensitive(x, "keys");
  CHECK(cJSON_IsString(kind) && cJSON_IsArray(keys) && cJSON_GetArraySize(keys) > 0);
  CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "evidence")));
  CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "causes")));
  CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "step_lo")));
  CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "step_first")));
  for (int i = 0; cJSON_IsString(kind) && i < n_want; i++)
    if (!strcmp(want[i], kind->valuestring)) return 1;
  CHECK_MSG(!only, "unexpected finding %s", cJSON_IsString(kind) ? kind->valuestring : "?");
  return 0;
}

/* only = 1: the findings are exactly want; 0: they include want. */
static int json_mode(const char *path, char **want, int n_want, int only) {
  if (n_want == 1 && !strcmp(want[0], "none")) n_want = 0;
  char *text = hf_read_text(path, NULL);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  CHECK_MSG(o != NULL, "%s is not JSON", path);
  if (o) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "findings");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "healthy");
    CHECK(cJSON_IsArray(f) && cJSON_IsBool(h) && cJSON_IsTrue(h) == (cJSON_GetArraySize(f) == 0));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "band")));
    const cJSON *x;
    int found = 0;
    cJSON_ArrayForEach(x, f) found += json_finding_ok(x, want, n_want, only);
    CHECK_MSG(found == n_want && (!only || cJSON_GetArraySize(f) == n_want), "%d findings, %d of the %d "
              "wanted", cJSON_GetArraySize(f), found, n_want);
  }
  cJSON_Delete(o);
  free(text);
  return TEST_RESULT("test_doctor json");
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "json")) return json_mode(argv[2], argv + 3, argc - 3, 1);
  if (argc >= 4 && !strcmp(argv[1], "json-has")) return json_mode(argv[2], argv + 3, argc - 3, 0);
  /* a directory of its own: no checkpoint or console log of another test gives a deck */
  if ((mkdir("monitor_data", 0777) && errno != EEXIST) || chdir("monitor_data")) {
    perror("monitor_data");
    return 1;
  }
  for (int i = 0; i < N_SCENARIOS; i++) check_scenario(&scenarios[i]);
  FILE *f = fopen("monitor_sft_only.jsonl", "w");  /* the report test's empty RL plots */
  CHECK(f != NULL);
  if (f) sft_lines(f, 0.4), fclose(f);
  check_bad_input();
  check_restart_lines();
  check_svg_gaps();
  check_keys();
  return TEST_RESULT("test_doctor");
}
