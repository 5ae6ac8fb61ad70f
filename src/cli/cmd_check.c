/* cli/cmd_check.c: `rlpt check DECK [section.key=value ...]` validates a deck without MPI and
 * prints the canonical deck (every key, its value and where it came from). Besides the
 * schema and the cross-key checks it runs the reward's (rm_alpha < 1 without rm_path,
 * overlong_buffer, format_tags), so a deck that `rlpt run` refuses at its start for these
 * fails here too (deck/config.h config_check_deck). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "util/alloc.h"

static int usage(const char *arg) {
  fprintf(stderr, "usage: rlpt check DECK [section.key=value ...]\n"
                  "  validates DECK and the overrides, prints the canonical deck; exit 2 on a bad deck\n");
  return arg && (!strcmp(arg, "-h") || !strcmp(arg, "--help")) ? 0 : 2;
}

int cmd_check(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  int n_over = 0, n_rest = 0;
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  int rc = n_rest != 1 || rest[0][0] == '-' ? usage(n_rest == 1 ? rest[0] : NULL)
                                            : config_check_deck(rest[0], n_over, over, stdout);
  free(over);
  free(rest);
  return rc;
}
