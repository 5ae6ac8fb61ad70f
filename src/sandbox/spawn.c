/* sandbox/spawn.c: one sandboxed child: its command line (bwrap, or the interpreter alone
 * under rlimits_only), the program and stdin as memory files, the uid drop and the limits
 * set between fork and exec (sandbox/sandbox.h). Between fork and exec the child calls
 * only system calls: the parent may have threads. */
#define _GNU_SOURCE
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROGRAM_FD 3        /* bwrap reads the program from it (--ro-bind-data) */
#define NOBODY 65534
#define MAX_OPEN_FILES 64

#define SYSTEM_DIRS 6

/* The words of the child's command line, with room for the numbers and links they name. */
struct argv_buf {
  const char *a[SANDBOX_ARGS_MAX + 1];
  int n;
  char nproc[48], size[32];
  char link[SYSTEM_DIRS][PATH_MAX];
};

static void arg(struct argv_buf *b, const char *s) {
  if (b->n < SANDBOX_ARGS_MAX) b->a[b->n++] = s;
}

/* /bin, /lib, ... as the host has them: a link into /usr stays a link, a folder is bound. */
static void system_dirs(struct argv_buf *b) {
  static const char *const dirs[SYSTEM_DIRS] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
  for (int i = 0; i < SYSTEM_DIRS; i++) {
    struct stat st;
    if (lstat(dirs[i], &st)) continue;
    if (S_ISLNK(st.st_mode)) {
      ssize_t n = readlink(dirs[i], b->link[i], PATH_MAX - 1);
      if (n <= 0) continue;
      b->link[i][n] = '\0';
      arg(b, "--symlink"); arg(b, b->link[i]); arg(b, dirs[i]);
    } else if (S_ISDIR(st.st_mode)) {
      arg(b, "--ro-bind"); arg(b, dirs[i]); arg(b, dirs[i]);
    }
  }
}

static void bwrap_argv(const struct sandbox *sb, struct argv_buf *b) {
  static const char *const head[] = {
    "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
    "--disable-userns", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"};
  arg(b, sb->bwrap);
  for (size_t i = 0; i < sizeof head / sizeof *head; i++) arg(b, head[i]);
  system_dirs(b);
  if (sb->interp_root[0]) { arg(b, "--ro-bind"); arg(b, sb->interp_root); arg(b, sb->interp_root); }
  snprintf(b->size, sizeof b->size, "%ld", sb->o.file_mb << 20);
  static const char *const tail[] = {
    "--proc", "/proc", "--dev", "/dev", "--ro-bind-data", "3", "/program", "--remount-ro", "/", "--chdir", "/sandbox",
    "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/sandbox",
    "--setenv", "LANG", "C.UTF-8", "--", NULL};
  arg(b, "--size"); arg(b, b->size); arg(b, "--tmpfs"); arg(b, "/sandbox");
  for (int i = 0; tail[i]; i++) arg(b, tail[i]);
  snprintf(b->nproc, sizeof b->nproc, "--nproc=%ld", sb->o.processes);
  arg(b, sb->prlimit); arg(b, b->nproc); arg(b, "--");
}

/* The full command line: argv[0] is the program to exec. */
static void child_argv(const struct sandbox *sb, const char *program_path, struct argv_buf *b) {
  b->n = 0;
  if (sb->o.isolation == SANDBOX_ISOLATION_BWRAP) bwrap_argv(sb, b);
  arg(b, sb->interp);
  for (int i = 1; i < sb->n_interp_words; i++) arg(b, sb->interp_words[i]);
  arg(b, program_path);
  b->a[b->n] = NULL;
}

/* A memory file holding bytes, read from its start; -1 on failure. */
static int memory_file(const char *name, const char *bytes, size_t n) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  for (size_t off = 0; off < n;) {
    ssize_t w = write(fd, bytes + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { close(fd); return -1; }
    off += (size_t)w;
  }
  if (lseek(fd, 0, SEEK_SET) != 0) { close(fd); return -1; }
  return fd;
}

static void set_limit(int res, rlim_t soft, rlim_t hard) {
  struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
  setrlimit(res, &rl);
}

/* In the child: nothing but system calls, then exec; on failure a line on stderr, exit 127. */
__attribute__((noreturn))
static void child_exec(const struct sandbox *sb, const struct argv_buf *b, const char *const *envp, int in_fd,
                       int out_fd, int err_fd, int prog_fd, const char *workdir, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  /* above every target first, so that no dup2 overwrites a source */
  int src[4] = {in_fd, out_fd, err_fd, prog_fd};
  for (int i = 0; i < 4; i++) src[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD, 16) : -1;
  for (int i = 0; i < 4; i++) if (src[i] >= 0) dup2(src[i], i);
  syscall(SYS_close_range, 4, ~0U, 0);
  if (sb->drop_to_nobody && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))) _exit(126);
  long mb = sb->o.memory_mb, fmb = sb->o.file_mb;
  set_limit(RLIMIT_CPU, (rlim_t)sb->o.cpu_s, (rlim_t)sb->o.cpu_s + 1);
  set_limit(RLIMIT_AS, (rlim_t)mb << 20, (rlim_t)mb << 20);
  set_limit(RLIMIT_FSIZE, (rlim_t)fmb << 20, (rlim_t)fmb << 20);
  set_limit(RLIMIT_NOFILE, MAX_OPEN_FILES, MAX_OPEN_FILES);
  set_limit(RLIMIT_CORE, 0, 0);
  if (sb->o.isolation != SANDBOX_ISOLATION_BWRAP)
    set_limit(RLIMIT_NPROC, (rlim_t)sb->o.processes, (rlim_t)sb->o.processes);
  if (workdir[0] && chdir(workdir)) _exit(127);
  execve(b->a[0], (char *const *)b->a, (char *const *)envp);
  static const char msg[] = "rlpt sandbox: exec failed\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(127);
  _exit(127);
}

