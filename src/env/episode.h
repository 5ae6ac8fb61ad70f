/* env/episode.h: the environment side of multi-turn rollouts. The rollout engine
 * (rollout/engine.h's rollout_env) calls env_turn after every sampled token of every
 * sequence; when the current model turn's text ends with "</tool_call>" (env/tool_call.h)
 * the call is parsed and run (env/tools.h) and the tool turn's tokens go back to the engine,
 * which appends them to the sequence (masked out of the loss) and continues on the same KV
 * cache. The tool turn's text, by wrapper:
 *
 *   plain   <tool_response>CONTENT</tool_response>      (the character tokenizer: bytes
 *           outside printable ASCII in CONTENT become spaces)
 *   chatml  <|im_end|>\n<|im_start|>tool\n<tool_response>\nCONTENT\n</tool_response><|im_end|>\n
 *           <|im_start|>assistant\n                      (Hermes / Qwen tool turn)
 *   llama3  <|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\nCONTENT<|eot_id|>
 *           <|start_header_id|>assistant<|end_header_id|>\n\n
 *
 * A prompt that ends inside an open "<tool_call>" (a forced start of the assistant turn) lends
 * that open block to its first model turn, so the call the model completes is parsed whole.
 *
 * A tool call that is malformed, unterminated, or names an unknown tool gets an error
 * content and counts as a tool error. An episode has at most max_turns model turns: a tool
 * call in the last one ends the response (finish stop) without running. The response
 * budget (model and tool tokens together) is [rollout] max_new_tokens: a tool turn that
 * does not fit is cut and the response ends (finish length). */
#ifndef RLPT_ENV_EPISODE_H
#define RLPT_ENV_EPISODE_H

#include "env/tools.h"
#include "rollout/engine.h"

struct tokenizer;

enum env_wrap { ENV_WRAP_PLAIN = 0, ENV_WRAP_CHATML, ENV_WRAP_LLAMA3 };

/* Totals over the episodes of the last rollout_generate call. */
struct env_stats {
  long episodes;
  long turns;          /* model turns (tool turns + 1 per episode) */
  long tool_calls;     /* tool turns appended */
  long tool_errors;    /* of those, error contents (malformed, unknown tool, failed tool) */
  double tool_s;       /* wall seconds spent in tools */
};

struct env_episode {
  int turn_start;      /* response index where the current model turn starts */
  int tool_turns, errors;
};

struct env {
  struct env_tools tools;
  int max_turns;
  enum env_wrap wrap;
  const struct tokenizer *tok;
  struct env_episode *ep;
  int n_ep, cap_ep;
  char **open_call;    /* [n_prompts]: a prompt's open "<tool_call>..." tail, or NULL */
  char **prompt_text;  /* [n_prompts]: the prompts decoded */
  int n_prompts, group_size;
  double tool_s;
};

/* tok must outlive e. max_turns >= 1. */
void env_init(struct env *e, const struct env_tools *tools, int max_turns, enum env_wrap wrap,
              const struct tokenizer *tok);
void env_free(struct env *e);
/* The engine's hooks over e (rollout_set_env). */
struct rollout_env env_rollout_hooks(struct env *e);
/* The hooks themselves (exported for tests driving the scheduler directly). */
int env_begin(void *ctx, const struct rollout_prompt *prompts, int n, int group_size);
int env_turn(void *ctx, int r, const int *resp, int n, int *ins, int cap);
/* The last call's totals. */
void env_stats_get(const struct env *e, struct env_stats *st);

#endif
