/* run/sync_step.c: one RL step of [run] mode = sync (run/mode.h), as each role does it.
 * Every rank runs sync_step and does the parts its roles own, in this order:
 *   controller  prompts (k-1)*P .. k*P-1 of the train split (later rounds:
 *               dynsamp_prompt_id), split into contiguous slices, one per
 *               rollout engine instance                              -> rollout
 *   rollout     G samples per prompt (rollout_generate)             -> reward
 *               (instance i sends to reward rank i % reward ranks)
 *   reward      reward_score_batch; keeps the round's groups (all of them, or
 *               with [algo] dynamic_sampling those with a reward spread)
 *   (dynamic sampling: each reward rank sends its kept group numbers to the
 *   controller, which broadcasts them to every rank; while fewer than P are kept
 *   and rounds are left, all of the above runs again on P new prompts: rl/dynsamp.h)
 *   (difficulty filter: after each round every rank records the groups' correct counts,
 *   summed over the world: run/difficulty_sync.h)
 *   rollout     its metrics partial to the controller, then the weight sync
 *   reward      the first min(P, kept) groups, renumbered to their slots 0..n-1,
 *               each whole to train DP rank route_slot_dp(n, slot)    -> train
 *               then its metrics partial
 *   train       trainer_rl_step (DP all-reduce inside), the weight broadcast over
 *               weight_comm from its rank 0 (train dp 0; NCCL or MPI: run/weight_sync.c),
 *               its metrics partial
 *   controller  collects every partial (watchdog: run/controller.h) and the step's stage
 *               markers (run/progress.h), and logs the line.
 * The reward -> train batches move in (DP rank, reward rank) order, which cannot deadlock
 * when a rank is both (run/route.h). Each rank reports its partial as soon as its last
 * data-carrying role is done, so the watchdog can name the earliest stalled stage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/episode.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "rl/dynsamp.h"
#include "rl/reward_command.h"
#include "rollout/engine.h"
#include "run/async_step.h"
#include "run/controller.h"
#include "run/difficulty_sync.h"
#include "run/mode.h"
#include "run/partial.h"
#include "run/pregen.h"
#include "run/progress.h"
#include "run/reward_service.h"
#include "run/route.h"
#include "run/run.h"
#include "run/samples_log.h"
#include "run/step_parts.h"
#include "run/tp_run.h"
#include "run/weight_sync.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

/* ---- rollout ----------------------------------------------------------------- */

/* Rollout ranks: G samples for each prompt of this instance's slice, to its reward rank
 * (the controller hears that they are generated before the hand-off: run/progress.h). */
