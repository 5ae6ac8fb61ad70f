/* cpu/test_train_threads.c: the training step's threaded parts give the same bits
 * with 1 and 3 threads, and the backward's reuse of the forward's last logits
 * chunk is safe.
 *
 * attention_bwd splits (sequence, kv head) units over the threads, each unit
 * owning its dK/dV columns: a unit split wrongly (two threads adding into the
 * same rows) or a shared scratch shows as a difference. AdamW splits the flat
 * buffer in slices: a slice boundary off by one leaves parameters unupdated or
 * updated twice. Both must match bitwise (every element takes the same
 * operations whatever the split); the AdamW result is also checked against
 * the scalar formula (1e-6 relative: same fp32 ops, compiler contraction aside).
 *
 * The backward takes the forward's last logits chunk from the buffer instead of
 * recomputing it, and its first use overwrites it with dL/dlogits: a second
 * backward after one forward must recompute it and accumulate the same
 * gradient again (2g within 1e-5 relative of the largest entry; reusing the
 * overwritten buffer gives a different lm_head/embedding gradient). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "model/model.h"
#include "testutil.h"
#include "train/optim.h"
#include "util/rng.h"

static void fill(struct rng_seq *s, float *x, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * (float)rng_seq_normal(s);
}

/* Unequal sequences, 6 query heads on 2 kv heads, longer than one query block. */
enum { H = 6, KVH = 2, D = 16, T = 300, NSEQ = 3 };
static const int cu[NSEQ + 1] = {0, 150, 170, 300};

struct attn_grads {
  float dq[T * H * D], dk[T * KVH * D], dv[T * KVH * D];
};

static void attn_bwd_with(int threads, const struct rng_seq *seed, struct attn_grads *g) {
  static float q[T * H * D], k[T * KVH * D], v[T * KVH * D], dout[T * H * D], out[T * H * D];
  static float lse[T * H];
  struct rng_seq s = *seed;
  struct attn_batch b = {.nseq = NSEQ, .cu_q = cu, .cu_kv = cu, .max_q = 150, .max_kv = 150};
  float *scr = malloc(sizeof(float) * attn_scratch_floats(150, 150));
  fill(&s, q, sizeof q / sizeof q[0], 1.0f);
  fill(&s, k, sizeof k / sizeof k[0], 1.0f);
  fill(&s, v, sizeof v / sizeof v[0], 1.0f);
  fill(&s, dout, sizeof dout / sizeof dout[0], 1.0f);
  openblas_set_num_threads(threads);
  cpu_backend.attention_fwd(out, lse, q, k, v, &b, H, KVH, D, 0.25f, scr);
  memset(g, 0x7f, sizeof *g); /* dk/dv must be written (zeroed) by the op, not assumed */
  cpu_backend.attention_bwd(g->dq, g->dk, g->dv, dout, out, lse, q, k, v, &b, H, KVH, D, 0.25f,
                            scr);
  CHECK(openblas_get_num_threads() == threads); /* the op restores BLAS's thread count */
  free(scr);
}

static void test_attention_bwd_threads(const struct rng_seq *s) {
  struct attn_grads *one = malloc(sizeof *one), *three = malloc(sizeof *three);
  attn_bwd_with(1, s, one);
  attn_bwd_with(3, s, three);
  CHECK(memcmp(one->dq, three->dq, sizeof one->dq) == 0);
  CHECK(memcmp(one->dk, three->dk, sizeof one->dk) == 0);
  CHECK(memcmp(one->dv, three->dv, sizeof one->dv) == 0);
  free(one);
  free(three);
}

/* Three slices' worth of parameters (the split starts at 2^18 per thread) and a tail. */
#define AN ((3L << 18) + 5)

