/* test_sandbox.c: hostile programs in the sandbox (isolation = bwrap), all in one pool run
 * of 2 workers, each bounded to 2 s of wall clock: a fork bomb, an endless loop, unbounded
 * allocation, endless output, writes outside the working directory, reads of host files,
 * network connections, signals to the parent and to every process, and children left
 * running; beside the fork bomb a program that forks 8 children must succeed (each
 * sandbox's process limit is its own). Each hostile one must end contained and not ok; afterwards the host must be unchanged (no
 * file written, the listener and a sentinel process untouched, no tagged process left) and
 * a good program still runs. Skips (77) where bwrap cannot isolate. */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "testutil.h"

enum { BOMB, FORKS, LOOP, ALLOC, FLOOD, WRITE_OUT, READ_HOST, NET, SIGNALS, ORPHANS, GOOD, NCASES };
static const char *const names[NCASES] = {"fork bomb", "forks beside it", "endless loop", "unbounded allocation", "endless output",
                                          "write outside", "read host files", "network", "signals",
                                          "children left running", "good program"};

static char tag[64], escape_path[320], readme[512];
static char programs[NCASES][2048];

/* Processes whose command line holds the tag (the hostile programs re-exec with it). */
static int tagged_processes(void) {
  DIR *d = opendir("/proc");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], buf[4096];
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : 0;
    if (fd >= 0) close(fd);
    for (ssize_t i = 0; i < len; i++) if (!buf[i]) buf[i] = ' ';
    if (len > 0) { buf[len] = '\0'; n += strstr(buf, tag) != NULL; }
  }
  if (d) closedir(d);
  return n;
}

static void make_programs(int port) {
  const char *retag = "import os, sys\nif len(sys.argv) < 2:\n    os.execv(sys.executable, [sys.executable, '/program', '%s'])\n";
  char head[512];
  snprintf(head, sizeof head, retag, tag);
  snprintf(programs[BOMB], 2048, "%swhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", head);
  /* runs beside the bomb: its process limit is its own, not shared with the bomb's */
  snprintf(programs[FORKS], 2048, "import os, time\ntime.sleep(0.5)\npids = []\nfor _ in range(8):\n"
           "    p = os.fork()\n    if p == 0:\n        os._exit(0)\n    pids.append(p)\n"
           "print(sum(os.waitpid(p, 0)[1] == 0 for p in pids))\n");
  snprintf(programs[LOOP], 2048, "while True:\n    pass\n");
  snprintf(programs[ALLOC], 2048, "x = []\nwhile True:\n    x.append(bytearray(10**7))\n");
  snprintf(programs[FLOOD], 2048, "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n");
  snprintf(programs[WRITE_OUT], 2048,
           "import os\nfor p in ['%s', '/usr/rlpt_escape', '../rlpt_escape', '/rlpt_escape']:\n"
           "    try:\n        open(p, 'w').write('escaped')\n        print('wrote', p)\n"
           "    except OSError as e:\n        print('refused', p, e)\n"
           "open('big', 'wb').write(b'x' * (8 << 20))\n", escape_path);
  snprintf(programs[READ_HOST], 2048,
           "for p in ['/etc/passwd', '%s', '/proc/1/environ']:\n"
           "    try:\n        print(open(p).read())\n    except OSError as e:\n        print('refused', p, e)\n"
           "raise SystemExit(1)\n", readme);
  snprintf(programs[NET], 2048,
           "import socket\nfor host, port in [('127.0.0.1', %d), ('1.1.1.1', 53)]:\n"
           "    s = socket.socket()\n    s.settimeout(1)\n"
           "    try:\n        s.connect((host, port))\n        print('CONNECTED', host)\n"
           "    except OSError as e:\n        print('refused', host, e)\n"
           "raise SystemExit(1)\n", port);
  snprintf(programs[SIGNALS], 2048,
           "import os, signal\nfor pid in [os.getppid(), -1, 1]:\n"
           "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as e:\n        print('refused', pid, e)\n"
           "raise SystemExit(1)\n");
  snprintf(programs[ORPHANS], 2048,
           "%sif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        import time\n"
           "        time.sleep(60)\n    os._exit(0)\nprint('parent done')\n", head);
  snprintf(programs[GOOD], 2048, "import sys\nprint('echo:', sys.stdin.read())\n");
}

/* A TCP listener on 127.0.0.1 for the network case; its port. */
static int listen_local(int *port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 4) ||
      getsockname(s, (struct sockaddr *)&a, &len)) return -1;
  *port = ntohs(a.sin_port);
  return s;
}

static void check_contained(const struct sandbox_job *j) {
  CHECK(j->wall_s < 3.5);
  CHECK(j->out_len <= 16 << 10 && j->err_len <= 16 << 10);
}

