/* cli/cmd_eval.c: `rlpt eval DECK --model MODEL [--json] [--output FILE.jsonl]
 * [section.key=value ...]`: the arguments, then a run's held-out eval alone
 * (run/offline_eval.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "run/offline_eval.h"

static int eval_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: [mpirun -np N] rlpt eval DECK --model MODEL [--json] [--output FILE.jsonl]\n"
          "                      [section.key=value ...]\n"
          "  the run's held-out eval alone: greedy pass@1, sampled pass@1, pass@k ([eval] keys)\n"
          "  MODEL: model .h5 (rlpt init / convert), checkpoint .h5, a checkpoint directory,\n"
          "         or gguf:PATH / hf:DIR (the model's own tokenizer)\n"
          "  --json: the eval line (a run's metrics fields) on stdout; --output: append it to FILE\n");
  return rc;
}

static int eval_parse(int n_rest, char **rest, struct offline_eval_args *a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < n_rest; i++) {
    const char *o = rest[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return eval_usage(0) - 1;
    if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--model") && i + 1 < n_rest) a->model = rest[++i];
    else if (!strcmp(o, "--output") && i + 1 < n_rest) a->output = rest[++i];
    else if (o[0] != '-' && !a->deck) a->deck = o;
    else {
      fprintf(stderr, "rlpt: eval: unexpected argument '%s'\n", o);
      return eval_usage(2);
    }
  }
  if (!a->deck || !a->model) {
    fprintf(stderr, "rlpt: eval: DECK and --model are required\n");
    return eval_usage(2);
  }
  return 0;
}

int cmd_eval(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  struct offline_eval_args a;
  int n_over = 0, n_rest = 0, rc = 1;
  if (!over || !rest) {
    fprintf(stderr, "rlpt: eval: out of memory\n");
  } else {
    config_split_args(argc, argv, over, &n_over, rest, &n_rest);
    rc = eval_parse(n_rest, rest, &a);
    if (rc) rc = rc < 0 ? 0 : rc;
    else rc = offline_eval_run(&a, n_over, over);
  }
  free(over);
  free(rest);
  return rc;
}
