/* run/signals.c: the preemption flag and its step-boundary agreement (run/signals.h). */
#include "run/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mpi/allreduce.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
  if (got_signal) {
    static const char msg[] = "rlpt: second signal: exiting now without a checkpoint "
                              "(`latest` names the last complete one)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(128 + sig);
  }
  got_signal = sig;
}

void signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
}

int signals_agree(MPI_Comm comm) {
  int all = (int)got_signal;
  allreduce_polite(&all, 1, MPI_INT, MPI_MAX, comm);
  return all;
}

int signals_local(void) { return (int)got_signal; }

const char *signals_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case 0: return "none";
    default: return "signal";
  }
}
