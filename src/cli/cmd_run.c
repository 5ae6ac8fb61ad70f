/* cli/cmd_run.c: `rlpt run DECK [--restart latest|PATH] [section.key=value ...]` under
 * mpirun: the arguments, then the training job (run/job.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "run/job.h"

static int usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: mpirun -np N rlpt run DECK [--restart latest|PATH] [section.key=value ...]\n"
          "  the training job: SFT warm start, then RL steps (sync mode); metrics to [log] metrics_path\n"
          "  --restart latest|PATH   resume from [checkpoint] dir/latest or a checkpoint file\n"
          "                          (the same as [run] restart)\n"
          "  SIGTERM / SIGUSR1: checkpoint at the next step boundary, every rank exits 0\n");
  return rc;
}

/* argv with `--restart X` / `--restart=X` turned into the override run.restart=X
 * (args[] owns the strings it made in made[]). -1: --restart without a value. */
static int restart_arg(int argc, char **argv, char **args, int *n, char **made) {
  *n = 0;
  for (int i = 0; i < argc; i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--restart")) {
      if (i + 1 >= argc) return -1;
      v = argv[++i];
    } else if (!strncmp(argv[i], "--restart=", 10)) {
      v = argv[i] + 10;
    }
    if (!v) { args[(*n)++] = argv[i]; continue; }
    size_t len = strlen(v) + 16;
    if (!(*made = malloc(len))) return -1;
    snprintf(*made, len, "run.restart=%s", v);
    args[(*n)++] = *made;
  }
  return 0;
}

int cmd_run(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  char **args = calloc((size_t)argc + 1, sizeof *args), *made = NULL;
  int n_over = 0, n_rest = 0, n_args = 0, rc;
  if (!over || !rest || !args) {
    fprintf(stderr, "rlpt: run: out of memory\n");
    free(over);
    free(rest);
    free(args);
    return 1;
  }
  if (restart_arg(argc, argv, args, &n_args, &made) != 0) {
    fprintf(stderr, "rlpt: run: --restart needs a value: latest or a checkpoint path\n");
    rc = 2;
  } else {
    config_split_args(n_args, args, over, &n_over, rest, &n_rest);
    if (n_rest == 1 && (!strcmp(rest[0], "-h") || !strcmp(rest[0], "--help"))) rc = usage(0);
    else if (n_rest != 1 || rest[0][0] == '-') rc = usage(2);
    else {
      rc = run_job(rest[0], n_over, over);
    }
  }
  free(made);
  free(over);
  free(rest);
  free(args);
  return rc;
}
