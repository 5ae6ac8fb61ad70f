/* kernels/test_gpu_bf16.c: [model] dtype = bf16 on the CUDA backend (cuda_backend_bf16: bf16
 * GEMM inputs, fp32 accumulation, everything else fp32; cuda_backend.h).
 *
 * Part 1, the table's products on random fp32 operands over transposes, padded
 * leading dimensions and beta != 0: matmul (both operands rounded on the device) and
 * matmul_w16 (B rounded once by the table's to_bf16, as the model's weight copy):
 *   - against a double-precision host product of the same bf16-rounded inputs:
 *     max |gpu - ref| / max |ref| <= 1e-5 (products of bf16 values are exact in fp32;
 *     only the accumulation order differs);
 *   - against the fp32 host product of the unrounded inputs, per element:
 *     |gpu - ref| <= 4 u sqrt(K) |alpha| max|a| max|b| with u = 2^-9 (bf16's unit
 *     roundoff: each product a*b is off by <= 2u relative, and K independent
 *     rounding errors add like a random walk, sqrt(K); 2x margin);
 *   - to_bf16 gives the host's round-to-nearest-even bits.
 * Part 2, the whole model (model/model.c) on a ragged packed batch, forward (logprob,
 * entropy, value) and two accumulated backwards, bf16 on the GPU against fp32 on the
 * CPU, in a tied+bias and an untied+value config (dim 64, 2 layers, init_std 0.1):
 *   - logprob and entropy: max abs error <= 3e-2 nats; value: <= 3e-2 relative to its
 *     max. Rough budget: each product's output is off by ~sqrt(2) 2^-9 relative (both
 *     inputs rounded), ~15 products lie on a logit's path (q/k/v/o, gate/up/down per
 *     layer, lm_head), sqrt(15) sqrt(2) 2^-9 ~ 1e-2 relative on logits of magnitude ~1,
 *     and a logprob moves by up to twice the largest logit error. Measured under the
 *     emulator: logprob 1.4e-2 / 1.6e-2, entropy <= 4e-3, value 9e-3 (the bound is ~2x);
 *   - gradients: max |gpu - cpu| / max |cpu| per tensor <= 5e-2 (the backward doubles
 *     the products on the path and rounds the upstream gradients too; measured 1.6e-2);
 *   - bf16 is really used: the bf16 model's logprobs differ from the fp32 GPU model's
 *     (> 1e-6), the bf16 model has its weight copy and the fp32 one has none;
 *   - fp32 is unchanged: the cuda_backend model still matches the CPU to 1e-5
 *     (outputs) and 1e-4 (gradients), test_gpu_model's tolerances.
 * Part 3, rollout vs trainer: the bf16 model's KV-cache prefill logits (the rollout
 * engine's path) give the same next-token logprobs as its model_forward (the
 * trainer's) to 1e-3 nats, the tolerance run/test_gpu_grpo.c allows fp32 on the GPU.
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "gpu_main.h"
#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#include "model/model.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */

static const struct backend_ops *B16 = &cuda_backend_bf16;

/* deterministic values in [-a, a] */
static void fill_uniform(float *x, size_t n, double a, uint32_t seed) {
  uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)(a * (2.0 * (double)(s >> 11) / 9007199254740992.0 - 1.0));
  }
}

static float bf16_value(float f, uint16_t *bits) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (inputs are finite) */
  *bits = (uint16_t)(u >> 16);
  u = (uint32_t)*bits << 16;
  memcpy(&f, &u, 4);
  return f;
}

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
  return m;
}

/* max |a - ref| (NaN: infinity) */
static double max_diff(const float *a, const float *ref, size_t n) {
  double md = 0;
  for (size_t i = 0; i < n; i++) {
    double d = isnan(a[i]) || isnan(ref[i]) ? INFINITY : fabs((double)a[i] - ref[i]);
    md = d > md ? d : md;
  }
  return md;
}

