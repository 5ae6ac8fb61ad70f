/* tasks/prompt.h: one prompt of a task and what its verifier needs, shared by the built-in
 * tasks (tasks/tasks.h) and the JSONL datasets (tasks/dataset.h) that fill it. */
#ifndef RLPT_PROMPT_H
#define RLPT_PROMPT_H

#include <stdint.h>

/* Prompt and answer bytes + NUL: room for dataset rows ([task] name = jsonl, src/tasks/dataset.h). */
#define TASK_TEXT_MAX 1536
#define TASK_MAX_NUMS 6

/* A multi-turn demonstration's tool turns ([env] enabled, env/demo.h) are these blocks; the
 * verifier's reference is the text after the last one (the final model turn). */
#define TASK_TOOL_RESPONSE_OPEN "<tool_response>"
#define TASK_TOOL_RESPONSE_CLOSE "</tool_response>"

enum task_split { TASK_TRAIN = 0, TASK_EVAL = 1 };

struct task_prompt {
  uint64_t index;
  int split;                    /* enum task_split */
  char text[TASK_TEXT_MAX];     /* the prompt the model sees */
  char answer[TASK_TEXT_MAX];   /* the reference completion (without EOS) */
  int n_nums;                   /* countdown */
  long nums[TASK_MAX_NUMS];
  long target;
};

#endif
