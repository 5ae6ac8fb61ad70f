/* cpu/attention.c: the CPU backend's causal grouped-query attention, model/backend.h's
 * attention_fwd, attention_paged_fwd and attention_bwd.
 *
 * The forward runs one query row (or two adjacent ones, the same bits) at a time
 * with a fixed order, so a query's output is the same bits whether it came in a
 * one-row decode step, against keys read in place from a paged KV cache, or in the
 * trainer's packed batch: scores in the dot-product order of cpu/rowinv.h, softmax
 * over keys 0..pos, and out = sum_j p_j v_j over j ascending. Rows of one (sequence,
 * head) pair share a thread. The backward recomputes the probabilities from the saved
 * log-sum-exp (no T^2 storage) with cpu_matmul's products, a block of query rows at a
 * time. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/fastmath.h"
#include "cpu/ops_internal.h"
#include "cpu/rowinv.h"
#include "cpu/simd.h"
#include "model/backend.h"
#include "util/alloc.h"

/* ---- exp and max over a row ---------------------------------------------- */

/* x[j] = exp(x[j] - m) for j < n, eight at a time where AVX2 is there; the tail
 * (and other CPUs) take fast_expf, the same bits as a lane of fast_exp8. */
#if defined(__x86_64__) && defined(__GNUC__)
CPU_AVX2 static int exp_shift_avx2(float *x, int n, float m) {
  __m256 mv = _mm256_set1_ps(m);
  int j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(x + j, fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv)));
  if (j < n) { /* the tail through a padded vector: the same bits as fast_expf */
    float t[8] = {0};
    memcpy(t, x + j, sizeof(float) * (size_t)(n - j));
    _mm256_storeu_ps(t, fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(t), mv)));
    memcpy(x + j, t, sizeof(float) * (size_t)(n - j));
  }
  return n;
}

/* max(-inf, x[0..n)) eight lanes at a time (the plain loop's ties aside, the same
 * value: a max does not depend on the order). A plain loop carries its running max
 * through memory, a quarter of the attention forward. */
CPU_AVX2 static float row_max_avx2(const float *x, int n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + j), m);
  float l[8], r = -INFINITY;
  _mm256_storeu_ps(l, m);
  for (int c = 0; c < 8; c++) r = l[c] > r ? l[c] : r;
  for (; j < n; j++) r = x[j] > r ? x[j] : r;
  return r;
}
#endif

static void exp_shift_row(float *x, int n, float m, int avx2) {
  int j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) j = exp_shift_avx2(x, n, m);
#endif
  (void)avx2;
  for (; j < n; j++) x[j] = fast_expf(x[j] - m);
}

/* ---- forward ------------------------------------------------------------- */

/* Where one sequence's key/value rows of one head live: row j at k/v + off(j). */
struct attn_src {
  const float *k, *v;
  const int *table; /* NULL: contiguous rows of stride ks; else a paged block table */
  int block_size, ks;
  size_t block_stride;
};

static inline size_t attn_off(const struct attn_src *s, int j) {
  if (!s->table) return (size_t)j * s->ks;
  return (size_t)s->table[j / s->block_size] * s->block_stride +
         (size_t)(j % s->block_size) * s->ks;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* S[j] = scale * dot(q, k_j) for j = 0..last: rowinv_dot_avx2's order, four keys reduced at once. */
CPU_AVX2 static void attn_scores_avx2(float *S, const float *q, const struct attn_src *s, int last,
                                     int D, float scale) {
  int j = 0;
  /* eight keys: eight independent FMA chains (four leave the loop waiting on FMA latency) */
  for (; j + 8 <= last + 1 && D % 8 == 0; j += 8) {
    const float *kr[8];
    for (int r = 0; r < 8; r++) kr[r] = s->k + attn_off(s, j + r);
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int k = 0; k < D; k += 8) {
      __m256 qv = _mm256_loadu_ps(q + k);
      c0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[0] + k), c0);
      c1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[1] + k), c1);
      c2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[2] + k), c2);
      c3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[3] + k), c3);
      c4 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[4] + k), c4);
      c5 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[5] + k), c5);
      c6 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[6] + k), c6);
      c7 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[7] + k), c7);
    }
    __m256 sv = _mm256_set_m128(rowinv_hsum4(c4, c5, c6, c7), rowinv_hsum4(c0, c1, c2, c3));
    _mm256_storeu_ps(S + j, _mm256_mul_ps(_mm256_set1_ps(scale), sv));
  }
  for (; j + 4 <= last + 1; j += 4) {
    const float *k0 = s->k + attn_off(s, j), *k1 = s->k + attn_off(s, j + 1);
    const float *k2 = s->k + attn_off(s, j + 2), *k3 = s->k + attn_off(s, j + 3);
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    for (int k = 0; k < (D & ~7); k += 8) {
      __m256 qv = _mm256_loadu_ps(q + k);
      c0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + k), c0);
      c1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + k), c1);
      c2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + k), c2);
      c3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + k), c3);
    }
    float t[4];
    const float *kr[4] = {k0, k1, k2, k3};
    _mm_storeu_ps(t, rowinv_hsum4(c0, c1, c2, c3));
    for (int r = 0; r < 4; r++) {
      for (int k = D & ~7; k < D; k++) t[r] = fmaf(q[k], kr[r][k], t[r]);
      S[j + r] = scale * t[r];
    }
  }
  for (; j <= last; j++) S[j] = scale * rowinv_dot_avx2(q, s->k + attn_off(s, j), D);
}

