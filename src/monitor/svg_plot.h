/* monitor/svg_plot.h: one plot as inline SVG, for the HTML report (monitor/report.h): line
 * series over a left and an optional right y axis, or stacked bars; axes with numeric
 * ticks, grid lines, a legend above the data area. A NaN value is a gap in its line (a
 * point alone between gaps is a dot), never a zero. More than PLOT_MAX_POINTS points are
 * averaged into that many bins (PLOT_MAX_BARS for bars), so a long run stays small. */
#ifndef RLPT_SVG_PLOT_H
#define RLPT_SVG_PLOT_H

#include <stdio.h>

#define PLOT_MAX_POINTS 800
#define PLOT_MAX_BARS 300

struct plot_series {
  const char *label;
  const char *color;     /* a saturated CSS colour ("#1f77b4") */
  const double *x, *y;   /* n points, x ascending; y NaN = no value */
  long n;
  int right;             /* on the right-hand axis */
  int markers;           /* a dot at every point (sparse series such as evals) */
};

/* A rectangle in CSS pixels. */
struct plot_box {
  int x, y, w, h;
};

struct plot {
  const char *title;
  struct plot_box box;   /* where the <svg> goes, relative to its positioned container */
  int stacked;           /* stacked bars of the series (summed per x), all on the left axis */
};

/* The data area of p (inside box, relative to the box). */
struct plot_box plot_data_area(const struct plot *p, int has_right);
/* Write p as one absolutely positioned <svg class="plot">; its data-area attribute holds
 * the data area in page pixels, the box offset by (page_x, page_y). Returns the number of
 * series with at least one value (0: the plot says "no data"). */
int svg_plot_write(FILE *f, const struct plot *p, const struct plot_series *s, int ns, int page_x,
                   int page_y);

#endif
