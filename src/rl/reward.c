/* rl/reward.c: reward components, their weighted sum, non-finite handling and the
 * per-batch statistics (rules in rl/reward.h). */
#include "rl/reward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl/self_consistency.h"
#include "rl/reward_command.h"
#include "tasks/code.h"
#include "tasks/verify.h"

const char *reward_component_name(enum reward_component c) {
  static const char *const names[REWARD_NCOMPONENTS] = {"correct", "format", "length", "overlong", "rm"};
  return c >= 0 && c < REWARD_NCOMPONENTS ? names[c] : "?";
}

int reward_init(struct reward_cfg *rc, const struct config *cfg, char *err, size_t errlen) {
  memset(rc, 0, sizeof *rc);
  rc->weight[REWARD_CORRECT] = cfg->reward.correct_weight;
  rc->weight[REWARD_FORMAT] = cfg->reward.format_weight;
  rc->weight[REWARD_LENGTH] = cfg->reward.length_weight;
  rc->max_new_tokens = cfg->rollout.max_new_tokens;
  rc->overlong_buffer = cfg->algo.overlong_buffer;
  rc->overlong_penalty = cfg->algo.overlong_penalty;
  rc->weight[REWARD_OVERLONG] = rc->overlong_buffer > 0 ? 1.0 : 0.0;
  rc->has_rm = cfg->reward.rm_path[0] != '\0';
  rc->rm_alpha = cfg->reward.rm_alpha;
  rc->weight[REWARD_RM] = rc->has_rm ? 1.0 : 0.0;
  rc->self_consistency = cfg->reward.self_consistency;
  rc->sc_min_agreement = cfg->reward.sc_min_agreement;
  int rc_deck = config_reward_check(cfg, err, errlen);
  if (!rc_deck) rc_deck = config_format_tags(cfg->reward.format_tags, rc->open_tag, rc->close_tag, err, errlen);
  if (!rc_deck && cfg->reward.command[0]) rc_deck = reward_command_open(&rc->cmd, cfg, err, errlen);
  return rc_deck;
}

void reward_free(struct reward_cfg *rc) {
  reward_command_close(rc->cmd);
  rc->cmd = NULL;
}

double reward_overlong(long len, long max_new_tokens, long buffer, double penalty) {
  if (buffer <= 0) return 0.0;
  long expected = max_new_tokens - buffer;
  if (len <= expected) return 0.0;
  if (len <= max_new_tokens) return penalty * (double)(expected - len) / (double)buffer;
  return -penalty;
}

static double finite_or_zero(double x, int *bad) {
  if (isfinite(x)) return x;
  *bad = 1;
  return 0.0;
}

double reward_combine(const struct reward_cfg *rc, const double parts[REWARD_NCOMPONENTS]) {
  double rule = 0.0;
  for (int k = 0; k < REWARD_NCOMPONENTS; k++)
    if (k != REWARD_RM && rc->weight[k] != 0.0) rule += rc->weight[k] * parts[k];
  if (!rc->has_rm) return rule;
  return rc->rm_alpha * rule + (1.0 - rc->rm_alpha) * parts[REWARD_RM];
}

double reward_score_one(const struct reward_cfg *rc, const struct task *t, const struct reward_item *it,
                        double parts[REWARD_NCOMPONENTS], int *nonfinite) {
  return reward_score_one_rm(rc, t, it, 0.0, parts, nonfinite);
}

/* The span of the response the verifier reads (the single tag block's inside, or all of
 * it); returns the format part. */
static double reward_span(const struct reward_cfg *rc, const struct reward_item *it, size_t *off, size_t *inner) {
  const char *text = it->text ? it->text : "";
  size_t len = it->text ? it->len : 0;
  double fmt = 1.0;
  *off = 0;
  *inner = len;
  if (rc->open_tag[0]) fmt = verify_format(text, len, rc->open_tag, rc->close_tag, off, inner);
  if (fmt != 1.0) { *off = 0; *inner = len; }
  return fmt;
}

