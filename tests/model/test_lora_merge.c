/* model/test_lora_merge.c: LoRA adapters folded into their base (model/lora.h lora_merge, what
 * `rlpt convert` of a LoRA checkpoint writes) give the adapted model's logprobs: the merged
 * model without adapters against the model with them, on every projection, with random B
 * (the initial zero B would make the test blind), within 1e-5 x max(1, |logprob|). */
#include <stdlib.h>
#include <string.h>

#include "model/lora.h"
#include "model/model.h"
#include "testutil.h"

int main(void) {
  struct model_config mc = {.vocab_size = 40, .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                            .ffn_dim = 48, .max_seq = 32, .rope_theta = 1e4, .norm_eps = 1e-5,
                            .init_std = 0.2, .tie_embeddings = 0, .qkv_bias = 1, .lora_rank = 4,
                            .lora_alpha = 8, .lora_targets = (1u << LORA_NTARGETS) - 1};
  mc.head_dim = mc.dim / mc.heads;
  struct model lm, bm;
  CHECK(model_create(&lm, &mc, 64, &cpu_backend) == 0);
  model_init_params(&lm, 5);
  unsigned s = 12345;
  for (int i = 0; i < lm.table.n; i++) { /* B random in [-0.5, 0.5) */
    const struct param_entry *e = &lm.table.e[i];
    if (e->kind != P_LORA_B) continue;
    for (size_t j = 0; j < e->numel; j++) {
      s = s * 1103515245u + 12345u;
      lm.params[e->offset + j] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
  }
  int tokens[20], cu[3] = {0, 12, 20};
  for (int t = 0; t < 20; t++) tokens[t] = (t * 7 + 3) % mc.vocab_size;
  float lp[20], lp_base[20], lp_merged[20];
  CHECK(model_forward(&lm, tokens, cu, 2, lp, NULL, NULL) == 0);
  struct model_config base;
  float *merged = malloc(sizeof(float) * lm.table.total);
  memcpy(merged, lm.params, sizeof(float) * lm.table.total);
  lora_merge(&lm.table, &mc, merged, &base);
  CHECK(base.lora_rank == 0 && base.lora_targets == 0);
  CHECK(model_create(&bm, &base, 64, &cpu_backend) == 0);
  CHECK(bm.table.total == lm.table.trainable);
  memcpy(bm.params, lm.params, sizeof(float) * bm.table.total);  /* the base alone */
  CHECK(model_forward(&bm, tokens, cu, 2, lp_base, NULL, NULL) == 0);
  memcpy(bm.params, merged, sizeof(float) * bm.table.total);
  CHECK(model_forward(&bm, tokens, cu, 2, lp_merged, NULL, NULL) == 0);
  double worst = 0, moved = 0;
  for (int t = 0; t < 20; t++) {
    worst = fmax(worst, fabs(lp_merged[t] - lp[t]) / fmax(1.0, fabs(lp[t])));
    moved = fmax(moved, fabs(lp_base[t] - lp[t]));
  }
  printf("merged vs adapted: max |dlogprob| / max(1, |logprob|) %.2e; base vs adapted %.3f\n",
         worst, moved);
  CHECK(worst <= 1e-5);
  CHECK(moved > 0.1);  /* the adapters matter: the check can fail */
  free(merged);
  model_free(&lm);
  model_free(&bm);
  return TEST_RESULT("test_lora_merge");
}
