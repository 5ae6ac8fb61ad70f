/* rl/reward_command.c: [reward] command's worker processes and their JSON-lines protocol
 * (rl/reward_command.h): one poll loop hands each idle worker the next request, reads the
 * replies, and kills and restarts a worker that crashed, hung or answered garbage. */
#define _GNU_SOURCE
#include "rl/reward_command.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
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

#include "rl/experience.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "util/clock.h"

#define ARGS_MAX 32
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

struct reward_command {
  char text[CFG_STR_MAX];
  char *argv[ARGS_MAX + 1];
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

int reward_command_open(struct reward_command **out, const struct config *cfg, char *err, size_t errlen) {
  struct reward_command *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c) return 1;
  snprintf(c->text, sizeof c->text, "%s", cfg->reward.command);
  int n = 0;
  for (char *save = NULL, *a = strtok_r(c->text, " \t", &save); a && n < ARGS_MAX; a = strtok_r(NULL, " \t", &save))
    c->argv[n++] = a;
  if (n == 0 || find_in_path(c->argv[0])) {
    snprintf(err, errlen, "[reward] command: '%s' is not an executable program (searched PATH)", n ? c->argv[0] : "");
    free(c);
    return 2;
  }
  c->n_workers = (int)cfg->reward.command_workers;
  c->timeout_s = cfg->reward.command_timeout_s;
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

void reward_command_close(struct reward_command *c) {
  if (!c) return;
  for (int i = 0; i < c->n_workers; i++) worker_stop(&c->w[i], NULL);
  free(c->w);
  free(c);
}

long reward_command_restarts(const struct reward_command *c) { return c ? c->restarts : 0; }

int reward_command_set_parts(struct sample *s, const char *parts) {
  cJSON *o = parts ? cJSON_Parse(parts) : NULL;
  int rc = 0;
  for (const cJSON *v = o ? o->child : NULL; v && !rc; v = v->next) {
    char name[160];
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !v->string) continue;
    snprintf(name, sizeof name, "command.%.120s", v->string);
    rc = sample_set_part(s, name, v->valuedouble);
  }
  cJSON_Delete(o);
  return rc;
}

static int worker_start(struct reward_command *c, struct worker *w) {
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

/* The request line of item i (NUL-free JSON + newline), malloc'd; NULL out of memory. */
static char *request_line(const struct task *t, const struct task_prompt *p, const char *resp, size_t len, int id,
                          size_t *out_len) {
  cJSON *o = cJSON_CreateObject(), *meta = NULL;
  char *r = strndup(resp, len), *text = NULL, *line = NULL;
  const struct data_row *row = t->kind == TASK_JSONL ? dataset_row(t->ds, (enum task_split)p->split, p->index) : NULL;
  if (row && row->json) meta = cJSON_Parse(row->json);
  else if (!row && t->kind == TASK_COUNTDOWN && (meta = cJSON_CreateObject())) {
    double nums[TASK_MAX_NUMS];
    for (int k = 0; k < p->n_nums; k++) nums[k] = (double)p->nums[k];
    cJSON_AddItemToObject(meta, "nums", cJSON_CreateDoubleArray(nums, p->n_nums));
    cJSON_AddNumberToObject(meta, "target", (double)p->target);
  }
  if (!meta) meta = cJSON_CreateObject();
  if (o && r && meta) {
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "prompt", p->text);
    cJSON_AddStringToObject(o, "response", r);
    cJSON_AddStringToObject(o, "answer", p->answer);
    cJSON_AddItemToObject(o, "metadata", meta);
    meta = NULL;
    text = cJSON_PrintUnformatted(o);
  }
  if (text && (line = malloc(strlen(text) + 2))) {
    *out_len = (size_t)sprintf(line, "%s\n", text);
  }
  cJSON_Delete(meta);
  cJSON_Delete(o);
  free(text);
  free(r);
  return line;
}

