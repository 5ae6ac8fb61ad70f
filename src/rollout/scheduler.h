/* rollout/scheduler.h: the scheduler that the rollout engine (rollout/engine.c) drives:
 * continuous batching over a paged KV cache with prefix sharing and preemption (the
 * vLLM model), on any language model that implements struct lm_ops.
 *
 * Requests are (prompt id, sample index, prompt tokens), typically prompts x G.
 * Every scheduler step:
 *   1. every running sequence gets one KV slot for its last sampled token (decode);
 *      when the pool runs out, unused prefix-cache entries are evicted first (LRU),
 *      then the newest running sequence is preempted: its blocks are freed and it
 *      goes back to the front of the queue. On re-admission its prompt + generated
 *      tokens are recomputed (prefill), and since sampling is keyed by position, not
 *      by step, the result is identical to an uninterrupted run.
 *   2. unless step 1 preempted, waiting requests are admitted in queue order while
 *      sequences < min(max_num_seqs, max_batch_tokens), tokens <= max_batch_tokens,
 *      and the pool has the blocks. With prefix_sharing, a prompt is prefilled once:
 *      its first request is the leader, later requests of the same prompt in the same
 *      step fork the leader's blocks after the forward, and later steps (or later
 *      calls with the same weight_version) fork the prefix-cache entry.
 *   3. one lm_ops.forward over all decodes and prefills together;
 *   4. each sequence samples its next token with the uniform of
 *      rng key (seed, RNG_STREAM_SAMPLE, step, prompt id, sample index, position in
 *      the response), so a sample's tokens never depend on what shares its batch;
 *      finished sequences free their blocks at once.
 * A response ends at EOS (finish eos; the EOS token is kept), when its tokens end
 * with a stop sequence or the stop callback says so (finish stop; the stop tokens
 * are kept: the policy produced them and the trainer scores them), or at
 * max_new_tokens (finish length).
 *
 * Scheduling: fcfs admits in request order; longest_first admits the longest
 * prompts first (stable, so the G samples of a prompt stay together). "Longest"
 * is the prompt length in tokens, the only length known before generation; a
 * long prompt admitted late is the one that makes the tail of a step slow. */
#ifndef RLPT_ROLLOUT_SCHEDULER_H
#define RLPT_ROLLOUT_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "deck/config.h"
#include "rollout/kv_cache.h"
#include "rollout/sampling.h"

/* One sequence's part of a forward. The context is positions 0 .. pos0 + n - 1: positions
 * before pos0 are already in the cache, the n new tokens are at pos0 .. pos0 + n - 1. */
struct lm_seq {
  int seq;                 /* kv_cache sequence slot */
  const int *tokens;       /* [n] new tokens */
  int n;
  int pos0;
  const int *block_table;  /* covers positions 0 .. pos0 + n - 1 (see rollout/kv_cache.h) */
};

struct lm_batch {
  struct kv_cache *kv;     /* block pool; layout [layer][k|v][block_size][kv_heads][head_dim] */
  int n_seqs, n_tokens;    /* n_tokens = sum of seqs[i].n */
  const struct lm_seq *seqs;
  int all_logits;          /* 0: logits of each sequence's last new token; 1: of every new token */
};

/* The model side of the scheduler. forward must, for every new token, write its K (after
 * RoPE) and V into kv_slot(kv, block_table, pos, layer, KV_K / KV_V) for every layer,
 * attend it causally to its sequence's positions 0 .. pos, and write fp32 logits:
 * all_logits = 0 -> logits[n_seqs][vocab] (last new token of each sequence, batch order);
 * all_logits = 1 -> logits[n_tokens][vocab] (every new token, batch order).
 * Returns 0, or nonzero on failure (gen_run stops with an internal error).
 *
 * sample, optional: sampling where the logits are (a device backend), so that a decode
 * step brings back a token and a logprob per sequence instead of vocab floats. When set,
 * the scheduler calls forward with all_logits = 0 and logits = NULL: forward keeps its
 * rows itself. sample then draws n tokens with the scheduler's uniforms u[n]: token i from
 * row src[i] >= 0 of the last forward's logits, or from host row host[-1 - src[i]] (a
 * prefix-cache hit); tokens[i] and logprob[i] as sampler_sample (-1: nothing to sample).
 * logits_row copies row `row` of the last forward's logits to host (the prefix cache keeps
 * a prompt's row). Both return 0, or nonzero on failure. NULL: the scheduler samples
 * forward's host logits with sampler_sample; both ways give the same tokens
 * (rollout/sampling.h's arithmetic) but where a uniform falls within a few ulps of a token
 * boundary. */
struct lm_ops {
  void *ctx;
  int vocab;
  int (*forward)(void *ctx, const struct lm_batch *b, float *logits);
  int (*sample)(void *ctx, int n, const int *src, const float *host,
                const struct sampling_params *sp, const double *u, int *tokens, double *logprob);
  int (*logits_row)(void *ctx, int row, float *dst);
};

