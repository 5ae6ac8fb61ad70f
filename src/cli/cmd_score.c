/* cli/cmd_score.c: `rlpt score --model MODEL --input IN.jsonl --output OUT.jsonl
 * [--device auto|cpu|cuda]` writes the per-token logprobs and entropy of each input
 * line's token list (model/score.h). One process (MPI only for reading a checkpoint). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "model/score.h"

static int score_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt score --model MODEL --input IN.jsonl --output OUT.jsonl\n"
          "                  [--device auto|cpu|cuda]\n"
          "  per line {\"tokens\": [...]} writes {\"logprobs\": [...], \"entropy\": [...]}\n"
          "  MODEL: model .h5, checkpoint .h5 or directory, gguf:PATH or hf:DIR\n");
  return rc;
}

/* 0 with o filled, -1 for --help, or 2. */
static int score_args(int argc, char **argv, struct model_score_opts *o) {
  *o = (struct model_score_opts){.device = "auto"};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return -1;
    if (i + 1 < argc && !strcmp(argv[i], "--model")) o->model = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--input")) o->input = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--output")) o->output = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--device")) o->device = argv[++i];
    else {
      fprintf(stderr, "rlpt: score: unexpected argument '%s'\n", argv[i]);
      return score_usage(2);
    }
  }
  if (!o->model || !o->input || !o->output) return score_usage(2);
  return 0;
}

int cmd_score(int argc, char **argv) {
  struct model_score_opts o;
  int rc = score_args(argc, argv, &o);
  if (rc) return rc < 0 ? score_usage(0) : rc;
  MPI_Init(NULL, NULL);
  rc = model_score(&o);
  MPI_Finalize();
  return rc;
}
