/* monitor/doctor.h: `rlpt doctor RUN_DIR|metrics.jsonl [--json] [--band LO,HI]`: the
 * troubleshooting playbook run over a run's metrics.
 *
 * Every per-step check (monitor/checks.h) runs at every RL line; a kind that fires becomes
 * one finding covering all the steps it fired at, with the evidence of its worst step. Then
 * the post-SFT eval's greedy pass@1 against the band: --band LO,HI when given, else the
 * deck's [sft] target_band (monitor/run_dir.h finds the deck), else DOCTOR_BAND_DEFAULT;
 * the output says which. Exit code 0 healthy, 1 findings, 2 bad input (one message naming
 * the file, and the line for a malformed metrics line). */
#ifndef RLPT_DOCTOR_H
#define RLPT_DOCTOR_H

#include <stdio.h>

#include "monitor/findings.h"
#include "monitor/run_dir.h"
#include "monitor/series.h"

/* A post-SFT pass@1 range GRPO learns well from, when neither --band nor a deck gives one
 * (the quickstart deck's band: mostly mixed groups). */
#define DOCTOR_BAND_LO 0.2
#define DOCTOR_BAND_HI 0.6

enum band_source { BAND_OPTION, BAND_DECK, BAND_DEFAULT };

/* What the doctor read: the run's files, its metrics and the band. */
struct doctor_input {
  struct run_dir rd;
  struct run_metrics m;
  double band[2];
  enum band_source band_src;
};

/* What it found, in kind order. */
struct diagnosis {
  struct finding f[DK_COUNT];
  int n;
  double sft_pass1;   /* greedy pass@1 of the post-SFT eval (NaN: no such line) */
  long sft_step;      /* that eval's step */
  char not_logged[256];  /* check inputs null in every RL line, comma-separated ("" = none) */
};

struct doctor_args {
  const char *target;   /* RUN_DIR or a metrics file */
  int json;
  int has_band;
  double band[2];
};

/* "LO,HI" (two numbers in [0, 1], LO <= HI) into band: 0, or 2. */
int doctor_band_parse(const char *text, double band[2]);
/* The run's files and metrics, and the band (band_opt NULL: from the deck or the default).
 * 0, or 2 with the message in err; doctor_input_free in both cases. */
int doctor_load(const char *target, const double *band_opt, struct doctor_input *in, char *err,
                size_t errlen);
void doctor_input_free(struct doctor_input *in);
/* doctor_load and doctor_diagnose for a command: the diagnosis (malloc'd; free it, and
 * doctor_input_free(in)), or NULL on bad input after printing "rlpt: VERB: message" (in
 * is freed then). */
struct diagnosis *doctor_open(const char *verb, const char *target, const double *band_opt,
                              struct doctor_input *in);
/* Every check over in's metrics into d. */
void doctor_diagnose(const struct doctor_input *in, struct diagnosis *d);
/* The band's origin in words ("the deck's [sft] target_band (PATH)", ...). */
void doctor_band_text(const struct doctor_input *in, char *buf, size_t len);

/* The findings for people, and as one JSON object (monitor/doctor_print.c). */
void doctor_print_text(FILE *f, const struct doctor_input *in, const struct diagnosis *d);
int doctor_print_json(FILE *f, const struct doctor_input *in, const struct diagnosis *d);
/* `rlpt doctor`: load, diagnose, print; returns the exit code. */
int doctor_command(const struct doctor_args *a);

#endif
