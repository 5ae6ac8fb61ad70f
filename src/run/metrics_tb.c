/* run/metrics_tb.c: a metrics line as TensorBoard scalars (run/metrics_tb.h). */
#include "run/metrics_tb.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TB_TAG_MAX 160

/* The scalars of one line: tags in tag[i], values in s[i]. */
struct tb_line {
  struct tb_scalar *s;
  char (*tag)[TB_TAG_MAX];
  int n, cap;
};

/* Add prefix + group + name = v when v is finite (a tag too long for TB_TAG_MAX is left
 * out). */
static void add3(struct tb_line *l, const char *prefix, const char *group, const char *name,
                 double v) {
  if (!isfinite(v) || l->n == l->cap) return;
  if (snprintf(l->tag[l->n], TB_TAG_MAX, "%s%s%s", prefix, group, name) >= TB_TAG_MAX) return;
  l->s[l->n] = (struct tb_scalar){.tag = l->tag[l->n], .value = (float)v};
  l->n++;
}

static void add(struct tb_line *l, const char *prefix, const char *name, double v) {
  add3(l, prefix, "", name, v);
}

static void add_eval(struct tb_line *l, const struct step_metrics *m) {
  add(l, "eval/", "pass@1", m->eval_pass1);
  add(l, "eval/", "pass@k", m->eval_passk);
  add(l, "eval/", "k", m->eval_k);
  add(l, "eval/", "acc", m->acc);
  add(l, "eval/", METRICS_TB_STEP_TIME, m->time_s);
  add(l, "eval/", METRICS_TB_VERSION, (double)m->weight_version);
  for (int i = 0; i < metric_fields_len; i++)
    if (metric_fields[i].offset != offsetof(struct step_metrics, acc))
      add(l, "eval/", metric_fields[i].tb, metrics_field_value(m, i));
}

static void add_step(struct tb_line *l, const struct step_metrics *m) {
  const char *pre = m->phase == PHASE_SFT ? "sft/" : "";
  add(l, pre, METRICS_TB_STEP_TIME, m->time_s);
  add(l, pre, METRICS_TB_VERSION, (double)m->weight_version);
  for (int i = 0; i < metric_fields_len; i++)
    add(l, pre, metric_fields[i].tb, metrics_field_value(m, i));
  for (int i = 0; i < m->n_parts; i++)
    add3(l, pre, METRICS_TB_PARTS, m->parts[i].name, m->parts[i].value);
  add(l, pre, METRICS_TB_CLIPFRAC, m->pg_clipfrac_low + m->pg_clipfrac_high);
}

int metrics_tb_write(const struct tb_events *w, const struct step_metrics *m, double wall_time) {
  int cap = metric_fields_len + m->n_parts + 8;
  struct tb_line l = {.s = calloc((size_t)cap, sizeof *l.s), .tag = calloc((size_t)cap, TB_TAG_MAX),
                      .cap = cap};
  int rc = -1;
  if (l.s && l.tag) {
    if (m->has_eval) add_eval(&l, m);
    else add_step(&l, m);
    rc = tb_events_scalars(w, m->step, wall_time, l.s, l.n);
  } else {
    errno = ENOMEM;
  }
  free(l.s);
  free(l.tag);
  return rc;
}
