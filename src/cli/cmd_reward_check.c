/* cli/cmd_reward_check.c: `rlpt reward-check DECK [--prompts N] [--split train|eval]
 * [section.key=value ...]` scores the deck's task's reference answers and deliberately
 * wrong ones through its reward and prints each component's distribution
 * (rl/reward_check.h). Exit 0 when the references score and the wrong answers score
 * less; 3 when they do not (with a WARNING line); 2 for a bad deck or arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "rl/reward_check.h"
#include "util/alloc.h"

static int usage(int rc) {
  fprintf(stderr, "usage: rlpt reward-check DECK [--prompts N] [--split train|eval] [section.key=value ...]\n"
                  "  scores N (default 200) reference and wrong answers of the deck's task through its reward;\n"
                  "  exit 0 ok, 3 when the references get no reward or wrong answers score as well, 2 bad input\n");
  return rc;
}

/* The non-override arguments into o: 0, -1 for --help, or 2 after a message. */
static int check_args(int n_rest, char **rest, struct reward_check_opts *o) {
  for (int i = 0; i < n_rest; i++) {
    char *end = NULL;
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) return -1;
    if (!strcmp(rest[i], "--prompts") && i + 1 < n_rest) {
      o->n_prompts = strtol(rest[++i], &end, 10);
      if (*end || o->n_prompts < 1 || o->n_prompts > 10000000) {
        fprintf(stderr, "rlpt: reward-check: --prompts wants 1..1e7\n");
        return 2;
      }
    } else if (!strcmp(rest[i], "--split") && i + 1 < n_rest) {
      i++;
      if (strcmp(rest[i], "train") && strcmp(rest[i], "eval")) {
        fprintf(stderr, "rlpt: reward-check: --split wants train or eval\n");
        return 2;
      }
      o->heldout = !strcmp(rest[i], "eval");
    } else if (rest[i][0] != '-' && !o->deck) {
      o->deck = rest[i];
    } else {
      return usage(2);
    }
  }
  return o->deck ? 0 : usage(2);
}

int cmd_reward_check(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  int n_over = 0, n_rest = 0;
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  struct reward_check_opts o = {.over = over, .n_over = n_over, .n_prompts = 200};
  int rc = check_args(n_rest, rest, &o);
  if (rc < 0) rc = usage(0);
  else if (!rc) rc = reward_check(&o);
  free(over);
  free(rest);
  return rc;
}
