/* util/atomic_file.c: write-to-temporary-then-rename (util/atomic_file.h). */
#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void release(struct atomic_file *a) {
  free(a->path);
  free(a->tmp);
  memset(a, 0, sizeof *a);
}

int atomic_file_open(struct atomic_file *a, const char *path) {
  memset(a, 0, sizeof *a);
  size_t n = strlen(path) + 32;
  a->path = strdup(path);
  a->tmp = malloc(n);
  if (!a->path || !a->tmp) {
    release(a);
    errno = ENOMEM;
    return -1;
  }
  snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (fd >= 0 && !(a->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(a->tmp);
    errno = e;
  }
  if (!a->f) {
    int e = errno;
    release(a);
    errno = e;
    return -1;
  }
  return 0;
}

int atomic_file_commit(struct atomic_file *a) {
  int bad = ferror(a->f) != 0, e = bad ? EIO : 0;
  if (!bad && (fflush(a->f) || fsync(fileno(a->f)))) bad = 1, e = errno;
  if (fclose(a->f) && !bad) bad = 1, e = errno;
  a->f = NULL;
  if (!bad && rename(a->tmp, a->path)) bad = 1, e = errno;
  if (bad) unlink(a->tmp);
  release(a);
  errno = e;
  return bad ? -1 : 0;
}

void atomic_file_abort(struct atomic_file *a) {
  if (a->f) fclose(a->f);
  if (a->tmp) unlink(a->tmp);
  release(a);
}
