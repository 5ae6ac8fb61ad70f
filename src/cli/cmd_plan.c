/* cli/cmd_plan.c: `rlpt plan DECK [--world N] [--ranks] [section.key=value ...]`.
 *
 * Shows the job a deck describes without starting it: the rank map, the model,
 * memory per rank for each role and FLOPs per step (deck/plan.c), and fails with
 * exit code 2 and the reasons when the layout is impossible or a role does not
 * fit [ranks] device_memory_gb.
 *   --world N   plan for N ranks without MPI (e.g. --world 1000 on a laptop;
 *               deck/plan.h plan_without_mpi); per-rank lines when N <= 64 or
 *               with --ranks.
 *   (no --world) run under MPI (mpirun -np N rlpt plan DECK): the live rank map
 *               (run/plan_live.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "deck/plan.h"
#include "run/plan_live.h"
#include "util/alloc.h"

struct plan_args {
  const char *deck;
  int world;      /* 0: run under MPI */
  int per_rank;
  const char *simulate;  /* --simulate METRICS.jsonl | deck */
  const char *split;     /* --split HALF.jsonl */
  char **over;
  int n_over;
};

static int usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt plan DECK [--world N] [--ranks] [section.key=value ...]\n"
          "  rank map, parameters, memory per rank and FLOPs per step of the job DECK describes;\n"
          "  exit 2 when the layout is impossible or a role does not fit [ranks] device_memory_gb.\n"
          "  --world N  plan for N ranks without MPI; otherwise run it under mpirun -np N\n"
          "  --ranks    with --world: one line per rank even when N > %d\n"
          "  --simulate METRICS.jsonl|deck  with --world: the deck's RL steps under sync, separate_async\n"
          "             and the free-running schedule, from the phase times of a sync run's metrics,\n"
          "             or (deck) from the cluster throughputs in the deck's [simulate] section\n"
          "  --split HALF.jsonl  with --simulate: add colocate_async, its phases at the costs a sync\n"
          "             run at half the threads per rank measured (its metrics)\n",
          PLAN_PER_RANK_MAX);
  return rc;
}

static int parse_args(int n_rest, char **rest, struct plan_args *a) {
  for (int i = 0; i < n_rest; i++) {
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) return usage(0) - 1;
    if (!strcmp(rest[i], "--ranks")) a->per_rank = 1;
    else if (!strcmp(rest[i], "--simulate") || !strcmp(rest[i], "--split")) {
      int sim = !strcmp(rest[i], "--simulate");
      if (i + 1 >= n_rest) {
        fprintf(stderr, "rlpt: plan: %s needs a metrics JSONL file%s\n", rest[i], sim ? " or the word deck" : "");
        return 2;
      }
      *(sim ? &a->simulate : &a->split) = rest[++i];
    }
    else if (!strcmp(rest[i], "--world")) {
      char *end = NULL;
      long w = i + 1 < n_rest ? strtol(rest[i + 1], &end, 10) : 0;
      if (!end || *end || w < 1 || w > INT_MAX) {
        fprintf(stderr, "rlpt: plan: --world needs a rank count >= 1, got '%s'\n",
                i + 1 < n_rest ? rest[i + 1] : "");
        return 2;
      }
      a->world = (int)w;
      i++;
    } else if (rest[i][0] != '-' && !a->deck) a->deck = rest[i];
    else {
      fprintf(stderr, "rlpt: plan: unexpected argument '%s'\n", rest[i]);
      return usage(2);
    }
  }
  if (a->split && !a->simulate) {
    fprintf(stderr, "rlpt: plan: --split needs --simulate (it adds colocate_async to it)\n");
    return 2;
  }
  if (a->simulate && !a->world) {
    fprintf(stderr, "rlpt: plan: --simulate needs --world N (it plans without MPI)\n");
    return 2;
  }
  return a->deck ? 0 : usage(2);
}

int cmd_plan(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  struct plan_args a = {.over = over};
  int n_rest = 0;
  config_split_args(argc, argv, over, &a.n_over, rest, &n_rest);
  int rc = parse_args(n_rest, rest, &a);
  if (rc < 0) rc = 0;  /* --help */
  else if (!rc && a.world) rc = plan_without_mpi(a.deck, a.n_over, a.over, a.world, a.per_rank, a.simulate,
                                         a.split);
  else if (!rc) rc = plan_live(a.deck, a.n_over, a.over);
  free(over);
  free(rest);
  return rc;
}
