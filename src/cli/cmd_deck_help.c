/* cli/cmd_deck_help.c: `rlpt deck-help` prints the deck reference as markdown
 * (deck/help.c); inputs/README.md is this output verbatim. */
#include <stdio.h>

#include "deck/config.h"

int cmd_deck_help(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    fprintf(stderr, "usage: rlpt deck-help\n");
    return 2;
  }
  config_write_help(stdout);
  return 0;
}
