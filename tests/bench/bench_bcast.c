/* bench_bcast.c: a raw MPI_Bcast of N bytes from rank 0 to every other rank of
 * MPI_COMM_WORLD, after a barrier, REPS times: the reference the weight sync's GB/s is
 * set against (bench/bench_weight_sync.sh). Prints rank 0's median seconds and GB/s
 * (1e9 bytes). Never asserts a time.
 *   mpiexec -n P bench_bcast BYTES [REPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/clock.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t bytes = argc > 1 ? (size_t)strtod(argv[1], NULL) : (size_t)1 << 26;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (reps < 1) reps = 1;
  size_t n = bytes / sizeof(float);
  float *x = calloc(n + 1, sizeof(float));
  double *t = calloc((size_t)reps, sizeof(double));
  const size_t piece = (size_t)1 << 28;
  for (int k = 0; k < reps && x && t; k++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = clock_seconds();
    for (size_t off = 0; off < n; off += piece)
      MPI_Bcast(x + off, (int)(n - off < piece ? n - off : piece), MPI_FLOAT, 0, MPI_COMM_WORLD);
    t[k] = clock_seconds() - t0;
  }
  if (me == 0 && x && t) {
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2];
    printf("raw MPI_Bcast %.1f MB to %d rank(s): %.4f s, %.2f GB/s\n", (double)n * 4 / 1e6, size - 1, med,
           med > 0 ? (double)n * 4 / med / 1e9 : 0.0);
  }
  free(x);
  free(t);
  MPI_Finalize();
  return 0;
}