static void check_cases(struct sandbox_job *j) {
  for (int c = 0; c < NCASES; c++) {
    printf("%-22s %-12s exit %4d  wall %.2f s  out %zu B\n", names[c], sandbox_status_name(j[c].status),
           j[c].exit_code, j[c].wall_s, j[c].out_len);
    check_contained(&j[c]);
    if (c != GOOD && c != ORPHANS && c != FORKS) CHECK_MSG(!sandbox_job_ok(&j[c]), "%s passed", names[c]);
  }
  CHECK(j[BOMB].status == SANDBOX_TIMEOUT || j[BOMB].status == SANDBOX_CPU_LIMIT);
  CHECK_MSG(sandbox_job_ok(&j[FORKS]) && !strcmp(j[FORKS].out, "8\n"), "%s %s", j[FORKS].out, j[FORKS].err);
  CHECK(j[LOOP].status == SANDBOX_CPU_LIMIT || j[LOOP].status == SANDBOX_TIMEOUT);
  CHECK(j[FLOOD].status == SANDBOX_OUTPUT_LIMIT);
  CHECK(j[ALLOC].status == SANDBOX_EXITED && strstr(j[ALLOC].err, "MemoryError"));
  CHECK_MSG(!strstr(j[WRITE_OUT].out, "wrote"), "%s", j[WRITE_OUT].out);
  CHECK(!strstr(j[READ_HOST].out, "root:") && !strstr(j[READ_HOST].out, "# rlpt"));
  CHECK(strstr(j[READ_HOST].out, "refused /etc/passwd") != NULL);
  CHECK_MSG(!strstr(j[NET].out, "CONNECTED") && strstr(j[NET].out, "refused 127.0.0.1"), "%s", j[NET].out);
  CHECK(sandbox_job_ok(&j[ORPHANS]) && strstr(j[ORPHANS].out, "parent done"));
  CHECK(sandbox_job_ok(&j[GOOD]) && !strcmp(j[GOOD].out, "echo: hi there\n"));
}

/* After the run: nothing written, nobody connected, the sentinel alive, no tagged process. */
static void check_host(int listener, pid_t sentinel) {
  CHECK_MSG(access(escape_path, F_OK) != 0, "%s exists", escape_path);
  CHECK(access("/usr/rlpt_escape", F_OK) != 0 && access("/rlpt_escape", F_OK) != 0);
  CHECK(accept(listener, NULL, NULL) < 0);
  CHECK(kill(sentinel, 0) == 0 && waitpid(sentinel, NULL, WNOHANG) == 0);
  int left = -1;
  for (int i = 0; i < 50 && (left = tagged_processes()) != 0; i++) usleep(20000);
  CHECK_MSG(left == 0, "%d tagged processes left", left);
}

int main(void) {
  struct sandbox sb;
  struct sandbox_opts o = {.isolation = SANDBOX_ISOLATION_BWRAP, .interpreter = "python3", .timeout_s = 2,
                           .cpu_s = 1, .memory_mb = 256, .output_kb = 16, .file_mb = 1, .processes = 16};
  char err[1024];
  if (sandbox_init(&sb, &o, err, sizeof err)) {
    printf("test_sandbox: skipped: %s\n", err);
    return 77;
  }
  snprintf(tag, sizeof tag, "rlpt-sandbox-tag-%d", (int)getpid());
  const char *src = getenv("RLPT_SOURCE_DIR");
  snprintf(readme, sizeof readme, "%s/README.md", src ? src : "..");
  char cwd[256];
  snprintf(escape_path, sizeof escape_path, "%s/rlpt_escape_%d", getcwd(cwd, sizeof cwd) ? cwd : "/tmp",
           (int)getpid());
  int port = 0, listener = listen_local(&port);
  CHECK(listener >= 0);
  pid_t sentinel = fork();
  if (sentinel == 0) { pause(); _exit(0); }
  make_programs(port);
  struct sandbox_job j[NCASES];
  memset(j, 0, sizeof j);
  for (int c = 0; c < NCASES; c++) j[c] = (struct sandbox_job){.program = programs[c], .program_len = strlen(programs[c])};
  j[GOOD].input = "hi there";
  j[GOOD].input_len = 8;
  CHECK(sandbox_run(&sb, j, NCASES, 2) == 0);
  check_cases(j);
  check_host(listener, sentinel);
  for (int c = 0; c < NCASES; c++) sandbox_job_clear(&j[c]);
  struct sandbox_job again = {.program = programs[GOOD], .program_len = strlen(programs[GOOD])};
  CHECK(sandbox_run(&sb, &again, 1, 1) == 0 && sandbox_job_ok(&again));  /* the run goes on */
  sandbox_job_clear(&again);
  kill(sentinel, SIGKILL);
  waitpid(sentinel, NULL, 0);
  close(listener);
  return TEST_RESULT("test_sandbox");
}
