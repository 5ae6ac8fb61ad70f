/* monitor/report.c: the HTML report of a run (monitor/report.h): header, plots, findings,
 * deck. */
#include "monitor/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/svg_plot.h"
#include "util/alloc.h"

/* Layout (CSS px): a header of fixed height, then the plots two by two. */
#define HEADER_H 84
#define PLOT_W 620
#define PLOT_H 300
#define PLOT_GAP 20
#define PLOT_COLS 2

enum plot_src { SRC_RL, SRC_SFT, SRC_EVAL };

struct series_def {
  const char *col, *label;
  int right;
};

struct plot_def {
  const char *title;
  enum plot_src src;
  int stacked, markers;
  struct series_def s[6];
};

static const struct plot_def plots[] = {
  {"Reward and accuracy (RL steps)", SRC_RL, 0, 0, {{"reward_mean", "reward_mean", 0}, {"acc", "acc", 0}}},
  {"KL to the reference and entropy", SRC_RL, 0, 0, {{"kl", "kl", 0}, {"entropy", "entropy", 1}}},
  {"Response length and truncation", SRC_RL, 0, 0,
   {{"resp_len_mean", "resp_len_mean", 0}, {"resp_len_max", "resp_len_max", 0},
    {"truncated_frac", "truncated_frac", 1}}},
  {"Clip fractions and importance ratio", SRC_RL, 0, 0,
   {{"pg_clipfrac_low", "pg_clipfrac_low", 0}, {"pg_clipfrac_high", "pg_clipfrac_high", 0},
    {"ratio_mean", "ratio_mean", 1}}},
  {"Gradient norm (before clipping)", SRC_RL, 0, 0, {{"grad_norm", "grad_norm", 0}}},
  {"Sample lag and drop ratio", SRC_RL, 0, 0, {{"lag_mean", "lag_mean", 0}, {"drop_ratio", "drop_ratio", 1}}},
  {"Throughput (tokens/s)", SRC_RL, 0, 0,
   {{"gen_tok_per_s", "gen_tok_per_s", 0}, {"train_tok_per_s", "train_tok_per_s", 0}}},
  {"Phase times per step (s, stacked)", SRC_RL, 1, 0,
   {{"t_gen", "t_gen", 0}, {"t_reward", "t_reward", 0}, {"t_ref", "t_ref", 0}, {"t_train", "t_train", 0},
    {"t_sync", "t_sync", 0}, {"t_ckpt", "t_ckpt", 0}}},
  {"Evals (step 0: post-SFT)", SRC_EVAL, 0, 1,
   {{"eval_pass@1", "greedy pass@1", 0}, {"acc", "sampled pass@1", 0}, {"eval_pass@k", "pass@k", 0}}},
  {"SFT loss", SRC_SFT, 0, 0, {{"pg_loss", "loss", 0}}},
};
#define N_PLOTS ((int)(sizeof plots / sizeof plots[0]))

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

static void html_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '&') fputs("&amp;", f);
    else if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

static const struct metric_rows *plot_rows(const struct run_metrics *m, enum plot_src src) {
  return src == SRC_RL ? &m->rl : src == SRC_SFT ? &m->sft : &m->eval;
}

/* Plot i at its place; returns 1 when it has data. */
static int write_plot(FILE *f, const struct run_metrics *m, int i) {
  const struct plot_def *pd = &plots[i];
  const struct metric_rows *r = plot_rows(m, pd->src);
  double *x = malloc_check(sizeof(double) * (size_t)(r->n ? r->n : 1));
  for (long k = 0; k < r->n; k++) x[k] = (double)r->step[k];
  struct plot_series s[6];
  int ns = 0;
  for (int j = 0; j < 6 && pd->s[j].col; j++) {
    int c = series_col_by_name(pd->s[j].col);
    if (c < 0) abort();  /* the table names a column that does not exist */
    s[ns++] = (struct plot_series){.label = pd->s[j].label, .color = colors[j], .x = x,
                                   .y = r->n ? r->col[c] : x, .n = r->n, .right = pd->s[j].right,
                                   .markers = pd->markers};
  }
  struct plot p = {.title = pd->title, .stacked = pd->stacked,
                   .box = {.x = PLOT_GAP + (i % PLOT_COLS) * (PLOT_W + PLOT_GAP),
                           .y = PLOT_GAP + (i / PLOT_COLS) * (PLOT_H + PLOT_GAP), .w = PLOT_W, .h = PLOT_H}};
  int with = svg_plot_write(f, &p, s, ns, 0, HEADER_H);
  free(x);
  return with > 0;
}

static void write_head(FILE *f, const struct doctor_input *in) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rlpt report: ", f);
  html_text(f, in->rd.metrics);
  fputs("</title>\n<style>\n"
        "body{margin:0;font:13px sans-serif;color:#222;background:#fff}\n"
        "header{height:" "84" "px;box-sizing:border-box;padding:10px 20px;overflow:hidden;"
        "border-bottom:1px solid #ddd}\n"
        "header h1{font-size:18px;margin:0 0 6px}\n"
        "svg text{font:11px sans-serif;fill:#333}\nsvg .t{font-weight:bold;font-size:13px}\n"
        "section{padding:0 20px 16px;max-width:1260px}\n"
        "pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}\n"
        ".finding{border-left:4px solid #c33;padding:2px 12px;margin:10px 0}\n"
        ".finding p{margin:4px 0}\n</style></head><body>\n", f);
}

