/* deck/simulate.c: the discrete-event model of `rlpt plan --simulate` (deck/simulate.h).
 *
 * Each RL step's phases cost what the calibration measured; the schedules differ in what
 * runs at once, mirroring run/sync_step.c, run/async_step.c and run/async_free.c:
 *   sync           gen + train + sync + other
 *   deterministic  max(train of batch k, gen of batch k + D) + sync + other, after the D
 *                  batches generated before the first step
 *   free-running   the rollout's batches back to back, held back by the buffer (cap_batches
 *                  generated and not trained) and by the step boundary (no new batch between
 *                  taking the update and the step's end); a step trains once its batch is in
 *                  and ends after the update is posted and the batch in generation is done.
 *   colocate_async max(train of batch k, gen of batch k + 1) + sync + other, both phases at
 *                  the costs of a second calibration run at half the threads (--split): how
 *                  a phase slows on its share of a rank's threads a full-thread run cannot tell.
 * What it leaves out: contention between ranks that share cores. */
#include "deck/simulate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "util/alloc.h"

static void add_lag(struct sim_result *r, long lag) {
  r->lag_sum += (double)lag;
  r->lag_hist[lag < SIM_LAG_BINS - 1 ? lag : SIM_LAG_BINS - 1]++;
}

/* Step k's (1-based) cost a. */
#define AT(a, k) (c->step[((k) - 1) % c->n].a)

void sim_sync(const struct sim_costs *c, long steps, struct sim_result *r) {
  memset(r, 0, sizeof *r);
  r->steps = steps;
  for (long k = 1; k <= steps; k++) {
    r->total_s += AT(gen, k) + AT(train, k) + AT(sync, k) + AT(other, k);
    r->train_busy_s += AT(train, k);
    r->gen_busy_s += AT(gen, k);
    add_lag(r, 0);
  }
}

void sim_deterministic(const struct sim_costs *c, long steps, long depth, struct sim_result *r) {
  memset(r, 0, sizeof *r);
  r->steps = steps;
  for (long b = 1; b <= depth && b <= steps; b++) r->total_s += AT(gen, b), r->gen_busy_s += AT(gen, b);
  for (long k = 1; k <= steps; k++) {
    double g = k + depth <= steps ? AT(gen, k + depth) : 0.0, t = AT(train, k);
    r->total_s += (g > t ? g : t) + AT(sync, k) + AT(other, k);
    r->train_busy_s += t;
    r->gen_busy_s += g;
    add_lag(r, k - 1 < depth ? k - 1 : depth);
  }
}

/* The free-running rollout's timeline: batch b starts at start[b], is scored at end[b]. */
struct free_sim {
  const struct sim_costs *c;
  long cap, made;             /* made: batches with a start time */
  double *start, *end, *consumed, *update, *boundary;  /* [1..steps] */
};

/* Batch b's start (b = made + 1): after the previous batch, once the buffer has room (batch
 * b - cap trained), and never between a step's update and its end. 1, or 0 when it waits for
 * a step not yet simulated (k: the steps done). */
static int free_start_next(struct free_sim *s, long k) {
  long b = s->made + 1;
  if (b - s->cap > k) return 0;
  double t = b > 1 ? s->end[b - 1] : 0.0;
  if (b - s->cap >= 1 && s->consumed[b - s->cap] > t) t = s->consumed[b - s->cap];
  for (long j = 1; j <= k; j++)
    if (t >= s->update[j] && t < s->boundary[j]) t = s->boundary[j];
  s->start[b] = t;
  s->end[b] = t + s->c->step[(b - 1) % s->c->n].gen;
  s->made = b;
  return 1;
}

void sim_free(const struct sim_costs *c, long steps, long cap_batches, struct sim_result *r) {
  memset(r, 0, sizeof *r);
  r->steps = steps;
  size_t n = (size_t)steps + 2;
  struct free_sim s = {.c = c, .cap = cap_batches > 0 ? cap_batches : 1, .start = calloc_check(n, sizeof(double)),
                       .end = calloc_check(n, sizeof(double)), .consumed = calloc_check(n, sizeof(double)),
                       .update = calloc_check(n, sizeof(double)), .boundary = calloc_check(n, sizeof(double))};
  double at = 0.0;  /* the previous step's end */
  for (long k = 1; k <= steps; k++) {
    while (s.made < k) free_start_next(&s, k - 1);
    double t0 = at > s.end[k] ? at : s.end[k];
    s.consumed[k] = t0;
    s.update[k] = t0 + AT(train, k) + AT(sync, k);
    s.boundary[k] = INFINITY;  /* while this step's window is open */
    /* the batches the rollout starts before the update; the one in progress then is drained */
    double drain = s.update[k];
    while (s.made < steps && free_start_next(&s, k)) {
      if (s.start[s.made] >= s.update[k]) {  /* started after the update: not before the boundary */
        s.made--;
        break;
      }
      if (s.end[s.made] > drain) drain = s.end[s.made];
    }
    at = drain + AT(other, k);
    s.boundary[k] = at;
    /* the version batch k was generated under: the steps whose update came before its start */
    long version = 0;
    for (long j = 1; j < k; j++) version += s.update[j] <= s.start[k];
    add_lag(r, k - 1 - version);
    r->train_busy_s += AT(train, k);
  }
  r->total_s = at;
  for (long b = 1; b <= steps; b++) r->gen_busy_s += AT(gen, b);
  free(s.start);
  free(s.end);
  free(s.consumed);
  free(s.update);
  free(s.boundary);
}

