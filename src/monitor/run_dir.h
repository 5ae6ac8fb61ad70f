/* monitor/run_dir.h: what a run leaves in its directory, for `rlpt doctor` and `rlpt report`:
 * the metrics file and the deck.
 *
 * RUN_DIR is the directory `rlpt run` ran in. Its deck is the canonical deck text of the
 * newest readable checkpoint in RUN_DIR/checkpoints (/meta attribute deck; the [checkpoint]
 * dir default), else the one a saved console log in RUN_DIR (*.log, *.out) printed between
 * "---- deck (canonical) ----" and "---- end of deck ----". Its metrics file is the deck's
 * [log] metrics_path, relative to RUN_DIR unless absolute, or RUN_DIR/metrics.jsonl without
 * a deck. Given a metrics file instead, the run's directory is the file's. No MPI. */
#ifndef RLPT_RUN_DIR_H
#define RLPT_RUN_DIR_H

#include <stddef.h>

#define RUN_DIR_PATH_MAX 4096

struct config;

struct run_dir {
  char dir[RUN_DIR_PATH_MAX];        /* the run's directory */
  char metrics[RUN_DIR_PATH_MAX];    /* its metrics file */
  char *deck;                        /* canonical deck text; NULL: none found */
  char deck_from[RUN_DIR_PATH_MAX];  /* the file the deck came from ("" when none) */
  char deck_note[3 * RUN_DIR_PATH_MAX]; /* when cfg is NULL: why ("deck not found (...)") */
  struct config *cfg;                /* the deck parsed; NULL: none, or it does not parse */
};

/* Resolve arg (a directory or a metrics file) into d. Returns 0, or 2 with a message
 * naming the path in err (no such path; no metrics file where the deck or the default
 * puts it; the deck's metrics_path is empty). run_dir_free(d) in both cases. */
int run_dir_open(const char *arg, struct run_dir *d, char *err, size_t errlen);
void run_dir_free(struct run_dir *d);

#endif
