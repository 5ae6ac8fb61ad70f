/* monitor/svg_plot.c: a plot as inline SVG (monitor/svg_plot.h). */
#include "monitor/svg_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define PLOT_SERIES_MAX 8
#define GRID "#e4e4e4"
#define INK "#333333"

/* A series averaged into at most max bins (a copy when it is short). */
struct binned {
  double *x, *y;
  long n;
};

static void bin_series(const struct plot_series *s, long max, struct binned *b) {
  long n = s->n, nb = n > max ? max : n;
  b->x = malloc_check(sizeof(double) * (size_t)(nb ? nb : 1));
  b->y = malloc_check(sizeof(double) * (size_t)(nb ? nb : 1));
  b->n = nb;
  for (long k = 0; k < nb; k++) {
    long lo = k * n / nb, hi = (k + 1) * n / nb, ny = 0;
    double sx = 0, sy = 0;
    for (long i = lo; i < hi; i++) {
      sx += s->x[i];
      if (isfinite(s->y[i])) sy += s->y[i], ny++;
    }
    b->x[k] = sx / (double)(hi - lo);
    b->y[k] = ny ? sy / (double)ny : NAN;
  }
}

/* Value range [lo, hi] mapped onto pixels [p0, p1]. */
struct axis {
  double lo, hi;
  double p0, p1;
};

static double axis_px(const struct axis *a, double v) {
  return a->p0 + (v - a->lo) / (a->hi - a->lo) * (a->p1 - a->p0);
}

/* The range of [lo, hi] with 5% room (a single value gets +-10% of itself, or +-1). */
static void axis_fit(struct axis *a, double lo, double hi, double p0, double p1) {
  if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
  if (lo == hi) {
    double pad = lo != 0 ? 0.1 * fabs(lo) : 1;
    lo -= pad, hi += pad;
  }
  double room = 0.05 * (hi - lo);
  *a = (struct axis){.lo = lo - room, .hi = hi + room, .p0 = p0, .p1 = p1};
}

/* 1, 2 or 5 times a power of ten, about range / target. */
static double nice_step(double range, int target) {
  double raw = range / target, p = pow(10, floor(log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* A tick label: as many decimals as the step needs; k / M for large values. */
static void fmt_tick(char *buf, size_t n, double v, double step) {
  if (fabs(v) < step * 1e-6) v = 0;
  double a = fmax(fabs(v), step), scale = a >= 1e6 ? 1e6 : a >= 1e4 ? 1e3 : 1;
  const char *suffix = scale == 1e6 ? "M" : scale == 1e3 ? "k" : "";
  double s = step / scale;
  if (s < 1e-4) {
    snprintf(buf, n, "%.2g", v);
    return;
  }
  int dec = s >= 1 ? 0 : (int)ceil(-log10(s) - 1e-9);
  snprintf(buf, n, "%.*f%s", dec, v / scale, suffix);
}

struct plot_box plot_data_area(const struct plot *p, int has_right) {
  int left = 62, right = has_right ? 62 : 18, top = 46, bottom = 34;
  return (struct plot_box){.x = left, .y = top, .w = p->box.w - left - right, .h = p->box.h - top - bottom};
}

/* Horizontal grid lines and labels of a y axis (labels left of x_text, or right of it). */
static void write_yticks(FILE *f, const struct axis *a, const struct plot_box *d, int right) {
  double step = nice_step(a->hi - a->lo, 5);
  char lab[48];
  for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9; v += step) {
    double y = axis_px(a, v);
    if (!right)
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"" GRID "\"/>", d->x, y,
              d->x + d->w, y);
    fmt_tick(lab, sizeof lab, v, step);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"%s\" dy=\"4\">%s</text>\n",
            right ? d->x + d->w + 6 : d->x - 6, y, right ? "start" : "end", lab);
  }
}

/* Vertical grid lines and step labels of the x axis. */
static void write_xticks(FILE *f, const struct axis *a, const struct plot_box *d) {
  double step = fmax(1, nice_step(a->hi - a->lo, 6));
  char lab[48];
  for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9; v += step) {
    double x = axis_px(a, v);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" GRID "\"/>", x, d->y, x,
            d->y + d->h);
    fmt_tick(lab, sizeof lab, v, step);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, d->y + d->h + 16, lab);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">step</text>\n", d->x + d->w, d->y + d->h + 30);
}

/* One series as polylines broken at gaps, with dots for lone points (or every point). */
static void write_line(FILE *f, const struct binned *b, const struct plot_series *s,
                       const struct axis *ax, const struct axis *ay) {
  for (long i = 0; i < b->n;) {
    if (!isfinite(b->y[i])) { i++; continue; }
    long j = i;
    while (j + 1 < b->n && isfinite(b->y[j + 1])) j++;
    if (j > i) {
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", s->color);
      for (long k = i; k <= j; k++) fprintf(f, "%.1f,%.1f ", axis_px(ax, b->x[k]), axis_px(ay, b->y[k]));
      fprintf(f, "\"/>\n");
    }
    for (long k = i; k <= j; k++)
      if (s->markers || j == i)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"%s\"/>", axis_px(ax, b->x[k]),
                axis_px(ay, b->y[k]), s->color);
    i = j + 1;
  }
}

