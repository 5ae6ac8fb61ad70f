/* deck/sim_costs.c: the per-step phase costs `rlpt plan --simulate` runs its schedules on
 * (deck/simulate.h), read from a sync run's metrics JSONL (the calibration) or derived from
 * the deck's [simulate] section (a cluster's throughputs, for a job this machine cannot run).
 *
 * From the deck, step s of n drawn steps costs (P prompts x G samples, R rollout instances,
 * DP train groups, lengths L log-normal with the deck's mean and coefficient of variation,
 * cut to [1, max_new_tokens], a pure function of (run.seed, step, prompt, sample)):
 *   gen    the slowest instance: prefill of its P / R prompts' G copies at
 *          prefill_tokens_per_s, then max(its tokens / gen_tokens_per_s, its longest response
 *          / gen_seq_tokens_per_s): a full batch is throughput bound, its last sequence
 *          speed bound (prompts go to instances round robin)
 *   train  ppo_epochs x (P G prompt_tokens + sum L) / (train_tokens_per_s x DP)
 *   sync   parameters x (2 bytes with weight_sync_dtype = bf16, else 4) / sync_gb_per_s
 *   other  other_s */
#include "deck/simulate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "deck/plan.h"
#include "util/alloc.h"
#include "util/rng.h"

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

/* One response length: log-normal, mean m and coefficient of variation cv, cut to [1, max]. */
static double draw_length(const struct config *cfg, long step, long prompt, long sample) {
  double m = (double)cfg->simulate.response_tokens, cv = cfg->simulate.response_cv;
  double s2 = log1p(cv * cv), mu = log(m) - 0.5 * s2;
  struct rng_key k = {.seed = (uint64_t)cfg->run.seed, .stream = RNG_STREAM_SIMULATE, .step = (uint32_t)step,
                      .prompt = (uint32_t)prompt, .sample = (uint32_t)sample};
  double len = cv > 0 ? round(exp(mu + sqrt(s2) * rng_normal(&k))) : m;
  double max = (double)cfg->rollout.max_new_tokens;
  return len < 1 ? 1 : len > max ? max : len;
}

/* Step s's costs (the file's formulas); inst: R per-instance scratch pairs. */
static struct sim_step_cost deck_step(const struct config *cfg, const struct plan *p, long s, double *inst) {
  double rate = cfg->simulate.gen_tokens_per_s, seq = cfg->simulate.gen_seq_tokens_per_s;
  double pre = cfg->simulate.prefill_tokens_per_s;
  long P = cfg->algo.prompts_per_step, G = cfg->algo.group_size, R = p->counts.rollout_instances;
  memset(inst, 0, sizeof *inst * 3 * (size_t)R);  /* tokens, longest, prompts per instance */
  double resp = 0;
  for (long q = 0; q < P; q++) {
    double *in = inst + 3 * (q % R);
    for (long g = 0; g < G; g++) {
      double L = draw_length(cfg, s, q, g);
      in[0] += L, resp += L;
      if (L > in[1]) in[1] = L;
    }
    in[2] += 1;
  }
  double gen = 0, prompt = (double)cfg->simulate.prompt_tokens;
  for (long i = 0; i < R; i++) {
    const double *in = inst + 3 * i;
    double decode = in[0] / rate, tail = seq > 0 ? in[1] / seq : 0;
    double t = (pre > 0 ? in[2] * (double)G * prompt / pre : 0) + (decode > tail ? decode : tail);
    if (t > gen) gen = t;
  }
  double bytes = p->params * (cfg->run.weight_sync_dtype == WSYNC_BF16 ? 2.0 : 4.0);
  return (struct sim_step_cost){
      .gen = gen,
      .train = (double)cfg->algo.ppo_epochs * ((double)(P * G) * prompt + resp) / (cfg->simulate.train_tokens_per_s * p->counts.train_dp),
      .sync = bytes / (cfg->simulate.sync_gb_per_s * 1e9),
      .other = cfg->simulate.other_s};
}

int sim_costs_from_deck(const struct config *cfg, const struct plan *p, struct sim_costs *c, char *err,
                        size_t len) {
  memset(c, 0, sizeof *c);
  const char *missing = cfg->simulate.gen_tokens_per_s <= 0 ? "gen_tokens_per_s"
                        : cfg->simulate.train_tokens_per_s <= 0 ? "train_tokens_per_s"
                        : cfg->simulate.sync_gb_per_s <= 0 ? "sync_gb_per_s" : NULL;
  if (missing)
    return snprintf(err, len, "deck: [simulate] %s is 0: give the cluster's figure (or --simulate "
                    "METRICS.jsonl, a sync run's metrics)", missing), 2;
  if (cfg->simulate.response_tokens > cfg->rollout.max_new_tokens)
    return snprintf(err, len, "deck: [simulate] response_tokens = %ld exceeds [rollout] max_new_tokens = %ld",
                    cfg->simulate.response_tokens, cfg->rollout.max_new_tokens), 2;
  if (p->counts.rollout_instances < 1 || p->counts.train_dp < 1)
    return snprintf(err, len, "deck: no rollout instance or train group to simulate"), 2;
  c->n = (int)(cfg->run.steps < 1 ? 1 : cfg->run.steps > SIM_DECK_STEPS ? SIM_DECK_STEPS : cfg->run.steps);
  c->step = calloc_check((size_t)c->n, sizeof *c->step);
  double *inst = calloc_check(3 * (size_t)p->counts.rollout_instances, sizeof *inst);
  for (int s = 0; s < c->n; s++) c->step[s] = deck_step(cfg, p, s + 1, inst);
  free(inst);
  return 0;
}
