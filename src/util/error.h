/* util/error.h: the two error paths of an MPI code.
 *
 * Collective: every rank computes a local exit code (0 ok, 2 bad input, 1 internal);
 * error_agree() gives all of them the largest, the rank that found the problem has printed
 * one message, and every rank returns that code. Use it for anything a user can cause.
 *
 * Local: die_local() is for the impossible (an MPI or CUDA call failed, a broken invariant)
 * when the other ranks cannot be told: it prints "rlpt: rank R (ROLE): message" and calls
 * MPI_Abort (exit(1) when MPI is not running). */
#ifndef RLPT_ERROR_H
#define RLPT_ERROR_H

#include <mpi.h>

/* The role named in die_local's messages ("controller", "rollout", "train", ...); the string
 * is copied. Default "-". */
void error_set_role(const char *role);
/* Collective over comm: the maximum of every rank's local_code, on every rank. */
int error_agree(MPI_Comm comm, int local_code);
/* Print "rlpt: rank R (ROLE): ..." and abort the job. */
void die_local(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Check an MPI call; on failure die_local with the call, its error string, file and line. */
#ifndef MPI_CHECK
#define MPI_CHECK(call) do { int mpi_rc_ = (call); if (mpi_rc_ != MPI_SUCCESS) \
  error_mpi_fail(mpi_rc_, #call, __FILE__, __LINE__); } while (0)
#endif
void error_mpi_fail(int rc, const char *call, const char *file, int line) __attribute__((noreturn));

#endif
