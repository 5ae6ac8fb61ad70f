/* run/plan_live.h: `rlpt plan` under mpirun: the deck's plan (deck/plan.h plan_report) for
 * the real world size, with the real communicators, the threads per node and one line per
 * rank with its host. */
#ifndef RLPT_PLAN_LIVE_H
#define RLPT_PLAN_LIVE_H

/* MPI_Init to MPI_Finalize. 0, or 2 (bad deck, impossible layout, a role that does not fit)
 * the same on every rank. */
int plan_live(const char *deck, int n_over, char **over);

#endif
