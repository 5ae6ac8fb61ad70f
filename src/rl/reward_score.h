/* rl/reward_score.h: `rlpt reward-score DECK --input RESPONSES.jsonl --output SCORES.jsonl`:
 * given responses scored through the deck's reward (verifier, code sandbox, [reward]
 * command), so a reward can be tested before any training.
 *
 * Each input line is a row as the deck's [data] keys read it (prompt, answer, the code
 * task's tests, countdown's nums and target; for the built-in arith and countdown tasks
 * the arith / countdown verifier is used) plus "response" (a string) and optionally
 * "n_tokens" (its token count for the length and overlong parts; else the deck's
 * tokenizer's count, or its bytes when it cannot encode them). Prompts are used as the
 * file has them (the deck's prompt_template applied, no chat template).
 *
 * Output, one line per scored row, in file order: {"line", "reward", "parts": {active
 * components}, "tests" (code), "command_parts" (the [reward] command's parts)}, written to
 * OUTPUT.tmp and renamed; a summary on stdout (rows, mean reward, acc, reward_errors,
 * sandbox executions per second). */
#ifndef RLPT_REWARD_SCORE_H
#define RLPT_REWARD_SCORE_H

struct reward_score_opts {
  const char *deck, *input, *output;
  char *const *over;
  int n_over;
};

/* 0; 2 bad deck or input (one message naming the file and line); 1 internal. */
int reward_score(const struct reward_score_opts *o);

#endif
