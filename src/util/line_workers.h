/* util/line_workers.h: long-lived worker processes of a command (PROGRAM ARGS, split on
 * spaces, no shell) that answer one request line with one reply line over their stdin/stdout
 * (one socket; stderr left to rlpt's). The JSON-lines protocols of [reward] command
 * (rl/reward_command.h) and [env] command (env/tools.h) run on it; what a line means is the
 * caller's (line_client). Workers start on first use, get one request at a time, and one
 * that exits or closes its stdout, takes longer than the timeout, answers a line over 1 MiB
 * or a line the caller rejects is killed and restarted fresh (its state being unknown) and
 * its request failed: the caller's fail gets why, and the first failures are printed on
 * stderr as "rlpt: [SECTION] command 'PROGRAM': worker pid P, request I: WHY; OUTCOME,
 * worker restarted". */
#ifndef RLPT_UTIL_LINE_WORKERS_H
#define RLPT_UTIL_LINE_WORKERS_H

#include <stddef.h>

struct line_workers;

struct line_client {
  void *ctx;
  long first_id;   /* item i is request first_id + i in messages */
  /* Request item's line (newline-terminated, malloc'd, its length into *len); NULL out of memory. */
  char *(*request)(void *ctx, int item, size_t *len);
  /* Item's reply line (no newline): 0 taken, or -1 with why in msg (the worker is restarted). */
  int (*reply)(void *ctx, int item, const char *line, char *msg, size_t msglen);
  /* Item failed (why: a sentence). */
  void (*fail)(void *ctx, int item, const char *why);
};

/* The command checked (its program exists and is executable); no worker started yet.
 * section names the deck section in messages ("reward"), outcome what a failed request
 * becomes ("scored 0 (reward_errors)"); both must outlive the pool. 0, or 2 with a
 * message naming [section] command; 1 out of memory. */
int line_workers_open(struct line_workers **out, const char *command, int n_workers, double timeout_s,
                      const char *section, const char *outcome, char *err, size_t errlen);
void line_workers_close(struct line_workers *lw);
/* Requests 0..n-1, spread over the idle workers; returns when each is answered or failed.
 * 0, or 1 out of memory. */
int line_workers_run(struct line_workers *lw, int n, const struct line_client *cl);
/* Workers restarted so far (crashed, hung or garbled). */
long line_workers_restarts(const struct line_workers *lw);

#endif
