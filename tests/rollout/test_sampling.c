/* rollout/test_sampling.c: the token sampler against exact distributions.
 *
 * For fixed logits, 200000 draws (counter RNG, distinct keys) per configuration
 * (temperature 0.7 alone, with top_k 3, with top_p 0.8, with both) must pass a
 * chi-square goodness-of-fit test against the exact truncated distribution
 * computed here independently, at significance 0.001 (critical values of the
 * chi-square distribution with kept-1 degrees of freedom below); tokens outside
 * the kept set must never be drawn. Also: greedy ties, the recorded logprob
 * (= log_softmax(logits / T) over the full vocabulary, to 1e-6), edge cases. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rollout/sampling.h"
#include "testutil.h"
#include "util/rng.h"

#define V 8
#define DRAWS 200000

/* chi2 critical values at alpha = 0.001 for 1..7 degrees of freedom. */
static const double chi2_crit_001[] = { 0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322 };

static const float logits[V] = { 2.0f, 1.5f, 1.2f, 0.3f, 0.0f, -0.5f, -1.0f, 1.0f };

/* Exact distribution after temperature, top-k, top-p (independent of rollout/sampling.c: a selection
 * sort in long double). */
static void exact_dist(double T, int top_k, double top_p, double *q) {
  long double p[V], sum = 0;
  for (int i = 0; i < V; i++) sum += p[i] = expl((long double)logits[i] / T);
  for (int i = 0; i < V; i++) p[i] /= sum;
  int order[V], used[V] = { 0 };
  for (int j = 0; j < V; j++) {
    int best = -1;
    for (int i = 0; i < V; i++)
      if (!used[i] && (best < 0 || p[i] > p[best])) best = i;
    used[best] = 1;
    order[j] = best;
  }
  int k = top_k > 0 ? top_k : V;
  long double mk = 0, c = 0;
  for (int j = 0; j < k; j++) mk += p[order[j]];
  int n = 0;
  while (n < k && (n == 0 || c / mk < top_p)) c += p[order[n++]];
  memset(q, 0, V * sizeof *q);
  for (int j = 0; j < n; j++) q[order[j]] = (double)(p[order[j]] / c);
}

static void chi_square_case(const char *name, double T, int top_k, double top_p, uint32_t case_id) {
  struct sampler s;
  CHECK(sampler_init(&s, V) == 0);
  struct sampling_params sp = { .temperature = T, .top_k = top_k, .top_p = top_p };
  long count[V] = { 0 };
  for (uint32_t i = 0; i < DRAWS; i++) {
    struct rng_key key = { .seed = 2024, .stream = RNG_STREAM_TEST, .step = 0, .prompt = case_id,
                           .sample = i >> 10, .pos = i & 1023 };
    double lp;
    int tok = sampler_sample(&s, logits, &sp, rng_uniform(&key), &lp);
    CHECK(tok >= 0 && tok < V);
    if (tok >= 0 && tok < V) count[tok]++;
  }
  double q[V], chi2 = 0;
  exact_dist(T, top_k, top_p, q);
  int kept = 0;
  for (int i = 0; i < V; i++) {
    if (q[i] == 0) {
      CHECK_MSG(count[i] == 0, "%s: token %d outside the kept set drawn %ld times", name, i, count[i]);
      continue;
    }
    kept++;
    double e = q[i] * DRAWS;
    chi2 += (count[i] - e) * (count[i] - e) / e;
  }
  CHECK(kept >= 2 && kept <= V);
  CHECK_MSG(chi2 < chi2_crit_001[kept - 1], "%s: chi2 = %.3f with %d dof >= critical %.3f (alpha 0.001)",
            name, chi2, kept - 1, chi2_crit_001[kept - 1]);
  printf("%s: kept %d tokens, chi2 = %.3f (dof %d, critical %.3f at alpha 0.001)\n", name, kept, chi2,
         kept - 1, chi2_crit_001[kept - 1]);
  sampler_free(&s);
}

/* Reference log_softmax(logits / T)[tok] in long double. */
static double ref_logprob(const float *l, int n, double T, int tok) {
  long double m = -INFINITY, s = 0;
  for (int i = 0; i < n; i++) if (l[i] / T > m) m = l[i] / T;
  for (int i = 0; i < n; i++) s += expl(l[i] / T - m);
  return (double)(l[tok] / T - m - logl(s));
}