/* out[d] = sum_j p_j v_j[d], j ascending from 0, a fused multiply-add per term as
 * the plain loop below computes it; p_j = S[j] * inv. Columns 64, 32 or 8 at a
 * time: 64 (a whole head of SmolLM2) keeps eight independent sums in flight and
 * reads each v row once. */
CPU_AVX2 static void attn_pv_avx2(float *out, const float *S, float inv,
                                 const struct attn_src *s, int last, int D) {
  int d = 0;
  for (; d + 64 <= D; d += 64) {
    __m256 o[8];
    for (int c = 0; c < 8; c++) o[c] = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S[j] * inv);
      for (int c = 0; c < 8; c++)
        o[c] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * c), o[c]);
    }
    for (int c = 0; c < 8; c++) _mm256_storeu_ps(out + d + 8 * c, o[c]);
  }
  for (; d + 32 <= D; d += 32) {
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S[j] * inv);
      o0 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v), o0);
      o1 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8), o1);
      o2 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 16), o2);
      o3 = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 24), o3);
    }
    _mm256_storeu_ps(out + d, o0);
    _mm256_storeu_ps(out + d + 8, o1);
    _mm256_storeu_ps(out + d + 16, o2);
    _mm256_storeu_ps(out + d + 24, o3);
  }
  for (; d + 8 <= D; d += 8) {
    __m256 o = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++)
      o = _mm256_fmadd_ps(_mm256_set1_ps(S[j] * inv), _mm256_loadu_ps(s->v + attn_off(s, j) + d),
                          o);
    _mm256_storeu_ps(out + d, o);
  }
  for (; d < D; d++) {
    float o = 0.0f;
    for (int j = 0; j <= last; j++) o = fmaf(S[j] * inv, s->v[attn_off(s, j) + d], o);
    out[d] = o;
  }
}

/* Two query rows at positions last and last + 1 (S0, S1) in one pass over the
 * keys: each k row loaded once feeds both (the one-row kernel spends a load per
 * fused multiply-add). Every score is attn_scores_avx2's: lane sums over D, then
 * rowinv_hsum4's reduction, the D mod 8 tail and the scale in the same order. */
CPU_AVX2 static void attn_scores2_avx2(float *S0, float *S1, const float *q0, const float *q1,
                                      const struct attn_src *s, int last, int D, float scale) {
  int j = 0, D8 = D & ~7;
  for (; j + 4 <= last + 1; j += 4) {
    const float *kr[4];
    for (int r = 0; r < 4; r++) kr[r] = s->k + attn_off(s, j + r);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int k = 0; k < D8; k += 8) {
      __m256 x = _mm256_loadu_ps(q0 + k), y = _mm256_loadu_ps(q1 + k);
      __m256 w0 = _mm256_loadu_ps(kr[0] + k), w1 = _mm256_loadu_ps(kr[1] + k);
      __m256 w2 = _mm256_loadu_ps(kr[2] + k), w3 = _mm256_loadu_ps(kr[3] + k);
      /* in registers: GCC otherwise folds each load into both FMAs (two loads) */
      __asm__("" : "+x"(w0), "+x"(w1), "+x"(w2), "+x"(w3));
      a0 = _mm256_fmadd_ps(x, w0, a0), b0 = _mm256_fmadd_ps(y, w0, b0);
      a1 = _mm256_fmadd_ps(x, w1, a1), b1 = _mm256_fmadd_ps(y, w1, b1);
      a2 = _mm256_fmadd_ps(x, w2, a2), b2 = _mm256_fmadd_ps(y, w2, b2);
      a3 = _mm256_fmadd_ps(x, w3, a3), b3 = _mm256_fmadd_ps(y, w3, b3);
    }
    float t0[4], t1[4];
    _mm_storeu_ps(t0, rowinv_hsum4(a0, a1, a2, a3));
    _mm_storeu_ps(t1, rowinv_hsum4(b0, b1, b2, b3));
    for (int r = 0; r < 4; r++) {
      for (int k = D8; k < D; k++) {
        t0[r] = fmaf(q0[k], kr[r][k], t0[r]);
        t1[r] = fmaf(q1[k], kr[r][k], t1[r]);
      }
      S0[j + r] = scale * t0[r];
      S1[j + r] = scale * t1[r];
    }
  }
  for (; j <= last; j++) {
    S0[j] = scale * rowinv_dot_avx2(q0, s->k + attn_off(s, j), D);
    S1[j] = scale * rowinv_dot_avx2(q1, s->k + attn_off(s, j), D);
  }
  S1[last + 1] = scale * rowinv_dot_avx2(q1, s->k + attn_off(s, last + 1), D);
}