static void generate_share(struct run *r, long step, int round) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  if (route_slice_lo(P, R, i) == route_slice_lo(P, R, i + 1)) {
    (void)async_after_generate(r);
    return;
  }
  progress_stall_point(r, "rollout:prompts", step);
  struct sample_batch prompts, out;
  sample_batch_init(&prompts);
  sample_batch_init(&out);
  struct rollout_prompt *rp = NULL;
  double t_gen = 0;
  if (!pregen_take(r, step, &prompts, &out, &t_gen)) {  /* colocate_async: generated while training */
    if (rollout_tp_leader(r)) route_recv(r, &prompts, 0, BOX_PROMPTS, XFER_TAG_PROMPTS);
    rollout_tp_bcast_prompts(r, &prompts);  /* rollout_tp > 1: the engine's ranks in lockstep */
    progress_stall_point(r, "rollout:generate", step);
    rp = rollout_prompts_of(&prompts);
    char err[512];
    double t0 = clock_seconds();
    int rc = rollout_generate(r->engine, rp, prompts.n, (int)r->cfg->algo.group_size, step, r->weight_version,
                              &out, NULL, err, sizeof err);
    if (rc) die_local("step %ld: generation failed: %s", step, err);
    t_gen = clock_seconds() - t0;
  }
  partial_time(r, RUN_PHASE_GEN, t_gen - async_after_generate(r));
  r->partial[PS_GEN_TOK] += (double)sample_batch_resp_tokens(&out);
  if (r->env) {  /* the episodes of this instance's share */
    struct env_stats es;
    env_stats_get(r->env, &es);
    r->partial[PS_EPISODES] += (double)es.episodes;
    r->partial[PS_TURNS] += (double)es.turns;
    r->partial[PS_TOOL_CALLS] += (double)es.tool_calls;
    r->partial[PS_TOOL_ERRORS] += (double)es.tool_errors;
    r->partial[PS_TOOL_S] += es.tool_s;
  }
  /* The trainer measures logprob_diff_max on its old-logprob pass; with old_logprobs =
   * rollout it has none, so the rollout rank measures it (a model_forward over the batch).
   * Only meaningful at temperature 1: the recorded logprob is of the tempered distribution.
   * In an async mode the trainer holds newer weights than the batch's, so it is measured here
   * too, after the batch has left (the trainer is waiting for it), on a copy of its first
   * group only: the weight sync waits for this forward. */
  int lagged = r->mode != &sync_mode_ops;
  int measure = r->cfg->rollout.temperature == 1.0 && (r->cfg->algo.old_logprobs == OLDLP_ROLLOUT || lagged);
  int n_check = lagged && out.n > r->cfg->algo.group_size ? (int)r->cfg->algo.group_size : out.n;
  struct sample_batch sent;
  sample_batch_init(&sent);
  for (int k = 0; measure && k < n_check; k++) {
    struct sample *c = sample_batch_add(&sent);
    if (!c || sample_copy(c, &out.s[k]) != 0) die_local("out of memory");
  }
  progress_mark(r, PROG_GEN, step, round);
  if (rollout_tp_leader(r))
    route_send(r, &out, r->reward_world[route_instance_reward(r, i)], BOX_SAMPLES, XFER_TAG_SAMPLES);
  /* after an in-flight update: the tokens of the weights the rollout rank now holds */
  if (measure) r->partial[PS_LPDIFF_ROLLOUT] = rollout_logprob_diff_max_of(r->rmodel, &sent, r->weight_version);
  sample_batch_free(&sent);
  free(rp);
  sample_batch_free(&prompts);
  sample_batch_free(&out);
}

/* ---- reward ------------------------------------------------------------------ */

/* The reward items of b's samples (decoded responses, their prompts in tp, groups
 * renumbered 0..*n_groups-1 in order of appearance). */
static struct reward_item *reward_items(struct run *r, const struct sample_batch *b,
                                        struct task_prompt *tp, int *n_groups) {
  long P = r->cfg->algo.prompts_per_step;
  struct reward_item *items = calloc_check((size_t)b->n + 1, sizeof *items);
  int *local = malloc_check(sizeof(int) * (size_t)P);
  for (long g = 0; g < P; g++) local[g] = -1;
  *n_groups = 0;
  for (int k = 0; k < b->n; k++) {
    const struct sample *s = &b->s[k];
    if (s->group < 0 || s->group >= P) die_local("sample with group %d outside 0..%ld", s->group, P - 1);
    if (local[s->group] < 0) local[s->group] = (*n_groups)++;
    if (task_prompt(&r->task, (uint64_t)s->prompt_id, TASK_TRAIN, &tp[k]) != 0)
      die_local("task: prompt %lld has no train problem", (long long)s->prompt_id);
    size_t len = 0;
    char *text = NULL;
    int rc = tokenizer_decode_generated(&r->tok, (const int *)s->resp + sample_last_turn(s),
                                        (size_t)(s->n_resp - sample_last_turn(s)), &text, &len);
    if (rc == TOK_ERR_NOMEM) die_local("out of memory scoring %d samples", b->n);
    if (rc != TOK_OK) die_local("response of prompt %lld does not decode", (long long)s->prompt_id);
    items[k] = (struct reward_item){ .prompt = &tp[k], .text = text, .len = len,
                                     .n_tokens = s->n_resp, .group = local[s->group] };
  }
  free(local);
  return items;
}