static double rel_err(const float *a, const float *ref, size_t n) {
  double mr = max_abs(ref, n), md = max_diff(a, ref, n);
  return mr > 0 ? md / mr : md;
}

/* C = alpha op(A) op(B) + beta C on the host, accumulated in double. */
static void host_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += (double)(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
             (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
      float *c = &C[(size_t)i * ldc + j];
      *c = (float)(alpha * s + beta * *c);
    }
}

static void *dev_copy(const void *h, size_t bytes) {
  void *d = B16->alloc(bytes);
  if (!d) {
    fprintf(stderr, "out of device memory (%zu bytes)\n", bytes);
    exit(1);
  }
  B16->upload(d, h, bytes);
  return d;
}

/* Part 1 on one shape: matmul and matmul_w16 against both references. */
static void gemm_check(int ta, int tb, int M, int N, int K, int pad, float beta) {
  const float alpha = 0.75f;
  int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
  float *A = malloc(4 * na), *B = malloc(4 * nb), *C0 = malloc(4 * nc), *Ar = malloc(4 * na);
  float *Br = malloc(4 * nb), *ref16 = malloc(4 * nc), *ref32 = malloc(4 * nc), *got = malloc(4 * nc);
  uint16_t *Bbits = malloc(2 * nb), *got16 = malloc(2 * nb), bits;
  fill_uniform(A, na, 1.0, (uint32_t)(M + 3 * K));
  fill_uniform(B, nb, 0.5, (uint32_t)(N + 5 * K));
  fill_uniform(C0, nc, 1.0, 9);
  for (size_t i = 0; i < na; i++) Ar[i] = bf16_value(A[i], &bits);
  for (size_t i = 0; i < nb; i++) Br[i] = bf16_value(B[i], &Bbits[i]);
  memcpy(ref16, C0, 4 * nc);
  memcpy(ref32, C0, 4 * nc);
  host_gemm(ta, tb, M, N, K, alpha, Ar, lda, Br, ldb, beta, ref16, ldc);
  host_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, ref32, ldc);
  double bound = 4.0 * ldexp(1.0, -9) * sqrt((double)K) * alpha * max_abs(A, na) * max_abs(B, nb);
  float *dA = dev_copy(A, 4 * na), *dB = dev_copy(B, 4 * nb), *dC = dev_copy(C0, 4 * nc);
  uint16_t *dB16 = B16->alloc(2 * nb);
  B16->to_bf16(dB16, dB, nb);
  B16->download(got16, dB16, 2 * nb);
  CHECK_MSG(!memcmp(got16, Bbits, 2 * nb), "to_bf16: bits differ from the host rounding");
  for (int w16 = 0; w16 < 2; w16++) {
    B16->upload(dC, C0, 4 * nc);
    if (w16) B16->matmul_w16(ta, tb, M, N, K, alpha, dA, lda, dB16, ldb, beta, dC, ldc);
    else B16->matmul(ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc);
    B16->download(got, dC, 4 * nc);
    double e16 = rel_err(got, ref16, nc), e32 = max_diff(got, ref32, nc);
    printf("%s ta=%d tb=%d M=%d N=%d K=%d pad=%d: vs rounded inputs %.3g, vs fp32 %.3g "
           "(bound %.3g)\n", w16 ? "matmul_w16" : "matmul    ", ta, tb, M, N, K, pad, e16, e32,
           bound);
    CHECK_MSG(e16 <= 1e-5, "bf16 %s: relative error %.3g vs the rounded-input product",
              w16 ? "matmul_w16" : "matmul", e16);
    CHECK_MSG(e32 <= bound, "bf16 %s: error %.3g > %.3g vs the fp32 product",
              w16 ? "matmul_w16" : "matmul", e32, bound);
  }
  B16->free(dA); B16->free(dB); B16->free(dC); B16->free(dB16);
  free(A); free(B); free(C0); free(Ar); free(Br); free(ref16); free(ref32); free(got);
  free(Bbits); free(got16);
}

/* ---- whole model ------------------------------------------------------------- */

