/* env/demo.h: SFT demonstrations of multi-turn episodes. With [env] enabled, an SFT
 * example's answer is a whole episode as text, its tool turns written as the plain wrapper's
 * blocks (env/episode.h):
 *
 *   <tool_call>{"name": "calculator", "arguments": {"expression": "37*43"}}</tool_call>
 *   <tool_response>1591</tool_response>1591
 *
 * Each "<tool_response>...</tool_response>" block is encoded on its own, as the rollout
 * appends it, and its tokens are the tool's: no SFT loss on them. */
#ifndef RLPT_ENV_DEMO_H
#define RLPT_ENV_DEMO_H

#include <stddef.h>

#include "tasks/prompt.h"

struct tokenizer;

/* [BOS] prompt answer [EOS] into ids[cap] as task_sft_tokens (tasks/tasks.h), the answer
 * encoded block by block; tool[i] = 1 for the tokens of its tool-response blocks, else 0.
 * Returns 0, or the tokenizer's error code (TOK_ERR_*). */
int env_sft_tokens(const struct tokenizer *tok, const struct task_prompt *p, int *ids,
                   unsigned char *tool, size_t cap, size_t *n_prompt, size_t *n_total);

#endif
