/* cli/cmd_plan.c: `rlpt plan DECK [--world N] [--ranks] [section.key=value ...]`.
 *
 * Shows the job a deck describes without starting it: the rank map, the model,
 * memory per rank for each role and FLOPs per step (deck/plan.c), and fails with
 * exit code 2 and the reasons when the layout is impossible or a role does not
 * fit [ranks] device_memory_gb.
 *   --world N   plan for N ranks without MPI (e.g. --world 1000 on a laptop;
 *               deck/plan.h plan_without_mpi); per-rank lines when N <= 64 or
 *               with --ranks.
 *   (no --world) run under MPI (mpirun -np N rlpt plan DECK): the real world
 *               size, the real communicators (mpi/comm.h), threads per node
 *               (run/threads.h) and one line per rank with its host, around the
 *               deck's report (plan_report). */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "deck/plan.h"
#include "mpi/comm.h"
#include "run/threads.h"
#include "util/alloc.h"
#include "util/error.h"

struct plan_args {
  const char *deck;
  int world;      /* 0: run under MPI */
  int per_rank;
  char **over;
  int n_over;
};

static int usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt plan DECK [--world N] [--ranks] [section.key=value ...]\n"
          "  rank map, parameters, memory per rank and FLOPs per step of the job DECK describes;\n"
          "  exit 2 when the layout is impossible or a role does not fit [ranks] device_memory_gb.\n"
          "  --world N  plan for N ranks without MPI; otherwise run it under mpirun -np N\n"
          "  --ranks    with --world: one line per rank even when N > %d\n", PLAN_PER_RANK_MAX);
  return rc;
}

static int parse_args(int n_rest, char **rest, struct plan_args *a) {
  for (int i = 0; i < n_rest; i++) {
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) return usage(0) - 1;
    if (!strcmp(rest[i], "--ranks")) a->per_rank = 1;
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
  return a->deck ? 0 : usage(2);
}

static void print_threads(const struct threads_info *t) {
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(host, &len);
  printf("threads: %d per rank; node %s: %d ranks on %d cores (%s)%s\n", t->threads, host,
         t->ranks_on_node, t->cores, t->cores_from_deck ? "cores_per_node" : "detected",
         t->oversubscribed ? "; more ranks than cores: oversubscribed, waiting ranks yield" : "");
}

static int plan_mpi(const struct plan_args *a) {
  int rank, size, rc;
  struct config *cfg = malloc_check(sizeof *cfg);
  struct comms c;
  struct threads_info t;
  char err[2048];
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rc = config_load(cfg, a->deck, a->n_over, a->over, MPI_COMM_WORLD);
  if (!rc) {
    rc = comms_create(&c, cfg, MPI_COMM_WORLD, err, sizeof err);
    if (rc && rank == 0) fprintf(stderr, "rlpt: plan: %s\n", err);
  }
  if (!rc) {
    rc = threads_setup(cfg, MPI_COMM_WORLD, &t, err, sizeof err);
    if (rc && rank == 0) fprintf(stderr, "rlpt: plan: %s\n", err);
    if (!rc) {
      if (rank == 0) printf("rlpt plan %s (mpirun: %d ranks)\n", a->deck, size);
      rc = error_agree(MPI_COMM_WORLD, plan_report(cfg, size, rank == 0, 0));
      if (rank == 0) {
        print_threads(&t);
        printf("rank map (host, role, coordinates)\n");
        fflush(stdout);
      }
      comms_print_map(&c, stdout);
    }
    comms_free(&c);
  }
  MPI_Finalize();
  free(cfg);
  return rc;
}

int cmd_plan(int argc, char **argv) {
  char **over = calloc_check((size_t)argc + 1, sizeof *over);
  char **rest = calloc_check((size_t)argc + 1, sizeof *rest);
  struct plan_args a = {.over = over};
  int n_rest = 0;
  config_split_args(argc, argv, over, &a.n_over, rest, &n_rest);
  int rc = parse_args(n_rest, rest, &a);
  if (rc < 0) rc = 0;  /* --help */
  else if (!rc && a.world) rc = plan_without_mpi(a.deck, a.n_over, a.over, a.world, a.per_rank);
  else if (!rc) rc = plan_mpi(&a);
  free(over);
  free(rest);
  return rc;
}