static void adamw_with(int threads, const struct rng_seq *seed, float *p) {
  struct rng_seq s = *seed;
  float *g = malloc(sizeof(float) * AN);
  struct adamw o;
  struct adamw_hparams h = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                            .weight_decay = 0.1};
  fill(&s, p, AN, 1.0f);
  CHECK(adamw_init(&o, AN) == 0);
  openblas_set_num_threads(threads);
  for (int step = 0; step < 2; step++) {
    fill(&s, g, AN, 1.0f);
    adamw_step(&o, p, g, &h);
  }
  adamw_free(&o);
  free(g);
}

static void test_adamw_threads(const struct rng_seq *s) {
  float *one = malloc(sizeof(float) * AN), *three = malloc(sizeof(float) * AN);
  float *p0 = malloc(sizeof(float) * AN), *g = malloc(sizeof(float) * AN);
  adamw_with(1, s, one);
  adamw_with(3, s, three);
  CHECK(memcmp(one, three, sizeof(float) * AN) == 0);
  /* one step by the formula: m = 0.1 g, v = 0.05 g^2, bias corrections 0.1 and 0.05 */
  struct rng_seq r = *s;
  fill(&r, p0, AN, 1.0f);
  fill(&r, g, AN, 1.0f);
  struct adamw o;
  struct adamw_hparams h = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                            .weight_decay = 0.1};
  CHECK(adamw_init(&o, AN) == 0);
  memcpy(one, p0, sizeof(float) * AN);
  adamw_step(&o, one, g, &h);
  int bad = 0;
  for (long i = 0; i < AN; i++) {
    double m = 0.1 * g[i] / 0.1, v = 0.05 * (double)g[i] * g[i] / 0.05;
    double want = p0[i] * (1.0 - 1e-3) - 1e-2 * m / (sqrt(v) + 1e-8);
    if (fabs(one[i] - want) > 1e-6 * (fabs(want) + 1e-2)) bad++;
  }
  CHECK_MSG(bad == 0, "%d of %ld parameters off the AdamW formula", bad, AN);
  adamw_free(&o);
  free(one); free(three); free(p0); free(g);
}

static void test_backward_twice(void) {
  struct model_config mc = {.vocab_size = 37, .dim = 16, .layers = 1, .heads = 2, .kv_heads = 1,
                            .ffn_dim = 24, .max_seq = 32, .rope_theta = 10000.0,
                            .norm_eps = 1e-5, .init_std = 0.2, .tie_embeddings = 1};
  enum { NT = 20 };
  const int cu2[] = {0, 13, NT};
  int tok[NT];
  float lp[NT], dlp[NT];
  struct model m;
  CHECK(model_create(&m, &mc, NT, &cpu_backend) == 0);
  model_init_params(&m, 5);
  m.logit_chunk = 6; /* chunks at rows 0, 6, 12, 18: the held one is the short last chunk */
  for (int t = 0; t < NT; t++) tok[t] = (t * 11 + 3) % mc.vocab_size, dlp[t] = 0.1f * (t % 7) - 0.3f;
  size_t n = m.table.total;
  float *once = malloc(sizeof(float) * n);
  CHECK(model_forward(&m, tok, cu2, 2, lp, NULL, NULL) == 0);
  model_zero_grad(&m);
  model_backward(&m, dlp, NULL, NULL);
  memcpy(once, m.grads, sizeof(float) * n);
  model_backward(&m, dlp, NULL, NULL);
  double big = 0, worst = 0;
  for (size_t i = 0; i < n; i++) big = fmax(big, fabs(once[i]));
  for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(m.grads[i] - 2.0 * once[i]));
  CHECK_MSG(big > 0 && worst <= 1e-5 * big, "second backward: max |g2 - 2 g1| %.3g of %.3g", worst,
            big);
  free(once);
  model_free(&m);
}

int main(void) {
  struct rng_seq s;
  rng_seq_init(&s, 11, RNG_STREAM_TEST, 0, 0);
  test_attention_bwd_threads(&s);
  test_adamw_threads(&s);
  openblas_set_num_threads(1);
  test_backward_twice();
  return TEST_RESULT("test_train_threads");
}