/* attn_pv_avx2 for the two rows of attn_scores2_avx2 (D a multiple of 32): 32
 * columns of both at a time, each v row loaded once for the two; every output is
 * the same chain of fused multiply-adds over j ascending. */
CPU_AVX2 static void attn_pv2_avx2(float *o0, float *o1, const float *S0, const float *S1,
                                  float inv0, float inv1, const struct attn_src *s, int last,
                                  int D) {
  for (int d = 0; d + 32 <= D; d += 32) {
    __m256 a[4], b[4];
    for (int c = 0; c < 4; c++) a[c] = b[c] = _mm256_setzero_ps();
    for (int j = 0; j <= last; j++) {
      const float *v = s->v + attn_off(s, j) + d;
      __m256 p = _mm256_set1_ps(S0[j] * inv0), r = _mm256_set1_ps(S1[j] * inv1);
      for (int c = 0; c < 4; c++) {
        __m256 w = _mm256_loadu_ps(v + 8 * c);
        __asm__("" : "+x"(w)); /* one load for both rows (see attn_scores2_avx2) */
        a[c] = _mm256_fmadd_ps(p, w, a[c]);
        b[c] = _mm256_fmadd_ps(r, w, b[c]);
      }
    }
    const float *v = s->v + attn_off(s, last + 1) + d;
    __m256 r = _mm256_set1_ps(S1[last + 1] * inv1);
    for (int c = 0; c < 4; c++) {
      _mm256_storeu_ps(o0 + d + 8 * c, a[c]);
      _mm256_storeu_ps(o1 + d + 8 * c, _mm256_fmadd_ps(r, _mm256_loadu_ps(v + 8 * c), b[c]));
    }
  }
}

/* attn_row_fwd (below) for queries at positions last and last + 1 at once, the
 * same bits: the two serial sums run side by side in their own orders. */
static void attn_rows2_fwd(float *lse, float *out0, float *out1, const float *q0, const float *q1,
                           const struct attn_src *s, int last, int D, float scale, float *S0,
                           float *S1) {
  attn_scores2_avx2(S0, S1, q0, q1, s, last, D, scale);
  float mx0 = row_max_avx2(S0, last + 1), mx1 = row_max_avx2(S1, last + 2);
  exp_shift_row(S0, last + 1, mx0, 1);
  exp_shift_row(S1, last + 2, mx1, 1);
  float sum0 = 0.0f, sum1 = 0.0f;
  for (int j = 0; j <= last; j++) sum0 += S0[j], sum1 += S1[j];
  sum1 += S1[last + 1];
  float inv0 = 1.0f / sum0, inv1 = 1.0f / sum1;
  if (D % 32 == 0) {
    attn_pv2_avx2(out0, out1, S0, S1, inv0, inv1, s, last, D);
  } else {
    attn_pv_avx2(out0, S0, inv0, s, last, D);
    attn_pv_avx2(out1, S1, inv1, s, last + 1, D);
  }
  lse[0] = mx0 + logf(sum0);
  lse[1] = mx1 + logf(sum1);
}
#endif

/* One query at position `last` against keys 0..last: out[D] written, returns the
 * log-sum-exp of the scaled scores. S: last + 1 floats of scratch. */
