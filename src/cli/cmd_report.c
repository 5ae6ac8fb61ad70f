/* cli/cmd_report.c: `rlpt report RUN_DIR|metrics.jsonl --out FILE.html [--band LO,HI]`: the
 * arguments, then one self-contained HTML report of a run (monitor/report.h). */
#include <stdio.h>
#include <string.h>

#include "monitor/doctor.h"
#include "monitor/report.h"

static int report_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt report RUN_DIR|metrics.jsonl --out FILE.html [--band LO,HI]\n"
          "  one self-contained HTML file (inline SVG plots, no script, no network): reward, KL,\n"
          "  lengths, clipping, gradient norm, lag, throughput, phase times, evals, SFT loss, the\n"
          "  doctor's findings and the deck; --band as in rlpt doctor\n");
  return rc;
}

int cmd_report(int argc, char **argv) {
  struct report_args a = {.target = NULL};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return report_usage(0);
    if (!strcmp(o, "--out") && i + 1 < argc) a.out = argv[++i];
    else if (!strcmp(o, "--band") && i + 1 < argc) {
      if (doctor_band_parse(argv[++i], a.band)) {
        fprintf(stderr, "rlpt: report: --band '%s': expected LO,HI with 0 <= LO <= HI <= 1\n", argv[i]);
        return 2;
      }
      a.has_band = 1;
    } else if (o[0] != '-' && !a.target) a.target = o;
    else {
      fprintf(stderr, "rlpt: report: unexpected argument '%s'\n", o);
      return report_usage(2);
    }
  }
  if (!a.target || !a.out) {
    fprintf(stderr, "rlpt: report: RUN_DIR (or a metrics file) and --out are required\n");
    return report_usage(2);
  }
  return report_command(&a);
}
