/* io/jsonl_rows.h: every row of a JSON Lines file converted into an array of the caller's row
 * structs, under the bad-line policy of io/jsonl.h (error: the first bad line's
 * "FILE:LINE: ..." is the error; skip: counted, summarised once on log). Shared by the
 * datasets (tasks/dataset.c) and the preference pairs (tasks/preference.c). */
#ifndef RLPT_JSONL_ROWS_H
#define RLPT_JSONL_ROWS_H

#include <stddef.h>
#include <stdio.h>

#include "io/jsonl.h"

struct jsonl_row_ops {
  size_t size;  /* of one row */
  /* One JSON object -> *row: 0; 2 a bad row ("FILE:LINE: ..." in msg); 1 out of memory.
   * On failure the row may be partly built: free_row releases it. */
  int (*build)(const void *ctx, const cJSON *obj, long line, void *row, char *msg, size_t msglen);
  void (*free_row)(void *row);
  size_t max_line;    /* longest line read, bytes (jsonl_set_max_line); 0 = any */
  const char *limit;  /* what sets max_line, for the message (e.g. "[data] max_row_bytes") */
};

/* All good rows of path, in file order, into *rows (malloc'd; *n of them, at least 1).
 * 0; 2 with the message in err (a bad line under JSONL_ERROR, unreadable, no usable rows);
 * 1 out of memory. Nothing to free on failure. */
int jsonl_load_rows(const char *path, enum jsonl_policy pol, const struct jsonl_row_ops *ops, const void *ctx,
                    FILE *log, void **rows, long *n, char *err, size_t errlen);

#endif
