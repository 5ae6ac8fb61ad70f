/* run/controller.h: the controller's side of a step (world rank 0): the prompts of each
 * generation round to the rollout engines, the kept groups of dynamic sampling, the
 * watchdog that collects every rank's metrics partial (run/partial.h) within [run]
 * phase_timeout_s, and the metrics lines built from the merged partials.
 *
 * Watchdog: ranks report as soon as their part of a step is done (rollout before the
 * weight sync), so the earliest pipeline stage that has not reported is the stalled one;
 * the controller names it (role, rank, phase) and aborts the job. With dynamic sampling
 * the controller also waits, with the same deadline, for the kept groups of each round,
 * naming the reward rank that did not send them. */
#ifndef RLPT_CONTROLLER_H
#define RLPT_CONTROLLER_H

#include <stdint.h>

#include "rl/metrics.h"

struct run;
struct sample;
struct task_prompt;

/* [BOS] prompt as the prompt tokens of s. 0, or -1 (unencodable or no memory). */
int run_prompt_tokens(const struct run *r, const struct task_prompt *p, struct sample *s);

/* The prompts of generation round `round` of RL step `step` to the rollout engines. */
void controller_send_prompts(struct run *r, long step, int round);
/* Dynamic sampling: the kept groups of this round from every reward rank that scored some
 * (mine, n_mine: the controller's own when it is one) within [run] phase_timeout_s (else
 * the watchdog names the missing rank), ascending into out[1..], their count into out[0]. */
void controller_gather_kept(struct run *r, long step, const int32_t *mine, int n_mine, int32_t *out);
/* The partials of one phase from `expect` (world-rank mask as a char array, 1 = expected)
 * within [run] phase_timeout_s, merged into merged (r->partial_len doubles). On timeout it
 * names the stalled rank and aborts. */
void controller_collect(struct run *r, const char *expect, const char *phase, long step,
                        double *merged);
/* A merged RL / SFT partial as a metrics line, logged (JSONL, console, Prometheus). */
void controller_log_step(struct run *r, const double *merged, enum metrics_phase phase, long step,
                         double step_s);
/* Post-SFT vs post-RL pass@1 and the gain. */
void controller_summary(const struct run *r);

#endif
