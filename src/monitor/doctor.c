/* monitor/doctor.c: the doctor's analysis of a finished run (monitor/doctor.h): every
 * per-step check at every RL line, merged into one finding per kind, and the post-SFT band. */
#include "monitor/doctor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "monitor/checks.h"
#include "monitor/metrics_read.h"
#include "util/alloc.h"

int doctor_band_parse(const char *text, double band[2]) {
  char *end = NULL;
  band[0] = strtod(text, &end);
  if (end == text || *end != ',') return 2;
  const char *hi = end + 1;
  band[1] = strtod(hi, &end);
  if (end == hi || *end != '\0') return 2;
  return band[0] >= 0 && band[0] <= band[1] && band[1] <= 1 ? 0 : 2;
}

int doctor_load(const char *target, const double *band_opt, struct doctor_input *in, char *err,
                size_t errlen) {
  *in = (struct doctor_input){.band = {DOCTOR_BAND_LO, DOCTOR_BAND_HI}, .band_src = BAND_DEFAULT};
  run_metrics_init(&in->m);
  if (run_dir_open(target, &in->rd, err, errlen)) return 2;
  if (band_opt) {
    in->band[0] = band_opt[0];
    in->band[1] = band_opt[1];
    in->band_src = BAND_OPTION;
  } else if (in->rd.cfg && in->rd.cfg->sft.target_band.n == 2) {
    in->band[0] = in->rd.cfg->sft.target_band.v[0];
    in->band[1] = in->rd.cfg->sft.target_band.v[1];
    in->band_src = BAND_DECK;
  }
  return metrics_read(in->rd.metrics, &in->m, err, errlen);
}

void doctor_input_free(struct doctor_input *in) {
  run_dir_free(&in->rd);
  run_metrics_free(&in->m);
}

void doctor_band_text(const struct doctor_input *in, char *buf, size_t len) {
  if (in->band_src == BAND_OPTION) snprintf(buf, len, "from --band");
  else if (in->band_src == BAND_DECK) snprintf(buf, len, "the deck's [sft] target_band (%s)", in->rd.deck_from);
  else snprintf(buf, len, "the default band: %s; pass --band LO,HI", in->rd.deck_note);
}

/* Fold one detection (at step `step`) into the kind's finding. */
static void merge(struct finding *f, int first, enum doctor_kind k, const struct check_hit *h, long step) {
  if (first) {
    *f = (struct finding){.kind = k, .step_lo = h->step_lo, .step_hi = h->step_hi, .step_first = step,
                          .n_fired = 1, .score = h->score};
    memcpy(f->evidence, h->evidence, sizeof f->evidence);
    return;
  }
  if (h->step_lo < f->step_lo) f->step_lo = h->step_lo;
  if (h->step_hi > f->step_hi) f->step_hi = h->step_hi;
  f->n_fired++;
  if (h->score > f->score) {
    f->score = h->score;
    memcpy(f->evidence, h->evidence, sizeof f->evidence);
  }
}

/* The post-SFT eval against the band. */
static void band_check(const struct doctor_input *in, struct diagnosis *d) {
  const struct metric_rows *e = &in->m.eval;
  d->sft_pass1 = NAN;
  for (long i = 0; i < e->n; i++)
    if (rows_get(e, i, SERIES_EXTRA(SERIES_PHASE_RL)) == 0) {
      d->sft_pass1 = rows_get(e, i, SERIES_EXTRA(SERIES_PASS1));
      d->sft_step = e->step[i];
    }
  double p = d->sft_pass1;
  if (!isfinite(p) || (p >= in->band[0] && p <= in->band[1])) return;
  char src[sizeof in->rd.deck_note + 64];
  doctor_band_text(in, src, sizeof src);
  struct finding *f = &d->f[d->n++];
  *f = (struct finding){.kind = DK_SFT_BAND, .step_lo = d->sft_step, .step_hi = d->sft_step,
                        .step_first = d->sft_step, .n_fired = 1, .score = 1};
  snprintf(f->evidence, sizeof f->evidence, "post-SFT greedy pass@1 %.3f (the eval at step %ld) is %s "
           "the band [%g, %g], %.300s", p, d->sft_step, p < in->band[0] ? "below" : "above",
           in->band[0], in->band[1], src);
}

/* The check inputs with no value in any RL line (their checks cannot fire). */
static void list_not_logged(const struct metric_rows *rl, struct diagnosis *d) {
  static const char *const inputs[] = {"reward_mean", "acc", "resp_len_mean", "kl", "entropy",
                                       "pg_loss", "pg_clipfrac_low", "logprob_diff_max", "lag_mean",
                                       "drop_ratio", "gen_tok_per_s"};
  size_t o = 0;
  d->not_logged[0] = '\0';
  for (size_t i = 0; rl->n > 0 && i < sizeof inputs / sizeof inputs[0]; i++)
    if (rows_count_finite(rl, series_col_by_name(inputs[i])) == 0 && o + 32 < sizeof d->not_logged)
      o += (size_t)snprintf(d->not_logged + o, sizeof d->not_logged - o, "%s%s", o ? ", " : "", inputs[i]);
}

void doctor_diagnose(const struct doctor_input *in, struct diagnosis *d) {
  const struct metric_rows *rl = &in->m.rl;
  struct finding f[DK_COUNT];
  int fired[DK_COUNT] = {0};
  *d = (struct diagnosis){.n = 0};
  for (long t = 0; t < rl->n; t++)
    for (int k = 0; k < DK_COUNT; k++) {
      struct check_hit h;
      if (!check_at((enum doctor_kind)k, rl, t, &h)) continue;
      merge(&f[k], !fired[k], (enum doctor_kind)k, &h, rl->step[t]);
      fired[k] = 1;
    }
  for (int k = 0; k < DK_COUNT; k++)
    if (fired[k]) d->f[d->n++] = f[k];
  band_check(in, d);
  list_not_logged(rl, d);
}

struct diagnosis *doctor_open(const char *verb, const char *target, const double *band_opt,
                              struct doctor_input *in) {
  char err[2048];
  if (doctor_load(target, band_opt, in, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: %s\n", verb, err);
    doctor_input_free(in);
    return NULL;
  }
  struct diagnosis *d = malloc_check(sizeof *d);
  doctor_diagnose(in, d);
  return d;
}
