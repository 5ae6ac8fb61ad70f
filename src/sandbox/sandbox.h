/* sandbox/sandbox.h: running model-written programs where they cannot hurt the host.
 *
 * A job is a program text (run by [sandbox] interpreter, python3 by default) and the bytes
 * of its stdin; its result is the captured stdout and stderr, how it ended and its times.
 * Each job runs in a process of its own:
 *
 *   isolation = bwrap (the default): bubblewrap puts it in new user, PID, network, IPC, UTS
 *     and cgroup namespaces (no network but a private loopback, no view of other processes),
 *     with a read-only view of /usr (and /bin, /lib* beside it; an interpreter installed
 *     elsewhere: the folder above its bin/), a private /proc and /dev, the program read-only
 *     at /program, and an empty tmpfs of file_mb MiB as its working directory (/sandbox);
 *     nothing else of the host (no /etc, /home, /tmp, no checkout) exists in there, and all
 *     but the working directory is read-only. As root,
 *     the child first drops to uid/gid 65534 (nobody), so the process limit is enforced.
 *   isolation = rlimits_only: no namespaces, only the limits below, in a private temporary
 *     working directory; the program can read the host and use the network. A deck must
 *     ask for it; sandbox_init prints a WARNING.
 *
 * Limits, set in the child before exec (setrlimit): cpu_s CPU seconds (RLIMIT_CPU),
 * memory_mb of address space (RLIMIT_AS), file_mb per file (RLIMIT_FSIZE), 64 open files,
 * no core files; processes (RLIMIT_NPROC) is set inside the new user namespace by prlimit
 * (util-linux), because the kernel also counts a namespace's processes against its
 * creator's limit, which would make concurrent sandboxes of one uid share it. stdout and
 * stderr are captured through pipes, output_kb each at most: more ends the job
 * (SANDBOX_OUTPUT_LIMIT). After timeout_s of wall clock the job's process group gets
 * SIGKILL; under bwrap that ends its PID namespace, and with it every process the program
 * started, also those that left its process group or session.
 *
 * The API does not depend on the reward: a tool call of a multi-turn rollout is one job. */
#ifndef RLPT_SANDBOX_H
#define RLPT_SANDBOX_H

#include <limits.h>
#include <stddef.h>

#include "deck/config.h"

#define SANDBOX_ARGS_MAX 64      /* words of the child's command line */
#define SANDBOX_INTERP_WORDS 8   /* [sandbox] interpreter: the program and its options */

enum sandbox_status {
  SANDBOX_EXITED = 0,     /* exit_code holds its status (under bwrap 128 + N: killed by signal N) */
  SANDBOX_SIGNALED,       /* signal holds the signal (rlimits_only) */
  SANDBOX_TIMEOUT,        /* timeout_s passed: killed */
  SANDBOX_CPU_LIMIT,      /* cpu_s used up: killed by SIGXCPU */
  SANDBOX_OUTPUT_LIMIT,   /* more than output_kb on stdout or stderr: killed */
  SANDBOX_START_FAILED    /* the child could not be started (err holds why) */
};

struct sandbox_opts {
  int isolation;           /* enum sandbox_isolation (deck/config.h) */
  char interpreter[CFG_STR_MAX];
  double timeout_s;
  long cpu_s, memory_mb, output_kb, file_mb, processes;
};

struct sandbox {
  struct sandbox_opts o;
  char bwrap[PATH_MAX], prlimit[PATH_MAX];
  char interp[PATH_MAX];                     /* the interpreter's real path */
  char interp_root[PATH_MAX];                /* a folder to bind besides /usr ("" = none) */
  char interp_words[SANDBOX_INTERP_WORDS][CFG_STR_MAX];
  int n_interp_words;                        /* [0] is the interpreter as written */
  int drop_to_nobody;                        /* euid 0: the child becomes uid/gid 65534 */
};

struct sandbox_job {
  const char *program;     /* the program text (need not be NUL-terminated) */
  size_t program_len;
  const char *input;       /* stdin bytes (NULL: empty) */
  size_t input_len;
  /* results (sandbox_run fills; sandbox_job_clear frees) */
  enum sandbox_status status;
  int exit_code, signal;
  char *out, *err;          /* NUL-terminated, at most output_kb KiB each */
  size_t out_len, err_len;
  double wall_s;            /* wall clock from start to reaping */
  char start_error[256];    /* SANDBOX_START_FAILED: why */
};

/* The [sandbox] keys of a deck. */
void sandbox_opts_from_config(struct sandbox_opts *o, const struct config *cfg);
/* Find bwrap, prlimit and the interpreter, and run an empty program to prove the isolation
 * works here. 0; 2 with a message naming the [sandbox] key and what to do (no bwrap,
 * namespaces refused, no interpreter). rlimits_only prints a WARNING on stderr. */
int sandbox_init(struct sandbox *sb, const struct sandbox_opts *o, char *err, size_t errlen);
/* Run n jobs, at most `workers` at a time; returns when every job has ended. 0, or 1 when
 * memory ran out (the jobs' results are then incomplete). */
int sandbox_run(const struct sandbox *sb, struct sandbox_job *jobs, int n, int workers);
/* exit_code 0 after a normal end. */
int sandbox_job_ok(const struct sandbox_job *j);
void sandbox_job_clear(struct sandbox_job *j);
const char *sandbox_status_name(enum sandbox_status s);

/* ---- sandbox/spawn.c: one child ---------------------------------------------------- */
struct sandbox_child {
  int pid, out_fd, err_fd;
  char workdir[64];         /* rlimits_only: the private working directory ("" under bwrap) */
};
/* Start j's child: its pipes non-blocking in c. 0, or -1 with j->start_error set. */
int sandbox_spawn(const struct sandbox *sb, struct sandbox_job *j, struct sandbox_child *c);
/* Remove a rlimits_only working directory (links are removed, never followed). */
void sandbox_workdir_remove(struct sandbox_child *c);

#endif
