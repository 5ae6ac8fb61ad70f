/* model/tp_logprob.c: the vocabulary-parallel next-token logprob and entropy (model/tp.h).
 *
 * Each rank holds the logits of its vocabulary slice. Per row: the slice's max, all-reduced
 * (MPI_MAX) to the row's max M; then the slice's sum e^(z - M), sum e^(z - M) (z - M) and
 * the target's logit (0 outside the slice), summed over the group in double: lse = M +
 * log(sum), H = lse - E[z], logprob = z_target - lse, as cpu/logprob.c computes them over
 * a whole row (the same fast_expf; the sums' order differs). The backward needs no
 * communication: dL/dz_j = -gl p_j - ge p_j (lp_j + H), plus gl at the target. */
#include <math.h>
#include <stdlib.h>

#include "cpu/fastmath.h"
#include "model/tp.h"
#include "util/error.h"

void tp_logprob_fwd(const struct tp_group *g, float *logprob, float *entropy, float *lse,
                    const float *logits, const int *targets, int R, int V, int lo) {
  float *mx = malloc(sizeof(float) * (size_t)(R > 0 ? R : 1));
  double *s = malloc(sizeof(double) * 3 * (size_t)(R > 0 ? R : 1));
  if (!mx || !s) die_local("out of memory for the vocabulary-parallel logprob (%d rows)", R);
  for (int r = 0; r < R; r++) {
    const float *z = logits + (size_t)r * V;
    mx[r] = z[0];
    for (int j = 1; j < V; j++) mx[r] = z[j] > mx[r] ? z[j] : mx[r];
  }
  tp_max_floats(g, mx, R);
  for (int r = 0; r < R; r++) {
    const float *z = logits + (size_t)r * V;
    double sum = 0.0, sz = 0.0;
    for (int j = 0; j < V; j++) {
      float x = z[j] - mx[r], e = fast_expf(x);
      sum += e;
      sz += (double)e * x;
    }
    int tg = targets[r] - lo;
    s[3 * r] = sum;
    s[3 * r + 1] = sz;
    s[3 * r + 2] = targets[r] >= 0 && tg >= 0 && tg < V ? z[tg] : 0.0;
  }
  tp_sum_doubles(g, s, 3 * R);
  for (int r = 0; r < R; r++) {
    double l = log(s[3 * r]);
    lse[r] = (float)(mx[r] + l);
    entropy[r] = (float)(l - s[3 * r + 1] / s[3 * r]);
    logprob[r] = targets[r] >= 0 ? (float)s[3 * r + 2] - lse[r] : 0.0f;
  }
  free(mx);
  free(s);
}

void tp_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                    const float *dlogprob, const float *dentropy, int R, int V, int lo) {
  for (int r = 0; r < R; r++) {
    float *z = logits + (size_t)r * V;
    int tg = targets[r];
    float gl = (dlogprob && tg >= 0) ? dlogprob[r] : 0.0f;
    float ge = dentropy ? dentropy[r] : 0.0f, H = entropy[r], l = lse[r];
    for (int j = 0; j < V; j++) {
      float lp = z[j] - l, pj = fast_expf(lp);
      z[j] = -gl * pj - ge * pj * (lp + H);
    }
    if (tg >= lo && tg < lo + V) z[tg - lo] += gl;
  }
}
