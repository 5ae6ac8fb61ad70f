/* bench_prompts.h: the rollout benchmarks' work (bench_generate, bench_gpu): their
 * prompt set and the rollout settings of a run. */
#ifndef RLPT_BENCH_PROMPTS_H
#define RLPT_BENCH_PROMPTS_H

#include "deck/config.h"
#include "model/model.h"
#include "rollout/engine.h"

/* The deck of a run on m: seed 1, n_new new tokens per sample, B sequences at a time
 * within m's token budget, and a KV pool for n_seqs sequences of prompt + n_new tokens
 * (fp32 K and V: 8 bytes per layer, kv head and head dimension) plus pad_mb MiB. */
static inline void bench_rollout_config(struct config *cfg, const struct model *m, int B,
                                        int n_new, int n_seqs, int prompt, long pad_mb) {
  config_defaults(cfg);
  cfg->run.seed = 1;
  cfg->rollout.max_new_tokens = n_new;
  cfg->rollout.max_num_seqs = B;
  cfg->rollout.max_batch_tokens = m->max_tokens;
  size_t kv_tok = 8 * (size_t)m->cfg.layers * m->cfg.kv_heads * m->cfg.head_dim;
  cfg->rollout.kv_cache_mb = (long)((kv_tok * n_seqs * (size_t)(prompt + n_new)) >> 20) + pad_mb;
}

/* n prompts of len pseudo-random tokens below vocab (a fixed LCG, the same on every
 * run), prompt i being group i; tok holds n * len ids and p n prompts. */
static inline void bench_prompts_fill(int *tok, struct rollout_prompt *p, int n, int len, int vocab) {
  for (int i = 0; i < n * len; i++) tok[i] = (int)((1103515245u * (unsigned)i + 12345u) % (unsigned)vocab);
  for (int i = 0; i < n; i++)
    p[i] = (struct rollout_prompt){ .prompt_id = i, .group = i, .tokens = tok + i * len, .n_tokens = len };
}

#endif
