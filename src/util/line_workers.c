/* util/line_workers.c: a command's worker processes and their line protocol
 * (util/line_workers.h): one poll loop hands each idle worker the next request, reads the
 * replies, and kills and restarts a worker that crashed, hung or answered garbage. */
#define _GNU_SOURCE
#include "util/line_workers.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

#define ARGS_MAX 32
#define TEXT_MAX 4096
#define PRINTED_ERRORS 5   /* failures printed on stderr; later ones are only counted */
#define LINE_MAX_BYTES (1 << 20)

struct worker {
  pid_t pid;         /* -1: not running */
  int fd;            /* our end of its stdin/stdout socket */
  int item;          /* the request in flight, -1 idle */
  char *req;         /* the request line, sent from woff on */
  size_t req_len, woff;
  char *line;        /* reply bytes so far */
  size_t line_len, line_cap;
  double deadline;
};

struct line_workers {
  char text[TEXT_MAX];
  char *argv[ARGS_MAX + 1];
  const char *section, *outcome;
  int n_workers;
  double timeout_s;
  struct worker *w;
  long restarts, failures;
};

static int find_in_path(const char *name) {
  if (strchr(name, '/')) return access(name, X_OK);
  const char *path = getenv("PATH");
  char cand[4096];
  for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
    size_t n = strcspn(d, ":");
    snprintf(cand, sizeof cand, "%.*s/%s", (int)n, d, name);
    if (n && access(cand, X_OK) == 0) return 0;
    d += n + (d[n] == ':');
  }
  return -1;
}

/* c->text split on spaces and tabs into c->argv; the count. */
static int split_args(struct line_workers *c) {
  int n = 0;
  for (char *save = NULL, *a = strtok_r(c->text, " \t", &save); a && n < ARGS_MAX; a = strtok_r(NULL, " \t", &save))
    c->argv[n++] = a;
  return n;
}

int line_workers_open(struct line_workers **out, const char *command, int n_workers, double timeout_s,
                      const char *section, const char *outcome, char *err, size_t errlen) {
  struct line_workers *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c) return 1;
  *c = (struct line_workers){.section = section, .outcome = outcome, .n_workers = n_workers, .timeout_s = timeout_s};
  snprintf(c->text, sizeof c->text, "%s", command);
  int n = split_args(c);
  if (n == 0 || find_in_path(c->argv[0])) {
    snprintf(err, errlen, "[%s] command: '%s' is not an executable program (searched PATH)", section,
             n ? c->argv[0] : "");
    free(c);
    return 2;
  }
  c->w = calloc((size_t)c->n_workers, sizeof *c->w);
  if (!c->w) { free(c); return 1; }
  for (int i = 0; i < c->n_workers; i++) c->w[i] = (struct worker){.pid = -1, .fd = -1, .item = -1};
  *out = c;
  return 0;
}

static void worker_stop(struct worker *w, int *status) {
  if (w->pid > 0) {
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL);
    if (waitpid(w->pid, status, 0) < 0 && status) *status = 0;
  }
  if (w->fd >= 0) close(w->fd);
  free(w->req);
  free(w->line);
  *w = (struct worker){.pid = -1, .fd = -1, .item = -1};
}

void line_workers_close(struct line_workers *c) {
  if (!c) return;
  for (int i = 0; i < c->n_workers; i++) worker_stop(&c->w[i], NULL);
  free(c->w);
  free(c);
}

long line_workers_restarts(const struct line_workers *c) { return c ? c->restarts : 0; }

static int worker_start(struct line_workers *c, struct worker *w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(sv[1], 0);
    dup2(sv[1], 1);
    syscall(SYS_close_range, 3, ~0U, 0);
    execvp(c->argv[0], c->argv);
    _exit(127);
  }
  close(sv[1]);
  if (pid < 0) { close(sv[0]); return -1; }
  setpgid(pid, pid);
  w->pid = pid;
  w->fd = sv[0];
  w->item = -1;
  return 0;
}

/* w's request failed: the client told, counted, printed while few, and w restarted fresh. */
static void fail(struct line_workers *c, struct worker *w, const struct line_client *cl, const char *why) {
  int status = 0, item = w->item;
  pid_t pid = w->pid;
  worker_stop(w, &status);
  cl->fail(cl->ctx, item, why);
  if (c->failures++ < PRINTED_ERRORS)
    fprintf(stderr, "rlpt: [%s] command '%s': worker pid %d, request %ld: %s%s; %s, worker restarted\n",
            c->section, c->argv[0], (int)pid, cl->first_id + item, why,
            c->failures == PRINTED_ERRORS ? " (further failures are only counted)" : "", c->outcome);
  c->restarts++;
}

