/* run/plan_live.c: `rlpt plan` under mpirun (run/plan_live.h). */
#include "run/plan_live.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "deck/config.h"
#include "deck/plan.h"
#include "mpi/comm.h"
#include "run/threads.h"
#include "util/alloc.h"
#include "util/error.h"

static void print_threads(const struct threads_info *t) {
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(host, &len);
  printf("threads: %d per rank; node %s: %d ranks on %d cores (%s)%s\n", t->threads, host,
         t->ranks_on_node, t->cores, t->cores_from_deck ? "cores_per_node" : "detected",
         t->oversubscribed ? "; more ranks than cores: oversubscribed, waiting ranks yield" : "");
}

int plan_live(const char *deck, int n_over, char **over) {
  int rank, size, rc;
  struct config *cfg = malloc_check(sizeof *cfg);
  struct comms c;
  struct threads_info t;
  char err[2048];
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rc = config_load(cfg, deck, n_over, over, MPI_COMM_WORLD);
  if (!rc) {
    rc = comms_create(&c, cfg, MPI_COMM_WORLD, err, sizeof err);
    if (rc && rank == 0) fprintf(stderr, "rlpt: plan: %s\n", err);
  }
  if (!rc) {
    rc = threads_setup(cfg, MPI_COMM_WORLD, &t, err, sizeof err);
    if (rc && rank == 0) fprintf(stderr, "rlpt: plan: %s\n", err);
    if (!rc) {
      if (rank == 0) printf("rlpt plan %s (mpirun: %d ranks)\n", deck, size);
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
