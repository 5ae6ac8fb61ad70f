/* run/eval.h: evaluation on the held-out split, on the rollout ranks with the
 * weights they hold: during a run (run_eval) and alone (`rlpt eval`, cli/cmd_eval.c,
 * which builds a struct run whose every rank is a rollout instance).
 *
 *   greedy pass@1   temperature 0, one completion per prompt, on [eval] prompts
 *                   held-out prompts (after SFT also on [sft] eval_prompts, for
 *                   the [sft] target_band check)
 *   sampled pass@1  the deck's sampling, [eval] samples completions per prompt:
 *                   mean over prompts of c / n (logged as `acc` on the eval line)
 *   pass@k          the unbiased estimator 1 - C(n-c, k) / C(n, k) (rl/algo.h), mean
 *                   over prompts (eval_pass@k, k = [eval] k)
 * Held-out prompt j is task prompt j of the eval split; rollout instance i takes
 * the contiguous slice i of them. Correctness is the reward's `correct`
 * component (so [reward] format_tags apply). */
#ifndef RLPT_EVALUATE_H
#define RLPT_EVALUATE_H

#include "run/metrics.h"

struct run;

/* The RNG step key of an eval at `step` (disjoint from the RL steps' keys). */
#define EVAL_STEP_KEY(step) (0x80000000L + (step))

/* Rollout ranks: evaluate this instance's share into the partial (PS_EV_* slots):
 * the greedy pass (on the band prompts too when phase is PHASE_SFT), then the
 * sampled one; evaluate_share does both. */
void evaluate_greedy_share(struct run *r, enum metrics_phase phase, long step);
void evaluate_sampled_share(struct run *r, long step);
void evaluate_share(struct run *r, enum metrics_phase phase, long step);
/* Controller: the eval-line metrics of a merged eval partial (m from metrics_init):
 * eval_pass@1 (greedy), acc (sampled pass@1), eval_pass@k, t_gen = eval_s. */
void evaluate_metrics(const struct run *r, const double *merged, enum metrics_phase phase, long step,
                      double eval_s, struct step_metrics *m);
/* Controller: the eval partials of every rollout rank (r->rollout_world), merged into a
 * malloc'd array of r->part_len doubles. */
double *evaluate_collect(struct run *r, long step);
/* Every rank: one eval. Rollout ranks evaluate and report; the controller logs an eval
 * line (and after SFT the target_band verdict) and returns greedy pass@1 (NaN elsewhere). */
double run_eval(struct run *r, enum metrics_phase phase, long step);

#endif
