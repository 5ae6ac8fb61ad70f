/* mpi/wait.h: polite waiting on MPI.
 *
 * Open MPI busy-polls inside MPI_Recv, MPI_Wait, MPI_Probe and blocking
 * collectives. A rank that waits for its peer therefore burns a whole core; on
 * a node with more ranks than cores (4 ranks on 2 cores in CI, or service ranks
 * beside compute ranks) it steals the core of the rank doing the work. These
 * functions wait with MPI_Test / MPI_Iprobe and an exponential backoff sleep
 * (WAIT_SLEEP_MIN_S doubling to WAIT_SLEEP_MAX_S), so a waiting rank costs
 * almost nothing and notices an event within ~WAIT_SLEEP_MAX_S.
 *
 * Use them for waits of unknown length (the next prompt batch, the next weight
 * version, a peer's turn). Once the data is known to be moving, blocking calls
 * are right: both ends are active and nothing else wants the core. The bulk
 * helpers in xfer.c follow that rule (polite handshake, then blocking transfer).
 *
 * Deadlines: the *_until variants take timeout_s (<= 0: wait forever) and
 * return WAIT_TIMEOUT when it passes, so a watchdog can name the stalled peer.
 * The request is left active: calling again resumes the same wait. A
 * collective cannot be cancelled, so after a timeout on one the caller must
 * either resume it or abort the job. */
#ifndef RLPT_WAIT_H
#define RLPT_WAIT_H

#include <mpi.h>

/* Return codes. A failed MPI call is not returned: it aborts through
 * MPI_CHECK (util/error.h), like everywhere else in rlpt. */
#define WAIT_OK 0
#define WAIT_TIMEOUT 1

#define WAIT_SLEEP_MIN_S 50e-6
#define WAIT_SLEEP_MAX_S 2e-3

/* MPI_Wait, politely. st may be MPI_STATUS_IGNORE. */
int wait_request(MPI_Request *req, MPI_Status *st);
int wait_request_until(MPI_Request *req, MPI_Status *st, double timeout_s);
/* MPI_Waitall, politely (statuses may be MPI_STATUSES_IGNORE). */
int wait_all_until(int n, MPI_Request *reqs, MPI_Status *st, double timeout_s);

/* MPI_Probe, politely: returns once a message from source (or MPI_ANY_SOURCE)
 * with tag (or MPI_ANY_TAG) is pending; st tells its source, tag and size. */
int wait_probe(int source, int tag, MPI_Comm comm, MPI_Status *st);
int wait_probe_until(int source, int tag, MPI_Comm comm, MPI_Status *st, double timeout_s);

/* MPI_Barrier, politely (MPI_Ibarrier + wait). */
int wait_barrier(MPI_Comm comm);
/* Resumable: *req must be MPI_REQUEST_NULL on the first call (starts the
 * barrier); after WAIT_TIMEOUT it holds the pending barrier for the next call. */
int wait_barrier_until(MPI_Comm comm, double timeout_s, MPI_Request *req);

/* MPI_Bcast, politely. Messages up to WAIT_BCAST_EAGER_BYTES go through
 * MPI_Ibcast + wait (one round, the sleep costs nothing). Larger ones first
 * meet in a polite barrier, then move with a blocking MPI_Bcast: Open MPI's
 * nonblocking collectives advance only inside MPI calls, so a sleeping waiter
 * slows a large MPI_Ibcast (measured: 2x slower at 16-100 MB, 4 ranks on 2
 * cores; barrier + MPI_Bcast matched plain MPI_Bcast). */
#define WAIT_BCAST_EAGER_BYTES 65536
int wait_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);

#endif