static const int mseq[4] = {5, 23, 1, 40}; /* ragged, a one-token sequence included */
#define MSEQ 4
#define MTOK 69

struct run_out {
  float o[3][MTOK]; /* logprob, entropy, value */
};

/* model_forward + two accumulated model_backward calls (the second micro-batch: the
 * first two sequences), from the host weights p. */
static void model_run(struct model *m, const float *p, const int *tok, const int *cu,
                      const float (*d)[MTOK], struct run_out *out) {
  memcpy(m->params, p, sizeof(float) * m->table.total);
  model_zero_grad(m);
  CHECK(model_forward(m, tok, cu, MSEQ, out->o[0], out->o[1],
                      m->cfg.value_head ? out->o[2] : NULL) == 0);
  model_backward(m, d[0], d[1], m->cfg.value_head ? d[2] : NULL);
  CHECK(model_forward(m, tok, cu, 2, NULL, NULL, NULL) == 0);
  model_backward(m, d[0], NULL, NULL);
}

/* worst per-tensor gradient relative error of m against ref */
static double grads_err(const struct model *ref, const struct model *m, const char *what,
                        double tol) {
  double worst = 0;
  for (int i = 0; i < ref->table.n; i++) {
    const struct param_entry *e = &ref->table.e[i];
    double r = rel_err(m->grads + e->offset, ref->grads + e->offset, e->numel);
    worst = r > worst ? r : worst;
    CHECK_MSG(r <= tol, "%s: grad %s relative error %.3g > %.3g", what, e->name, r, tol);
  }
  return worst;
}

static void model_check(const struct model_config *mc, int chunk, const char *what) {
  struct model cm, fm, bm; /* CPU fp32, GPU fp32, GPU bf16 */
  CHECK(model_create(&cm, mc, MTOK, &cpu_backend) == 0);
  CHECK(model_create(&fm, mc, MTOK, &cuda_backend) == 0);
  CHECK(model_create(&bm, mc, MTOK, &cuda_backend_bf16) == 0);
  CHECK(bm.weights.dev16 != NULL && fm.weights.dev16 == NULL && cm.weights.dev16 == NULL);
  cm.logit_chunk = fm.logit_chunk = bm.logit_chunk = chunk;
  model_init_params(&cm, 7);
  float *p = malloc(sizeof(float) * cm.table.total);
  fill_uniform(p, cm.table.total, 0.02, 1); /* biases and norms off their init */
  for (size_t i = 0; i < cm.table.total; i++) p[i] += cm.params[i];
  int tok[MTOK], cu[MSEQ + 1] = {0};
  for (int s = 0; s < MSEQ; s++) cu[s + 1] = cu[s] + mseq[s];
  for (int t = 0; t < MTOK; t++) tok[t] = (t * 37 + 11) % mc->vocab_size;
  float d[3][MTOK];
  fill_uniform(&d[0][0], 3 * MTOK, 1.0, 2);
  struct run_out oc, of, ob;
  model_run(&cm, p, tok, cu, (const float (*)[MTOK])d, &oc);
  model_run(&fm, p, tok, cu, (const float (*)[MTOK])d, &of);
  model_run(&bm, p, tok, cu, (const float (*)[MTOK])d, &ob);
  static const char *const oname[3] = {"logprob", "entropy", "value"};
  for (int k = 0; k < (mc->value_head ? 3 : 2); k++) {
    double ef = rel_err(of.o[k], oc.o[k], MTOK);
    double eb = k < 2 ? max_diff(ob.o[k], oc.o[k], MTOK) : rel_err(ob.o[k], oc.o[k], MTOK);
    printf("%s: %s fp32 gpu rel %.3g; bf16 gpu %s %.3g\n", what, oname[k], ef,
           k < 2 ? "abs" : "rel", eb);
    CHECK_MSG(ef <= 1e-5, "%s: fp32 %s relative error %.3g", what, oname[k], ef);
    CHECK_MSG(eb <= 3e-2, "%s: bf16 %s error %.3g > 3e-2", what, oname[k], eb);
  }
  double used = max_diff(ob.o[0], of.o[0], MTOK);
  CHECK_MSG(used > 1e-6, "%s: bf16 logprobs equal the fp32 ones (%.3g): bf16 not used", what,
            used);
  double gf = grads_err(&cm, &fm, what, 1e-4), gb = grads_err(&cm, &bm, what, 5e-2);
  printf("%s: worst gradient relative error fp32 gpu %.3g, bf16 gpu %.3g; |bf16 - fp32| "
         "logprob %.3g\n", what, gf, gb, used);
  free(p);
  model_free(&cm);
  model_free(&fm);
  model_free(&bm);
}