/* Every part from the verifier's correct and the format part; returns the total. */
static double reward_finish(const struct reward_cfg *rc, const struct reward_item *it, double correct, double fmt,
                            double rm, double parts[REWARD_NCOMPONENTS], int *nonfinite) {
  int bad = 0;
  parts[REWARD_CORRECT] = correct;
  parts[REWARD_FORMAT] = fmt;
  parts[REWARD_LENGTH] = rc->max_new_tokens > 0 ? -(double)it->n_tokens / (double)rc->max_new_tokens : 0.0;
  parts[REWARD_OVERLONG] = reward_overlong(it->n_tokens, rc->max_new_tokens, rc->overlong_buffer, rc->overlong_penalty);
  parts[REWARD_RM] = rc->has_rm ? rm : 0.0;
  for (int k = 0; k < REWARD_NCOMPONENTS; k++) parts[k] = finite_or_zero(parts[k], &bad);
  double total = finite_or_zero(reward_combine(rc, parts), &bad);
  if (nonfinite) *nonfinite = bad;
  return total;
}

/* correct[n] of the items' spans: [reward] command's workers, else the task's verifier (the
 * code verifier runs the batch over the sandbox pool). 0, or 1 out of memory. */
static int reward_correct(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items, int n,
                          const size_t *off, const size_t *inner, double *correct, struct reward_stats *st) {
  const struct task_prompt **p = malloc(sizeof *p * (size_t)(n + 1));
  const char **text = malloc(sizeof *text * (size_t)(n + 1));
  int rc_ = !p || !text;
  for (int i = 0; !rc_ && i < n; i++) {
    p[i] = items[i].prompt;
    text[i] = (items[i].text ? items[i].text : "") + off[i];
  }
  struct code_stats cs = {0};
  char **parts = rc->cmd && !rc_ ? calloc((size_t)n + 1, sizeof *parts) : NULL;
  if (!rc_ && rc->cmd) rc_ = !parts || reward_command_score(rc->cmd, t, p, text, inner, n, correct, parts, &st->errors);
  else if (!rc_) rc_ = task_verify_batch(t, p, text, inner, n, correct, &cs);
  for (int i = 0; parts && i < n; i++) {
    if (rc->cmd_parts) rc->cmd_parts[i] = parts[i];
    else free(parts[i]);
  }
  free(parts);
  st->executions += cs.executions;
  st->exec_wall_s += cs.wall_s;
  st->errors += cs.start_failures;
  free(p);
  free(text);
  return rc_;
}

double reward_score_one_rm(const struct reward_cfg *rc, const struct task *t, const struct reward_item *it,
                           double rm, double parts[REWARD_NCOMPONENTS], int *nonfinite) {
  size_t off, inner;
  double fmt = reward_span(rc, it, &off, &inner), correct = 0.0;
  struct reward_stats st = {0};
  if (reward_correct(rc, t, it, 1, &off, &inner, &correct, &st)) correct = 0.0;
  return reward_finish(rc, it, correct, fmt, rm, parts, nonfinite);
}

/* Fraction of the groups (with at least one sample) in which values v[i*stride] are all equal. */
static double const_frac(const double *v, size_t stride, const struct reward_item *items, int n, int n_groups,
                         double *lo, double *hi, int *cnt) {
  for (int g = 0; g < n_groups; g++) { cnt[g] = 0; lo[g] = INFINITY; hi[g] = -INFINITY; }
  for (int i = 0; i < n; i++) {
    int g = items[i].group;
    double x = v[(size_t)i * stride];
    cnt[g]++;
    if (x < lo[g]) lo[g] = x;
    if (x > hi[g]) hi[g] = x;
  }
  int groups = 0, constant = 0;
  for (int g = 0; g < n_groups; g++) {
    if (!cnt[g]) continue;
    groups++;
    constant += lo[g] == hi[g];
  }
  return groups ? (double)constant / groups : 0.0;
}

int reward_score_batch(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items, int n,
                       int n_groups, double *rewards, double (*parts)[REWARD_NCOMPONENTS], struct reward_stats *st) {
  return reward_score_batch_rm(rc, t, items, NULL, n, n_groups, rewards, parts, st);
}

/* TTRL's label accuracy: of the groups with a majority and a reference answer, those whose
 * majority sample the reference accepts (parts still hold the reference's verdicts). */
static void label_accuracy(const struct reward_item *items, const int *winner, int n_groups,
                           double (*parts)[REWARD_NCOMPONENTS], struct reward_stats *st) {
  for (int g = 0; g < n_groups; g++) {
    if (winner[g] < 0 || !items[winner[g]].prompt->answer[0]) continue;
    st->sc_labeled++;
    st->sc_label_ok += parts[winner[g]][REWARD_CORRECT] == 1.0;
  }
}

/* [reward] self_consistency: every correct part replaced by agreement with its group's
 * majority answer (rl/self_consistency.h), the totals recombined, the label accuracy into
 * st. 0, or 1 out of memory or a verifier without answers (refused by config_reward_check). */