static float attn_row_fwd(float *out, const float *q, const struct attn_src *s, int last, int D,
                          float scale, float *S, int avx2) {
  float mx;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) {
    attn_scores_avx2(S, q, s, last, D, scale);
    mx = row_max_avx2(S, last + 1);
  } else
#endif
  {
    mx = -INFINITY;
    for (int j = 0; j <= last; j++) {
      S[j] = scale * rowinv_dot_plain(q, s->k + attn_off(s, j), D);
      mx = S[j] > mx ? S[j] : mx;
    }
  }
  float sum = 0.0f;
  exp_shift_row(S, last + 1, mx, avx2);
  for (int j = 0; j <= last; j++) sum += S[j];
  float inv = 1.0f / sum;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) {
    attn_pv_avx2(out, S, inv, s, last, D);
    return mx + logf(sum);
  }
#endif
  memset(out, 0, sizeof(float) * D);
  for (int j = 0; j <= last; j++) {
    const float *vj = s->v + attn_off(s, j);
    float p = S[j] * inv;
    for (int d = 0; d < D; d++) out[d] = fmaf(p, vj[d], out[d]);
  }
  return mx + logf(sum);
}

struct attn_fwd_args {
  float *out, *lse;
  const float *q, *k, *v;
  const struct attn_batch *b;
  const struct attn_paged *pg; /* NULL: k, v are contiguous rows laid out by b->cu_kv */
  int H, KVH, D;
  float scale;
};

/* Units u = s * H + h: every query row of sequence s, head h. */
static void attn_fwd_units(void *p, size_t u0, size_t u1) {
  const struct attn_fwd_args *a = p;
  const struct attn_batch *b = a->b;
  int H = a->H, D = a->D, ks = a->KVH * D, avx2 = cpu_have_avx2();
  size_t kv = (size_t)(b->max_kv > 0 ? b->max_kv : 1);
  float *S = malloc_check(sizeof(float) * 2 * kv); /* the forward has no error path */
  for (size_t u = u0; u < u1; u++) {
    int s = (int)(u / H), h = (int)(u % H);
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0, nk = b->cu_kv[s + 1] - b->cu_kv[s];
    size_t ho = (size_t)(h / (H / a->KVH)) * D;
    struct attn_src src = {.k = a->k + ho, .v = a->v + ho, .table = NULL, .block_size = 1,
                           .ks = ks, .block_stride = 0};
    if (a->pg) {
      src.table = a->pg->tables[s];
      src.block_size = a->pg->block_size;
      src.block_stride = a->pg->block_stride;
    } else {
      src.k += (size_t)b->cu_kv[s] * ks;
      src.v += (size_t)b->cu_kv[s] * ks;
    }
    int i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    for (; avx2 && i + 2 <= nq; i += 2) { /* query pairs: one pass over k and v for two */
      size_t r = (size_t)(q0 + i), o = r * H * D + (size_t)h * D;
      float l2[2];
      attn_rows2_fwd(l2, a->out + o, a->out + o + (size_t)H * D, a->q + o, a->q + o + (size_t)H * D,
                     &src, nk - nq + i, D, a->scale, S, S + kv);
      a->lse[r * H + h] = l2[0];
      a->lse[(r + 1) * H + h] = l2[1];
    }
#endif
    for (; i < nq; i++) {
      size_t r = (size_t)(q0 + i);
      a->lse[r * H + h] = attn_row_fwd(a->out + r * H * D + h * D, a->q + r * H * D + h * D,
                                       &src, nk - nq + i, D, a->scale, S, avx2);
    }
  }
  free(S);
}

static void attn_fwd_run(const struct attn_fwd_args *a) {
  const struct attn_batch *b = a->b;
  size_t cost = (size_t)b->max_q * (size_t)b->max_kv * (size_t)a->D + 64;
  par_for((size_t)b->nseq * (size_t)a->H, cost, attn_fwd_units, (void *)a);
}

void cpu_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v,
                       const struct attn_batch *b, int H, int KVH, int D, float scale,
                       float *scratch) {
  (void)scratch;
  struct attn_fwd_args a = {.out = out, .lse = lse, .q = q, .k = k, .v = v, .b = b, .pg = NULL,
                            .H = H, .KVH = KVH, .D = D, .scale = scale};
  attn_fwd_run(&a);
}

