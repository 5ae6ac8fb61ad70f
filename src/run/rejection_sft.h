/* run/rejection_sft.h: rejection-sampling fine-tuning, the SFT phase's second data source
 * ([sft] source = rejection; RFT / STaR without rationalisation). [sft] steps are split
 * into rejection_rounds rounds; at the first step of each round every rank takes part in
 *   weight sync   the current policy to the rollout ranks
 *   generate      rollout instance i: rejection_samples completions at [rollout]
 *                 temperature for its slice of rejection_prompts train prompts (round k:
 *                 task prompts k * rejection_prompts + j), RNG keyed by
 *                 REJECTION_STEP_KEY(k)
 *   filter        the task's verifier (the reward's `correct` part) keeps the accepted
 *                 samples (rejection_keep = correct; wrong / all are ablations)
 *   pool          the kept samples to train dp 0, in instance order, and over the train
 *                 communicator to every train rank
 * and the round's SFT steps train on the pool: example k of step s is pool sample
 * (s * batch_size + k) mod pool size, [BOS] prompt response (with its EOS), the loss on
 * the response tokens. A round that keeps nothing trains nothing (said once). The
 * first SFT line of each round carries sft_generated and sft_kept. */
#ifndef RLPT_REJECTION_SFT_H
#define RLPT_REJECTION_SFT_H

#include "rl/experience.h"

struct run;
struct sft_batch;
struct step_metrics;

/* The RNG step key of rejection round k (apart from RL steps and evals). */
#define REJECTION_STEP_KEY(k) (0x40000000L + (k))

struct rejection_pool {
  struct sample_batch kept;  /* train ranks: the current round's examples */
  long generated;            /* samples generated in the current round */
  int fresh;                 /* the round's counts not yet reported */
  int warned;                /* a round kept nothing (said once) */
};

/* NULL unless [sft] source = rejection; else an empty pool. */
struct rejection_pool *rejection_pool_new(const struct run *r);
void rejection_pool_free(struct rejection_pool *p);

/* Every rank, before 0-based SFT step s: at a round's first step, the round (above). */
void rejection_sft_round(struct run *r, struct rejection_pool *p, long s);

/* Train ranks: examples k0 .. k0 + n - 1 of 0-based step s into b (none when the pool is
 * empty). 0, or 2 with a message (a sample longer than max_seq), 1 when out of memory. */
int rejection_sft_batch(const struct rejection_pool *p, struct sft_batch *b, long batch_size, long s,
                        long k0, long n, int max_seq, char *err, size_t errlen);
/* The round's counts into m at its first reported step (sft_generated, sft_kept). */
void rejection_sft_metrics(struct rejection_pool *p, struct step_metrics *m);

#endif