/* The batch statistics of a scored round into this rank's partial. */
static void partial_add_rewards(struct run *r, const struct sample_batch *b, const double *rew,
                                const struct reward_stats *st, int n_groups) {
  double *q = r->partial;
  int n = b->n;
  /* The scoring work of this step (in async, of the batch scored now, not the one trained) */
  q[PS_NONFINITE] += (double)st->nonfinite;
  q[PS_REWARD_ERRORS] += (double)st->errors;
  q[PS_EXECS] += (double)st->executions;
  q[PS_ERR_SOURCES] = r->rcfg.cmd || task_sandboxed(&r->task);
  if (st->exec_wall_s > 0) q[PS_EXEC_WALL] = (isfinite(q[PS_EXEC_WALL]) ? q[PS_EXEC_WALL] : 0) + st->exec_wall_s;
  q[PS_SC_LABELED] += st->sc_labeled;
  q[PS_SC_LABEL_OK] += st->sc_label_ok;
  if (r->mode != &sync_mode_ops) return;  /* async: the train rank reports its batch's (async_stats.c) */
  for (int k = 0; k < n; k++) {
    q[PS_R_SUM] += rew[k];
    q[PS_R2_SUM] += rew[k] * rew[k];
    q[PS_LEN_SUM] += b->s[k].n_resp;
    q[PS_TRUNC] += b->s[k].finish == FINISH_LENGTH;
    q[PS_LEN_MAX] = fmax(q[PS_LEN_MAX], b->s[k].n_resp);
  }
  q[PS_N] += n;
  q[PS_CORRECT] += st->acc * n;
  q[PS_GROUPS] += n_groups;
  for (int c = 0; c < REWARD_NCOMPONENTS; c++) {
    q[PS_PART_SUM + c] += st->part_mean[c] * n;
    q[PS_PART_CONST + c] += st->part_const_frac[c] * n_groups;
  }
}

/* Score b in place (reward, parts) and add the statistics to the partial. */
void run_score_batch(struct run *r, struct sample_batch *b) {
  int n = b->n, n_groups;
  struct task_prompt *tp = calloc_check((size_t)n + 1, sizeof *tp);
  double *rew = calloc_check((size_t)n + 1, sizeof *rew);
  double (*parts)[REWARD_NCOMPONENTS] = calloc_check((size_t)n + 1, sizeof *parts);
  struct reward_item *items = reward_items(r, b, tp, &n_groups);
  struct reward_stats st;
  double *rm = reward_service_scores(r, b);  /* NULL without [reward] rm_path */
  char **cmd_parts = r->rcfg.cmd ? calloc_check((size_t)n + 1, sizeof *cmd_parts) : NULL;
  r->rcfg.cmd_parts = cmd_parts;
  if (reward_score_batch_rm(&r->rcfg, &r->task, items, rm, n, n_groups, rew, parts, &st) != 0)
    die_local("reward scoring of %d samples failed", n);
  r->rcfg.cmd_parts = NULL;
  free(rm);
  for (int k = 0; cmd_parts && k < n; k++) {
    if (reward_command_set_parts(&b->s[k], cmd_parts[k]) != 0) die_local("out of memory");
    free(cmd_parts[k]);
  }
  free(cmd_parts);
  for (int k = 0; k < n; k++) {
    struct sample *s = &b->s[k];
    s->reward = rew[k];
    for (int c = 0; c < REWARD_NCOMPONENTS; c++)
      if ((c != REWARD_RM || r->rcfg.has_rm) && sample_set_part(s, reward_component_name(c), parts[k][c]) != 0)
        die_local("out of memory setting the reward parts of %d samples", n);
  }
  partial_add_rewards(r, b, rew, &st, n_groups);
  for (int k = 0; k < n; k++) free((char *)items[k].text);
  free(items);
  free(tp);
  free(rew);
  free(parts);
}

/* One round: score the samples of this rank's rollout instances, move the groups the round
 * keeps into *held and their numbers into groups[] (room for P). Returns how many it
 * kept, or -1 when this rank scored nothing this round. */