static double last_pass1(const struct run_metrics *m) {
  return m->eval.n ? rows_get(&m->eval, m->eval.n - 1, SERIES_EXTRA(SERIES_PASS1)) : NAN;
}

static void write_header(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  const struct run_metrics *m = &in->m;
  fputs("<header><h1>rlpt report</h1><div>", f);
  html_text(f, in->rd.metrics);
  fprintf(f, ": %ld RL steps, %ld SFT steps, %ld evals", m->rl.n, m->sft.n, m->eval.n);
  if (isfinite(d->sft_pass1)) fprintf(f, "; greedy pass@1 post-SFT %.3f", d->sft_pass1);
  if (m->eval.n && rows_get(&m->eval, m->eval.n - 1, SERIES_EXTRA(SERIES_PHASE_RL)) == 1)
    fprintf(f, ", last %.3f (step %ld)", last_pass1(m), m->eval.step[m->eval.n - 1]);
  fprintf(f, "</div><div>doctor: %s</div></header>\n",
          d->n ? "findings below" : "healthy, no findings");
  if (d->n) fprintf(f, "<!-- %d findings -->\n", d->n);
}

static void write_findings(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  char band[sizeof in->rd.deck_note + 64];
  doctor_band_text(in, band, sizeof band);
  fprintf(f, "<section><h2>Doctor (%d finding%s)</h2>\n<p>", d->n, d->n == 1 ? "" : "s");
  if (isfinite(d->sft_pass1))
    fprintf(f, "Post-SFT greedy pass@1 %.3f (eval at step %ld); band [%g, %g], ", d->sft_pass1,
            d->sft_step, in->band[0], in->band[1]);
  else
    fprintf(f, "No post-SFT eval line; band [%g, %g], ", in->band[0], in->band[1]);
  html_text(f, band);
  fputs(".</p>\n", f);
  if (d->not_logged[0]) fprintf(f, "<p>Null in every RL line, so not checked: %s.</p>\n", d->not_logged);
  if (!d->n) fprintf(f, "<p>Healthy: none of the %d checks found anything.</p>\n", DK_COUNT);
  for (int i = 0; i < d->n; i++) {
    const struct finding *x = &d->f[i];
    const struct finding_kind *k = &finding_kinds[x->kind];
    char steps[64];
    fprintf(f, "<div class=\"finding\"><p><b>%s</b> [%s], %s (first seen at step %ld)</p><p>", k->title,
            k->name, finding_steps(x, steps, sizeof steps), x->step_first);
    html_text(f, x->evidence);
    fputs("</p><p>Likely causes: ", f);
    html_text(f, k->causes);
    fputs("</p><p>Change: ", f);
    html_text(f, k->advice);
    fputs("</p></div>\n", f);
  }
  fputs("</section>\n", f);
}

static void write_deck(FILE *f, const struct doctor_input *in) {
  fputs("<section><h2>Deck</h2>\n<p>", f);
  if (in->rd.deck) {
    fputs("From ", f);
    html_text(f, in->rd.deck_from);
    if (!in->rd.cfg) fputs(" (", f), html_text(f, in->rd.deck_note), fputs(")", f);
    fputs(":</p>\n<pre>", f);
    html_text(f, in->rd.deck);
    fputs("</pre>", f);
  } else {
    html_text(f, in->rd.deck_note);
    fputs("</p>", f);
  }
  fputs("</section>\n", f);
}

int report_write(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  int rows = (N_PLOTS + PLOT_COLS - 1) / PLOT_COLS, with = 0;
  int h = PLOT_GAP + rows * (PLOT_H + PLOT_GAP), w = PLOT_GAP + PLOT_COLS * (PLOT_W + PLOT_GAP);
  write_head(f, in);
  write_header(f, in, d);
  fprintf(f, "<div id=\"plots\" style=\"position:relative;width:%dpx;height:%dpx\" data-plots=\"%d\" "
          "data-page-h=\"%d\">\n", w, h, N_PLOTS, HEADER_H + h);
  for (int i = 0; i < N_PLOTS; i++) with += write_plot(f, &in->m, i);
  fputs("</div>\n", f);
  write_findings(f, in, d);
  write_deck(f, in);
  fputs("</body></html>\n", f);
  return with;
}

int report_command(const struct report_args *a) {
  struct doctor_input in;
  struct diagnosis *d = doctor_open("report", a->target, a->has_band ? a->band : NULL, &in);
  if (!d) return 2;
  FILE *f = fopen(a->out, "w");
  int rc = 0, with = 0;
  if (!f) {
    fprintf(stderr, "rlpt: report: %s: cannot write: %s\n", a->out, strerror(errno));
    rc = 1;
  } else {
    with = report_write(f, &in, d);
    long size = ftell(f);
    if (ferror(f) | (fclose(f) != 0)) {
      fprintf(stderr, "rlpt: report: %s: write failed: %s\n", a->out, strerror(errno));
      rc = 1;
    } else {
      printf("report: wrote %s (%ld bytes): %d of %d plots with data, %d finding%s; deck: %s\n", a->out,
             size, with, N_PLOTS, d->n, d->n == 1 ? "" : "s", in.rd.deck ? in.rd.deck_from : "not found");
    }
  }
  free(d);
  doctor_input_free(&in);
  return rc;
}
