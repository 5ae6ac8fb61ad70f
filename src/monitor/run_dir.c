/* monitor/run_dir.c: a run directory's metrics file and deck (monitor/run_dir.h). */
#include "monitor/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deck/config.h"
#include "io/ckpt.h"
#include "io/model_h5.h"
#include "util/alloc.h"

#define DECK_BEGIN "---- deck (canonical) ----"
#define DECK_END "---- end of deck ----"
#define CONSOLE_SCAN_LINES 100000 /* the deck follows the banner and the rank map */

/* src into dst of n bytes, cut to fit. */
static void copy_str(char *dst, size_t n, const char *src) {
  size_t k = strlen(src);
  if (k >= n) k = n - 1;
  memcpy(dst, src, k);
  dst[k] = '\0';
}

/* The /meta deck attribute of a checkpoint (malloc'd), or NULL. */
static char *checkpoint_deck(const char *path) {
  if (ckpt_probe(path, 1)) return NULL;
  struct h5_quiet q;
  h5_quiet_begin(&q);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t a = f >= 0 && H5Aexists_by_name(f, "meta", "deck", H5P_DEFAULT) > 0
                ? H5Aopen_by_name(f, "meta", "deck", H5P_DEFAULT, H5P_DEFAULT) : -1;
  char *s = a >= 0 ? h5_read_string_attr(a) : NULL;
  if (a >= 0) H5Aclose(a);
  if (f >= 0) H5Fclose(f);
  h5_quiet_end(&q);
  return s;
}

/* The newest checkpoint of dir/checkpoints that has a deck. */
static void find_checkpoint_deck(struct run_dir *d, const char *dir) {
  char ck[RUN_DIR_PATH_MAX + 16], path[2 * RUN_DIR_PATH_MAX];
  snprintf(ck, sizeof ck, "%s/checkpoints", dir);
  int n = 0;
  long *steps = ckpt_list_steps(ck, &n);
  for (int i = 0; i < n && !d->deck; i++) {
    ckpt_step_path(ck, steps[i], path, sizeof path);
    if ((d->deck = checkpoint_deck(path))) copy_str(d->deck_from, sizeof d->deck_from, path);
  }
  free(steps);
}

/* The canonical deck a console log printed (malloc'd), or NULL. */
static char *console_deck(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *line = NULL, *text = calloc_check(1, 1);
  size_t cap = 0, len = 0;
  ssize_t got;
  int in = 0, done = 0;
  for (long k = 0; !done && (got = getline(&line, &cap, f)) >= 0; k++) {
    if (!in && k > CONSOLE_SCAN_LINES) break;
    if (!in) in = strncmp(line, DECK_BEGIN, strlen(DECK_BEGIN)) == 0;
    else if (strncmp(line, DECK_END, strlen(DECK_END)) == 0) done = 1;
    else {
      text = realloc_check(text, len + (size_t)got + 1);
      memcpy(text + len, line, (size_t)got + 1);
      len += (size_t)got;
    }
  }
  free(line);
  fclose(f);
  if (!done) {
    free(text);
    return NULL;
  }
  return text;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_console_name(const char *s) {
  size_t n = strlen(s);
  return n > 4 && (strcmp(s + n - 4, ".log") == 0 || strcmp(s + n - 4, ".out") == 0);
}

/* The first console log of dir (by name) that printed the deck. */
static void find_console_deck(struct run_dir *d, const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  char **names = NULL, path[2 * RUN_DIR_PATH_MAX];
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(dp))) {
    if (!is_console_name(de->d_name)) continue;
    names = realloc_check(names, (n + 1) * sizeof *names);
    names[n++] = strdup(de->d_name);
  }
  closedir(dp);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i] ? names[i] : "");
    if (!d->deck && names[i] && (d->deck = console_deck(path)))
      copy_str(d->deck_from, sizeof d->deck_from, path);
    free(names[i]);
  }
  free(names);
}

/* The deck of d->dir, found and parsed (d->cfg), or a note saying why not. */
static void load_deck(struct run_dir *d) {
  find_checkpoint_deck(d, d->dir);
  if (!d->deck) find_console_deck(d, d->dir);
  if (!d->deck) {
    snprintf(d->deck_note, sizeof d->deck_note, "deck not found (no checkpoint in %s/checkpoints "
             "and no console log *.log / *.out with the canonical deck in %s)", d->dir, d->dir);
    return;
  }
  char err[1024];
  d->cfg = malloc_check(sizeof *d->cfg);
  if (config_parse_deck(d->cfg, d->deck_from, d->deck, 0, NULL, err, sizeof err)) {
    snprintf(d->deck_note, sizeof d->deck_note, "the deck in %s does not parse: %s", d->deck_from, err);
    free(d->cfg);
    d->cfg = NULL;
  }
}

/* d->metrics from the deck or the default; 0, or 2 with the message. */
static int metrics_path(struct run_dir *d, char *err, size_t errlen) {
  const char *mp = d->cfg ? d->cfg->log.metrics_path : "metrics.jsonl";
  if (!mp[0]) {
    snprintf(err, errlen, "%s: the deck (%s) has an empty [log] metrics_path: the run wrote no "
             "metrics file", d->dir, d->deck_from);
    return 2;
  }
  if (mp[0] == '/') snprintf(d->metrics, sizeof d->metrics, "%s", mp);
  else if ((size_t)snprintf(d->metrics, sizeof d->metrics, "%s/%s", d->dir, mp) >= sizeof d->metrics) {
    snprintf(err, errlen, "%s: path too long", d->dir);
    return 2;
  }
  if (access(d->metrics, R_OK) == 0) return 0;
  snprintf(err, errlen, "%s: no metrics file %s (%s; the path is %s)", d->dir, d->metrics,
           strerror(errno), d->cfg ? "the deck's [log] metrics_path" : "the default [log] metrics_path");
  return 2;
}

int run_dir_open(const char *arg, struct run_dir *d, char *err, size_t errlen) {
  *d = (struct run_dir){.deck = NULL, .cfg = NULL};
  struct stat sb;
  if (stat(arg, &sb) != 0) {
    snprintf(err, errlen, "%s: %s", arg, strerror(errno));
    return 2;
  }
  int is_dir = S_ISDIR(sb.st_mode);
  if (strlen(arg) >= sizeof d->dir) {
    snprintf(err, errlen, "%.64s...: path too long", arg);
    return 2;
  }
  snprintf(d->dir, sizeof d->dir, "%s", arg);
  if (!is_dir) {
    char copy[RUN_DIR_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", arg);
    snprintf(d->dir, sizeof d->dir, "%s", dirname(copy));
    snprintf(d->metrics, sizeof d->metrics, "%s", arg);
  }
  load_deck(d);
  return is_dir ? metrics_path(d, err, errlen) : 0;
}

void run_dir_free(struct run_dir *d) {
  free(d->deck);
  free(d->cfg);
  d->deck = NULL;
  d->cfg = NULL;
}