static int score_round(struct run *r, const struct dynsamp *ds, struct sample_batch *held, int32_t *groups,
                       int64_t *pass) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, j = r->comms.place.role_rank[ROLE_REWARD];
  struct sample_batch b;
  sample_batch_init(&b);
  for (int i = 0; i < R; i++)
    if (route_instance_reward(r, i) == j && route_slice_lo(P, R, i) < route_slice_lo(P, R, i + 1))
      route_recv(r, &b, r->rollout_world[i], BOX_SAMPLES, XFER_TAG_SAMPLES);
  if (b.n == 0) return -1;
  progress_stall_point(r, "reward:score", (long)b.s[0].step);
  double t0 = clock_seconds();
  run_score_batch(r, &b);
  if (r->diff.on) difficulty_group_pass(r, &b, pass);
  int n = dynsamp_round_groups(ds, &b, groups);
  if (n < 0) die_local("out of memory filtering %d samples", b.n);
  partial_time(r, RUN_PHASE_REWARD, clock_seconds() - t0);
  for (int k = 0; k < b.n; k++)
    if (dynsamp_has_group(groups, n, b.s[k].group) && sample_batch_push(held, &b.s[k]) != 0)
      die_local("out of memory");
  sample_batch_free(&b);
  return n;
}

/* Every rank: the round's kept groups into ds. Without dynamic sampling every group is
 * kept and nothing moves; with it the reward ranks that scored send theirs (mine, n_mine)
 * to the controller, which broadcasts them all. */
static void round_agree(struct run *r, struct dynsamp *ds, long step, const int32_t *mine, int n_mine) {
  long P = ds->P;
  int32_t *all = malloc_check(sizeof(int32_t) * (size_t)(P + 1));
  all[0] = (int32_t)P;
  for (long g = 0; g < P; g++) all[1 + g] = (int32_t)g;
  if (ds->on) {
    if (n_mine >= 0 && r->comms.world_rank != 0) {
      int rc = xfer_send_bytes(mine, sizeof(int32_t) * (size_t)n_mine, 0, XFER_TAG_REWARDS, r->comms.world);
      if (rc != XFER_OK) die_local("sending the kept groups to the controller failed: %s", xfer_strerror(rc));
    }
    if (r->is_ctl) controller_gather_kept(r, step, mine, n_mine > 0 ? n_mine : 0, all);
    wait_bcast(all, (int)(P + 1), MPI_INT32_T, 0, r->comms.world);
  }
  dynsamp_add_round(ds, all + 1, all[0]);
  free(all);
}

/* Reward rank: the held samples of the trained groups of DP rank d, renumbered to their
 * slots, into out (a pushed sample is left zeroed: n_prompt 0 marks it taken). */
static void reward_take_dp(struct run *r, const struct dynsamp *ds, struct sample_batch *held, int d,
                           struct sample_batch *out) {
  long n_sel = dynsamp_selected(ds);
  for (int round = 0; round < ds->rounds; round++)
    for (int k = 0; k < held[round].n; k++) {
      struct sample *s = &held[round].s[k];
      long slot = s->n_prompt ? dynsamp_slot(ds, round, s->group) : -1;
      if (slot < 0 || route_slot_dp(r, n_sel, slot) != d) continue;
      s->group = (int32_t)slot;
      if (sample_batch_push(out, s) != 0) die_local("out of memory");
    }
}

/* After the last round, reward -> train: the trained groups (the first min(P, kept)), each
 * whole to the DP rank of its slot; a train rank's batch into *in. Every (DP rank d, reward
 * rank j) pair moves at most one batch, and every rank takes its pairs in (d, j) order:
 * with kept groups at shifted slots a rank that is both (colocated layout) may send to a
 * rank that sends to it, and this order never leaves both waiting on their sends. */
static void reward_to_train(struct run *r, const struct dynsamp *ds, struct sample_batch *held,
                         struct sample_batch *in) {
  long n_sel = dynsamp_selected(ds);
  int D = r->comms.counts.train_dp, W = r->comms.counts.reward;
  /* a TP group's rank 0 receives (train_world), then hands the batch on (run/tp_run.h) */
  int me = r->is_reward ? r->comms.place.role_rank[ROLE_REWARD] : -1;
  int dp = r->is_train && r->comms.place.tp == 0 ? r->comms.place.dp : -1;
  char *from = calloc_check((size_t)W, 1);  /* the reward ranks that send to this train rank */
  struct sample_batch out;
  sample_batch_init(&out);
  for (long j = route_slice_lo(n_sel, D, dp); dp >= 0 && j < route_slice_lo(n_sel, D, dp + 1); j++)
    from[route_instance_reward(r, route_group_instance(r, ds->kept[j] % ds->P))] = 1;
  for (int d = 0; d < D; d++) {
    if (me >= 0) reward_take_dp(r, ds, held, d, &out);
    for (int j = 0; j < W; j++) {
      if (j == me && out.n) route_send(r, &out, r->train_world[d], BOX_REWARDS, XFER_TAG_REWARDS);
      if (d == dp && from[j]) route_recv(r, in, r->reward_world[j], BOX_REWARDS, XFER_TAG_REWARDS);
    }
  }
  for (int round = 0; held && round < ds->rounds; round++) sample_batch_free(&held[round]);
  sample_batch_free(&out);
  free(from);
}

