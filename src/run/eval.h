/* run/eval.h: evaluation on the held-out split, on the rollout ranks with the weights
 * they hold: during a run (eval_in_run) and alone (`rlpt eval`, run/offline_eval.h, which
 * builds a struct run whose every rank is a rollout instance).
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
#ifndef RLPT_EVAL_H
#define RLPT_EVAL_H

#include "rl/metrics.h"
#include "tasks/prompt.h"

struct run;
struct sample;
struct sample_batch;

/* The RNG step key of an eval at `step` (disjoint from the RL steps' keys). */
#define EVAL_STEP_KEY(step) (0x80000000L + (step))

/* ok[k] = 1 when the reward's `correct` component accepts sample k of out (its prompt
 * tps[group]); scored as one batch, so the code verifier runs it over the sandbox pool. */
void eval_correct(const struct run *r, const struct task_prompt *tps, const struct sample_batch *out, int *ok);
/* Rollout ranks: `group` completions of prompts [lo, hi) of split into out (sample.group =
 * prompt offset from lo, prompt_id = its index), the RNG keyed by step_key; fills
 * tps[hi - lo]. Adds generation time and tokens to the partial. */
void eval_generate_split(struct run *r, enum task_split split, long lo, long hi, int group,
                         long step_key, struct task_prompt *tps, struct sample_batch *out);
/* Rollout ranks: this instance's share of the greedy pass (on the band prompts too when
 * phase is PHASE_SFT) and of the sampled one, into the partial (PS_EV_* slots). */
void eval_greedy_share(struct run *r, enum metrics_phase phase, long step);
void eval_sampled_share(struct run *r, long step);
/* Controller: the eval partials of every rollout rank (r->rollout_world), merged into a
 * malloc'd array of r->partial_len doubles. */
double *eval_collect(struct run *r, long step);
/* Controller: the eval-line metrics of a merged eval partial (m from metrics_init):
 * eval_pass@1 (greedy), acc (sampled pass@1), eval_pass@k, t_gen = eval_s. */
void eval_metrics(const struct run *r, const double *merged, enum metrics_phase phase, long step,
                  double eval_s, struct step_metrics *m);
/* Every rank: one eval of a run. Rollout ranks evaluate and report; the controller logs an
 * eval line (and after SFT the [sft] target_band verdict) and returns greedy pass@1 (NaN
 * elsewhere). */
double eval_in_run(struct run *r, enum metrics_phase phase, long step);

#endif
