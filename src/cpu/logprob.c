/* cpu/logprob.c: the CPU backend's next-token logprob and entropy over rows of logits,
 * model/backend.h's logprob_fwd and logprob_bwd.
 *
 * A row is one thread's: its max, then sum e^(z - max) and sum e^(z - max) (z - max)
 * with cpu/fastmath.h's exp in float and the sums in double, reduced in a fixed order;
 * lse = max + log(sum), H = lse - E[z]. The backward overwrites the row with
 * dL/dz = -gl p - ge p (lp + H), plus gl at the target. */
#include <math.h>
#include <stddef.h>

#include "cpu/fastmath.h"
#include "cpu/ops_internal.h"
#include "cpu/simd.h"

struct logprob_args {
  float *logprob, *entropy, *lse, *logits;
  const float *logits_in, *lse_in, *entropy_in, *dlogprob, *dentropy;
  const int *targets;
  int V;
};

/* One row's max, sum e^(z-mx) and sum e^(z-mx) (z-mx): the sums in double, in
 * eight lanes plus the tail, reduced in a fixed order (the row is one thread's). */
struct lse_sums {
  float mx;
  double sum, sz;
};

#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static double lp_hsum4d(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

CPU_AVX2 static struct lse_sums lse_sums_avx2(const float *z, int V) {
  int V8 = V & ~7;
  __m256 m8 = _mm256_set1_ps(-INFINITY);
  for (int j = 0; j < V8; j += 8) m8 = _mm256_max_ps(_mm256_loadu_ps(z + j), m8);
  float m[8], mx = -INFINITY;
  _mm256_storeu_ps(m, m8);
  for (int l = 0; l < 8; l++) mx = m[l] > mx ? m[l] : mx;
  for (int j = V8; j < V; j++) mx = z[j] > mx ? z[j] : mx;
  __m256 mv = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, t0 = s0, t1 = s0;
  for (int j = 0; j < V8; j += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(z + j), mv), e = fast_exp8(x);
    __m256d e0 = _mm256_cvtps_pd(_mm256_castps256_ps128(e));
    __m256d e1 = _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1));
    s0 = _mm256_add_pd(s0, e0), s1 = _mm256_add_pd(s1, e1);
    t0 = _mm256_add_pd(t0, _mm256_mul_pd(e0, _mm256_cvtps_pd(_mm256_castps256_ps128(x))));
    t1 = _mm256_add_pd(t1, _mm256_mul_pd(e1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  }
  struct lse_sums r = {.mx = mx, .sum = lp_hsum4d(_mm256_add_pd(s0, s1)),
                       .sz = lp_hsum4d(_mm256_add_pd(t0, t1))};
  for (int j = V8; j < V; j++) {
    float x = z[j] - mx, e = fast_expf(x);
    r.sum += e;
    r.sz += (double)e * x;
  }
  return r;
}
#endif

static struct lse_sums lse_sums_plain(const float *z, int V) {
  struct lse_sums r = {.mx = z[0], .sum = 0.0, .sz = 0.0};
  for (int j = 1; j < V; j++) r.mx = z[j] > r.mx ? z[j] : r.mx;
  for (int j = 0; j < V; j++) {
    float x = z[j] - r.mx, e = fast_expf(x);
    r.sum += e;
    r.sz += (double)e * x;
  }
  return r;
}

static void logprob_fwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V, avx2 = cpu_have_avx2();
  for (size_t r = r0; r < r1; r++) {
    const float *z = a->logits_in + r * V;
    struct lse_sums q;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2) q = lse_sums_avx2(z, V);
    else
#endif
      q = lse_sums_plain(z, V);
    (void)avx2;
    double l = log(q.sum);
    a->lse[r] = (float)(q.mx + l);
    a->entropy[r] = (float)(l - q.sz / q.sum); /* H = lse - E[z] */
    a->logprob[r] = a->targets[r] >= 0 ? z[a->targets[r]] - a->lse[r] : 0.0f;
  }
}

void cpu_logprob_fwd(float *logprob, float *entropy, float *lse, const float *logits,
                     const int *targets, int R, int V) {
  struct logprob_args a = {.logprob = logprob, .entropy = entropy, .lse = lse,
                           .logits_in = logits, .targets = targets, .V = V};
  par_for((size_t)R, (size_t)V * 8, logprob_fwd_rows, &a);
}

/* z[j] <- -gl p_j - ge p_j (lp_j + H), lp_j = z[j] - l, p_j = e^lp_j: the AVX2
 * loop and the scalar tail compute the same expression. */
#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static int logprob_grad_avx2(float *z, int V, float l, float gl, float ge, float H) {
  __m256 lv = _mm256_set1_ps(l), ngl = _mm256_set1_ps(-gl), gev = _mm256_set1_ps(ge);
  __m256 Hv = _mm256_set1_ps(H);
  int j = 0;
  for (; j + 8 <= V; j += 8) {
    __m256 lp = _mm256_sub_ps(_mm256_loadu_ps(z + j), lv), pj = fast_exp8(lp);
    __m256 t = _mm256_mul_ps(_mm256_mul_ps(gev, pj), _mm256_add_ps(lp, Hv));
    _mm256_storeu_ps(z + j, _mm256_sub_ps(_mm256_mul_ps(ngl, pj), t));
  }
  return j;
}
#endif

static void logprob_bwd_rows(void *p, size_t r0, size_t r1) {
  const struct logprob_args *a = p;
  int V = a->V, avx2 = cpu_have_avx2();
  for (size_t r = r0; r < r1; r++) {
    float *z = a->logits + r * V;
    int tg = a->targets[r], j = 0;
    float gl = (a->dlogprob && tg >= 0) ? a->dlogprob[r] : 0.0f;
    float ge = a->dentropy ? a->dentropy[r] : 0.0f, H = a->entropy_in[r], l = a->lse_in[r];
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2) j = logprob_grad_avx2(z, V, l, gl, ge, H);
#endif
    (void)avx2;
    for (; j < V; j++) {
      float lp = z[j] - l, pj = fast_expf(lp);
      z[j] = -gl * pj - ge * pj * (lp + H);
    }
    if (tg >= 0) z[tg] += gl;
  }
}

void cpu_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                     const float *dlogprob, const float *dentropy, int R, int V) {
  struct logprob_args a = {.logits = logits, .lse_in = lse, .entropy_in = entropy,
                           .dlogprob = dlogprob, .dentropy = dentropy, .targets = targets, .V = V};
  par_for((size_t)R, (size_t)V * 8, logprob_bwd_rows, &a);
}

