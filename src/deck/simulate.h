/* deck/simulate.h: `rlpt plan DECK --world N --simulate METRICS.jsonl|deck`, a discrete-event
 * model of the deck's RL steps under each schedule (deck/simulate.c), from per-step phase
 * costs measured by a sync run of the deck (its metrics JSONL: the calibration) or derived
 * from the cluster throughputs in the deck's [simulate] section (deck/sim_costs.c). */
#ifndef RLPT_SIMULATE_H
#define RLPT_SIMULATE_H

#include <stddef.h>

struct config;
struct plan;

#define SIM_DECK_STEPS 256  /* steps of drawn costs from the deck (the simulation cycles them) */
#define SIM_LAG_BINS 16     /* lag histogram: lag 0 .. 14, and 15 or more */

/* Seconds per RL step, as a sync run measured them: gen (t_gen + t_reward: a batch until its
 * groups are scored), train (t_ref + t_train), sync (t_sync), other (time_s minus those, at
 * least 0: the controller, the polite waits, the log). Step k of a simulation costs what
 * calibration step (k - 1) mod n did. */
struct sim_step_cost { double gen, train, sync, other; };
struct sim_costs {
  int n;
  struct sim_step_cost *step;
};

struct sim_result {
  long steps;
  double total_s;       /* wall seconds of the RL steps, first generation included */
  double train_busy_s;  /* seconds the train ranks trained */
  double gen_busy_s;    /* seconds the rollout ranks generated (and the reward ranks scored) */
  double lag_sum;       /* lag of each step's batch (trainer version minus generating one), summed */
  long lag_hist[SIM_LAG_BINS];  /* steps by their batch's lag */
};

/* The RL step lines of a metrics JSONL (phase rl, no eval), the first dropped (it warms up)
 * when there are more. 0, or 2 with a message naming the file and line. */
int sim_costs_read(const char *path, struct sim_costs *c, char *err, size_t len);
void sim_costs_free(struct sim_costs *c);
/* Costs of min(run.steps, SIM_DECK_STEPS) steps from cfg's [simulate] section and p's rank
 * counts and parameters (deck/sim_costs.c has the formulas). 0, or 2 with a message. */
int sim_costs_from_deck(const struct config *cfg, const struct plan *p, struct sim_costs *c, char *err,
                        size_t len);

/* Each phase after the other. */
void sim_sync(const struct sim_costs *c, long steps, struct sim_result *r);
/* separate_async, deterministic: depth batches generated first, then step k trains batch k
 * while batch k + depth is generated; the step ends when both are done, then the weight sync. */
void sim_deterministic(const struct sim_costs *c, long steps, long depth, struct sim_result *r);
/* separate_async, free-running: the rollout generates batch after batch while fewer than
 * cap_batches are generated and not yet trained, and starts none between taking a step's
 * update and the step's end; step k trains batch k once it is there and ends when the update
 * is posted and the batch being generated is done (the drain), then `other`. */
void sim_free(const struct sim_costs *c, long steps, long cap_batches, struct sim_result *r);

/* colocate_async: batch 1 generated alone (full costs), then step k trains batch k while
 * batch k + 1 is generated, each on its share of the rank's threads (split: costs measured
 * by a sync run at that share), then the weight sync and `other` (full). */
void sim_colocate(const struct sim_costs *full, const struct sim_costs *split, long steps,
                  struct sim_result *r);

/* The costs (source: a metrics JSONL, or "deck" for the [simulate] section; split: NULL or
 * a metrics JSONL of a sync run at half the threads, for colocate_async), each schedule's
 * steps/s, utilisations, lag and the share of steps past max_lag, printed; 0 or 2. */
int plan_simulate(const struct config *cfg, const struct plan *p, const char *source, const char *split);

#endif