void cpu_attention_paged_fwd(float *out, float *lse, const float *q, const struct attn_paged *kv,
                             const struct attn_batch *b, int H, int KVH, int D, float scale) {
  struct attn_fwd_args a = {.out = out, .lse = lse, .q = q, .k = kv->k, .v = kv->v, .b = b,
                            .pg = kv, .H = H, .KVH = KVH, .D = D, .scale = scale};
  attn_fwd_run(&a);
}

/* ---- backward ------------------------------------------------------------ */

/* The backward runs per (sequence, head, block of ATTN_QBLOCK query rows): a
 * block whose last query sits at position p only computes scores against keys
 * 0..p, which skips most of the masked upper triangle for long sequences. */
#define ATTN_QBLOCK 32 /* vs 64: 17% fewer score elements at T = 128, 10% at 256;
                          * 0.85-0.9x the time on both shapes (more, smaller calls) */

/* One block: the query rows of the `group` heads that share a key/value head,
 * gathered into rows = group x nb contiguous rows (position-major: row r is head
 * r mod group of query r / group, at position first + r / group, so a position's
 * group heads, adjacent in q, dout and dq, move as one copy), against the klim =
 * first + nb visible keys (row stride ks). Stacking the heads makes each of the
 * five products one call of group x the size (OpenBLAS's packing overhead on
 * one head's blocks is a third of the backward). */
struct attn_blk {
  int nb, group, rows, first, klim, ks, D;
  float scale;
};

/* P = exp(S - lse) under the causal mask, recomputed from the forward's lse. */
static void attn_probs(const struct attn_blk *b, float *S, const float *lse) {
  int avx2 = cpu_have_avx2();
  for (int i = 0; i < b->rows; i++) {
    float *row = S + (size_t)i * b->klim;
    int last = b->first + i / b->group;
    exp_shift_row(row, last + 1, lse[i], avx2);
    for (int j = last + 1; j < b->klim; j++) row[j] = 0.0f;
  }
}

/* dS = P * (dP - delta) * scale, in place over dP; delta = rowsum(dO * O). */
static void attn_dscores(const struct attn_blk *b, float *dP, const float *P, const float *delta) {
  for (int i = 0; i < b->rows; i++) {
    float d = delta[i];
    float *dp = dP + (size_t)i * b->klim;
    const float *p = P + (size_t)i * b->klim;
    for (int j = 0; j < b->klim; j++) dp[j] = p[j] * (dp[j] - d) * b->scale;
  }
}

/* The gathered rows of one block (each [rows, D]), their lse and delta, and the
 * block's two score tiles. */
struct attn_bufs {
  float *q, *dout, *dq, *lse, *delta, *P, *dP;
};

/* Backward of one block: g->dq written, dK/dV rows 0..klim accumulated. */
static void attn_block_bwd(const struct attn_blk *b, const struct attn_bufs *g, float *dk,
                           float *dv, const float *k, const float *v) {
  int M = b->rows, nk = b->klim, D = b->D;
  cpu_matmul(0, 1, M, nk, D, b->scale, g->q, D, k, b->ks, 0.0f, g->P, nk);
  attn_probs(b, g->P, g->lse);
  /* dV += P^T dO;  dP = dO V^T */
  cpu_matmul(1, 0, nk, D, M, 1.0f, g->P, nk, g->dout, D, 1.0f, dv, b->ks);
  cpu_matmul(0, 1, M, nk, D, 1.0f, g->dout, D, v, b->ks, 0.0f, g->dP, nk);
  attn_dscores(b, g->dP, g->P, g->delta);
  /* dQ = dS K;  dK += dS^T Q */
  cpu_matmul(0, 0, M, D, nk, 1.0f, g->dP, nk, k, b->ks, 0.0f, g->dq, D);
  cpu_matmul(1, 0, nk, D, M, 1.0f, g->dP, nk, g->q, D, 1.0f, dk, b->ks);
}

struct attn_bwd_args {
  float *dq, *dk, *dv;
  const float *dout, *out, *lse, *q, *k, *v;
  const struct attn_batch *b;
  int H, KVH, D;
  float scale;
};

/* Rows t0 .. t0+nb-1 of heads h0 .. h0+group-1 into the block's buffers, with
 * each row's delta = dot(dO, O) read in place (scatter = 0), or the block's dQ
 * back to them (scatter = 1). */