/* rlimits_only: a private working directory with the program in it (made nobody's when the
 * child drops to it). 0, or -1. */
static int make_workdir(const struct sandbox *sb, const struct sandbox_job *j, struct sandbox_child *c,
                        char *path, size_t len) {
  snprintf(c->workdir, sizeof c->workdir, "/tmp/rlpt-sandbox-XXXXXX");
  if (!mkdtemp(c->workdir)) { c->workdir[0] = '\0'; return -1; }
  snprintf(path, len, "%s/program", c->workdir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int ok = fd >= 0 && write(fd, j->program, j->program_len) == (ssize_t)j->program_len;
  if (fd >= 0) close(fd);
  if (ok && sb->drop_to_nobody) ok = chown(c->workdir, NOBODY, NOBODY) == 0;
  return ok ? 0 : -1;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)ftw;
  return flag == FTW_DP ? rmdir(p) : unlink(p);
}

void sandbox_workdir_remove(struct sandbox_child *c) {
  if (c->workdir[0]) nftw(c->workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  c->workdir[0] = '\0';
}

static int start_fail(struct sandbox_job *j, const char *what, int fds[6]) {
  snprintf(j->start_error, sizeof j->start_error, "%s: %s", what, strerror(errno));
  for (int i = 0; i < 6; i++) if (fds[i] >= 0) close(fds[i]);
  return -1;
}

int sandbox_spawn(const struct sandbox *sb, struct sandbox_job *j, struct sandbox_child *c) {
  static const char *const env_bwrap[] = {"PATH=/usr/bin:/bin", NULL};
  char path[128] = "/program", home[80];
  const char *env_plain[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", home, NULL};
  int bw = sb->o.isolation == SANDBOX_ISOLATION_BWRAP;
  int fds[6] = {-1, -1, -1, -1, -1, -1};  /* out r/w, err r/w, stdin, program */
  memset(c, 0, sizeof *c);
  c->pid = -1;
  if (pipe2(fds, O_CLOEXEC) || pipe2(fds + 2, O_CLOEXEC)) return start_fail(j, "pipe", fds);
  fds[4] = memory_file("stdin", j->input ? j->input : "", j->input ? j->input_len : 0);
  if (fds[4] < 0) return start_fail(j, "stdin memory file", fds);
  if (bw && (fds[5] = memory_file("program", j->program, j->program_len)) < 0)
    return start_fail(j, "program memory file", fds);
  if (!bw && make_workdir(sb, j, c, path, sizeof path)) {
    sandbox_workdir_remove(c);
    return start_fail(j, "working directory", fds);
  }
  snprintf(home, sizeof home, "HOME=%s", c->workdir);
  struct argv_buf b;
  child_argv(sb, path, &b);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0)
    child_exec(sb, &b, bw ? env_bwrap : env_plain, fds[4], fds[1], fds[3], fds[5], bw ? "" : c->workdir, parent);
  if (pid < 0) {
    sandbox_workdir_remove(c);
    return start_fail(j, "fork", fds);
  }
  setpgid(pid, pid);  /* also here: the group exists before the parent may kill it */
  close(fds[1]); close(fds[3]); close(fds[4]);
  if (fds[5] >= 0) close(fds[5]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  fcntl(fds[2], F_SETFL, O_NONBLOCK);
  c->pid = pid;
  c->out_fd = fds[0];
  c->err_fd = fds[2];
  return 0;
}