static int relabel(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items, int n,
                   int n_groups, double *rewards, double (*parts)[REWARD_NCOMPONENTS], struct reward_stats *st) {
  char (*answers)[SC_ANSWER_MAX] = malloc(sizeof *answers * (size_t)(n + 1));
  int *group = malloc(sizeof(int) * (size_t)(n + 1)), *winner = malloc(sizeof(int) * (size_t)(n_groups + 1));
  double *correct = malloc(sizeof(double) * (size_t)(n + 1));
  int rc_out = !answers || !group || !correct || !winner;
  for (int i = 0; !rc_out && i < n; i++) {
    size_t off, inner;
    reward_span(rc, &items[i], &off, &inner);
    long w = task_answer(t, items[i].text ? items[i].text + off : "", items[i].text ? inner : 0, answers[i],
                         SC_ANSWER_MAX);
    if (w < 0) rc_out = 1;
    if (w <= 0) answers[i][0] = '\0';
    group[i] = items[i].group;
  }
  if (!rc_out)
    rc_out = sc_pseudo_correct((const char (*)[SC_ANSWER_MAX])answers, group, n, n_groups, rc->sc_min_agreement,
                               correct, winner, NULL) != 0;
  if (!rc_out) label_accuracy(items, winner, n_groups, parts, st);
  for (int i = 0; !rc_out && i < n; i++) {
    int bad = 0;
    parts[i][REWARD_CORRECT] = correct[i];
    rewards[i] = finite_or_zero(reward_combine(rc, parts[i]), &bad);
  }
  free(answers);
  free(group);
  free(winner);
  free(correct);
  return rc_out;
}

int reward_score_batch_rm(const struct reward_cfg *rc, const struct task *t, const struct reward_item *items,
                          const double *rm, int n, int n_groups, double *rewards, double (*parts)[REWARD_NCOMPONENTS],
                          struct reward_stats *st) {
  memset(st, 0, sizeof *st);
  st->n = n;
  st->n_groups = n_groups;
  for (int i = 0; i < n; i++)
    if (items[i].group < 0 || items[i].group >= n_groups) return 1;
  size_t *span = calloc((size_t)(2 * n + 1), sizeof *span);
  double *fmt = calloc((size_t)(2 * n + 1), sizeof *fmt), *correct = fmt ? fmt + n : NULL;
  if (!span || !fmt) { free(span); free(fmt); return 1; }
  for (int i = 0; i < n; i++) fmt[i] = reward_span(rc, &items[i], &span[i], &span[n + i]);
  if (reward_correct(rc, t, items, n, span, span + n, correct, st)) { free(span); free(fmt); return 1; }
  double sum = 0.0, sum2 = 0.0;
  for (int i = 0; i < n; i++) {
    int bad = 0;
    rewards[i] = reward_finish(rc, &items[i], correct[i], fmt[i], rm ? rm[i] : 0.0, parts[i], &bad);
    st->nonfinite += bad;
  }
  if (rc->self_consistency && relabel(rc, t, items, n, n_groups, rewards, parts, st) != 0) {
    free(span);
    free(fmt);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    sum += rewards[i];
    sum2 += rewards[i] * rewards[i];
    st->acc += parts[i][REWARD_CORRECT] == 1.0;
    for (int k = 0; k < REWARD_NCOMPONENTS; k++) st->part_mean[k] += parts[i][k];
  }
  free(span);
  free(fmt);
  if (n > 0) {
    st->mean = sum / n;
    st->std = sqrt(fmax(sum2 / n - st->mean * st->mean, 0.0));
    st->acc /= n;
    for (int k = 0; k < REWARD_NCOMPONENTS; k++) st->part_mean[k] /= n;
  }
  if (n_groups <= 0) return 0;
  double *lo = malloc(sizeof(double) * (size_t)n_groups * 2);
  int *cnt = malloc(sizeof(int) * (size_t)n_groups);
  if (!lo || !cnt) { free(lo); free(cnt); return 1; }
  for (int k = 0; k < REWARD_NCOMPONENTS; k++)
    st->part_const_frac[k] = n ? const_frac(&parts[0][k], REWARD_NCOMPONENTS, items, n, n_groups, lo, lo + n_groups, cnt) : 0.0;
  st->reward_const_frac = const_frac(rewards, 1, items, n, n_groups, lo, lo + n_groups, cnt);
  free(lo);
  free(cnt);
  return 0;
}