/* ---- rollout vs trainer ------------------------------------------------------ */

/* exchange() of a single prefill: the contexts are the new rows themselves. */
static int prefill_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                            const float *v_new, const float **k_ctx, const float **v_ctx) {
  (void)ctx, (void)layer, (void)b;
  *k_ctx = k_new;
  *v_ctx = v_new;
  return 0;
}

static void kv_check(const struct model_config *mc) {
  struct model m;
  CHECK(model_create(&m, mc, MTOK, &cuda_backend_bf16) == 0);
  model_init_params(&m, 11);
  int V = mc->vocab_size, tok[MTOK], cu[MSEQ + 1] = {0}, pos0[MSEQ] = {0};
  for (int s = 0; s < MSEQ; s++) cu[s + 1] = cu[s] + mseq[s];
  for (int t = 0; t < MTOK; t++) tok[t] = (t * 13 + 5) % V;
  float lp[MTOK], *lg = malloc(sizeof(float) * MTOK * V);
  struct model_kv_io io = {.ctx = NULL, .exchange = prefill_exchange};
  CHECK(model_forward_kv(&m, tok, cu, pos0, MSEQ, &io, 1, lg) == 0);
  CHECK(model_forward(&m, tok, cu, MSEQ, lp, NULL, NULL) == 0);
  double worst = 0;
  for (int s = 0; s < MSEQ; s++)
    for (int t = cu[s]; t + 1 < cu[s + 1]; t++) { /* host log_softmax of the kv logits */
      const float *z = lg + (size_t)t * V;
      double mx = z[0], sum = 0;
      for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
      for (int v = 0; v < V; v++) sum += exp(z[v] - mx);
      double d = fabs(z[tok[t + 1]] - mx - log(sum) - lp[t]);
      worst = d > worst ? d : worst;
    }
  printf("bf16 rollout (kv prefill) vs trainer (forward) logprob: max diff %.3g nats\n", worst);
  CHECK_MSG(worst <= 1e-3, "bf16 kv vs forward logprob diff %.3g > 1e-3", worst);
  free(lg);
  model_free(&m);
}

static int run_all(void) {
  static const int shapes[][6] = {/* ta, tb, M, N, K, pad */
      {0, 1, 64, 96, 128, 0}, {0, 0, 37, 53, 29, 3}, {1, 0, 96, 40, 77, 0},
      {1, 1, 33, 17, 65, 5},  {0, 1, 5, 1, 64, 0},   {1, 0, 1, 64, 69, 0}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    gemm_check(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], shapes[i][5],
               i % 2 ? 0.5f : 0.0f);
  struct model_config a = {.vocab_size = 211, .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2,
                           .ffn_dim = 96, .max_seq = 48, .rope_theta = 10000.0, .norm_eps = 1e-5,
                           .init_std = 0.1, .tie_embeddings = 1, .qkv_bias = 1, .value_head = 0};
  model_check(&a, MODEL_LOGIT_CHUNK, "model tied+bias");
  struct model_config b = a;
  b.tie_embeddings = 0, b.qkv_bias = 0, b.value_head = 1, b.heads = 2, b.kv_heads = 1;
  model_check(&b, 16, "model untied+value, chunk 16");
  kv_check(&a);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_bf16");
}
#endif

GPU_TEST_MAIN("test_gpu_bf16", run_all)
