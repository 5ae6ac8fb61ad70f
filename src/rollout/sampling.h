/* rollout/sampling.h: draw one token from a row of logits (temperature, top-k, top-p)
 * and report the logprob the rollout engine records for it.
 *
 * Which logprob is recorded. For T > 0 it is log_softmax(logits / T)[token] over
 * the FULL vocabulary, before top-k/top-p truncation (what veRL and vLLM record).
 * The trainer computes lp = log_softmax(logits / T) on the full vocabulary for the
 * same token, so with equal weights lp_roll == lp_old and the PPO/TIS ratio
 * starts at 1; recording the truncated (renormalised) logprob instead would bias
 * every ratio by log(kept mass). For T = 0 (greedy) it is log_softmax(logits)
 * of the raw logits. The arithmetic is the trainer's (cpu/logprob.c logprob_fwd:
 * float terms expf(z - max) summed in double, the log-sum-exp and z - lse
 * rounded to float), so at T = 1 the recorded logprob is the trainer's to the
 * bit for the same logits; the sampling probabilities are those same terms.
 *
 * Truncation order (vLLM, HF): top-k first, then top-p over the renormalised top-k
 * probabilities sorted by decreasing probability (ties: lower index first),
 * keeping the smallest prefix whose mass is >= top_p and always at least one
 * token. The kept probabilities are renormalised and one uniform u in [0, 1)
 * picks the token by inverse CDF. Cost: O(V) without truncation (inverse CDF in
 * index order), O(V log V) with it (one sort). */
#ifndef RLPT_SAMPLING_H
#define RLPT_SAMPLING_H

struct sampling_params {
  double temperature;  /* 0 = greedy */
  long top_k;          /* 0 or >= V = off */
  double top_p;        /* 1 = off; 0 keeps only the most probable token */
};

/* Scratch for one vocabulary size, reused across calls (no allocation per token). */
struct sampler {
  int vocab;
  double *z;           /* [V] scaled logits, later probabilities */
  struct sampler_ent { double p; int i; } *order;  /* [V] sort buffer */
};

/* 0 ok, -1 out of memory. */
int sampler_init(struct sampler *s, int vocab);
void sampler_free(struct sampler *s);

/* Sample from logits[V] (V = s->vocab) with uniform u in [0, 1). Returns the token,
 * or -1 when a logit is NaN or every logit is -inf (nothing to sample). *logprob
 * receives the recorded logprob (see the top of this file). */
int sampler_sample(struct sampler *s, const float *logits, const struct sampling_params *p,
                   double u, double *logprob);

/* Greedy token: the argmax, lowest index on ties; -1 when a logit is NaN. */
int sampling_argmax(const float *logits, int vocab);
/* log_softmax(logits / T)[token] over all V logits, in the trainer's arithmetic (above);
 * T <= 0 means 1. NaN when no softmax exists (a NaN logit, or a non-finite max). */
double sampling_logprob(const float *logits, int vocab, double temperature, int token);

#endif
