/* deck/load.c: a deck from text or a file to a validated struct config: the parse with the
 * overrides (deck/config.c), the [algo] preset (deck/presets.c), the cross-key checks
 * (deck/config_check.c), and the MPI broadcast of rank 0's result (deck/config.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "deck/presets.h"

#define DECK_MAX_BYTES (1 << 20) /* a deck larger than this is not a deck */

/* 1 when the deck itself set no key (only comments, blank lines, section headers; the
 * overrides do not count): a wrong or truncated file rather than a run description. */
static int deck_empty(const struct config *cfg) {
  for (int r = 0; r < cfg_schema_len; r++)
    if (cfg->src[r] > 0) return 0;
  return 1;
}

int config_parse(struct config *cfg, const char *path, const char *text, int n_over, char *const *over,
                 char *err, size_t errlen) {
  int rc = config_parse_deck(cfg, path, text, n_over, over, err, errlen);
  if (rc) return rc;
  if (deck_empty(cfg)) {
    snprintf(err, errlen, "%s: the deck is empty: it sets no key (only comments, blank lines or "
             "section headers), so every value would be a default; a run needs at least its [model], "
             "[task] and [run] keys (rlpt deck-help lists every key; inputs/quickstart.ini is a "
             "complete deck)", path);
    return 2;
  }
  preset_apply(cfg); /* [algo] name fills the knobs the user left at their defaults */
  return config_cross_check(cfg, path, over, err, errlen);
}

/* The whole file as a string; 0 or 2 with a message in err. */
static int read_deck(const char *path, char **text, char *err, size_t errlen) {
  *text = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot read the deck: %s", path, strerror(errno));
    return 2;
  }
  char *buf = malloc(DECK_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, DECK_MAX_BYTES + 1, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad || n > DECK_MAX_BYTES || memchr(buf, '\0', n)) {
    snprintf(err, errlen, "%s: cannot read the deck: %s", path,
             !buf ? "out of memory" : bad ? "read error" : n > DECK_MAX_BYTES ? "larger than 1 MiB"
                                                                          : "it contains NUL bytes (not text)");
    free(buf);
    return 2;
  }
  buf[n] = '\0';
  *text = buf;
  return 0;
}

static int load_local(struct config *cfg, const char *path, int n_over, char *const *over, char *err,
                      size_t errlen) {
  char *text;
  int rc = read_deck(path, &text, err, errlen);
  if (!rc) rc = config_parse(cfg, path, text, n_over, over, err, errlen);
  free(text);
  return rc;
}

int config_load_serial(struct config *cfg, const char *path, int n_over, char *const *over) {
  char err[2048];
  int rc = load_local(cfg, path, n_over, over, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: %s\n", err);
  return rc;
}

int config_load(struct config *cfg, const char *path, int n_over, char *const *over, MPI_Comm comm) {
  int rank = 0, rc = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    char err[2048];
    rc = load_local(cfg, path, n_over, over, err, sizeof err);
    if (rc) {
      fprintf(stderr, "rlpt: %s\n", err);
      fflush(stderr);
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  if (rc) return rc;
  /* Same binary on every rank: the validated struct travels as bytes. */
  MPI_Bcast(cfg, (int)sizeof *cfg, MPI_BYTE, 0, comm);
  return 0;
}