/* Score the batch's item with the reply line: 0, or -1 with why in msg. */
static int parse_reply(const char *line, int id, double *reward, char **parts, char *msg, size_t msglen) {
  cJSON *o = cJSON_Parse(line);
  const cJSON *jid = cJSON_GetObjectItemCaseSensitive(o, "id"), *jr = cJSON_GetObjectItemCaseSensitive(o, "reward");
  const cJSON *jp = cJSON_GetObjectItemCaseSensitive(o, "parts");
  int ok = cJSON_IsObject(o) && cJSON_IsNumber(jid) && jid->valuedouble == id && cJSON_IsNumber(jr) &&
           isfinite(jr->valuedouble) && (!jp || cJSON_IsObject(jp));
  if (ok) {
    *reward = jr->valuedouble;
    if (parts && jp) *parts = cJSON_PrintUnformatted(jp);
  } else {
    snprintf(msg, msglen, "answered garbage (not {\"id\": %d, \"reward\": <finite number>, \"parts\": {...}}): "
             "'%.120s'", id, line);
  }
  cJSON_Delete(o);
  return ok ? 0 : -1;
}

/* The batch being scored. */
struct batch {
  double *reward;
  char **parts;
  long *errors;
};

/* w's request failed: scored 0, counted, printed while few, and w restarted fresh. */
static void fail(struct reward_command *c, struct worker *w, struct batch *b, const char *why) {
  int status = 0, item = w->item;
  pid_t pid = w->pid;
  worker_stop(w, &status);
  b->reward[item] = 0.0;
  (*b->errors)++;
  if (c->failures++ < PRINTED_ERRORS)
    fprintf(stderr, "rlpt: [reward] command '%s': worker pid %d, request %d: %s%s; scored 0 (reward_errors), "
            "worker restarted\n", c->argv[0], (int)pid, item, why,
            c->failures == PRINTED_ERRORS ? " (further failures are only counted)" : "");
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

/* One busy worker after poll. Returns 1 when its item ended (scored or failed). */
static int service(struct reward_command *c, struct worker *w, struct batch *b) {
  char msg[512];
  if (send_more(w)) { fail(c, w, b, "closed its stdin"); return 1; }
  int got = recv_line(w);
  if (got == -2) {
    fail(c, w, b, "answered a line longer than 1 MiB");
    return 1;
  }
  if (got < 0) {
    fail(c, w, b, w->line_len ? "the worker exited or closed its stdout in the middle of a line"
                              : "the worker exited or closed its stdout before answering");
    return 1;
  }
  if (got == 0) {
    if (clock_seconds() < w->deadline) return 0;
    snprintf(msg, sizeof msg, "no answer within [reward] command_timeout_s = %g s", c->timeout_s);
    fail(c, w, b, msg);
    return 1;
  }
  *strchr(w->line, '\n') = '\0';
  if (parse_reply(w->line, w->item, &b->reward[w->item], b->parts ? &b->parts[w->item] : NULL, msg, sizeof msg)) {
    fail(c, w, b, msg);
    return 1;
  }
  w->item = -1;
  w->line_len = 0;
  return 1;
}

/* Give idle worker w item i: 0; 1 when no worker could start (item i failed, counted); -1
 * out of memory. */
static int assign(struct reward_command *c, struct worker *w, const struct task *t, const struct task_prompt *p,
                  const char *resp, size_t len, int i, struct batch *b) {
  if (w->pid < 0 && worker_start(c, w)) {
    b->reward[i] = 0.0;
    (*b->errors)++;
    if (c->failures++ < PRINTED_ERRORS)
      fprintf(stderr, "rlpt: [reward] command '%s': cannot start a worker: %s\n", c->argv[0], strerror(errno));
    return 1;
  }
  free(w->req);
  w->req = request_line(t, p, resp, len, i, &w->req_len);
  if (!w->req) return -1;
  w->woff = 0;
  w->line_len = 0;
  w->item = i;
  w->deadline = clock_seconds() + c->timeout_s;
  return 0;
}

int reward_command_score(struct reward_command *c, const struct task *t, const struct task_prompt *const *p,
                         const char *const *resp, const size_t *len, int n, double *reward, char **parts,
                         long *errors) {
  struct batch b = {.reward = reward, .parts = parts, .errors = errors};
  struct pollfd *pfd = calloc((size_t)c->n_workers, sizeof *pfd);
  int next = 0, done = 0;
  if (!pfd) return 1;
  for (int i = 0; parts && i < n; i++) parts[i] = NULL;
  while (done < n) {
    for (int k = 0; k < c->n_workers && next < n; k++) {
      if (c->w[k].item >= 0) continue;
      int a = assign(c, &c->w[k], t, p[next], resp[next], len[next], next, &b);
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
      if (c->w[k].item >= 0) done += service(c, &c->w[k], &b);
  }
  free(pfd);
  return 0;
}
