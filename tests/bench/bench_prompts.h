/* bench_prompts.h: the rollout benchmarks' prompt set (bench_generate, bench_gpu):
 * n prompts of len pseudo-random tokens below vocab (a fixed LCG, the same on every
 * run), prompt i being group i; tok holds n * len ids and p n prompts. */
#ifndef RLPT_BENCH_PROMPTS_H
#define RLPT_BENCH_PROMPTS_H

#include "rollout.h"

static inline void bench_prompts_fill(int *tok, struct rollout_prompt *p, int n, int len, int vocab) {
  for (int i = 0; i < n * len; i++) tok[i] = (int)((1103515245u * (unsigned)i + 12345u) % (unsigned)vocab);
  for (int i = 0; i < n; i++)
    p[i] = (struct rollout_prompt){ .prompt_id = i, .group = i, .tokens = tok + i * len, .n_tokens = len };
}

#endif
