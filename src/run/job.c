/* run/job.c: `rlpt run` from a deck path to an exit code (run/job.h): MPI, the deck
 * (validated on rank 0, broadcast), the communicators, the run's state, the loop. */
#include "run/job.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "run/loop.h"
#include "run/run.h"
#include "run/setup.h"
#include "run/signals.h"
#include "util/error.h"

/* Everything between MPI_Init and MPI_Finalize. Collective. */
static int job(struct run *r, const char *deck, int n_over, char **over) {
  struct config *cfg = malloc(sizeof *cfg);  /* too large for the stack */
  char err[2048] = "";
  int wr, rc = error_agree(MPI_COMM_WORLD, cfg ? 0 : 1);
  if (rc) {
    free(cfg);
    return rc;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  r->deck_path = deck;
  r->cfg = cfg;
  rc = config_load(cfg, deck, n_over, over, MPI_COMM_WORLD);
  if (!rc) {
    rc = comms_create(&r->comms, cfg, MPI_COMM_WORLD, err, sizeof err);
    if (rc && wr == 0) fprintf(stderr, "rlpt: run: %s\n", err);
  }
  if (rc) {
    free(cfg);
    return rc;
  }
  rc = run_setup(r);
  if (!rc) rc = run_loop(r);
  run_teardown(r);
  comms_free(&r->comms);
  free(cfg);
  return rc;
}

int run_job(const char *deck, int n_over, char **over) {
  struct run *r = calloc(1, sizeof *r);
  MPI_Init(NULL, NULL);
  signals_install();
  int rc = r ? job(r, deck, n_over, over) : 1;
  free(r);
  MPI_Finalize();
  return rc;
}
