/* cli/cmd_reward_score.c: `rlpt reward-score DECK --input RESPONSES.jsonl --output
 * SCORES.jsonl [section.key=value ...]` scores given responses through the deck's reward
 * (rl/reward_score.h). Exit 0, 2 for a bad deck, input or arguments, 1 internal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "rl/reward_score.h"
#include "util/alloc.h"

static int usage(int rc) {
  fprintf(stderr, "usage: rlpt reward-score DECK --input RESPONSES.jsonl --output SCORES.jsonl [section.key=value ...]\n"
                  "  each input line: a row of the deck's task with a \"response\" string (and optionally \"n_tokens\")\n");
  return rc;
}

int cmd_reward_score(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  int n_over = 0, n_rest = 0, rc = 0;
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  struct reward_score_opts o = {.over = over, .n_over = n_over};
  for (int i = 0; i < n_rest && !rc; i++) {
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) rc = -1;
    else if (!strcmp(rest[i], "--input") && i + 1 < n_rest) o.input = rest[++i];
    else if (!strcmp(rest[i], "--output") && i + 1 < n_rest) o.output = rest[++i];
    else if (rest[i][0] != '-' && !o.deck) o.deck = rest[i];
    else rc = usage(2);
  }
  if (rc < 0) rc = usage(0);
  else if (!rc && (!o.deck || !o.input || !o.output)) rc = usage(2);
  else if (!rc) rc = reward_score(&o);
  free(over);
  free(rest);
  return rc;
}
