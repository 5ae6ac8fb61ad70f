/* util/error.c: collective agreement on an exit code, and the local abort (see util/error.h). */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The one piece of process state here: what this rank does, for die_local's message. */
static char error_role[32] = "-";

void error_set_role(const char *role) { snprintf(error_role, sizeof error_role, "%s", role ? role : "-"); }

int error_agree(MPI_Comm comm, int local_code) {
  int code = local_code;
  MPI_Allreduce(&local_code, &code, 1, MPI_INT, MPI_MAX, comm);
  return code;
}

static int mpi_running(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

void die_local(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!mpi_running()) {
    fprintf(stderr, "rlpt: %s\n", msg);
    exit(1);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "rlpt: rank %d (%s): %s\n", rank, error_role, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* MPI_Abort does not return; this tells the compiler */
}

void error_mpi_fail(int rc, const char *call, const char *file, int line) {
  char s[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, s, &len);
  die_local("%s failed at %s:%d: %s", call, file, line, s);
}