static void attn_gather(const struct attn_bwd_args *a, const struct attn_blk *blk,
                        const struct attn_bufs *g, int t0, int h0, int scatter) {
  int D = a->D, H = a->H, G = blk->group, avx2 = cpu_have_avx2();
  size_t qs = (size_t)H * D, span = sizeof(float) * (size_t)G * D;
  for (int i = 0; i < blk->nb; i++) {
    size_t t = (size_t)(t0 + i), o = t * qs + (size_t)h0 * D, r = (size_t)i * G;
    if (scatter) {
      memcpy(a->dq + o, g->dq + r * D, span);
      continue;
    }
    memcpy(g->q + r * D, a->q + o, span);
    memcpy(g->dout + r * D, a->dout + o, span);
    memcpy(g->lse + r, a->lse + t * H + h0, sizeof(float) * G);
    for (int h = 0; h < G; h++)
      g->delta[r + h] = cpu_dot3(a->dout + o + (size_t)h * D, a->out + o + (size_t)h * D, NULL,
                                 D, avx2);
  }
}

/* Units u = s * KVH + g: sequence s, key/value head g and the H/KVH query heads
 * that read it. A unit owns its dK/dV columns (every head of the group adds
 * into them), so units run in parallel without sharing an output. */
static void attn_bwd_units(void *p, size_t u0, size_t u1) {
  const struct attn_bwd_args *a = p;
  const struct attn_batch *b = a->b;
  int H = a->H, KVH = a->KVH, D = a->D, group = H / KVH, ks = KVH * D;
  int qb = b->max_q < ATTN_QBLOCK ? b->max_q : ATTN_QBLOCK;
  size_t rows = (size_t)group * (size_t)(qb > 0 ? qb : 1), kv = (size_t)(b->max_kv > 0 ? b->max_kv : 1);
  /* 2 x 3 x 64 x max_seq floats and the rows: the backward has no error path */
  float *buf = malloc_check(sizeof(float) * rows * (2 * kv + 3 * (size_t)D + 2));
  struct attn_bufs g = {.q = buf, .dout = buf + rows * D, .dq = buf + 2 * rows * D,
                        .lse = buf + 3 * rows * D, .delta = buf + 3 * rows * D + rows,
                        .P = buf + 3 * rows * D + 2 * rows, .dP = NULL};
  g.dP = g.P + rows * kv;
  for (size_t u = u0; u < u1; u++) {
    int s = (int)(u / KVH), kh = (int)(u % KVH);
    int q0 = b->cu_q[s], nq = b->cu_q[s + 1] - q0;
    int k0 = b->cu_kv[s], nk = b->cu_kv[s + 1] - k0;
    size_t ko = (size_t)k0 * ks + (size_t)kh * D;
    for (int j = 0; j < nk; j++) {
      memset(a->dk + ko + (size_t)j * ks, 0, sizeof(float) * D);
      memset(a->dv + ko + (size_t)j * ks, 0, sizeof(float) * D);
    }
    for (int i0 = 0; i0 < nq; i0 += ATTN_QBLOCK) {
      int nb = nq - i0 < ATTN_QBLOCK ? nq - i0 : ATTN_QBLOCK, first = nk - nq + i0;
      struct attn_blk blk = {.nb = nb, .group = group, .rows = group * nb, .first = first,
                             .klim = first + nb, .ks = ks, .D = D, .scale = a->scale};
      attn_gather(a, &blk, &g, q0 + i0, kh * group, 0);
      attn_block_bwd(&blk, &g, a->dk + ko, a->dv + ko, a->k + ko, a->v + ko);
      attn_gather(a, &blk, &g, q0 + i0, kh * group, 1);
    }
  }
  free(buf);
}

/* The (sequence, kv head) units are split over the rank's threads, and the
 * small GEMMs inside a unit run on the unit's thread: BLAS is set to one thread
 * for the duration (so it starts no second layer of threads under ours) and
 * restored after. Each unit does the same operations whatever the thread count. */
void cpu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out,
                       const float *lse, const float *q, const float *k, const float *v,
                       const struct attn_batch *b, int H, int KVH, int D, float scale,
                       float *scratch) {
  (void)scratch; /* one block's scratch; the units allocate their own */
  struct attn_bwd_args a = {.dq = dq, .dk = dk, .dv = dv, .dout = dout, .out = out, .lse = lse,
                            .q = q, .k = k, .v = v, .b = b, .H = H, .KVH = KVH, .D = D,
                            .scale = scale};
  int nt = openblas_get_num_threads();
  size_t cost = (size_t)b->max_q * (size_t)b->max_kv * (size_t)D * (size_t)(H / KVH) + 64;
  par_for_blas1(nt, (size_t)b->nseq * (size_t)KVH, cost, attn_bwd_units, &a);
}

