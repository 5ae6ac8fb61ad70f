/* rl/reward_command.h: a reward written in any language: [reward] command = PROGRAM ARGS
 * (split on spaces, no shell) starts command_workers long-lived processes on first use,
 * each speaking JSON lines over its stdin/stdout (one socket), stderr left to rlpt's:
 *
 *   request  {"id": N, "prompt": "...", "response": "...", "answer": "...", "metadata": {...}}
 *   reply    {"id": N, "reward": R, "parts": {"name": value, ...}}   (parts optional)
 *
 * response is what the verifier would read (the single [reward] format_tags block's inside
 * when there is one); metadata is the dataset row as read ([task] name = jsonl), or
 * {"nums": [...], "target": T} for countdown, {} otherwise. A worker gets one request at a
 * time; the workers of a rank share a batch. R (a finite number) becomes the `correct`
 * component; parts go to reward-score's output and a run's samples (command.<name>). A request fails, scores 0 and is counted in reward_errors when its worker
 * exits or closes its stdout (restarted), takes longer than command_timeout_s (killed,
 * restarted), or answers a line that is not such an object with the request's id (named
 * in the message with the start of the line; the worker is restarted, its state being
 * unknown). The first failures are printed on stderr. */
#ifndef RLPT_REWARD_COMMAND_H
#define RLPT_REWARD_COMMAND_H

#include <stddef.h>

#include "deck/config.h"

struct reward_command;
struct task;
struct task_prompt;

/* The command checked (its program exists and is executable); no worker started yet.
 * 0, or 2 with a message naming [reward] command; 1 out of memory. */
int reward_command_open(struct reward_command **out, const struct config *cfg, char *err, size_t errlen);
void reward_command_close(struct reward_command *c);
/* Rewards of n responses (resp[i], len[i] bytes) to prompts p[i] of task t into reward[n];
 * parts (may be NULL) gets each reply's "parts" as compact JSON (malloc'd, or NULL when
 * absent or failed). Failures add to *errors. 0, or 1 out of memory. */
int reward_command_score(struct reward_command *c, const struct task *t, const struct task_prompt *const *p,
                         const char *const *resp, const size_t *len, int n, double *reward, char **parts,
                         long *errors);
/* A reply's parts (compact JSON, may be NULL) onto sample s as command.<name> for each finite
 * number, so the samples log shows them. 0, or -1 out of memory. */
struct sample;
int reward_command_set_parts(struct sample *s, const char *parts);
/* Workers restarted so far (crashed, hung or garbled). */
long reward_command_restarts(const struct reward_command *c);

#endif
