/* rl/reward.h: a sample's reward as a weighted sum of named components, and the
 * batch statistics that reveal a miswired or diluted reward.
 *
 *   correct   the task verifier (1/0; the code verifier: the share of tests passed), or
 *             [reward] command's reward (rl/reward_command.h). With [reward] format_tags set and exactly
 *             one tag block in the response, the verifier reads the block's inside;
 *             otherwise it reads the whole response.
 *   format    1 when the response holds exactly one OPEN..CLOSE block (tags unset: 1).
 *   length    -n_tokens / max_new_tokens (a plain length penalty, in [-1, 0]).
 *   overlong  DAPO overlong shaping (rl/README.md §6), scaled by overlong_penalty:
 *             0 up to max_new_tokens - overlong_buffer tokens, then linear down to
 *             -penalty at max_new_tokens, -penalty beyond. Off (0) when buffer = 0.
 *   rm        the reward model's score of prompt + response ([reward] rm_path, rl/reward_model.h),
 *             given by the caller; 0 without a reward model.
 *
 * rule  = correct_weight*correct + format_weight*format + length_weight*length
 *         + (overlong_buffer > 0 ? overlong : 0)
 * total = rule                                       without a reward model,
 *         rm_alpha * rule + (1 - rm_alpha) * rm      with one (rm_alpha = 1: rm is only reported).
 * weight[REWARD_RM] is 1 when a reward model is configured (like weight[REWARD_OVERLONG], it
 * marks the part as active; the mixing uses rm_alpha).
 * A non-finite component or total becomes 0 and is counted (reward_nonfinite); a non-finite
 * RM score is zeroed before the mixing. */
#ifndef RLPT_REWARD_H
#define RLPT_REWARD_H

#include <stddef.h>

#include "deck/config.h"
#include "tasks/tasks.h"

enum reward_component { REWARD_CORRECT = 0, REWARD_FORMAT, REWARD_LENGTH, REWARD_OVERLONG, REWARD_RM, REWARD_NCOMPONENTS };

#define REWARD_TAG_MAX CFG_TAG_MAX

struct reward_command;

struct reward_cfg {
  double weight[REWARD_NCOMPONENTS];
  char open_tag[REWARD_TAG_MAX], close_tag[REWARD_TAG_MAX];  /* both empty = no tags */
  long max_new_tokens, overlong_buffer;
  double overlong_penalty;
  int has_rm;        /* [reward] rm_path is set */
  struct reward_command *cmd;  /* [reward] command's workers (NULL: the task's verifier) */
  char **cmd_parts;  /* NULL, or room for a batch's items: each gets its reply's "parts" (malloc'd
                        JSON, or NULL) when the batch is scored by [reward] command */
  double rm_alpha;   /* total = rm_alpha * rule + (1 - rm_alpha) * rm */
  int self_consistency;      /* correct = agreement with the group's majority (rl/self_consistency.h) */
  double sc_min_agreement;   /* below this majority share a group's correct parts are 0 */
};

/* One response to score. group: the prompt's group id, in [0, n_groups). */
struct reward_item {
  const struct task_prompt *prompt;
  const char *text;  /* decoded response, without EOS */
  size_t len;
  long n_tokens;     /* response tokens (EOS included when generated) */
  int group;
};

struct reward_stats {
  int n, n_groups;
  double mean, std;                          /* reward_mean, reward_std (population) */
  double acc;                                /* fraction with correct == 1 */
  double part_mean[REWARD_NCOMPONENTS];           /* reward_parts.<name> */
  double part_const_frac[REWARD_NCOMPONENTS];     /* reward_parts_const_frac.<name>: share of groups
                                                in which the component is constant */
  double reward_const_frac;                  /* share of groups whose total reward is constant */
  int sc_labeled, sc_label_ok;               /* self_consistency: groups with a majority and a
                                                reference answer; those whose majority is right */
  long nonfinite;                            /* reward_nonfinite: samples with a non-finite value */
  long errors;                               /* reward_errors: sandboxes that did not start, requests
                                                [reward] command's workers failed (scored 0) */
  long executions;                           /* sandbox executions (code verifier) */
  double exec_wall_s;                        /* wall seconds of the sandbox pool runs */
};

/* The metric name of a component: reward_parts.<name> in the metrics. */
const char *reward_component_name(enum reward_component c);
/* From [reward], [algo] overlong_* and [rollout] max_new_tokens ([reward] command: its program
 * checked, workers started on first use). 0, or 2 with a message. */
int reward_init(struct reward_cfg *rc, const struct config *cfg, char *err, size_t errlen);
/* Stops [reward] command's workers. */
void reward_free(struct reward_cfg *rc);
/* DAPO R_len(len) * penalty; 0 when buffer <= 0. */
double reward_overlong(long len, long max_new_tokens, long buffer, double penalty);
/* Components of one response into parts[REWARD_NCOMPONENTS]; returns the total. *nonfinite
 * is set to 1 when something was non-finite (and zeroed). The _rm form takes the reward
 * model's score of the response (ignored without a reward model); the plain one scores 0. */
double reward_score_one(const struct reward_cfg *rc, const struct task *t, const struct reward_item *it,
                        double parts[REWARD_NCOMPONENTS], int *nonfinite);
double reward_score_one_rm(const struct reward_cfg *rc, const struct task *t, const struct reward_item *it,
                           double rm, double parts[REWARD_NCOMPONENTS], int *nonfinite);
/* The total from the components: rule, or the rm_alpha mix when rc has a reward model
 * (see above). parts[REWARD_RM] must be finite. */
double reward_combine(const struct reward_cfg *rc, const double parts[REWARD_NCOMPONENTS]);
/* Score n items: rewards[n], parts[n][REWARD_NCOMPONENTS], and the batch statistics over
 * n_groups groups. rm (may be NULL: all 0) holds the reward model's score of each item.
 * Returns 0, or 1 when a group id is out of range or memory runs out. */
int reward_score_batch(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items, int n,
                       int n_groups, double *rewards, double (*parts)[REWARD_NCOMPONENTS], struct reward_stats *st);
int reward_score_batch_rm(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items,
                          const double *rm, int n, int n_groups, double *rewards, double (*parts)[REWARD_NCOMPONENTS],
                          struct reward_stats *st);

#endif