static void test_logprobs(void) {
  struct sampler s;
  CHECK(sampler_init(&s, V) == 0);
  /* Whatever truncation is on, the recorded logprob is over the full vocabulary. */
  struct sampling_params cases[] = {
    { .temperature = 0.7, .top_k = 0, .top_p = 1.0 },
    { .temperature = 0.7, .top_k = 3, .top_p = 0.8 },
    { .temperature = 1.3, .top_k = 2, .top_p = 1.0 },
    { .temperature = 0.7, .top_k = 0, .top_p = 0.5 },
  };
  for (int c = 0; c < 4; c++)
    for (int i = 0; i < 50; i++) {
      double lp, u = (i + 0.5) / 50;
      int tok = sampler_sample(&s, logits, &cases[c], u, &lp);
      CHECK(tok >= 0);
      if (tok >= 0) CHECK_NEAR(lp, ref_logprob(logits, V, cases[c].temperature, tok), 1e-6);
    }
  /* Greedy: argmax of raw logits, lowest index on ties, logprob of the raw logits. */
  float tie[5] = { 1.0f, 3.0f, 3.0f, 2.0f, -1.0f };
  struct sampler s5;
  CHECK(sampler_init(&s5, 5) == 0);
  struct sampling_params greedy = { .temperature = 0.0, .top_k = 0, .top_p = 1.0 };
  double lp;
  CHECK(sampler_sample(&s5, tie, &greedy, 0.99, &lp) == 1);
  CHECK_NEAR(lp, ref_logprob(tie, 5, 1.0, 1), 1e-6);
  CHECK(sampling_argmax(tie, 5) == 1);
  CHECK_NEAR(sampling_logprob(tie, 5, 0.5, 3), ref_logprob(tie, 5, 0.5, 3), 1e-6);
  sampler_free(&s5);
  sampler_free(&s);
}

static void test_edges(void) {
  struct sampler s;
  CHECK(sampler_init(&s, V) == 0);
  double lp;
  /* top_p = 0 keeps exactly the most probable token; top_k = 1 likewise. */
  struct sampling_params p0 = { .temperature = 0.7, .top_k = 0, .top_p = 0.0 };
  struct sampling_params k1 = { .temperature = 2.0, .top_k = 1, .top_p = 1.0 };
  for (int i = 0; i < 10; i++) {
    CHECK(sampler_sample(&s, logits, &p0, i / 10.0, &lp) == 0);
    CHECK(sampler_sample(&s, logits, &k1, i / 10.0, &lp) == 0);
  }
  /* -inf logits (masked tokens) are never drawn, even at u = 0 or u -> 1. */
  float masked[V];
  for (int i = 0; i < V; i++) masked[i] = (i == 2 || i == 5) ? 0.5f : -INFINITY;
  struct sampling_params plain = { .temperature = 1.0, .top_k = 0, .top_p = 1.0 };
  struct sampling_params trunc = { .temperature = 1.0, .top_k = 4, .top_p = 0.9 };
  double us[] = { 0.0, 0.3, 0.7, 1.0 - DBL_EPSILON };
  for (int i = 0; i < 4; i++) {
    int t1 = sampler_sample(&s, masked, &plain, us[i], &lp), t2 = sampler_sample(&s, masked, &trunc, us[i], &lp);
    CHECK(t1 == 2 || t1 == 5);
    CHECK(t2 == 2 || t2 == 5);
  }
  CHECK(sampler_sample(&s, masked, &plain, 0.0, &lp) == 2);  /* inverse CDF in index order */
  CHECK(sampler_sample(&s, masked, &plain, 0.75, &lp) == 5);
  /* NaN, or nothing finite: no token. */
  float bad[V];
  memcpy(bad, logits, sizeof bad);
  bad[3] = NAN;
  CHECK(sampler_sample(&s, bad, &plain, 0.5, &lp) == -1);
  struct sampling_params greedy0 = { .temperature = 0, .top_k = 0, .top_p = 1 };
  CHECK(sampler_sample(&s, bad, &greedy0, 0.5, &lp) == -1);
  for (int i = 0; i < V; i++) bad[i] = -INFINITY;
  CHECK(sampler_sample(&s, bad, &plain, 0.5, &lp) == -1);
  sampler_free(&s);
}

int main(void) {
  chi_square_case("T=0.7", 0.7, 0, 1.0, 1);
  chi_square_case("T=0.7 top_k=3", 0.7, 3, 1.0, 2);
  chi_square_case("T=0.7 top_p=0.8", 0.7, 0, 0.8, 3);
  chi_square_case("T=0.7 top_k=3 top_p=0.8", 0.7, 3, 0.8, 4);
  test_logprobs();
  test_edges();
  return TEST_RESULT("test_sampling");
}
