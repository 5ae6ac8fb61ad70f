/* mpi/wait.c: polite MPI waits (MPI_Test / MPI_Iprobe + exponential backoff
 * sleep) with optional deadlines; see wait.h. */
#include "mpi/wait.h"

#include <time.h>

#include "util/clock.h"
#include "util/error.h"

/* The backoff state of one wait. */
struct backoff {
  double sleep_s, deadline;  /* deadline <= 0: none */
};

static void backoff_init(struct backoff *b, double timeout_s) {
  b->sleep_s = WAIT_SLEEP_MIN_S;
  b->deadline = timeout_s > 0 ? clock_seconds() + timeout_s : 0;
}

/* Called after a poll that found nothing: WAIT_TIMEOUT when the deadline has
 * passed, else sleeps (never past the deadline), doubles the sleep up to the
 * cap, and returns WAIT_OK. */
static int backoff_sleep(struct backoff *b) {
  double dt = b->sleep_s;
  if (b->deadline > 0) {
    double left = b->deadline - clock_seconds();
    if (left <= 0) return WAIT_TIMEOUT;
    if (dt > left) dt = left;
  }
  struct timespec ts = {.tv_sec = (time_t)dt, .tv_nsec = (long)((dt - (double)(time_t)dt) * 1e9)};
  nanosleep(&ts, NULL);
  b->sleep_s = b->sleep_s * 2 < WAIT_SLEEP_MAX_S ? b->sleep_s * 2 : WAIT_SLEEP_MAX_S;
  return WAIT_OK;
}

int wait_request_until(MPI_Request *req, MPI_Status *st, double timeout_s) {
  struct backoff b;
  backoff_init(&b, timeout_s);
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, st));
    if (done) return WAIT_OK;
    if (backoff_sleep(&b)) return WAIT_TIMEOUT;
  }
}

int wait_request(MPI_Request *req, MPI_Status *st) { return wait_request_until(req, st, 0); }

int wait_all_until(int n, MPI_Request *reqs, MPI_Status *st, double timeout_s) {
  struct backoff b;
  backoff_init(&b, timeout_s);
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Testall(n, reqs, &done, st));
    if (done) return WAIT_OK;
    if (backoff_sleep(&b)) return WAIT_TIMEOUT;
  }
}

int wait_probe_until(int source, int tag, MPI_Comm comm, MPI_Status *st, double timeout_s) {
  struct backoff b;
  backoff_init(&b, timeout_s);
  for (;;) {
    int found = 0;
    MPI_CHECK(MPI_Iprobe(source, tag, comm, &found, st));
    if (found) return WAIT_OK;
    if (backoff_sleep(&b)) return WAIT_TIMEOUT;
  }
}

int wait_probe(int source, int tag, MPI_Comm comm, MPI_Status *st) {
  return wait_probe_until(source, tag, comm, st, 0);
}

int wait_barrier_until(MPI_Comm comm, double timeout_s, MPI_Request *req) {
  if (*req == MPI_REQUEST_NULL) MPI_CHECK(MPI_Ibarrier(comm, req));
  return wait_request_until(req, MPI_STATUS_IGNORE, timeout_s);
}

int wait_barrier(MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  return wait_barrier_until(comm, 0, &req);
}

int wait_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  int size = 0;
  MPI_CHECK(MPI_Type_size(type, &size));
  if ((double)count * size <= WAIT_BCAST_EAGER_BYTES) {
    MPI_Request req;
    MPI_CHECK(MPI_Ibcast(buf, count, type, root, comm, &req));
    return wait_request(&req, MPI_STATUS_IGNORE);
  }
  wait_barrier(comm);
  MPI_CHECK(MPI_Bcast(buf, count, type, root, comm));
  return WAIT_OK;
}
