/* rl/experience.h: the sample record, growable sample batches, and the versioned
 * experience buffer of the async modes.
 *
 * A sample is one response to one prompt: its tokens, the rollout logprob of
 * every response token, the reward (total and named parts), optionally the
 * advantage, and the weight_version of the policy that generated it. Every
 * array is heap-allocated at its exact length: there are no fixed-size limits.
 * A sample owns its arrays; sample_free releases them.
 *
 * The buffer (struct exp_buffer) is a bounded FIFO. Samples are popped for a
 * train step at weight version V; a sample's lag is V - weight_version. Samples
 * with lag > max_lag are dropped (STALE_DROP, the default) or handed out
 * flagged SAMPLE_STALE so the trainer weights them by truncated importance
 * sampling (STALE_TIS). Lag and drop statistics feed the metrics lag_mean,
 * lag_max and drop_ratio. */
#ifndef RLPT_EXPERIENCE_H
#define RLPT_EXPERIENCE_H

#include <stddef.h>
#include <stdint.h>

enum finish_reason { FINISH_EOS, FINISH_STOP, FINISH_LENGTH, FINISH_COUNT };

/* Sample flags (bit mask). */
#define SAMPLE_STALE     1u  /* lag > max_lag, kept for truncated importance sampling */
#define SAMPLE_FILTERED  2u  /* its group was filtered out (e.g. DAPO zero-variance group) */
#define SAMPLE_NONFINITE 4u  /* the reward was NaN/Inf and was replaced by 0 */
#define SAMPLE_MASKED    8u  /* contributes no loss (e.g. overlong filtering) */
#define SAMPLE_ADV_TRAINED 16u /* adv holds what the trainer computed and used (a record, not an input) */

struct reward_part {
  char *name;   /* e.g. "correct", "format", "overlong"; owned */
  double value;
};

struct sample {
  int64_t prompt_id;       /* dataset / task prompt id */
  int32_t group;           /* prompt slot in the step (0 .. prompts_per_step-1) */
  int32_t index;           /* sample index inside its group (0 .. G-1) */
  int64_t weight_version;  /* version of the weights that generated it (the oldest of its
                            * tokens' when an in-flight update split it: tok_version) */
  int64_t step;            /* train step it was generated for */
  int32_t n_prompt, n_resp;
  int32_t *prompt;         /* [n_prompt] token ids */
  int32_t *resp;           /* [n_resp] token ids */
  float *logprobs;         /* [n_resp] rollout logprobs, or NULL when not recorded */
  uint8_t *resp_mask;      /* [n_resp] 1: the policy sampled it (trained), 0: an environment
                            * (tool) turn's token (no loss, logprob 0); NULL: all sampled */
  int64_t *tok_version;    /* [n_resp] weight version of each response token, or NULL when
                            * all are weight_version (an in-flight update changed none) */
  enum finish_reason finish;
  double reward;
  int32_t n_parts;
  struct reward_part *parts; /* [n_parts] */
  int32_t n_adv;           /* 0: none, 1: one scalar for the sequence, n_resp: per token */
  float *adv;              /* [n_adv] */
  uint32_t flags;          /* SAMPLE_* */
};

/* "eos", "stop", "length"; "?" for anything else. */
const char *finish_reason_name(int f);
/* The reason for a name, or -1. */
int finish_reason_parse(const char *name);

/* All fields zero, arrays NULL. */
void sample_init(struct sample *s);
void sample_free(struct sample *s);
/* Copy the tokens (and logprobs when not NULL) into s, replacing what it had.
 * Returns 0, or -1 on allocation failure (s unchanged). */
int sample_set_prompt(struct sample *s, const int32_t *tok, int32_t n);
int sample_set_response(struct sample *s, const int32_t *tok, const float *logprobs, int32_t n);
/* The response's token mask (mask NULL or all ones: no mask kept). sample_set_response
 * drops it. 0 or -1. */
int sample_set_resp_mask(struct sample *s, const uint8_t *mask);
/* 1 when response token j was sampled by the policy (no mask, or mask 1). */
static inline int sample_tok_trained(const struct sample *s, int j) {
  return !s->resp_mask || s->resp_mask[j];
}
/* Index of the first token of the response's last model turn: after its last tool
 * (masked) token; 0 without a mask. What the verifier scores of a multi-turn episode. */
int32_t sample_last_turn(const struct sample *s);
/* The per-token versions ([n_resp]; NULL clears them). Returns 0 or -1. */
int sample_set_tok_versions(struct sample *s, const int64_t *v);
/* Response tokens of s generated under version v (all or none without tok_version). */
int32_t sample_tokens_of_version(const struct sample *s, int64_t v);
/* Set (or add) a named reward part. Returns 0 or -1. */
int sample_set_part(struct sample *s, const char *name, double value);
/* Value of a named part into *v; 0 when found, -1 when not. */
int sample_get_part(const struct sample *s, const char *name, double *v);
/* Advantage: n = 1 (scalar) or n = n_resp (per token); n = 0 clears it. Returns 0 or -1. */
int sample_set_adv(struct sample *s, const float *adv, int32_t n);
/* Deep copy src into dst (dst must be initialised or freed; it is overwritten). 0 or -1. */
int sample_copy(struct sample *dst, const struct sample *src);
/* 1 when every field and every array is bit-identical (NaNs compare by bits). */
int sample_equal(const struct sample *a, const struct sample *b);

