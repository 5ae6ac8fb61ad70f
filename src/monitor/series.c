/* monitor/series.c: the column tables of a run's metrics (monitor/series.h). */
#include "monitor/series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

static const char *const extra_names[SERIES_EXTRA_N] = {
  [SERIES_TIME_S] = "time_s",
  [SERIES_WEIGHT_VERSION] = "weight_version",
  [SERIES_PASS1] = "eval_pass@1",
  [SERIES_PASSK] = "eval_pass@k",
  [SERIES_EVAL_K] = "eval_k",
  [SERIES_PHASE_RL] = "phase",
};

int series_ncols(void) { return metric_fields_len + SERIES_EXTRA_N; }

const char *series_col_name(int c) {
  return c < metric_fields_len ? metric_fields[c].name : extra_names[c - metric_fields_len];
}

int series_col_by_name(const char *name) {
  for (int c = 0; c < series_ncols(); c++)
    if (strcmp(series_col_name(c), name) == 0) return c;
  return -1;
}

int series_col_of(size_t offset) {
  for (int c = 0; c < metric_fields_len; c++)
    if (metric_fields[c].offset == offset) return c;
  abort();  /* not a field of the table: a programming error */
}

void rows_init(struct metric_rows *r) {
  *r = (struct metric_rows){.n = 0};
}

void rows_free(struct metric_rows *r) {
  if (r->col)
    for (int c = 0; c < series_ncols(); c++) free(r->col[c]);
  free(r->col);
  free(r->step);
  rows_init(r);
}

long rows_add(struct metric_rows *r, long step) {
  int nc = series_ncols();
  if (!r->col) r->col = calloc_check((size_t)nc, sizeof *r->col);
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->step = realloc_check(r->step, (size_t)r->cap * sizeof *r->step);
    for (int c = 0; c < nc; c++) r->col[c] = realloc_check(r->col[c], (size_t)r->cap * sizeof(double));
  }
  long i = r->n++;
  r->step[i] = step;
  for (int c = 0; c < nc; c++) r->col[c][i] = NAN;
  return i;
}

double rows_get(const struct metric_rows *r, long i, int c) { return r->col[c][i]; }

void rows_set(struct metric_rows *r, long i, int c, double v) { r->col[c][i] = v; }

void rows_keep_ends(struct metric_rows *r, long head, long tail) {
  if (r->n <= head + tail) return;
  long from = r->n - tail;
  memmove(r->step + head, r->step + from, (size_t)tail * sizeof *r->step);
  for (int c = 0; c < series_ncols(); c++)
    memmove(r->col[c] + head, r->col[c] + from, (size_t)tail * sizeof(double));
  r->n = head + tail;
}

void rows_add_metrics(struct metric_rows *r, const struct step_metrics *m) {
  long i = rows_add(r, m->step);
  for (int c = 0; c < metric_fields_len; c++) r->col[c][i] = metrics_field_value(m, c);
  rows_set(r, i, SERIES_EXTRA(SERIES_TIME_S), m->time_s);
  rows_set(r, i, SERIES_EXTRA(SERIES_WEIGHT_VERSION), (double)m->weight_version);
  rows_set(r, i, SERIES_EXTRA(SERIES_PHASE_RL), m->phase == PHASE_RL);
  if (m->has_eval) {
    rows_set(r, i, SERIES_EXTRA(SERIES_PASS1), m->eval_pass1);
    rows_set(r, i, SERIES_EXTRA(SERIES_PASSK), m->eval_passk);
    rows_set(r, i, SERIES_EXTRA(SERIES_EVAL_K), m->eval_k);
  }
}

long rows_count_finite(const struct metric_rows *r, int c) {
  long k = 0;
  for (long i = 0; i < r->n; i++) k += isfinite(r->col[c][i]) != 0;
  return k;
}

void run_metrics_init(struct run_metrics *m) {
  rows_init(&m->rl);
  rows_init(&m->sft);
  rows_init(&m->eval);
}

void run_metrics_free(struct run_metrics *m) {
  rows_free(&m->rl);
  rows_free(&m->sft);
  rows_free(&m->eval);
}
