/* run/test_restart_cmp.c: compare two metrics JSONL files of `rlpt run` line by line
 * (tests/run/test_restart.sh): the same lines in the same order (step, phase, eval
 * or not), and every numeric field equal except the wall times and rates
 * (time_s, t_*, *_per_s, sync_gbps, mfu, idle_*: separate_async's idle fractions) and the
 * processes' peak memory (rss_*), which no two runs share.
 *   test_restart_cmp A B exact            bit-identical values (same layout)
 *   test_restart_cmp A B RTOL ATOL        |a - b| <= ATOL + RTOL |a| (another layout)
 * Lines of RL steps < FROM (optional 5th argument, default 0) are compared exactly
 * even in tolerance mode: they ran before the restart on the same layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"

/* One line pair; exact or within (rtol, atol). Returns the number of differing fields. */
static int cmp_line(int ln, const cJSON *a, const cJSON *b, int exact, double rtol, double atol) {
  int bad = 0;
  for (const cJSON *x = a->child; x; x = x->next) {
    if (tu_run_dependent_field(x->string)) continue;
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
    int same;
    if (!y) same = 0;
    else if (cJSON_IsNumber(x) && cJSON_IsNumber(y))
      same = exact ? x->valuedouble == y->valuedouble
                   : fabs(x->valuedouble - y->valuedouble) <= atol + rtol * fabs(x->valuedouble);
    else if (cJSON_IsNull(x) || cJSON_IsNull(y)) same = cJSON_IsNull(x) && cJSON_IsNull(y);
    else if (cJSON_IsString(x) && cJSON_IsString(y)) same = !strcmp(x->valuestring, y->valuestring);
    else same = cJSON_Compare(x, y, 1);
    if (!same) {
      char *sx = cJSON_PrintUnformatted(x), *sy = y ? cJSON_PrintUnformatted(y) : NULL;
      printf("line %d: %s: %s vs %s\n", ln, x->string, sx, sy ? sy : "(missing)");
      free(sx);
      free(sy);
      bad++;
    }
  }
  return bad;
}

static char **read_lines(const char *path, int *n) {
  FILE *f = fopen(path, "r");
  char **v = NULL, *line = NULL;
  size_t cap = 0;
  *n = 0;
  if (!f) return NULL;
  while (getline(&line, &cap, f) > 0) {
    v = realloc(v, sizeof *v * (size_t)(*n + 1));
    v[(*n)++] = strdup(line);
  }
  free(line);
  fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: test_restart_cmp A B exact|RTOL ATOL [FROM]\n");
    return 2;
  }
  int exact = !strcmp(argv[3], "exact");
  double rtol = exact ? 0 : atof(argv[3]), abs_tol = exact || argc < 5 ? 0 : atof(argv[4]);
  long from = !exact && argc > 5 ? atol(argv[5]) : 0;
  int na, nb;
  char **la = read_lines(argv[1], &na), **lb = read_lines(argv[2], &nb);
  CHECK(la != NULL && lb != NULL);
  CHECK(na == nb);
  CHECK(na > 0);
  int bad = 0, n = na < nb ? na : nb;
  for (int i = 0; i < n && la && lb; i++) {
    cJSON *a = cJSON_Parse(la[i]), *b = cJSON_Parse(lb[i]);
    CHECK(a != NULL && b != NULL);
    if (a && b) {
      const cJSON *ph = cJSON_GetObjectItemCaseSensitive(a, "phase");
      const cJSON *st = cJSON_GetObjectItemCaseSensitive(a, "step");
      int before = cJSON_IsString(ph) && cJSON_IsNumber(st) &&
                   (!strcmp(ph->valuestring, "sft") || st->valuedouble < (double)from);
      bad += cmp_line(i + 1, a, b, exact || before, rtol, abs_tol);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
  }
  printf("%d lines compared (%s), %d fields differ\n", n, exact ? "exact" : "tolerance", bad);
  CHECK(bad == 0);
  for (int i = 0; i < na; i++) free(la[i]);
  for (int i = 0; i < nb; i++) free(lb[i]);
  free(la);
  free(lb);
  return TEST_RESULT("test_restart_cmp");
}