/* A growable array of samples; owns them. */
struct sample_batch {
  int n, cap;
  struct sample *s;
};

void sample_batch_init(struct sample_batch *b);
/* Frees every sample and the array. */
void sample_batch_free(struct sample_batch *b);
/* Frees every sample, keeps the capacity. */
void sample_batch_clear(struct sample_batch *b);
/* Make room for at least n samples in total. 0 or -1. */
int sample_batch_reserve(struct sample_batch *b, int n);
/* Append a fresh zeroed sample; returns it (valid until the batch grows), NULL on failure. */
struct sample *sample_batch_add(struct sample_batch *b);
/* Append *s, taking ownership of its arrays (s is left zeroed). 0 or -1 (s untouched). */
int sample_batch_push(struct sample_batch *b, struct sample *s);
/* Move every sample of src to the end of dst (src is left empty). 0 or -1. */
int sample_batch_move_all(struct sample_batch *dst, struct sample_batch *src);
/* Drop samples [from, n) (used to roll back a partial append). */
void sample_batch_truncate(struct sample_batch *b, int from);
/* Response tokens in the batch the policy sampled (the trained tokens: tool tokens left out). */
int64_t sample_batch_resp_tokens(const struct sample_batch *b);

/* ---- versioned buffer ----------------------------------------------------- */

enum stale_policy { STALE_DROP, STALE_TIS };

/* Counters since the last exp_buffer_take_stats (one train step's worth). */
struct exp_stats {
  int64_t popped;       /* samples handed to the trainer */
  int64_t dropped;      /* samples discarded for lag > max_lag */
  int64_t stale_kept;   /* popped samples with lag > max_lag (STALE_TIS) */
  int64_t rejected;     /* pushes refused because the buffer was full */
  double lag_sum;       /* sum of the lag of popped samples */
  int64_t lag_max;      /* largest lag of a popped sample (0 when none) */
};

struct exp_buffer {
  int cap;              /* depth bound, in samples */
  int head, n;          /* ring: the oldest sample is ring[head] */
  struct sample *ring;
  int64_t max_lag;
  enum stale_policy stale;
  struct exp_stats win;    /* since the last take_stats */
  struct exp_stats total;  /* since init */
};

/* cap >= 1 samples, max_lag >= 0. Returns 0, or -1 (bad arguments or no memory). */
int exp_buffer_init(struct exp_buffer *buf, int cap, int64_t max_lag, enum stale_policy stale);
void exp_buffer_free(struct exp_buffer *buf);
/* Space left before the bound. */
int exp_buffer_space(const struct exp_buffer *buf);
/* Append *s (ownership moves; s is left zeroed). Returns 0, or 1 when the
 * buffer is full (s untouched, counted in `rejected`): the producer must wait. */
int exp_buffer_push(struct exp_buffer *buf, struct sample *s);
/* Pop up to `want` samples, oldest first, for a trainer at weight version
 * `version`, appending them to out. Samples with lag > max_lag are dropped
 * (STALE_DROP) or appended flagged SAMPLE_STALE (STALE_TIS). Returns the number
 * appended, or -1 on allocation failure (nothing is lost: the buffer keeps them). */
int exp_buffer_pop(struct exp_buffer *buf, int64_t version, int want, struct sample_batch *out);
/* The same in whole groups (GRPO needs all G samples of a prompt): a group is
 * a run of consecutive samples with equal (step, group), so producers push a
 * group's samples together. Its lag is that of its oldest sample; a stale group
 * is dropped whole (STALE_DROP) or handed out with each sample flagged by its
 * own lag (STALE_TIS). Counters stay in samples. Returns the groups appended,
 * or -1 on allocation failure (the buffer keeps them). */
int exp_buffer_pop_groups(struct exp_buffer *buf, int64_t version, int groups,
                          struct sample_batch *out);
/* Under STALE_DROP, discard every buffered sample whose lag at `version` exceeds
 * max_lag (frees room for fresh samples after an update). Returns the count. */
int exp_buffer_prune(struct exp_buffer *buf, int64_t version);
/* The i-th buffered sample, oldest first (for checkpointing /buffer). */
const struct sample *exp_buffer_peek(const struct exp_buffer *buf, int i);
/* Copy the window counters into *out (may be NULL) and reset them. */
void exp_buffer_take_stats(struct exp_buffer *buf, struct exp_stats *out);
/* lag_sum / popped (0 when none) and dropped / (popped + dropped) (0 when none). */
double exp_stats_lag_mean(const struct exp_stats *st);
double exp_stats_drop_ratio(const struct exp_stats *st);

#endif
