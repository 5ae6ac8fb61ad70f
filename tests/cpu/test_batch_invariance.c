/* cpu/test_batch_invariance.c: the CPU backend's forward ops give a row the same bits whatever
 * batch it is computed in (cpu/rowinv.c, cpu/attention.c), which is what makes rollout
 * logprobs equal the trainer's.
 *
 * (a) matmul_rowinv C = A B^T: each row of an M-row product equals, bit for bit, the same
 *     row computed alone (M = 1, the GEMV of a decode step) and inside products of
 *     every M in 1..70, for K a multiple of 8 and not; with 1 and 2 threads; and it
 *     agrees with a double-precision reference within 1e-5 relative (a summation
 *     order, not a wrong sum); beta = 1 accumulates onto C.
 * (b) attention: one query at position p (a decode step) gives the same output and
 *     log-sum-exp bits as that row in a full causal pass over the sequence, and the
 *     paged op over a shuffled block table gives the same bits as the contiguous one. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "testutil.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) x[i] = frand(&seed);
}

static void test_matmul(int K, int threads) {
  enum { N = 37, MMAX = 70 };
  openblas_set_num_threads(threads);
  float *A = malloc(sizeof(float) * MMAX * K), *B = malloc(sizeof(float) * N * K);
  float *C = malloc(sizeof(float) * MMAX * N), *row = malloc(sizeof(float) * MMAX * N);
  fill(A, (size_t)MMAX * K, 1u + (unsigned)K);
  fill(B, (size_t)N * K, 7u + (unsigned)K);
  for (int i = 0; i < MMAX; i++) /* each row alone: the reference bits */
    cpu_backend.matmul_rowinv(1, N, K, 0.5f, A + (size_t)i * K, K, B, K, 0.0f, row + (size_t)i * N, N);
  int bad = 0;
  for (int M = 1; M <= MMAX; M++) {
    cpu_backend.matmul_rowinv(M, N, K, 0.5f, A, K, B, K, 0.0f, C, N);
    bad += memcmp(C, row, sizeof(float) * (size_t)M * N) != 0;
  }
  double rel = 0;
  for (int i = 0; i < MMAX; i++)
    for (int j = 0; j < N; j++) {
      double s = 0, mag = 0;
      for (int k = 0; k < K; k++) {
        s += (double)A[(size_t)i * K + k] * B[(size_t)j * K + k];
        mag += fabs((double)A[(size_t)i * K + k] * B[(size_t)j * K + k]);
      }
      double d = fabs(0.5 * s - row[(size_t)i * N + j]) / (0.5 * mag + 1e-30);
      rel = d > rel ? d : rel;
    }
  /* beta = 1: C += A B^T */
  for (int j = 0; j < N; j++) C[j] = 1.0f;
  cpu_backend.matmul_rowinv(1, N, K, 0.5f, A, K, B, K, 1.0f, C, N);
  double acc = 0;
  for (int j = 0; j < N; j++) acc = fmax(acc, fabs(C[j] - (row[j] + 1.0f)));
  printf("a) matmul K=%d, %d thread(s): %d of %d row counts differ from one-row results; "
         "max relative error vs double %.2e; beta=1 error %.2e\n", K, threads, bad, MMAX, rel, acc);
  CHECK(bad == 0);
  CHECK(rel <= 1e-5);
  CHECK(acc <= 1e-6);
  free(A); free(B); free(C); free(row);
}

