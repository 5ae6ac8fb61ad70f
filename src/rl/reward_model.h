/* rl/reward_model.h: the reward-model component of the reward service ([reward] rm_path,
 * rm_alpha, rm_batch_tokens; the mixing itself is in rl/reward.h).
 *
 * A reward model is the policy's model family with a value head (score.weight): its
 * score of a sample is the value head's output at the sample's final token, after a
 * causal forward over prompt + response (the sequence the policy saw; the response
 * ends with EOS when one was generated). It is read from
 *   - an HDF5 model file (rlpt init with [model] value_head = true, or rlpt convert),
 *   - a checkpoint file: its /model when that has a value head, else its PPO /critic,
 *   - a checkpoint directory: the file its `latest` names.
 * It must share the policy's tokenizer (same vocab_size) and accept the policy's longest
 * sequence (max_seq at least the policy's [model] max_seq).
 *
 * Scoring packs whole sequences into forwards of at most `budget` tokens (no padding,
 * the value-only path: no vocabulary GEMM); packing does not change a score beyond fp32
 * summation order. In a run the reward ranks load it on the [run] device's backend
 * (run/reward_service.h); reward_model_load itself (rlpt reward-check, tests) uses the CPU backend. */
#ifndef RLPT_REWARD_MODEL_H
#define RLPT_REWARD_MODEL_H

#include <stddef.h>

#include "model/model.h"

struct reward_model {
  struct model m;
  char path[4200];      /* the file the weights came from */
  const char *group;    /* "model" or "critic" */
  int budget;           /* tokens per forward */
  int *tokens, *cu;     /* [budget], [budget + 1] */
  float *val;           /* [budget] */
};

/* One sequence to score: a[0..na) then b[0..nb) (prompt, response; either may be empty,
 * not both). */
struct rm_seq {
  const int *a, *b;
  int na, nb;
};

/* Load path (see above) for a policy with vocab tokens and sequences up to need_seq
 * tokens; budget tokens per forward (raised to need_seq). Returns 0, 2 (missing or bad
 * file, no value head, other vocabulary, max_seq too short; err names [reward] rm_path)
 * or 1 (out of memory). On error rm holds nothing to free. */
int reward_model_load(struct reward_model *rm, const char *path, int vocab, int need_seq, int budget,
                      char *err, size_t errlen);
/* The same on the backend ops (rlpt run: the [run] device's). */
int reward_model_load_on(struct reward_model *rm, const struct backend_ops *ops, const char *path,
                         int vocab, int need_seq, int budget, char *err, size_t errlen);
void reward_model_free(struct reward_model *rm);
/* The same checks without the weights (only the file's metadata is read): 0 or 2.
 * mc (may be NULL) gets the reward model's config. */
int reward_model_check(const char *path, int vocab, int need_seq, struct model_config *mc,
                       char *err, size_t errlen);

/* out[i] = the value head at the last token of seqs[i], for n sequences, in forwards of
 * at most rm->budget tokens. Non-finite scores are returned as they are (the reward
 * zeroes and counts them). Returns 0, or -1 with a message in err (an empty sequence,
 * one longer than the budget or max_seq, a token out of range). */
int reward_model_score(struct reward_model *rm, const struct rm_seq *seqs, int n, double *out, char *err,
                       size_t errlen);
/* The scores of b's samples (prompt + response) as a malloc'd array of b->n, or NULL with a
 * message in err. */
struct sample_batch;
double *reward_model_score_samples(struct reward_model *rm, const struct sample_batch *b, char *err,
                                   size_t errlen);

#endif