void sim_colocate(const struct sim_costs *full, const struct sim_costs *split, long steps,
                  struct sim_result *r) {
  memset(r, 0, sizeof *r);
  r->steps = steps;
#define COST(cs, a, k) ((cs)->step[((k) - 1) % (cs)->n].a)
  if (steps > 0) r->total_s = r->gen_busy_s = COST(full, gen, 1);
  for (long k = 1; k <= steps; k++) {
    double g = k < steps ? COST(split, gen, k + 1) : 0.0, t = COST(split, train, k);
    r->total_s += (g > t ? g : t) + COST(full, sync, k) + COST(full, other, k);
    r->train_busy_s += t;
    r->gen_busy_s += g;
    add_lag(r, k > 1);
  }
#undef COST
}

/* The share of steps whose batch lags more than max_lag (stale = drop: what would be dropped). */
static double past_lag(const struct sim_result *r, long max_lag) {
  long n = 0;
  for (long l = max_lag + 1; l < SIM_LAG_BINS; l++) n += r->lag_hist[l];
  return r->steps ? (double)n / (double)r->steps : 0.0;
}

static void print_result(const char *name, const struct sim_result *r, const struct sim_result *base,
                         const struct config *cfg) {
  double sps = r->total_s > 0 ? (double)r->steps / r->total_s : 0.0;
  double lag = r->steps ? r->lag_sum / (double)r->steps : 0.0, past = past_lag(r, cfg->async.max_lag);
  printf("  %-26s %8.4g steps/s  %9.4g steps/h  %5.2fx sync  train busy %3.0f%%  rollout busy %3.0f%%  "
         "lag mean %.2f  %s %.1f%%\n", name, sps, 3600.0 * sps, base->total_s / r->total_s,
         100.0 * r->train_busy_s / r->total_s, 100.0 * r->gen_busy_s / r->total_s, lag,
         cfg->async.stale == 0 ? "drop_ratio" : "stale_kept", 100.0 * past);
  /* the troubleshooting thresholds practitioners use (the run's warnings print the same) */
  if (lag > 2.0) printf("    warning: mean lag %.2f > 2: samples are far off-policy\n", lag);
  if (cfg->async.stale == 0 && past > 0.2) printf("    warning: drop ratio %.0f%% > 20%%\n", 100.0 * past);
}

static int load_costs(const struct config *cfg, const struct plan *p, const char *source, struct sim_costs *c) {
  char err[512];
  int rc = strcmp(source, "deck") ? sim_costs_read(source, c, err, sizeof err)
                                  : sim_costs_from_deck(cfg, p, c, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: plan: --simulate %s\n", err);
  return rc;
}

static void print_costs(const struct sim_costs *c, long steps, const char *what) {
  double g = 0, t = 0, s = 0, o = 0;
  for (int i = 0; i < c->n; i++) g += c->step[i].gen, t += c->step[i].train, s += c->step[i].sync, o += c->step[i].other;
  printf("simulate (%ld RL steps; %s: %d steps, mean s/step gen + reward %.4f, train %.4f, sync %.4f, "
         "other %.4f)\n", steps, what, c->n, g / c->n, t / c->n, s / c->n, o / c->n);
}

int plan_simulate(const struct config *cfg, const struct plan *p, const char *source, const char *split) {
  struct sim_costs c, half = {0};
  if (load_costs(cfg, p, source, &c)) return 2;
  if (split && load_costs(cfg, p, split, &half)) return sim_costs_free(&c), 2;
  long steps = cfg->run.steps, P = cfg->algo.prompts_per_step;
  /* [async] capacity in batches and the deterministic schedule's depth, as run/async_step.c */
  long cap = (cfg->async.capacity >= 0 ? cfg->async.capacity : P * cfg->async.max_lag) / P;
  long depth = cfg->async.stale == 0 && cap > cfg->async.max_lag ? cfg->async.max_lag : cap;
  char what[600];
  snprintf(what, sizeof what, "%s %s", strcmp(source, "deck") ? "calibration" : "costs from", source);
  print_costs(&c, steps, what);
  if (split) print_costs(&half, steps, "at half the threads");
  struct sim_result rs, rd, rf, rc;
  sim_sync(&c, steps, &rs);
  sim_deterministic(&c, steps, depth, &rd);
  sim_free(&c, steps, cap, &rf);
  print_result("sync", &rs, &rs, cfg);
  char name[64];
  snprintf(name, sizeof name, "separate_async (D = %ld)", depth);
  print_result(name, &rd, &rs, cfg);
  snprintf(name, sizeof name, "free-running (buffer %ld)", cap);
  print_result(name, &rf, &rs, cfg);
  if (split) {
    sim_colocate(&c, &half, steps, &rc);
    print_result("colocate_async", &rc, &rs, cfg);
  }
  printf("  not modelled: cores shared between ranks, %sregenerating what stale = drop drops\n",
         split ? "" : "colocate_async (it needs --split HALF.jsonl: a sync run at half the threads), ");
  sim_costs_free(&c);
  sim_costs_free(&half);
  return 0;
}
