/* util/test_atomic_file.c: a file replaced whole or not at all (util/atomic_file.h): a
 * commit replaces the old content, an abort and a failed write leave it as it was, no
 * temporary is left behind, and a directory that does not exist is an error with errno. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/atomic_file.h"

static char g_dir[] = "/tmp/rlpt_test_atomic_XXXXXX";

static void read_all(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  buf[n] = '\0';
  if (f) fclose(f);
}

/* Entries of g_dir besides . and .. */
static int entries(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

int main(void) {
  if (!mkdtemp(g_dir)) return 1;
  char path[256], buf[64];
  snprintf(path, sizeof path, "%s/out.txt", g_dir);
  struct atomic_file a;
  CHECK(atomic_file_open(&a, path) == 0 && fputs("first\n", a.f) >= 0 && atomic_file_commit(&a) == 0);
  read_all(path, buf, sizeof buf);
  CHECK(!strcmp(buf, "first\n") && entries() == 1);
  /* an abort after writing: the old content stays, the temporary goes */
  CHECK(atomic_file_open(&a, path) == 0 && fputs("second\n", a.f) >= 0);
  CHECK(entries() == 2);
  atomic_file_abort(&a);
  read_all(path, buf, sizeof buf);
  CHECK(!strcmp(buf, "first\n") && entries() == 1);
  /* a write error seen by the stream (here: writing to a read-only stream) fails the commit */
  CHECK(atomic_file_open(&a, path) == 0);
  FILE *ro = fopen(path, "r");
  FILE *w = a.f;
  a.f = ro;
  CHECK(fputs("third\n", a.f) == EOF);
  CHECK(atomic_file_commit(&a) == -1);
  fclose(w);
  read_all(path, buf, sizeof buf);
  CHECK(!strcmp(buf, "first\n") && entries() == 1);
  /* a missing directory */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/no/such/out.txt", g_dir);
  errno = 0;
  CHECK(atomic_file_open(&a, bad) == -1 && errno == ENOENT);
  unlink(path);
  rmdir(g_dir);
  return TEST_RESULT("test_atomic_file");
}
