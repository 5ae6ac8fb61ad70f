/* test_sandbox_modes.c: the sandbox's set-up refusals and its weaker mode. An interpreter
 * that does not exist is refused naming [sandbox] interpreter (exit code 2), as is one whose
 * empty program does not exit 0 under bwrap (the probe; the message names rlimits_only); under
 * isolation = rlimits_only (a WARNING on stderr, checked by the test's regex) a program
 * runs with its stdin, an endless loop and an output flood are still cut off, and the
 * private working directories are removed afterwards. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/sandbox.h"
#include "testutil.h"

static int workdirs(void) {
  DIR *d = opendir("/tmp");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += !strncmp(e->d_name, "rlpt-sandbox-", 13);
  if (d) closedir(d);
  return n;
}

int main(void) {
  struct sandbox sb;
  char err[1024] = "";
  struct sandbox_opts o = {.isolation = SANDBOX_ISOLATION_BWRAP, .interpreter = "no-such-python3", .timeout_s = 2,
                           .cpu_s = 1, .memory_mb = 256, .output_kb = 16, .file_mb = 1, .processes = 16};
  CHECK(sandbox_init(&sb, &o, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[sandbox] interpreter: 'no-such-python3' is not an executable"), "%s", err);
  /* a probe that does not end with 0 is refused (what a machine refusing namespaces gives) */
  snprintf(o.interpreter, sizeof o.interpreter, "false");
  CHECK(sandbox_init(&sb, &o, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "an empty program with 'false' ended exited (exit 1)") &&
            strstr(err, "isolation = rlimits_only"), "%s", err);
  snprintf(o.interpreter, sizeof o.interpreter, "python3");
  o.isolation = SANDBOX_ISOLATION_RLIMITS_ONLY;
  int before = workdirs();
  CHECK_MSG(sandbox_init(&sb, &o, err, sizeof err) == 0, "%s", err);
  const char *good = "import sys, os\nprint(sys.stdin.read(), os.listdir('.'))\n";
  const char *loop = "while True:\n    pass\n", *flood = "while True:\n    print('x' * 4096)\n";
  struct sandbox_job j[3] = {
    {.program = good, .program_len = strlen(good), .input = "in", .input_len = 2},
    {.program = loop, .program_len = strlen(loop)},
    {.program = flood, .program_len = strlen(flood)}};
  CHECK(sandbox_run(&sb, j, 3, 2) == 0);
  CHECK_MSG(sandbox_job_ok(&j[0]) && !strcmp(j[0].out, "in ['program']\n"), "%s %s", j[0].out, j[0].err);
  CHECK(j[1].status == SANDBOX_CPU_LIMIT || j[1].status == SANDBOX_TIMEOUT);
  CHECK(j[2].status == SANDBOX_OUTPUT_LIMIT && j[2].out_len <= 16 << 10);
  for (int i = 0; i < 3; i++) {
    printf("rlimits_only job %d: %s, exit %d, %.2f s\n", i, sandbox_status_name(j[i].status), j[i].exit_code,
           j[i].wall_s);
    sandbox_job_clear(&j[i]);
  }
  CHECK_MSG(workdirs() == before, "working directories left in /tmp: %d before, %d after", before, workdirs());
  return TEST_RESULT("test_sandbox_modes");
}
