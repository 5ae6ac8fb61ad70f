/* monitor/report.h: `rlpt report RUN_DIR|metrics.jsonl --out FILE.html [--band LO,HI]`: one
 * self-contained HTML file about a run: the plots of its metrics as inline SVG
 * (monitor/svg_plot.h) laid out at fixed positions under a fixed-height header, the
 * doctor's findings (monitor/doctor.h), and the deck (monitor/run_dir.h finds it). No
 * script, no external reference (no URL, stylesheet, font or image): inline CSS only. */
#ifndef RLPT_REPORT_H
#define RLPT_REPORT_H

#include <stdio.h>

#include "monitor/doctor.h"

struct report_args {
  const char *target;   /* RUN_DIR or a metrics file */
  const char *out;      /* the HTML file written */
  int has_band;
  double band[2];
};

/* The report of in (diagnosed as d) into f. Returns the number of plots that have data. */
int report_write(FILE *f, const struct doctor_input *in, const struct diagnosis *d);
/* `rlpt report`: load, diagnose, write out; returns the exit code (0, 1 on a write error,
 * 2 bad input). */
int report_command(const struct report_args *a);

#endif
