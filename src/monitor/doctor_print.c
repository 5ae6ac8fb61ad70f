/* monitor/doctor_print.c: the doctor's findings as text and as JSON, and the `rlpt doctor`
 * command (monitor/doctor.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "monitor/doctor.h"

static void print_header(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  const struct metric_rows *rl = &in->m.rl;
  fprintf(f, "doctor: %s: %ld RL steps", in->rd.metrics, rl->n);
  if (rl->n) fprintf(f, " (%ld-%ld)", rl->step[0], rl->step[rl->n - 1]);
  fprintf(f, ", %ld SFT steps, %ld evals; deck: %s\n", in->m.sft.n, in->m.eval.n,
          in->rd.cfg ? in->rd.deck_from : in->rd.deck_note);
  char band[sizeof in->rd.deck_note + 64];
  doctor_band_text(in, band, sizeof band);
  if (isfinite(d->sft_pass1))
    fprintf(f, "doctor: post-SFT greedy pass@1 %.3f (eval at step %ld); band [%g, %g], %s\n",
            d->sft_pass1, d->sft_step, in->band[0], in->band[1], band);
  else
    fprintf(f, "doctor: no post-SFT eval line: the band [%g, %g] is not checked\n", in->band[0],
            in->band[1]);
  if (d->not_logged[0]) fprintf(f, "doctor: null in every RL line, so not checked: %s\n", d->not_logged);
}

void doctor_print_text(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  print_header(f, in, d);
  if (d->n == 0) {
    fprintf(f, "doctor: healthy: none of the %d checks found anything\n", DK_COUNT);
    return;
  }
  fprintf(f, "doctor: %d finding%s\n", d->n, d->n == 1 ? "" : "s");
  for (int i = 0; i < d->n; i++) {
    const struct finding *x = &d->f[i];
    const struct finding_kind *k = &finding_kinds[x->kind];
    char steps[64];
    fprintf(f, "\n[%s] %s: %s (first seen at step %ld)\n", k->name, k->title,
            finding_steps(x, steps, sizeof steps), x->step_first);
    fprintf(f, "  evidence: %s\n  likely causes: %s\n  change: %s\n", x->evidence, k->causes, k->advice);
  }
}

static cJSON *finding_json(const struct finding *x) {
  const struct finding_kind *k = &finding_kinds[x->kind];
  cJSON *o = cJSON_CreateObject(), *keys = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "kind", k->name);
  cJSON_AddStringToObject(o, "title", k->title);
  cJSON_AddNumberToObject(o, "step_lo", (double)x->step_lo);
  cJSON_AddNumberToObject(o, "step_hi", (double)x->step_hi);
  cJSON_AddNumberToObject(o, "step_first", (double)x->step_first);
  cJSON_AddNumberToObject(o, "n_fired", (double)x->n_fired);
  cJSON_AddStringToObject(o, "evidence", x->evidence);
  cJSON_AddStringToObject(o, "causes", k->causes);
  cJSON_AddStringToObject(o, "advice", k->advice);
  for (int j = 0; j < FINDING_KEYS_MAX && k->keys[j]; j++)
    cJSON_AddItemToArray(keys, cJSON_CreateString(k->keys[j]));
  cJSON_AddItemToObject(o, "keys", keys);
  return o;
}

static cJSON *band_json(const struct doctor_input *in) {
  static const char *const src[] = {[BAND_OPTION] = "option", [BAND_DECK] = "deck", [BAND_DEFAULT] = "default"};
  cJSON *b = cJSON_CreateObject();
  cJSON_AddNumberToObject(b, "lo", in->band[0]);
  cJSON_AddNumberToObject(b, "hi", in->band[1]);
  cJSON_AddStringToObject(b, "source", src[in->band_src]);
  return b;
}

static void add_num_or_null(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

int doctor_print_json(FILE *f, const struct doctor_input *in, const struct diagnosis *d) {
  cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "metrics", in->rd.metrics);
  if (in->rd.cfg) cJSON_AddStringToObject(o, "deck", in->rd.deck_from);
  else cJSON_AddNullToObject(o, "deck");
  cJSON_AddNumberToObject(o, "rl_steps", (double)in->m.rl.n);
  cJSON_AddNumberToObject(o, "sft_steps", (double)in->m.sft.n);
  cJSON_AddNumberToObject(o, "evals", (double)in->m.eval.n);
  add_num_or_null(o, "post_sft_pass1", d->sft_pass1);
  cJSON_AddItemToObject(o, "band", band_json(in));
  cJSON_AddStringToObject(o, "not_logged", d->not_logged);
  cJSON_AddBoolToObject(o, "healthy", d->n == 0);
  for (int i = 0; i < d->n; i++) cJSON_AddItemToArray(arr, finding_json(&d->f[i]));
  cJSON_AddItemToObject(o, "findings", arr);
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  if (!s) return -1;
  int rc = fprintf(f, "%s\n", s) < 0 ? -1 : 0;
  cJSON_free(s);
  return rc;
}

int doctor_command(const struct doctor_args *a) {
  struct doctor_input in;
  struct diagnosis *d = doctor_open("doctor", a->target, a->has_band ? a->band : NULL, &in);
  if (!d) return 2;
  int rc = d->n ? 1 : 0;
  if (!a->json) doctor_print_text(stdout, &in, d);
  else if (doctor_print_json(stdout, &in, d)) rc = 1, fprintf(stderr, "rlpt: doctor: out of memory\n");
  free(d);
  doctor_input_free(&in);
  return rc;
}