/* Send what is left of w's request. 0, or -1 when the worker is gone. */
static int send_more(struct worker *w) {
  while (w->woff < w->req_len) {
    ssize_t k = send(w->fd, w->req + w->woff, w->req_len - w->woff, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    w->woff += (size_t)k;
  }
  return 0;
}

/* Read what the worker wrote; 1 when a whole line is in, 0 not yet, -1 closed, -2 a line
 * longer than LINE_MAX_BYTES (or no memory for it). */
static int recv_line(struct worker *w) {
  for (;;) {
    if (w->line_len + 4097 > w->line_cap) {
      size_t cap = w->line_cap ? 2 * w->line_cap : 8192;
      char *nl = cap <= LINE_MAX_BYTES ? realloc(w->line, cap) : NULL;
      if (!nl) return -2;
      w->line = nl;
      w->line_cap = cap;
    }
    ssize_t k = recv(w->fd, w->line + w->line_len, 4096, MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    if (k == 0) return -1;
    w->line_len += (size_t)k;
    w->line[w->line_len] = '\0';
    if (memchr(w->line + w->line_len - (size_t)k, '\n', (size_t)k)) return 1;
  }
}

/* One busy worker after poll. Returns 1 when its item ended (answered or failed). */
static int service(struct line_workers *c, struct worker *w, const struct line_client *cl) {
  char msg[512];
  if (send_more(w)) { fail(c, w, cl, "closed its stdin"); return 1; }
  int got = recv_line(w);
  if (got == -2) {
    fail(c, w, cl, "answered a line longer than 1 MiB");
    return 1;
  }
  if (got < 0) {
    fail(c, w, cl, w->line_len ? "the worker exited or closed its stdout in the middle of a line"
                               : "the worker exited or closed its stdout before answering");
    return 1;
  }
  if (got == 0) {
    if (clock_seconds() < w->deadline) return 0;
    snprintf(msg, sizeof msg, "no answer within [%s] command_timeout_s = %g s", c->section, c->timeout_s);
    fail(c, w, cl, msg);
    return 1;
  }
  *strchr(w->line, '\n') = '\0';
  if (cl->reply(cl->ctx, w->item, w->line, msg, sizeof msg)) {
    fail(c, w, cl, msg);
    return 1;
  }
  w->item = -1;
  w->line_len = 0;
  return 1;
}

/* Give idle worker w item i: 0; 1 when no worker could start (item i failed, counted); -1
 * out of memory. */
static int assign(struct line_workers *c, struct worker *w, int i, const struct line_client *cl) {
  if (w->pid < 0 && worker_start(c, w)) {
    int e = errno;
    cl->fail(cl->ctx, i, "cannot start a worker");
    if (c->failures++ < PRINTED_ERRORS)
      fprintf(stderr, "rlpt: [%s] command '%s': cannot start a worker: %s\n", c->section, c->argv[0], strerror(e));
    return 1;
  }
  free(w->req);
  w->req = cl->request(cl->ctx, i, &w->req_len);
  if (!w->req) return -1;
  w->woff = 0;
  w->line_len = 0;
  w->item = i;
  w->deadline = clock_seconds() + c->timeout_s;
  return 0;
}

int line_workers_run(struct line_workers *c, int n, const struct line_client *cl) {
  struct pollfd *pfd = calloc((size_t)c->n_workers, sizeof *pfd);
  int next = 0, done = 0;
  if (!pfd) return 1;
  while (done < n) {
    for (int k = 0; k < c->n_workers && next < n; k++) {
      if (c->w[k].item >= 0) continue;
      int a = assign(c, &c->w[k], next, cl);
      if (a < 0) { free(pfd); return 1; }
      next++;
      done += a;
    }
    int np = 0;
    for (int k = 0; k < c->n_workers; k++)
      if (c->w[k].item >= 0)
        pfd[np++] = (struct pollfd){.fd = c->w[k].fd, .events = POLLIN | (c->w[k].woff < c->w[k].req_len ? POLLOUT : 0)};
    if (np && poll(pfd, (nfds_t)np, 50) < 0 && errno != EINTR) { free(pfd); return 1; }
    for (int k = 0; k < c->n_workers; k++)
      if (c->w[k].item >= 0) done += service(c, &c->w[k], cl);
  }
  free(pfd);
  return 0;
}
