/* cli/cmd_check.c: `rlpt check DECK [section.key=value ...]` validates a deck without MPI and
 * prints the canonical deck (every key, its value and where it came from). Besides the
 * schema and the cross-key checks, the reward's own (reward_init: rm_alpha < 1 without
 * rm_path, overlong_buffer, format_tags), so a deck that `rlpt run` refuses at its start
 * for these fails here too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "rl/reward.h"

int cmd_check(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  int n_over = 0, n_rest = 0, rc = 2;
  if (!over || !rest) {
    fprintf(stderr, "rlpt: check: out of memory\n");
    rc = 1;
    goto done;
  }
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  if (n_rest != 1 || rest[0][0] == '-') {
    fprintf(stderr, "usage: rlpt check DECK [section.key=value ...]\n"
                    "  validates DECK and the overrides, prints the canonical deck; exit 2 on a bad deck\n");
    rc = (n_rest == 1 && (!strcmp(rest[0], "-h") || !strcmp(rest[0], "--help"))) ? 0 : 2;
    goto done;
  }
  struct config *cfg = malloc(sizeof *cfg);
  if (!cfg) {
    rc = 1;
    goto done;
  }
  rc = config_load_serial(cfg, rest[0], n_over, over);
  struct reward_cfg rcfg;
  char err[1024];
  if (!rc && (rc = reward_init(&rcfg, cfg, err, sizeof err)) != 0)
    fprintf(stderr, "rlpt: %s: %s\n", rest[0], err);
  if (!rc) config_write_canonical(cfg, stdout);
  free(cfg);
done:
  free(over);
  free(rest);
  return rc;
}
