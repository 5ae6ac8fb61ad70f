/* monitor/metrics_read.c: reading a metrics JSONL into column tables
 * (monitor/metrics_read.h), line by line through io/jsonl.h. */
#include "monitor/metrics_read.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/jsonl.h"

/* "phase" and "step" of a line: 0, or 2 with the message. */
static int line_head(const cJSON *o, const char *path, long line, int *rl, long *step, char *err,
                     size_t errlen) {
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "step");
  if (!cJSON_IsString(ph) || (strcmp(ph->valuestring, "rl") && strcmp(ph->valuestring, "sft"))) {
    snprintf(err, errlen, "%s:%ld: \"phase\" is %s, expected \"sft\" or \"rl\"", path, line,
             cJSON_IsString(ph) ? "another string" : jsonl_type_name(ph));
    return 2;
  }
  if (!cJSON_IsNumber(st) || st->valuedouble != floor(st->valuedouble) || st->valuedouble < 0 ||
      st->valuedouble > 9e15) {
    snprintf(err, errlen, "%s:%ld: \"step\" is %s, expected a step number", path, line,
             cJSON_IsNumber(st) ? "not a whole number >= 0" : jsonl_type_name(st));
    return 2;
  }
  *rl = strcmp(ph->valuestring, "rl") == 0;
  *step = (long)st->valuedouble;
  return 0;
}

/* Every known column of o into row i of t: 0, or 2 when one is neither number nor null. */
static int line_values(const cJSON *o, struct metric_rows *t, long i, const char *path, long line,
                       char *err, size_t errlen) {
  for (int c = 0; c < series_ncols(); c++) {
    if (c == SERIES_EXTRA(SERIES_PHASE_RL)) continue;
    const char *name = series_col_name(c);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) continue;
    if (!cJSON_IsNumber(v)) {
      snprintf(err, errlen, "%s:%ld: \"%s\" is %s, expected a number or null", path, line, name,
               jsonl_type_name(v));
      return 2;
    }
    rows_set(t, i, c, v->valuedouble);
  }
  return 0;
}

/* Row j of t comes before (rl, step): by step, and in the eval table SFT evals first. */
static int row_before(const struct metric_rows *t, long j, int rl, long step) {
  int rl_j = rows_get(t, j, SERIES_EXTRA(SERIES_PHASE_RL)) == 1;
  return rl_j != rl ? rl_j < rl : t->step[j] < step;
}

static int read_line(const cJSON *o, struct run_metrics *m, const char *path, long line, char *err,
                     size_t errlen) {
  int rl;
  long step;
  if (line_head(o, path, line, &rl, &step, err, errlen)) return 2;
  int is_eval = cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1") != NULL;
  struct metric_rows *t = is_eval ? &m->eval : rl ? &m->rl : &m->sft;
  while (t->n > 0 && !row_before(t, t->n - 1, rl, step)) t->n--;  /* a restart wrote it again */
  long i = rows_add(t, step);
  rows_set(t, i, SERIES_EXTRA(SERIES_PHASE_RL), rl);
  return line_values(o, t, i, path, line, err, errlen);
}

int metrics_read(const char *path, struct run_metrics *m, char *err, size_t errlen) {
  struct jsonl_reader r;
  run_metrics_init(m);
  if (jsonl_open(&r, path, err, errlen)) return 2;
  int rc = 0, got, lines = 0;
  cJSON *o = NULL;
  long line = 0;
  while (!rc && (got = jsonl_next(&r, &o, &line, err, errlen)) != JSONL_EOF) {
    if (got != JSONL_ROW) rc = 2;  /* err holds FILE:LINE and the reason */
    else rc = read_line(o, m, path, line, err, errlen);
    cJSON_Delete(o);
    o = NULL;
    lines++;
  }
  jsonl_close(&r);
  if (!rc && lines == 0) {
    snprintf(err, errlen, "%s: no metrics lines (an empty file)", path);
    rc = 2;
  }
  return rc;
}
