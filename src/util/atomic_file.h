/* util/atomic_file.h: a file replaced whole or not at all. The writer writes PATH.tmp.PID
 * (created next to PATH, so the rename stays on one file system), and only a complete,
 * flushed and fsynced temporary is renamed over PATH; on any failure or an abort the
 * temporary is removed and an existing PATH is left exactly as it was.
 *
 *   struct atomic_file a;
 *   if (atomic_file_open(&a, path)) -> "cannot create PATH: strerror(errno)"
 *   fprintf(a.f, ...);
 *   rc = bad ? (atomic_file_abort(&a), 2) : atomic_file_commit(&a) ? 1 : 0;
 *
 * The scattered writers of the same pattern (DIR/latest in io/ckpt_dir.c, the Prometheus
 * textfile, the metrics cut-back of a restart) predate it. */
#ifndef RLPT_ATOMIC_FILE_H
#define RLPT_ATOMIC_FILE_H

#include <stdio.h>

struct atomic_file {
  FILE *f;            /* write here */
  char *path, *tmp;   /* owned */
};

/* Create the temporary for path. 0, or -1 with errno set (nothing created). */
int atomic_file_open(struct atomic_file *a, const char *path);
/* Flush, fsync, close and rename over path. 0, or -1 with errno set (a write error seen
 * by the stream counts): the temporary is then removed and path is untouched. */
int atomic_file_commit(struct atomic_file *a);
/* Close and remove the temporary; path is untouched. */
void atomic_file_abort(struct atomic_file *a);

#endif
