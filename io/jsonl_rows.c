/* io/jsonl_rows.c: a JSONL file into an array of rows (io/jsonl_rows.h). */
#include "io/jsonl_rows.h"

#include <stdlib.h>
#include <string.h>

/* Room for row n (the array doubles). 0, or 1 out of memory. */
static int grow(char **rows, long n, long *cap, size_t size) {
  if (n < *cap) return 0;
  long nc = *cap ? 2 * *cap : 256;
  char *nr = realloc(*rows, (size_t)nc * size);
  if (!nr) return 1;
  *rows = nr;
  *cap = nc;
  return 0;
}

static void free_rows(const struct jsonl_row_ops *ops, char *rows, long n) {
  for (long i = 0; i < n; i++) ops->free_row(rows + (size_t)i * ops->size);
  free(rows);
}

int jsonl_load_rows(const char *path, enum jsonl_policy pol, const struct jsonl_row_ops *ops, const void *ctx,
                    FILE *log, void **out, long *n_out, char *err, size_t errlen) {
  struct jsonl_reader rd;
  struct jsonl_bad bad = {0};
  char msg[JSONL_MSG_MAX];
  long n = 0, cap = 0, n_lines = 0;
  char *rows = NULL;
  int rc = jsonl_open(&rd, path, err, errlen);
  if (!rc && ops->max_line) jsonl_set_max_line(&rd, ops->max_line, ops->limit);
  while (!rc) {
    cJSON *obj = NULL;
    long line = 0;
    int got = jsonl_next(&rd, &obj, &line, msg, sizeof msg);
    if (got == JSONL_EOF) break;
    if (got == JSONL_IOERR) { snprintf(err, errlen, "%s", msg); rc = 2; break; }
    n_lines++;
    if (grow(&rows, n, &cap, ops->size)) { cJSON_Delete(obj); rc = 1; break; }
    void *row = rows + (size_t)n * ops->size;
    int brc = got == JSONL_BAD ? 2 : ops->build(ctx, obj, line, row, msg, sizeof msg);
    cJSON_Delete(obj);
    if (brc == 0) { n++; continue; }
    if (got != JSONL_BAD) ops->free_row(row);
    rc = brc == 1 ? 1 : jsonl_bad_line(pol, &bad, msg, err, errlen);
  }
  jsonl_close(&rd);
  if (!rc && n == 0) {
    snprintf(err, errlen, "%s: no usable rows (%ld lines%s%s)", path, n_lines, bad.n_bad ? ", skipped; first: " : "",
             bad.n_bad ? bad.first : "");
    rc = 2;
  }
  if (rc) {
    free_rows(ops, rows, n);
    return rc;
  }
  jsonl_bad_report(&bad, n_lines, path, log);
  *out = rows;
  *n_out = n;
  return 0;
}
