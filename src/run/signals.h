/* run/signals.h: preemption (nothing is lost). SIGTERM or SIGUSR1 (Slurm's
 * --signal, or Open MPI's mpirun forwarding SIGUSR1 to its ranks) sets a flag;
 * the run loop agrees on it across all ranks at the next step boundary
 * (signals_agree), writes a checkpoint and every rank exits 0. A second signal
 * to the same rank means "now": it exits at once (status 128 + signal) without
 * touching the checkpoint directory, so `latest` still names the last complete
 * checkpoint (an interrupted write leaves only a step_N.h5.tmp behind).
 * The boundaries are those of the RL steps (after the step's eval, if any), the
 * SFT -> RL boundary (after the post-SFT eval: checkpoint "step 0") and every SFT step
 * (a checkpoint "step 0" that records the SFT step, from which a restart continues SFT);
 * an eval in progress is finished first.
 *
 * The handler only writes a sig_atomic_t and, on the second signal, calls
 * write(2) and _exit(2): async-signal-safe. The flag is the one piece of
 * process-wide state rlpt keeps outside struct run: a signal handler has no
 * other place to put it. */
#ifndef RLPT_SIGNALS_H
#define RLPT_SIGNALS_H

#include <mpi.h>

/* Install the SIGTERM and SIGUSR1 handlers (every rank, once, after MPI_Init:
 * Open MPI installs its own handlers for other signals). */
void signals_install(void);
/* Collective over comm: the largest signal number any rank received (0 = none),
 * agreed with a polite all-reduce (mpi/allreduce.h). */
int signals_agree(MPI_Comm comm);
/* This rank's own flag: the signal it got (0 = none), for an agreement that carries more
 * than the signal in one all-reduce (run/loop.c). */
int signals_local(void);
/* "SIGTERM", "SIGUSR1", ... */
const char *signals_name(int sig);

#endif