enum gen_finish { GEN_RUNNING = 0, GEN_EOS, GEN_STOP, GEN_LENGTH };

struct gen_config {
  struct sampling_params sp;
  int max_new_tokens;
  int max_num_seqs;
  int max_batch_tokens;
  int scheduling;          /* enum rollout_scheduling */
  int prefix_sharing;
  int eos_id;              /* -1 = none */
  uint64_t seed;
  /* Stop sequences (token ids), and/or a callback on the generated tokens (e.g. detokenize
   * and look for the deck's stop string): nonzero = stop here. Either may be absent. */
  int n_stop;
  const int *const *stop;
  const int *stop_len;
  int (*stop_fn)(void *ctx, const int *tokens, int n);
  void *stop_ctx;
  /* Environment turns (multi-turn rollouts, env/episode.h), optional: called after each
   * token request r samples that does not end its response, with the response so far
   * (resp[n]: sampled and appended tokens). It returns k > 0 tokens written to ins[cap]
   * (cap = what is left of max_new_tokens) that are appended to the response unsampled
   * (result mask 0, logprob 0) and fed to the model with the sequence's next token on the
   * KV cache it already has; 0 to go on sampling; GEN_ENV_END to end the response (finish
   * stop); GEN_ENV_FAIL on an internal failure (gen_run returns 1). */
  int (*env_fn)(void *ctx, int r, const int *resp, int n, int *ins, int cap);
  void *env_ctx;
  /* In-flight weight updates, optional: called at every scheduler step boundary with the
   * steps run so far; returns 1 when new weights are in place (their version in *version),
   * 0 when not, -1 on failure. The running sequences then continue on their KV cache
   * (GEN_INFLIGHT_CONTINUE), have it recomputed under the new weights before their next
   * token (GEN_INFLIGHT_RECOMPUTE: prompt + generated tokens prefilled again, as after a
   * preemption), or restart from the prompt (GEN_INFLIGHT_ABORT). NULL: the weights never
   * change inside a gen_run. */
  int (*update_fn)(void *ctx, long steps, uint64_t *version);
  void *update_ctx;
  int in_flight;           /* enum gen_in_flight */
};

#define GEN_ENV_END (-1)
#define GEN_ENV_FAIL (-2)

enum gen_in_flight { GEN_INFLIGHT_CONTINUE, GEN_INFLIGHT_RECOMPUTE, GEN_INFLIGHT_ABORT };

struct gen_request {
  uint32_t prompt_id, sample;
  const int *prompt;
  int prompt_len;
};

/* Caller-owned output: tokens, logprobs and mask [n_req][max_new_tokens], len and finish
 * [n_req]. mask (1 sampled, 0 appended by env_fn) may be NULL when env_fn is; versions
 * (optional, NULL: not recorded) the weight version of each token. */
struct gen_result {
  int *tokens;
  float *logprobs;
  unsigned char *mask;
  uint64_t *versions;
  int *len;
  int *finish;             /* enum gen_finish */
};

struct gen_stats {
  long prefill_requested;  /* tokens admitted sequences needed in the cache (prompt + regenerated) */
  long prefill_computed;   /* of those, tokens the model actually computed (the rest was shared) */
  long decode_tokens;
  long preemptions;
  long updates;            /* in-flight weight updates applied */
  long requeued;           /* sequences recomputed or restarted by them */
  long steps;              /* scheduler steps (one forward each, unless the prefix cache serves it) */
  long prefix_hits, cow_copies;
  int blocks_used_max, n_blocks;
};

/* Sampling, limits, scheduling and the seed from the deck's [rollout] and [run] sections.
 * Stop sequences, the stop callback and eos_id are the caller's (they need the tokenizer). */
void gen_config_from_deck(struct gen_config *g, const struct config *cfg);

/* Generate for n_req requests with the weights of weight_version at RL step `step`.
 * kv's prefix cache persists across calls; entries of other weight versions are dropped
 * first. Returns 0; 2 on bad input (a request that can never fit the pool or the token
 * budget); 1 on an internal failure (forward failed, non-finite logits, out of memory).
 * err receives the message. */
int gen_run(const struct gen_config *g, const struct lm_ops *lm, struct kv_cache *kv,
            uint64_t weight_version, uint32_t step, const struct gen_request *req, int n_req,
            struct gen_result *out, struct gen_stats *st, char *err, size_t errlen);

const char *gen_finish_name(int finish);

/* The deck's text stop ([rollout] stop): set stop_fn = gen_stop_text and stop_ctx = a
 * struct gen_stop_text. It decodes the response's last strlen(stop) + 8 tokens (each
 * non-special token is at least one byte) and stops when that text ends with `stop`, so a
 * stop string split across tokens, or merged into a bigger one, is still found. */
struct tokenizer;
struct gen_stop_text {
  const struct tokenizer *tok;
  const char *stop;
};
int gen_stop_text(void *ctx, const int *tokens, int n);

#endif
