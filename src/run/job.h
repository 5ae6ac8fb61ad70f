/* run/job.h: `rlpt run` from a deck path to an exit code (MPI_Init to MPI_Finalize). */
#ifndef RLPT_JOB_H
#define RLPT_JOB_H

/* The training job on the deck with the overrides over[0..n_over) ("section.key=value",
 * `run.restart=latest|PATH` to resume). 0, 2 (bad input: a deck, dataset, checkpoint or
 * model file; one message, the same on every rank) or 1 (internal failure). */
int run_job(const char *deck, int n_over, char **over);

#endif
