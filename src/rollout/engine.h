/* rollout/engine.h: the rollout engine on a real model — the generate engine (rollout/scheduler.h)
 * driving the transformer (model/model.h) through its KV-cache forward. It turns prompts
 * into samples (rl/experience.h) with per-token logprobs and weight versions.
 *
 * The logprob recorded for each generated token is log-softmax(logits / T) over
 * the full vocabulary (rollout/sampling.h); at T = 1 it equals the trainer's
 * model_forward logprob for the same context and weights: on the CPU backend to
 * the bit, whatever the batch the token was decoded in (cpu/rowinv.c computes each
 * row in one fixed order; test_rollout, test_rowinv). */
#ifndef RLPT_ROLLOUT_H
#define RLPT_ROLLOUT_H

#include <stdint.h>

#include "rl/experience.h"
#include "rollout/scheduler.h"

struct config;
struct model;
struct tokenizer;

/* One prompt of a rollout call: G samples are generated for it. */
struct rollout_prompt {
  int64_t prompt_id;        /* task / dataset prompt id (an RNG key) */
  int32_t group;            /* slot in the step, copied into each sample */
  const int *tokens;
  int n_tokens;
};

struct rollout_engine;      /* opaque: model adaptor, KV pool, generate config */

/* An engine over model m (not owned; its params are what rollout uses) with the
 * deck's [rollout] settings and the tokenizer's EOS / stop string (tok may be NULL:
 * no EOS, no stop string; otherwise it must outlive the engine). One forward never
 * exceeds m->max_tokens: max_batch_tokens is lowered to it. Returns 0, or 2 with a
 * message in err (e.g. kv_cache_mb too small for one block). */
int rollout_create(struct rollout_engine **re, struct model *m, const struct config *cfg,
                   const struct tokenizer *tok, char *err, size_t errlen);
void rollout_free(struct rollout_engine *re);

/* Sampling overrides for evaluation (greedy: temperature 0). A negative value
 * keeps the deck's. */
void rollout_set_sampling(struct rollout_engine *re, double temperature, double top_p, int top_k);

/* Generate group_size samples for each of n prompts with the current weights,
 * labelled weight_version, RNG keyed by (seed, step, prompt_id, sample index,
 * position). Appends n * group_size samples to out (prompt, response tokens,
 * logprobs, finish reason, group, index, weight_version, step). stats may be NULL.
 * Returns 0, 2 on bad input (message in err: an empty prompt, a token outside the
 * vocabulary, prompt + max_new_tokens over [model] max_seq or over max_batch_tokens),
 * 1 on internal failure. */
int rollout_generate(struct rollout_engine *re, const struct rollout_prompt *prompts, int n,
                     int group_size, long step, int64_t weight_version,
                     struct sample_batch *out, struct gen_stats *stats, char *err, size_t errlen);

/* Multi-turn rollouts (env/episode.h): before each rollout_generate's generation, begin
 * (may be NULL) gets the call's prompts; turn is gen_config's env_fn, its request r being
 * prompt r / group_size, sample r % group_size. The samples then carry resp_mask. env NULL
 * turns it off. Returns 0, or 2 on a device backend (not checked there yet). */
struct rollout_env {
  void *ctx;
  int (*begin)(void *ctx, const struct rollout_prompt *prompts, int n, int group_size);
  int (*turn)(void *ctx, int r, const int *resp, int n, int *ins, int cap);
};
int rollout_set_env(struct rollout_engine *re, const struct rollout_env *env, char *err,
                    size_t errlen);
/* In-flight weight updates for the next rollout_generate calls (rollout/scheduler.h's
 * update_fn, called at every decode-step boundary; fn NULL: none). When one lands inside a
 * call, each sample whose tokens span versions records them (struct sample tok_version)
 * and its weight_version is the oldest; the hook itself installs the weights (e.g. by
 * rollout_weights_changed). */
void rollout_set_update(struct rollout_engine *re, int (*fn)(void *ctx, long steps, uint64_t *version),
                        void *ctx, enum gen_in_flight in_flight);

/* The model's host params were rewritten with weight_version: the prefix cache of
 * older versions is never reused after this, and the next forward uploads them
 * (weights_host_written, model/weights.h). */
void rollout_weights_changed(struct rollout_engine *re, int64_t weight_version);
/* The same for weights written straight into the model's device buffer
 * (weights_device_target: the weight broadcast over NCCL): the device copy becomes the
 * truth (weights_device_written, the bf16 working copy remade), the host params stale. */
void rollout_weights_on_device(struct rollout_engine *re, int64_t weight_version);

/* max |rollout logprob - model_forward logprob| over the response tokens of
 * samples generated at temperature 1 with the model's current weights (packed
 * into forwards of at most m->max_tokens tokens). INFINITY when a sample does not
 * fit m->max_tokens or the forward fails; NaN when a logprob is NaN. */
double rollout_logprob_diff_max(struct model *m, const struct sample_batch *b);
/* The same over the response tokens of weight version `version` only (struct sample
 * tok_version; all tokens when version < 0): after an in-flight update, the tokens the
 * model's current weights generated. */
double rollout_logprob_diff_max_of(struct model *m, const struct sample_batch *b, int64_t version);

#endif
