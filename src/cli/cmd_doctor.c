/* cli/cmd_doctor.c: `rlpt doctor RUN_DIR|metrics.jsonl [--json] [--band LO,HI]`: the
 * arguments, then the troubleshooting checks over a run's metrics (monitor/doctor.h). */
#include <stdio.h>
#include <string.h>

#include "monitor/doctor.h"

static int doctor_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt doctor RUN_DIR|metrics.jsonl [--json] [--band LO,HI]\n"
          "  the troubleshooting playbook over a run's metrics: each finding names the steps, the\n"
          "  evidence, the likely causes and the deck keys to change\n"
          "  --json: the findings as one JSON object; --band: the post-SFT pass@1 band (default:\n"
          "  the deck's [sft] target_band, else %g,%g)\n"
          "  exit 0 healthy, 1 findings, 2 bad input\n", DOCTOR_BAND_LO, DOCTOR_BAND_HI);
  return rc;
}

int cmd_doctor(int argc, char **argv) {
  struct doctor_args a = {.target = NULL};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return doctor_usage(0);
    if (!strcmp(o, "--json")) a.json = 1;
    else if (!strcmp(o, "--band") && i + 1 < argc) {
      if (doctor_band_parse(argv[++i], a.band)) {
        fprintf(stderr, "rlpt: doctor: --band '%s': expected LO,HI with 0 <= LO <= HI <= 1\n", argv[i]);
        return 2;
      }
      a.has_band = 1;
    } else if (o[0] != '-' && !a.target) a.target = o;
    else {
      fprintf(stderr, "rlpt: doctor: unexpected argument '%s'\n", o);
      return doctor_usage(2);
    }
  }
  if (!a.target) {
    fprintf(stderr, "rlpt: doctor: RUN_DIR or a metrics file is required\n");
    return doctor_usage(2);
  }
  return doctor_command(&a);
}
