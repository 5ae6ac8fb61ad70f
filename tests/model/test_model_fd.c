/* model/test_model_fd.c: model_backward against central finite differences.
 *
 * Tiny model (GQA, q/k/v bias, untied lm_head, value head, so every tensor
 * kind is present), random weights, three packed sequences. The loss
 * L = sum w_t logprob_t + c sum entropy_t + sum u_t value_t is accumulated in
 * double; for a sample of entries of every tensor (first, last and two random
 * ones) the analytic gradient must match (L(p+h) - L(p-h)) / 2h.
 *
 * Step and tolerance for fp32: h = 1e-2 keeps the rounding noise of the fp32
 * forward (~1e-6 relative on L ~ 10, i.e. ~5e-4 after dividing by 2h) below the
 * truncation error O(h^2); accepted: |fd - analytic| <= 2e-3 + 2e-2 |analytic|. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "testutil.h"
#include "util/rng.h"

#define FD_STEP 1e-2f
#define FD_ABS 2e-3
#define FD_REL 2e-2

static const int cu[] = {0, 5, 12, 15};
enum { NSEQ = 3, T = 15 };

struct fd_case {
  struct model m;
  int tokens[T];
  float w[T], c[T], u[T], lp[T], ent[T], val[T];
};

static double loss(struct fd_case *k) {
  CHECK(model_forward(&k->m, k->tokens, cu, NSEQ, k->lp, k->ent, k->val) == 0);
  double L = 0;
  for (int t = 0; t < T; t++)
    L += (double)k->w[t] * k->lp[t] + (double)k->c[t] * k->ent[t] + (double)k->u[t] * k->val[t];
  return L;
}

static void randomise(struct fd_case *k) {
  struct rng_seq s;
  rng_seq_init(&s, 7, RNG_STREAM_TEST, 1, 0);
  model_init_params(&k->m, 42);
  /* norms and biases away from their init values so their gradients are generic */
  for (int i = 0; i < k->m.table.n; i++) {
    const struct param_entry *e = &k->m.table.e[i];
    if (e->kind == P_ATTN_NORM || e->kind == P_FFN_NORM || e->kind == P_FINAL_NORM ||
        e->kind == P_BQ || e->kind == P_BK || e->kind == P_BV)
      for (size_t j = 0; j < e->numel; j++)
        k->m.params[e->offset + j] += 0.3f * (float)rng_seq_normal(&s);
  }
  for (int t = 0; t < T; t++) {
    k->tokens[t] = (int)rng_seq_below(&s, (uint64_t)k->m.cfg.vocab_size);
    k->w[t] = (float)rng_seq_normal(&s);
    k->c[t] = 0.3f;
    k->u[t] = (float)rng_seq_normal(&s);
  }
}

static void check_entry(struct fd_case *k, const struct param_entry *e, size_t j, double *worst) {
  float *p = &k->m.params[e->offset + j], saved = *p;
  double an = k->m.grads[e->offset + j];
  *p = saved + FD_STEP;
  double lp = loss(k);
  *p = saved - FD_STEP;
  double lm = loss(k);
  *p = saved;
  double fd = (lp - lm) / (2.0 * FD_STEP), err = fabs(fd - an);
  *worst = fmax(*worst, err / (FD_ABS + FD_REL * fabs(an)));
  CHECK_MSG(err <= FD_ABS + FD_REL * fabs(an), "%s[%zu]: analytic %.6g finite difference %.6g",
            e->name, j, an, fd);
}

/* Bad batches are refused with -1 (and a message), never read out of bounds. */
static void check_bad_batches(struct fd_case *k) {
  int tok[T], cu_long[] = {0, 13}, cu_over[] = {0, 8, 16}, cu_empty[] = {0, 0, 5};
  memcpy(tok, k->tokens, sizeof tok);
  fprintf(stderr, "(four expected errors follow)\n");
  tok[2] = k->m.cfg.vocab_size; /* out of the vocabulary */
  CHECK(model_forward(&k->m, tok, cu, NSEQ, k->lp, k->ent, NULL) == -1);
  tok[2] = 0;
  CHECK(model_forward(&k->m, tok, cu_long, 1, k->lp, k->ent, NULL) == -1);  /* > max_seq */
  CHECK(model_forward(&k->m, tok, cu_over, 2, k->lp, k->ent, NULL) == -1);  /* > budget */
  CHECK(model_forward(&k->m, tok, cu_empty, 2, k->lp, k->ent, NULL) == -1); /* empty seq */
}

int main(void) {
  struct model_config mc = {.vocab_size = 13, .dim = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                            .ffn_dim = 24, .max_seq = 12, .rope_theta = 10000.0, .norm_eps = 1e-5,
                            .init_std = 0.4, .tie_embeddings = 0, .qkv_bias = 1, .value_head = 1};
  mc.head_dim = mc.dim / mc.heads;
  static struct fd_case k;
  CHECK(model_create(&k.m, &mc, T, &cpu_backend) == 0);
  k.m.logit_chunk = 4;
  randomise(&k);
  check_bad_batches(&k);
  loss(&k);
  model_zero_grad(&k.m);
  model_backward(&k.m, k.w, k.c, k.u);
  struct rng_seq s;
  rng_seq_init(&s, 7, RNG_STREAM_TEST, 2, 0);
  double worst = 0;
  int checked = 0;
  for (int i = 0; i < k.m.table.n; i++) {
    const struct param_entry *e = &k.m.table.e[i];
    size_t pick[4] = {0, e->numel - 1, rng_seq_below(&s, e->numel), rng_seq_below(&s, e->numel)};
    for (int j = 0; j < 4; j++, checked++) check_entry(&k, e, pick[j], &worst);
  }
  printf("checked %d entries of %d tensors; worst error / tolerance %.3f\n", checked, k.m.table.n,
         worst);
  model_free(&k.m);
  return TEST_RESULT("test_model_fd");
}
