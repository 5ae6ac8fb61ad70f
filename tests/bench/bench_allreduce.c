/* bench_allreduce.c: the gradient all-reduce forms on 2 ranks when one rank
 * arrives 100 ms late (it computed longer): allreduce_sum_floats (8 MiB buckets,
 * MPI_Iallreduce + polite wait), a polite barrier then blocking bucketed
 * MPI_Allreduce, and one plain MPI_Allreduce; 3 MB and 100 MB buffers. Prints
 * rank 0's wall and CPU time per call (the late rank's 100 ms included): the
 * figures behind the choice in mpi/allreduce.h. Never asserts a time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpi/allreduce.h"
#include "mpi/wait.h"
#include "util/clock.h"

#define REPS 5
#define LATE_US 100000

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The alternative: meet politely, then blocking MPI_Allreduce per bucket. */
static void barrier_blocking(float *g, size_t n, MPI_Comm c) {
  size_t bucket = ALLREDUCE_BUCKET_BYTES / sizeof(float);
  wait_barrier(c);
  for (size_t o = 0; o < n; o += bucket) {
    size_t len = n - o < bucket ? n - o : bucket;
    MPI_Allreduce(MPI_IN_PLACE, g + o, (int)len, MPI_FLOAT, MPI_SUM, c);
  }
}

static void run_form(int form, float *g, size_t n) {
  if (form == 0) allreduce_sum_floats(g, n, 0, MPI_COMM_WORLD);
  else if (form == 1) barrier_blocking(g, n, MPI_COMM_WORLD);
  else MPI_Allreduce(MPI_IN_PLACE, g, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  static const char *names[3] = {"Iallreduce + polite wait per bucket",
                                 "polite barrier + blocking buckets", "plain MPI_Allreduce"};
  static const size_t sizes[2] = {740000, 25000000};
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int si = 0; si < 2; si++) {
    size_t n = sizes[si];
    float *g = calloc(n, sizeof(float));
    for (int form = 0; form < 3 && g; form++) {
      double wall = 0.0, cpu = 0.0;
      for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) usleep(LATE_US);
        double t0 = clock_seconds(), c0 = cpu_now();
        run_form(form, g, n);
        wall += clock_seconds() - t0;
        cpu += cpu_now() - c0;
      }
      if (rank == 0)
        printf("bench_allreduce: %zu floats, %s: rank 0 wall %.1f ms (incl. %d ms late peer), "
               "cpu %.1f ms per call\n", n, names[form], 1e3 * wall / REPS, LATE_US / 1000,
               1e3 * cpu / REPS);
    }
    free(g);
  }
  MPI_Finalize();
  return 0;
}
