/* cli/cmd_init.c: `rlpt init DECK --out FILE.h5 [section.key=value ...]` writes a
 * freshly initialised model for the deck (model/scratch.h). No MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/scratch.h"
#include "util/alloc.h"

static int init_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt init DECK --out FILE.h5 [section.key=value ...]\n"
          "  writes a model initialised from the deck's [model] section and [run] seed\n");
  return rc;
}

/* DECK and FILE from the non-override arguments: 0, -1 for --help, or 2. */
static int init_args(int n_rest, char **rest, struct model_scratch_opts *o) {
  for (int i = 0; i < n_rest; i++) {
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) return -1;
    if (!strcmp(rest[i], "--out") && i + 1 < n_rest) o->out = rest[++i];
    else if (rest[i][0] != '-' && !o->deck) o->deck = rest[i];
    else {
      fprintf(stderr, "rlpt: init: unexpected argument '%s'\n", rest[i]);
      return init_usage(2);
    }
  }
  if (!o->deck || !o->out) return init_usage(2);
  return 0;
}

int cmd_init(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  int n_over = 0, n_rest = 0;
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  struct model_scratch_opts o = {.over = over, .n_over = n_over};
  int rc = init_args(n_rest, rest, &o);
  if (rc < 0) rc = init_usage(0);
  else if (!rc) rc = model_scratch_write(&o);
  free(over);
  free(rest);
  return rc;
}
