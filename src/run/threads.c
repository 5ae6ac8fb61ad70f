/* run/threads.c: count the ranks of each node, check ranks x threads against the
 * node's cores, and set the BLAS/OpenMP thread count (policy in run/threads.h). */
#include "run/threads.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck/config.h"
#include "util/error.h"

int threads_detect_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

int threads_check(int ranks_on_node, long threads_per_rank, int cores, int cores_from_deck,
                  const char *host, char *err, size_t errlen) {
  if (threads_per_rank <= 1 || (long)ranks_on_node * threads_per_rank <= cores) return 0;
  snprintf(err, errlen, "[ranks] threads_per_rank = %ld: %d ranks on node %s x %ld threads = %ld "
           "exceeds the node's %d cores (cores_per_node = %s); lower threads_per_rank to %d or "
           "place fewer ranks per node", threads_per_rank, ranks_on_node, host, threads_per_rank,
           (long)ranks_on_node * threads_per_rank, cores,
           cores_from_deck ? "from the deck" : "auto, read from the machine",
           cores / ranks_on_node > 1 ? cores / ranks_on_node : 1);
  return 2;
}

/* Every rank gets the code and the message of the lowest failing rank. */
static int agree_message(MPI_Comm world, int rc, char *err, size_t errlen) {
  int rank, size, first;
  MPI_CHECK(MPI_Comm_rank(world, &rank));
  MPI_CHECK(MPI_Comm_size(world, &size));
  int mine = rc ? rank : size;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world));
  if (first == size) return 0;
  MPI_CHECK(MPI_Bcast(err, (int)errlen, MPI_CHAR, first, world));
  return error_agree(world, rc);
}

int threads_setup(const struct config *cfg, MPI_Comm world, struct threads_info *out, char *err,
                  size_t errlen) {
  MPI_Comm node;
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  memset(out, 0, sizeof *out);
  err[0] = '\0';
  MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_size(node, &out->ranks_on_node));
  MPI_CHECK(MPI_Comm_rank(node, &out->node_rank));
  MPI_CHECK(MPI_Comm_free(&node));
  MPI_CHECK(MPI_Get_processor_name(host, &len));
  out->cores_from_deck = cfg->ranks.cores_per_node > 0;
  out->cores = out->cores_from_deck ? (int)cfg->ranks.cores_per_node : threads_detect_cores();
  out->threads = (int)cfg->ranks.threads_per_rank;
  out->oversubscribed = out->ranks_on_node > out->cores;
  int rc = threads_check(out->ranks_on_node, cfg->ranks.threads_per_rank, out->cores,
                         out->cores_from_deck, host, err, errlen);
  rc = agree_message(world, rc, err, errlen);
  if (rc) return rc;
  /* OpenBLAS reads its pool size at load time; the call resizes it now. The
   * variable covers an OpenMP runtime that starts later in this process. */
  openblas_set_num_threads(out->threads);
  char n[32];
  snprintf(n, sizeof n, "%d", out->threads);
  setenv("OMP_NUM_THREADS", n, 1);
  return 0;
}
