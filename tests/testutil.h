/* testutil.h: tiny check macros for the C tests. A failed check prints file:line
 * and the values, and the test's exit code counts failures (never 0 on failure). */
#ifndef RLPT_TESTUTIL_H
#define RLPT_TESTUTIL_H
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int tu_failures = 0;

#define CHECK(cond) do { if (!(cond)) { tu_failures++; \
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) { tu_failures++; \
  fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
  fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* |a - b| <= tol (absolute). NaN always fails. */
#define CHECK_NEAR(a, b, tol) do { double _a = (a), _b = (b); \
  if (!(fabs(_a - _b) <= (tol))) { tu_failures++; fprintf(stderr, \
  "%s:%d: CHECK_NEAR failed: %s = %.9g vs %s = %.9g (diff %.3g > tol %.3g)\n", \
  __FILE__, __LINE__, #a, _a, #b, _b, fabs(_a - _b), (double)(tol)); } } while (0)
/* max |a - ref| / max |ref| (max |a - ref| when ref is all zero); a NaN on either side
 * gives INFINITY, so it fails every tolerance. */
static inline double tu_rel_err(const float *a, const float *ref, size_t n) {
  double md = 0, mr = 0;
  for (size_t i = 0; i < n; i++) {
    double d = isnan(a[i]) || isnan(ref[i]) ? INFINITY : fabs((double)a[i] - ref[i]);
    md = d > md ? d : md;
    mr = fabs(ref[i]) > mr ? fabs(ref[i]) : mr;
  }
  return mr > 0 ? md / mr : md;
}
/* Write text to dir/name (a failed open is a failed check); the path stays valid for the
 * next 15 calls. */
static inline const char *tu_write_file(const char *dir, const char *name, const char *text) {
  static char paths[16][512];
  static int k;
  char *p = paths[k++ % 16];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return p;
}
#define TEST_RESULT(name) (tu_failures ? (fprintf(stderr, "%s: %d check(s) failed\n", \
  name, tu_failures), 1) : (printf("%s: all checks passed\n", name), 0))

/* A metrics field that no two runs share: wall times and rates (time_s, t_*, *_per_s,
 * sync_gbps, mfu), separate_async's idle fractions (idle_*) and the processes' peak memory
 * (rss_*). Run comparisons skip them. */
static inline int tu_run_dependent_field(const char *k) {
  size_t n = strlen(k);
  return !strncmp(k, "t_", 2) || !strncmp(k, "idle_", 5) || !strncmp(k, "rss_", 4) || !strcmp(k, "time_s") ||
         !strcmp(k, "sync_gbps") || !strcmp(k, "mfu") || (n > 6 && !strcmp(k + n - 6, "_per_s"));
}

#endif
