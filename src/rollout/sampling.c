/* rollout/sampling.c: temperature / top-k / top-p sampling and the recorded logprob
 * (see rollout/sampling.h for the conventions and why). */
#include "rollout/sampling.h"

#include <math.h>
#include <stdlib.h>

int sampler_init(struct sampler *s, int vocab) {
  s->vocab = vocab;
  s->z = malloc((size_t)vocab * sizeof *s->z);
  s->order = malloc((size_t)vocab * sizeof *s->order);
  if (!s->z || !s->order) {
    sampler_free(s);
    return -1;
  }
  return 0;
}

void sampler_free(struct sampler *s) {
  free(s->z);
  free(s->order);
  s->z = NULL;
  s->order = NULL;
}

int sampling_argmax(const float *logits, int vocab) {
  int best = -1;
  for (int i = 0; i < vocab; i++) {
    if (isnan(logits[i])) return -1;
    if (best < 0 || logits[i] > logits[best]) best = i;  /* strict: first index wins ties */
  }
  return best;
}

/* The trainer's log-softmax arithmetic (cpu/logprob.c logprob_fwd) on zf[i] = logits[i] / T
 * rounded to float: float max, terms expf(zf - max) in float summed in double, the
 * log-sum-exp rounded to float, zf - lse in float. At T = 1 (zf = logits exactly) the
 * recorded logprob is then the same bits as the trainer's for the same logits.
 * z[i] (may be NULL) gets the terms; returns their sum and the float lse in *lse;
 * -1 when a logit is NaN or the max is not finite (all -inf, or +inf: no softmax). */
static double trainer_lse(const float *logits, int vocab, double temperature, double *z,
                          float *lse) {
  float mx = -INFINITY;
  for (int i = 0; i < vocab; i++) {
    if (isnan(logits[i])) return -1;
    float zi = (float)(logits[i] / temperature);
    mx = zi > mx ? zi : mx;
  }
  if (!isfinite(mx)) return -1;
  double sum = 0;
  for (int i = 0; i < vocab; i++) {
    float e = expf((float)(logits[i] / temperature) - mx);
    if (z) z[i] = e;
    sum += e;
  }
  *lse = (float)(mx + log(sum));
  return sum;
}

double sampling_logprob(const float *logits, int vocab, double temperature, int token) {
  if (!(temperature > 0)) temperature = 1.0;
  float lse;
  if (trainer_lse(logits, vocab, temperature, NULL, &lse) < 0) return NAN;
  return (float)(logits[token] / temperature) - lse;
}

static int ent_cmp(const void *a, const void *b) {
  const struct sampler_ent *x = a, *y = b;
  if (x->p != y->p) return x->p > y->p ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Top-k then top-p over the unnormalised probabilities z; inverse CDF with u. */
static int sample_truncated(struct sampler *s, long top_k, double top_p, double u) {
  int V = s->vocab;
  int k = (top_k > 0 && top_k < V) ? (int)top_k : V;
  for (int i = 0; i < V; i++) s->order[i] = (struct sampler_ent){ .p = s->z[i], .i = i };
  qsort(s->order, (size_t)V, sizeof *s->order, ent_cmp);
  double mass_k = 0;
  for (int j = 0; j < k; j++) mass_k += s->order[j].p;
  /* Smallest prefix with mass >= top_p * mass_k: keep j while the mass before it is < target. */
  int n = 0;
  double before = 0;
  while (n < k && (n == 0 || before < top_p * mass_k)) before += s->order[n++].p;
  double target = u * before, c = 0;
  for (int j = 0; j < n; j++) {
    c += s->order[j].p;
    if (target < c) return s->order[j].i;
  }
  return s->order[0].i;  /* u * mass rounded up to the mass: the most probable kept token */
}

int sampler_sample(struct sampler *s, const float *logits, const struct sampling_params *p,
                   double u, double *logprob) {
  int V = s->vocab;
  if (!(p->temperature > 0)) {
    int tok = sampling_argmax(logits, V);
    if (tok < 0 || !isfinite(logits[tok])) return -1;
    *logprob = sampling_logprob(logits, V, 1.0, tok);
    return tok;
  }
  float lse;
  double sum = trainer_lse(logits, V, p->temperature, s->z, &lse);
  if (sum < 0) return -1;
  int tok = -1;
  if ((p->top_k > 0 && p->top_k < V) || p->top_p < 1) {
    tok = sample_truncated(s, p->top_k, p->top_p, u);
  } else {
    double target = u * sum, c = 0;
    for (int i = 0; i < V && tok < 0; i++) {
      c += s->z[i];
      if (target < c) tok = i;
    }
    if (tok < 0) tok = sampling_argmax(logits, V);  /* rounding at u -> 1 */
  }
  *logprob = (float)(logits[tok] / p->temperature) - lse;
  return tok;
}
