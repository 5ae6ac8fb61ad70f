/* model/test_model_forward.c: a forward-only model (model_create_forward: no gradients, one
 * set of layer activations that every layer reuses) computes what the full model computes.
 *
 * Tiny model of 5 layers (GQA, q/k/v bias, untied
 * lm_head, value head), random weights: for three packed sequences the logprobs, entropies
 * and values of model_forward, and the logits of model_forward_kv with the context given
 * in full, must equal the full model's bit for bit (the same operations on the same
 * inputs in the same order). Its activation arena is model_forward_arena_bytes and does
 * not grow with the layer count. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "testutil.h"
#include "util/rng.h"

static const int cu[] = {0, 5, 12, 15};
enum { NSEQ = 3, T = 15, LAYERS = 5 };

/* No cache: the context is exactly the new rows. */
static int identity_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                             const float *v_new, const float **k_ctx, const float **v_ctx) {
  (void)ctx; (void)layer; (void)b;
  *k_ctx = k_new;
  *v_ctx = v_new;
  return 0;
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, sizeof(float) * n) == 0; }

int main(void) {
  struct model_config mc = {.vocab_size = 13, .dim = 16, .layers = LAYERS, .heads = 4, .kv_heads = 2,
                            .ffn_dim = 24, .max_seq = 12, .rope_theta = 10000.0, .norm_eps = 1e-5,
                            .init_std = 0.4, .tie_embeddings = 0, .qkv_bias = 1, .value_head = 1};
  mc.head_dim = mc.dim / mc.heads;
  static struct model full, fwd;
  CHECK(model_create(&full, &mc, T, &cpu_backend) == 0);
  CHECK(model_create_forward(&fwd, &mc, T, &cpu_backend) == 0);
  CHECK(fwd.forward_only && fwd.grads == NULL && fwd.dres == NULL);
  model_init_params(&full, 42);
  memcpy(fwd.params, full.params, sizeof(float) * full.table.total);
  struct rng_seq s;
  rng_seq_init(&s, 7, RNG_STREAM_TEST, 3, 0);
  int tokens[T];
  for (int t = 0; t < T; t++) tokens[t] = (int)rng_seq_below(&s, (uint64_t)mc.vocab_size);
  float lp[2][T], ent[2][T], val[2][T];
  CHECK(model_forward(&full, tokens, cu, NSEQ, lp[0], ent[0], val[0]) == 0);
  CHECK(model_forward(&fwd, tokens, cu, NSEQ, lp[1], ent[1], val[1]) == 0);
  CHECK(same_bits(lp[0], lp[1], T) && same_bits(ent[0], ent[1], T) && same_bits(val[0], val[1], T));
  /* the KV path, every prefix of the second sequence, the last row's logits */
  struct model_kv_io io = {.exchange = identity_exchange};
  float lg[2][13];
  int checked = 0;
  for (int n = 1; n <= 7; n++, checked++) {
    int c1[2] = {0, n}, pos0 = 0;
    CHECK(model_forward_kv(&full, tokens + 5, c1, &pos0, 1, &io, 0, lg[0]) == 0);
    CHECK(model_forward_kv(&fwd, tokens + 5, c1, &pos0, 1, &io, 0, lg[1]) == 0);
    CHECK_MSG(same_bits(lg[0], lg[1], 13), "prefix %d: logits differ", n);
  }
  /* the arena: one layer set whatever the layer count */
  struct model_config deep = mc;
  deep.layers = 40;
  size_t a5 = model_forward_arena_bytes(&mc, T), a40 = model_forward_arena_bytes(&deep, T);
  struct model_config one = mc;
  one.layers = 1;
  CHECK(a5 == a40 && a5 == model_forward_arena_bytes(&one, T));
  printf("forward-only = full model bit for bit: model_forward on %d tokens, %d KV-path prefixes; "
         "arena %zu bytes at 1, 5 and 40 layers\n", T, checked, a5);
  model_free(&full);
  model_free(&fwd);
  return TEST_RESULT("test_model_forward");
}