/* Stacked bars: at each x the series' values (those present) on top of each other. */
static void write_bars(FILE *f, const struct binned *b, const struct plot_series *s, int ns,
                       const struct axis *ax, const struct axis *ay, const struct plot_box *d) {
  long n = b[0].n;
  double w = fmax(1.0, 0.8 * d->w / (double)(n ? n : 1));
  for (long k = 0; k < n; k++) {
    double base = 0, x = axis_px(ax, b[0].x[k]) - w / 2;
    for (int i = 0; i < ns; i++) {
      double v = b[i].y[k];
      if (!(v > 0)) continue;
      double y0 = axis_px(ay, base), y1 = axis_px(ay, base + v);
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>", x, y1, w,
              y0 - y1, s[i].color);
      base += v;
    }
  }
  fputc('\n', f);
}

static void write_legend(FILE *f, const struct plot_series *s, int ns) {
  double x = 10;
  for (int i = 0; i < ns; i++) {
    fprintf(f, "<line x1=\"%.0f\" y1=\"31\" x2=\"%.0f\" y2=\"31\" stroke=\"%s\" stroke-width=\"3\"/>"
            "<text x=\"%.0f\" y=\"35\">%s%s</text>\n", x, x + 16, s[i].color, x + 20, s[i].label,
            s[i].right ? " (right)" : "");
    x += 34 + 6.6 * (double)(strlen(s[i].label) + (s[i].right ? 8 : 0));
  }
}

/* The x range over every point, the y ranges over the values of each side. */
struct ranges {
  double x[2], left[2], right[2];
  int has_right, with_values;
};

static void plot_ranges(const struct plot *p, const struct binned *b, const struct plot_series *s,
                        int ns, struct ranges *r) {
  *r = (struct ranges){.x = {INFINITY, -INFINITY}, .left = {INFINITY, -INFINITY},
                       .right = {INFINITY, -INFINITY}};
  for (int i = 0; i < ns; i++) {
    int any = 0;
    double *side = s[i].right && !p->stacked ? r->right : r->left;
    r->has_right |= s[i].right && !p->stacked;
    for (long k = 0; k < b[i].n; k++) {
      r->x[0] = fmin(r->x[0], b[i].x[k]);
      r->x[1] = fmax(r->x[1], b[i].x[k]);
      if (!isfinite(b[i].y[k])) continue;
      any = 1;
      side[0] = fmin(side[0], b[i].y[k]);
      side[1] = fmax(side[1], b[i].y[k]);
    }
    r->with_values += any;
  }
  if (!p->stacked) return;
  r->left[0] = 0;
  r->left[1] = 0;
  for (long k = 0; ns > 0 && k < b[0].n; k++) {
    double sum = 0;
    for (int i = 0; i < ns; i++) sum += b[i].y[k] > 0 ? b[i].y[k] : 0;
    r->left[1] = fmax(r->left[1], sum);
  }
}

/* The <svg> element's opening: box, data area in page pixels, background and title. */
static void write_open(FILE *f, const struct plot *p, const struct plot_box *d, int page_x, int page_y) {
  fprintf(f, "<svg class=\"plot\" width=\"%d\" height=\"%d\" style=\"position:absolute;left:%dpx;top:"
          "%dpx\" data-title=\"%s\" data-area=\"%d %d %d %d\">\n", p->box.w, p->box.h, p->box.x, p->box.y,
          p->title, page_x + p->box.x + d->x, page_y + p->box.y + d->y, d->w, d->h);
  fprintf(f, "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#cccccc\"/>"
          "<text x=\"10\" y=\"18\" class=\"t\">%s</text>\n", p->box.w - 1, p->box.h - 1, p->title);
}

int svg_plot_write(FILE *f, const struct plot *p, const struct plot_series *s, int ns, int page_x,
                   int page_y) {
  struct binned b[PLOT_SERIES_MAX];
  struct ranges r;
  ns = ns > PLOT_SERIES_MAX ? PLOT_SERIES_MAX : ns;
  for (int i = 0; i < ns; i++) bin_series(&s[i], p->stacked ? PLOT_MAX_BARS : PLOT_MAX_POINTS, &b[i]);
  plot_ranges(p, b, s, ns, &r);
  struct plot_box d = plot_data_area(p, r.has_right);
  write_open(f, p, &d, page_x, page_y);
  if (r.with_values) {
    struct axis ax, ay, ar;
    axis_fit(&ax, r.x[0], r.x[1], d.x, d.x + d.w);
    axis_fit(&ay, r.left[0], r.left[1], d.y + d.h, d.y);
    axis_fit(&ar, r.right[0], r.right[1], d.y + d.h, d.y);
    write_xticks(f, &ax, &d);
    if (isfinite(r.left[0]) || p->stacked) write_yticks(f, &ay, &d, 0);
    if (r.has_right) write_yticks(f, &ar, &d, 1);
    if (p->stacked) write_bars(f, b, s, ns, &ax, &ay, &d);
    for (int i = 0; !p->stacked && i < ns; i++) write_line(f, &b[i], &s[i], &ax, s[i].right ? &ar : &ay);
    write_legend(f, s, ns);
  } else {
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#888888\">no data: null or "
            "absent in every line</text>\n", d.x + d.w / 2, d.y + d.h / 2);
  }
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"" INK "\"/>"
          "</svg>\n", d.x, d.y, d.w, d.h);
  for (int i = 0; i < ns; i++) free(b[i].x), free(b[i].y);
  return r.with_values;
}