/* One sequence of T tokens, H heads over KVH key/value heads, head size D. */
static void test_attention(int threads) {
  enum { T = 45, H = 4, KVH = 2, D = 20, BS = 8, NB = (T + BS - 1) / BS };
  openblas_set_num_threads(threads);
  float scale = 1.0f / sqrtf((float)D);
  size_t qn = (size_t)T * H * D, kn = (size_t)T * KVH * D;
  float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn), *v = malloc(sizeof(float) * kn);
  float *out = malloc(sizeof(float) * qn), *lse = malloc(sizeof(float) * T * H);
  float *scratch = malloc(sizeof(float) * attn_scratch_floats(T, T));
  fill(q, qn, 11); fill(k, kn, 12); fill(v, kn, 13);
  int cu[2] = {0, T};
  struct attn_batch full = {.nseq = 1, .cu_q = cu, .cu_kv = cu, .max_q = T, .max_kv = T};
  cpu_backend.attention_fwd(out, lse, q, k, v, &full, H, KVH, D, scale, scratch);
  /* the paged cache: block b of the table holds positions b*BS.., blocks in shuffled order */
  int table[NB];
  for (int b = 0; b < NB; b++) table[b] = (b * 5 + 3) % NB;
  size_t kvrow = (size_t)KVH * D, block = 2 * BS * kvrow; /* [k|v][BS][KVH*D], one layer */
  float *pool = calloc((size_t)NB * block, sizeof(float));
  for (int t = 0; t < T; t++) {
    float *slot = pool + (size_t)table[t / BS] * block + (size_t)(t % BS) * kvrow;
    memcpy(slot, k + (size_t)t * kvrow, sizeof(float) * kvrow);
    memcpy(slot + BS * kvrow, v + (size_t)t * kvrow, sizeof(float) * kvrow);
  }
  const int *tables[1] = {table};
  struct attn_paged pg = {.k = pool, .v = pool + BS * kvrow, .tables = tables, .block_size = BS,
                          .block_stride = block};
  int bad_step = 0, bad_paged = 0;
  float o1[H * D], l1[H];
  for (int p = 0; p < T; p++) { /* decode step: query p against keys 0..p */
    int cq[2] = {0, 1}, ck[2] = {0, p + 1};
    struct attn_batch step = {.nseq = 1, .cu_q = cq, .cu_kv = ck, .max_q = 1, .max_kv = p + 1};
    const float *qp = q + (size_t)p * H * D;
    cpu_backend.attention_fwd(o1, l1, qp, k, v, &step, H, KVH, D, scale, scratch);
    bad_step += memcmp(o1, out + (size_t)p * H * D, sizeof o1) || memcmp(l1, lse + (size_t)p * H, sizeof l1);
    cpu_backend.attention_paged_fwd(o1, l1, qp, &pg, &step, H, KVH, D, scale);
    bad_paged += memcmp(o1, out + (size_t)p * H * D, sizeof o1) || memcmp(l1, lse + (size_t)p * H, sizeof l1);
  }
  /* and the softmax is a softmax: row p's lse against a double recompute */
  double lerr = 0;
  for (int p = 0; p < T; p++)
    for (int h = 0; h < H; h++) {
      const float *qh = q + (size_t)p * H * D + h * D;
      double mx = -INFINITY, s[T];
      for (int j = 0; j <= p; j++) {
        const float *kj = k + (size_t)j * kvrow + (h / (H / KVH)) * D;
        s[j] = 0;
        for (int d = 0; d < D; d++) s[j] += (double)qh[d] * kj[d];
        s[j] *= scale;
        mx = fmax(mx, s[j]);
      }
      double z = 0;
      for (int j = 0; j <= p; j++) z += exp(s[j] - mx);
      lerr = fmax(lerr, fabs(mx + log(z) - lse[(size_t)p * H + h]));
    }
  printf("b) attention, %d thread(s): %d of %d decode steps differ from the full pass, %d paged "
         "steps differ; lse error vs double %.2e\n", threads, bad_step, T, bad_paged, lerr);
  CHECK(bad_step == 0 && bad_paged == 0);
  CHECK(lerr <= 1e-5);
  free(q); free(k); free(v); free(out); free(lse); free(scratch); free(pool);
}

int main(void) {
  int Ks[] = {576, 61, 8, 3};
  for (int t = 1; t <= 2; t++) {
    for (int i = 0; i < 4; i++) test_matmul(Ks[i], t);
    test_attention(t);
  }
  return TEST_RESULT("test_rowinv");
}
