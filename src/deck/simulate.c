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
 * What it leaves out: contention between ranks that share cores, and (colocate_async) how
 * each phase slows on its share of a rank's threads, which a sync calibration cannot tell. */
#include "deck/simulate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "util/alloc.h"

static double field(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static void costs_push(struct sim_costs *c, const cJSON *o) {
  double g = field(o, "t_gen") + field(o, "t_reward"), t = field(o, "t_ref") + field(o, "t_train");
  double s = field(o, "t_sync"), other = field(o, "time_s") - g - t - s;
  c->step = realloc_check(c->step, sizeof *c->step * (size_t)(c->n + 1));
  c->step[c->n++] = (struct sim_step_cost){.gen = g, .train = t, .sync = s, .other = other > 0 ? other : 0};
}

int sim_costs_read(const char *path, struct sim_costs *c, char *err, size_t len) {
  memset(c, 0, sizeof *c);
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, len, "%s: cannot be read", path), 2;
  char line[1 << 16];
  int ln = 0, rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    ln++;
    cJSON *o = cJSON_Parse(line);
    if (!o) rc = 2, snprintf(err, len, "%s:%d: not a JSON line", path, ln);
    const cJSON *ph = o ? cJSON_GetObjectItemCaseSensitive(o, "phase") : NULL;
    if (!rc && cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") &&
        !cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1"))
      costs_push(c, o);
    cJSON_Delete(o);
  }
  fclose(f);
  if (!rc && c->n == 0) rc = 2, snprintf(err, len, "%s: no RL step lines (phase rl) to calibrate from", path);
  if (!rc && c->n > 1)  /* the first step warms up: drop it */
    memmove(c->step, c->step + 1, sizeof *c->step * (size_t)--c->n);
  if (rc) sim_costs_free(c);
  return rc;
}

void sim_costs_free(struct sim_costs *c) {
  free(c->step);
  memset(c, 0, sizeof *c);
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
    r->lag_sum += (double)(k - 1 < depth ? k - 1 : depth);
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
    r->lag_sum += (double)(k - 1 - version);
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

static void print_result(const char *name, const struct sim_result *r, const struct sim_result *base) {
  double sps = r->total_s > 0 ? (double)r->steps / r->total_s : 0.0;
  printf("  %-26s %7.3f steps/s  %9.0f steps/h  %5.2fx sync  train busy %3.0f%%  rollout busy %3.0f%%  "
         "lag mean %.2f\n", name, sps, 3600.0 * sps, base->total_s / r->total_s,
         100.0 * r->train_busy_s / r->total_s, 100.0 * r->gen_busy_s / r->total_s,
         r->steps ? r->lag_sum / (double)r->steps : 0.0);
}

int plan_simulate(const struct config *cfg, const char *metrics_path) {
  struct sim_costs c;
  char err[512];
  if (sim_costs_read(metrics_path, &c, err, sizeof err)) {
    fprintf(stderr, "rlpt: plan: --simulate %s\n", err);
    return 2;
  }
  double g = 0, t = 0, s = 0, o = 0;
  for (int i = 0; i < c.n; i++) g += c.step[i].gen, t += c.step[i].train, s += c.step[i].sync, o += c.step[i].other;
  long steps = cfg->run.steps, P = cfg->algo.prompts_per_step;
  /* [async] capacity in batches and the deterministic schedule's depth, as run/async_step.c */
  long cap = (cfg->async.capacity >= 0 ? cfg->async.capacity : P * cfg->async.max_lag) / P, depth = cfg->async.stale == 0 && cap > cfg->async.max_lag
                                                       ? cfg->async.max_lag : cap;
  printf("simulate (%ld RL steps; calibration: %d steps of %s, mean s/step gen + reward %.4f, "
         "train %.4f, sync %.4f, other %.4f)\n", steps, c.n, metrics_path, g / c.n, t / c.n, s / c.n, o / c.n);
  struct sim_result rs, rd, rf;
  sim_sync(&c, steps, &rs);
  sim_deterministic(&c, steps, depth, &rd);
  sim_free(&c, steps, cap, &rf);
  print_result("sync", &rs, &rs);
  char name[64];
  snprintf(name, sizeof name, "separate_async (D = %ld)", depth);
  print_result(name, &rd, &rs);
  snprintf(name, sizeof name, "free-running (buffer %ld)", cap);
  print_result(name, &rf, &rs);
  printf("  not modelled: colocate_async (its phases on a share of each rank's threads), cores shared "
         "between ranks, drops (stale = drop keeps the lag within max_lag)\n");
  sim_costs_free(&c);
  return 0;
}
