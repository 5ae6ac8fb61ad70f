/* bench_wait.c (4 ranks): what a busy-polling MPI wait costs the rank that
 * works. Rank 0 runs a fixed CPU-bound loop while ranks 1..3 wait for its
 * message with (a) plain MPI_Recv, (b) wait_probe + MPI_Recv and (c) MPI_Irecv
 * + wait_request. With more ranks than cores, (a) steals rank 0's core.
 * OMPI_MCA_mpi_yield_when_idle=1 (which CTest sets) makes the spinning ranks
 * call sched_yield, which softens but does not remove it; Open MPI also turns
 * yielding on by itself when mpirun knows the node is oversubscribed, so set
 * it to 0 to see the raw spin. Measured on the 2-core dev box, 1 s of work:
 * busy 4.1 s with =0, 1.3-1.6 s unset, 1.7-2.0 s with =1; polite 1.0-1.1 s.
 * Also reports the wake-up latency (the backoff sleep costs up to ~2 ms; on an
 * oversubscribed node scheduling adds more). Prints figures, asserts no time.
 *
 * usage: mpirun -np 4 --oversubscribe bench_wait [work_seconds (default 1.0)] */
#include <stdio.h>
#include <stdlib.h>

#include "mpi/wait.h"
#include "util/clock.h"

enum mode { BUSY, PROBE, REQUEST, NMODES };
static const char *mode_name[NMODES] = {"MPI_Recv (busy poll)", "wait_probe + MPI_Recv",
                                        "MPI_Irecv + wait_request"};

#define REPS 3

static double median3(const double *v) {
  double a = v[0], b = v[1], c = v[2];
  return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/* A dependent floating-point chain: pure CPU, no memory traffic. */
static double work(long n) {
  double x = 1.0;
  for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  return x;
}

/* One round: rank 0 works n iterations then sends its clock; the others wait
 * in `mode`. Returns rank 0's work seconds; *lat gets the largest wake latency. */
static double round_trip(enum mode mode, long n, int rank, int size, double *lat) {
  const int tag = 7;
  double msg = 0, t_work = 0, my_lat = 0;
  wait_barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    double t0 = clock_seconds();
    volatile double sink = work(n);
    (void)sink;
    t_work = clock_seconds() - t0;
    msg = clock_seconds();
    for (int r = 1; r < size; r++) MPI_Send(&msg, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD);
  } else {
    MPI_Request req;
    if (mode == BUSY) MPI_Recv(&msg, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (mode == PROBE) {
      wait_probe(0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(&msg, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (mode == REQUEST) {
      MPI_Irecv(&msg, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &req);
      wait_request(&req, MPI_STATUS_IGNORE);
    }
    my_lat = clock_seconds() - msg; /* CLOCK_MONOTONIC is shared by processes of one node */
  }
  MPI_Reduce(&my_lat, lat, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return t_work;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double target = argc > 1 ? atof(argv[1]) : 1.0;
  if (target <= 0) target = 1.0;
  /* calibrate n on rank 0 while the others wait politely */
  long n = 1000000;
  if (rank == 0) {
    double t0 = clock_seconds();
    volatile double sink = work(n);
    (void)sink;
    n = (long)((double)n * target / (clock_seconds() - t0));
  }
  wait_bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  /* REPS rounds of each mode, interleaved so load from elsewhere hits all alike */
  double t[NMODES][REPS], lat_max[NMODES] = {0};
  for (int rep = 0; rep < REPS; rep++)
    for (int m = 0; m < NMODES; m++) {
      double lat = 0;
      t[m][rep] = round_trip((enum mode)m, n, rank, size, &lat);
      if (lat > lat_max[m]) lat_max[m] = lat;
    }
  double med[NMODES];
  for (int m = 0; m < NMODES; m++) med[m] = median3(t[m]);
  if (rank == 0) {
    const char *y = getenv("OMPI_MCA_mpi_yield_when_idle");
    printf("bench_wait: %d ranks, rank 0 works %ld iterations; %d waiters; "
           "OMPI_MCA_mpi_yield_when_idle=%s\n", size, n, size - 1, y ? y : "(unset)");
    for (int m = 0; m < NMODES; m++)
      printf("  %-26s rank 0 work %.3f s (median of %.3f %.3f %.3f), wake latency max %.0f us\n",
             mode_name[m], med[m], t[m][0], t[m][1], t[m][2], 1e6 * lat_max[m]);
    printf("  slowdown of the working rank, busy / polite: %.2fx (probe) %.2fx (request)\n",
           med[BUSY] / med[PROBE], med[BUSY] / med[REQUEST]);
  }
  MPI_Finalize();
  return 0;
}
