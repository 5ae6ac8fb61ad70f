/* sandbox/pool.c: sandbox_run: up to `workers` children at once, one poll loop reading
 * their output, killing the ones past their wall clock or output cap, and reaping them
 * (sandbox/sandbox.h). Single-threaded: the loop owns every child. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "util/clock.h"

#define WAIT_TICK_MS 2  /* pipes closed but the child not yet reaped: look again this soon */

/* A captured stream: its pipe (-1 once closed) and bytes. */
struct stream {
  int fd;
  char *buf;
  size_t len, cap;
};

struct slot {
  struct sandbox_job *job;
  struct sandbox_child c;
  struct stream s[2];          /* stdout, stderr */
  double t0, deadline;
  enum sandbox_status killed;  /* SANDBOX_EXITED = not killed by us */
};

static void kill_slot(struct slot *sl, enum sandbox_status why) {
  if (sl->killed == SANDBOX_EXITED) sl->killed = why;
  kill(-sl->c.pid, SIGKILL);
  kill(sl->c.pid, SIGKILL);
  for (int k = 0; k < 2; k++)
    if (sl->s[k].fd >= 0) { close(sl->s[k].fd); sl->s[k].fd = -1; }
}

/* Append what the pipe holds; 1 when the stream went past limit, -1 out of memory. */
static int drain(struct stream *s, size_t limit) {
  char tmp[65536];
  for (;;) {
    ssize_t n = read(s->fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 0;  /* EAGAIN: nothing more now */
    if (n == 0) { close(s->fd); s->fd = -1; return 0; }
    if (s->len + (size_t)n > limit) return 1;
    if (s->len + (size_t)n + 1 > s->cap) {
      size_t cap = s->cap ? s->cap : 4096;
      while (cap < s->len + (size_t)n + 1) cap *= 2;
      char *nb = realloc(s->buf, cap);
      if (!nb) return -1;
      s->buf = nb;
      s->cap = cap;
    }
    memcpy(s->buf + s->len, tmp, (size_t)n);
    s->len += (size_t)n;
  }
}

static enum sandbox_status exit_status(const struct slot *sl, int st) {
  if (sl->killed != SANDBOX_EXITED) return sl->killed;
  if (WIFSIGNALED(st)) return WTERMSIG(st) == SIGXCPU ? SANDBOX_CPU_LIMIT : SANDBOX_SIGNALED;
  /* under bwrap a signal shows as 128 + N */
  return WEXITSTATUS(st) == 128 + SIGXCPU ? SANDBOX_CPU_LIMIT : SANDBOX_EXITED;
}

/* The child has ended (or been killed): its results into the job. */
static void finish(struct slot *sl, int st) {
  struct sandbox_job *j = sl->job;
  j->status = exit_status(sl, st);
  j->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  j->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  j->wall_s = clock_seconds() - sl->t0;
  char **dst[2] = {&j->out, &j->err};
  size_t *len[2] = {&j->out_len, &j->err_len};
  for (int k = 0; k < 2; k++) {
    struct stream *s = &sl->s[k];
    if (!s->buf) s->buf = calloc(1, 1);
    if (s->buf) s->buf[s->len] = '\0';
    *dst[k] = s->buf;
    *len[k] = s->buf ? s->len : 0;
    if (s->fd >= 0) close(s->fd);
  }
  sandbox_workdir_remove(&sl->c);
  sl->job = NULL;
}

static int start(const struct sandbox *sb, struct slot *sl, struct sandbox_job *j) {
  memset(sl, 0, sizeof *sl);
  sl->job = j;
  j->out = j->err = NULL;
  j->start_error[0] = '\0';
  sl->t0 = clock_seconds();
  sl->deadline = sl->t0 + sb->o.timeout_s;
  if (sandbox_spawn(sb, j, &sl->c)) {
    j->status = SANDBOX_START_FAILED;
    j->exit_code = -1;
    sl->job = NULL;
    return -1;
  }
  sl->s[0].fd = sl->c.out_fd;
  sl->s[1].fd = sl->c.err_fd;
  return 0;
}

/* Read, enforce the caps and the clock, reap: 1 when the slot's job has ended, -1 out of memory. */
static int service(const struct sandbox *sb, struct slot *sl) {
  size_t limit = (size_t)sb->o.output_kb << 10;
  for (int k = 0; k < 2; k++) {
    if (sl->s[k].fd < 0) continue;
    int rc = drain(&sl->s[k], limit);
    if (rc < 0) { kill_slot(sl, SANDBOX_START_FAILED); return -1; }
    if (rc > 0) kill_slot(sl, SANDBOX_OUTPUT_LIMIT);
  }
  if (sl->killed == SANDBOX_EXITED && clock_seconds() >= sl->deadline) kill_slot(sl, SANDBOX_TIMEOUT);
  if (sl->s[0].fd >= 0 || sl->s[1].fd >= 0) return 0;
  int st = 0;
  pid_t got = waitpid(sl->c.pid, &st, sl->killed != SANDBOX_EXITED ? 0 : WNOHANG);
  if (got == 0) return 0;
  if (sl->killed == SANDBOX_EXITED) kill(-sl->c.pid, SIGKILL);  /* what is left of its group */
  finish(sl, st);
  return 1;
}

/* The poll set of the busy slots and how long to wait for it. */
static int poll_set(const struct slot *sl, int n_slots, struct pollfd *pfd, int *n_pfd) {
  double now = clock_seconds(), wait = 1.0;
  *n_pfd = 0;
  for (int i = 0; i < n_slots; i++) {
    if (!sl[i].job) continue;
    int open = 0;
    for (int k = 0; k < 2; k++)
      if (sl[i].s[k].fd >= 0) { pfd[(*n_pfd)++] = (struct pollfd){.fd = sl[i].s[k].fd, .events = POLLIN}; open++; }
    double left = sl[i].deadline - now;
    if (left < wait) wait = left;
    if (!open && wait > WAIT_TICK_MS * 1e-3) wait = WAIT_TICK_MS * 1e-3;
  }
  return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
}

int sandbox_run(const struct sandbox *sb, struct sandbox_job *jobs, int n, int workers) {
  if (workers < 1) workers = 1;
  if (workers > n) workers = n > 0 ? n : 1;
  struct slot *sl = calloc((size_t)workers, sizeof *sl);
  struct pollfd *pfd = calloc((size_t)workers * 2 + 1, sizeof *pfd);
  int next = 0, done = 0, rc = 0;
  if (!sl || !pfd) rc = 1;
  while (!rc && done < n) {
    for (int i = 0; i < workers && next < n; i++)
      if (!sl[i].job && start(sb, &sl[i], &jobs[next++])) done++;
    int n_pfd = 0, timeout = poll_set(sl, workers, pfd, &n_pfd), busy = 0;
    for (int i = 0; i < workers; i++) busy += sl[i].job != NULL;
    if (busy && poll(pfd, (nfds_t)n_pfd, timeout) < 0 && errno != EINTR) rc = 1;
    for (int i = 0; i < workers && !rc; i++) {
      if (!sl[i].job) continue;
      int r = service(sb, &sl[i]);
      if (r < 0) rc = 1;
      done += r > 0;
    }
  }
  for (int i = 0; sl && i < workers; i++)
    if (sl[i].job) { kill_slot(&sl[i], SANDBOX_START_FAILED); service(sb, &sl[i]); }
  free(sl);
  free(pfd);
  return rc;
}