/* ---- train ------------------------------------------------------------------- */

struct rollout_prompt *rollout_prompts_of(const struct sample_batch *b) {
  struct rollout_prompt *rp = calloc_check((size_t)b->n + 1, sizeof *rp);
  for (int k = 0; k < b->n; k++)
    rp[k] = (struct rollout_prompt){ .prompt_id = b->s[k].prompt_id, .group = b->s[k].group,
                                     .tokens = (const int *)b->s[k].prompt, .n_tokens = b->s[k].n_prompt };
  return rp;
}

void step_all_groups(struct dynsamp *ds, long P) {
  if (dynsamp_init(ds, P, 0, 0) != 0) die_local("out of memory");
  int32_t *all = malloc_check(sizeof(int32_t) * (size_t)P);
  for (long g = 0; g < P; g++) all[g] = (int32_t)g;
  dynsamp_add_round(ds, all, (int)P);
  free(all);
}

int sample_cmp_slot(const void *a, const void *b) {
  const struct sample *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* The trainer's metrics into the partial's trainer block (train dp 0, tp 0 only). */
static void train_report_fields(struct run *r, struct step_metrics *m) {
  if (r->comms.place.dp != 0 || r->comms.place.tp != 0) return;
  for (int i = 0; i < metric_fields_len; i++) r->partial[PS_TRAIN_BEGIN + i] = *metrics_field(m, i);
  partial_set_train(r, "t_ckpt", r->t_ckpt_last);
  r->t_ckpt_last = 0;
  r->partial[PS_HAS_TRAIN] = 1;
}

void train_share(struct run *r, const struct dynsamp *ds, struct sample_batch *b_in) {
  long n_sel = dynsamp_selected(ds);
  struct sample_batch b = *b_in;
  sample_batch_init(b_in);
  qsort(b.s, (size_t)b.n, sizeof *b.s, sample_cmp_slot);
  int64_t v = r->trainer->weight_version;
  int lead = r->comms.place.tp == 0;  /* a TP group's samples are counted once */
  for (int k = 0; lead && k < b.n; k++) {
    double lag = (double)(v - b.s[k].weight_version);
    r->partial[PS_LAG_SUM] += lag;
    r->partial[PS_LAG_MAX] = fmax(r->partial[PS_LAG_MAX], lag);
  }
  if (lead) r->partial[PS_TRAINED] += b.n;
  struct step_metrics m;
  metrics_init(&m);
  /* no group kept on any rank (every train rank knows n_sel): no update, the trainer's
   * metrics stay null; the step still takes its place in the LR schedule (indexed by RL
   * step, as veRL's per-step scheduler), so the schedule ends at [run] steps */
  if (b.n > 0) progress_stall_point(r, "train:train", (long)b.s[0].step);
  if (n_sel > 0 && trainer_rl_step(r->trainer, &b, &m) != 0) die_local("the RL train step failed");
  if (n_sel == 0) r->trainer->step++;
  /* the RL step being trained (async: its samples' gen_step is earlier) */
  if (b.n > 0) samples_log_write(r, &b, (long)r->partial[PS_STEP]);
  train_report_fields(r, &m);
  metrics_free(&m);
  sample_batch_free(&b);
}

/* ---- the step (the weight sync: run/weight_sync.c) ------------------------------------ */

/* 1 for every rank that reports in an RL step (every rank with a worker role). */
static void rl_expect(const struct run *r, char *expect) {
  for (int w = 0; w < r->comms.world_size; w++) {
    struct rank_place p;
    roles_place(&r->comms.counts, w, &p);
    expect[w] = (p.roles & ~ROLE_BIT(ROLE_CONTROLLER)) != 0;
  }
}

/* Controller: say once per run that dynamic sampling fell short of a full batch. */
static void warn_short(struct run *r, const struct dynsamp *ds, long step) {
  if (!ds->on || ds->n_kept >= ds->P || r->ds_warned) return;
  r->ds_warned = 1;
  printf("rlpt: WARNING: step %ld: dynamic sampling kept %ld of %ld groups after %d generation rounds "
         "([algo] max_resample_rounds = %ld); %s (said once; groups_trained and gen_rounds in the "
         "metrics show each step)\n", step, ds->n_kept, ds->P, ds->rounds, r->cfg->algo.max_resample_rounds,
         ds->n_kept ? "training on those" : "no update this step");
  fflush(stdout);
}

void run_rounds(struct run *r, long step, struct dynsamp *ds, struct sample_batch *in) {
  struct sample_batch *held = NULL;  /* [round]: the kept groups this reward rank holds */
  int32_t *mine = malloc_check(sizeof(int32_t) * (size_t)(ds->P + 1));
  int64_t *pass = malloc_check(sizeof(int64_t) * 3 * (size_t)ds->P);  /* difficulty filter */
  while (!dynsamp_done(ds)) {
    int n_mine = -1;
    held = realloc_check(held, sizeof *held * (size_t)(ds->rounds + 1));
    sample_batch_init(&held[ds->rounds]);
    memset(pass, 0, sizeof(int64_t) * 3 * (size_t)ds->P);
    if (r->is_ctl && !pregen_prompts_sent(r, step)) controller_send_prompts(r, step, ds->rounds);
    if (r->is_rollout) generate_share(r, step, ds->rounds);
    if (r->is_reward) n_mine = score_round(r, ds, &held[ds->rounds], mine, pass);
    round_agree(r, ds, step, mine, n_mine);
    if (r->diff.on) difficulty_round_sync(r, pass);
  }
  if (r->is_reward || r->is_train) reward_to_train(r, ds, held, in);
  free(held);
  free(mine);
  free(pass);
}

void log_step(struct run *r, const struct dynsamp *ds, long step, double t0) {
  char *expect = malloc_check((size_t)r->comms.world_size);
  double *q = malloc_check(sizeof(double) * (size_t)r->partial_len);
  rl_expect(r, expect);
  controller_collect(r, expect, "rl", step, q);
  q[PS_ROUNDS] = ds->rounds;
  q[PS_FILTERED] = (double)ds->n_filtered;
  q[PS_SELECTED] = (double)dynsamp_selected(ds);
  q[PS_PROMPTS_FILTERED] = (double)r->diff_skipped;
  r->diff_skipped = 0;
  warn_short(r, ds, step);
  controller_log_step(r, q, PHASE_RL, step, clock_seconds() - t0);
  free(expect);
  free(q);
}

static void sync_step(struct run *r, long step) {
  double t0 = clock_seconds();
  partial_reset(r, step, PK_RL);
  if (r->is_ctl) progress_begin(r, step);
  struct dynsamp ds;
  if (dynsamp_init(&ds, r->cfg->algo.prompts_per_step, r->cfg->algo.dynamic_sampling,
                   r->cfg->algo.max_resample_rounds) != 0)
    die_local("out of memory");
  struct sample_batch in;
  sample_batch_init(&in);
  run_rounds(r, step, &ds, &in);
  if (r->is_train) tp_bcast_batch(r, &in);
  if (r->is_train) train_share(r, &ds, &in);
  sample_batch_free(&in);
  int worker = r->is_rollout || r->is_reward || r->is_train;
  if (worker && !r->is_train) partial_report(r);
  /* the weight sync's two ends tell the controller when they are in it (run/progress.h) */
  if (r->is_train && r->comms.place.weight_rank == 0) progress_mark(r, PROG_TRAINED, step, 0);
  if (r->is_rollout) progress_stall_point(r, "rollout:sync", step);
  run_sync_weights(r);
  if (r->is_rollout) progress_mark(r, PROG_SYNCED, step, 0);
  if (r->is_train) partial_report(r);
  if (r->is_ctl) log_step(r, &ds, step, t0);
  dynsamp_free(&ds);
}

const struct mode_ops sync_mode_ops = {.name = "sync", .step = sync_step};
