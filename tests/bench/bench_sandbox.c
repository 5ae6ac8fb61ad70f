/* bench_sandbox.c: sandbox executions per second on this machine, the figure the code
 * verifier's reward ranks get (sandbox_exec_per_s): N jobs through sandbox_run at 1, 2, 4
 * and 8 workers, for an empty program and for a HumanEval-sized one (a function, a check
 * of 8 asserts, the marker line), under bwrap and under rlimits_only (the isolation's
 * cost). Prints figures only. Usage: bench_sandbox [JOBS] (default 64). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox.h"
#include "util/clock.h"

static const char *const humaneval_like =
  "from typing import List\n\ndef has_close(numbers: List[float], threshold: float) -> bool:\n"
  "    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n"
  "            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n\n"
  "def check(candidate):\n    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
  "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
  "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n"
  "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) == False\n"
  "    assert candidate([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True\n"
  "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True\n"
  "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False\n"
  "    assert candidate([], 0.5) == False\n\ncheck(has_close)\nprint('0123456789abcdef')\n";

/* Executions per second of n jobs of program at `workers`, or -1 when one failed. */
static double rate(const struct sandbox *sb, const char *program, int n, int workers) {
  struct sandbox_job *j = calloc((size_t)n, sizeof *j);
  for (int i = 0; i < n; i++) j[i] = (struct sandbox_job){.program = program, .program_len = strlen(program)};
  double t0 = clock_seconds();
  int rc = sandbox_run(sb, j, n, workers);
  double dt = clock_seconds() - t0;
  int ok = !rc;
  for (int i = 0; i < n; i++) { ok &= sandbox_job_ok(&j[i]); sandbox_job_clear(&j[i]); }
  free(j);
  return ok ? n / dt : -1.0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 64;
  static const int workers[] = {1, 2, 4, 8};
  static const char *const iso_name[] = {"bwrap", "rlimits_only"};
  printf("bench_sandbox: %d executions per cell, executions/s (python3; timeout 10 s, 512 MiB, 16 processes)\n", n);
  printf("%-13s %-15s %9s %9s %9s %9s\n", "isolation", "program", "1 worker", "2", "4", "8");
  for (int iso = 0; iso < 2; iso++) {
    struct sandbox sb;
    struct sandbox_opts o = {.isolation = iso, .interpreter = "python3", .timeout_s = 10, .cpu_s = 5,
                             .memory_mb = 512, .output_kb = 64, .file_mb = 16, .processes = 16};
    char err[1024];
    if (sandbox_init(&sb, &o, err, sizeof err)) { printf("%-13s skipped: %s\n", iso_name[iso], err); continue; }
    for (int p = 0; p < 2; p++) {
      printf("%-13s %-15s", iso_name[iso], p ? "humaneval-like" : "empty");
      for (int w = 0; w < 4; w++) printf(" %9.1f", rate(&sb, p ? humaneval_like : "", n, workers[w]));
      printf("\n");
    }
  }
  return 0;
}
