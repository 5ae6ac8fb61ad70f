/* roles.c: one sync RL step as each role does it (run.h): rollout generates
 * its instance's groups, reward scores them and hands each group whole to its
 * train DP rank, train updates, and the weight broadcast brings the new
 * version to the rollout ranks. Each rank reports its metrics partial to the
 * controller as soon as its last data-carrying role is done. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "reward_model.h"
#include "rollout.h"
#include "run.h"
#include "trainer.h"
#include "wait.h"
#include "xfer.h"

/* ---- rollout ----------------------------------------------------------------- */

static void rollout_part(struct run *r, long step) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  if (run_slice_lo(P, R, i) == run_slice_lo(P, R, i + 1)) return;
  struct sample_batch prompts, out;
  sample_batch_init(&prompts);
  sample_batch_init(&out);
  run_recv(r, &prompts, 0, BOX_PROMPTS, XFER_TAG_PROMPTS);
  struct rollout_prompt *rp = calloc((size_t)prompts.n, sizeof *rp);
  if (!rp) die_local("out of memory for %d prompts", prompts.n);
  for (int k = 0; k < prompts.n; k++)
    rp[k] = (struct rollout_prompt){ .prompt_id = prompts.s[k].prompt_id, .group = prompts.s[k].group,
                                     .tokens = (const int *)prompts.s[k].prompt,
                                     .n_tokens = prompts.s[k].n_prompt };
  char err[512];
  double t0 = wait_now();
  int rc = rollout_generate(r->engine, rp, prompts.n, (int)r->cfg->algo.group_size, step, r->weight_version,
                            &out, NULL, err, sizeof err);
  if (rc) die_local("step %ld: generation failed: %s", step, err);
  r->part[PS_T_GEN] = wait_now() - t0;
  r->part[PS_GEN_TOK] += (double)sample_batch_resp_tokens(&out);
  /* The trainer measures logprob_diff_max on its old-logprob pass; with old_logprobs =
   * rollout it has none, so the rollout rank measures it (a model_forward over the batch).
   * Only meaningful at temperature 1: the recorded logprob is of the tempered distribution. */
  if (r->cfg->rollout.temperature == 1.0 && r->cfg->algo.old_logprobs == OLDLP_ROLLOUT)
    r->part[PS_LPDIFF_ROLLOUT] = rollout_logprob_diff_max(r->rmodel, &out);
  run_send(r, &out, r->reward_world[run_instance_reward(r, i)], BOX_SAMPLES, XFER_TAG_SAMPLES);
  free(rp);
  sample_batch_free(&prompts);
  sample_batch_free(&out);
}

/* ---- reward ------------------------------------------------------------------ */

/* Score b in place (reward, parts) and add the statistics to the partial. */
static void reward_score(struct run *r, struct sample_batch *b) {
  int n = b->n;
  long P = r->cfg->algo.prompts_per_step;
  struct reward_item *items = calloc((size_t)n + 1, sizeof *items);
  struct task_prompt *tp = calloc((size_t)n + 1, sizeof *tp);
  double *rew = calloc((size_t)n + 1, sizeof *rew);
  double (*parts)[REWARD_NPARTS] = calloc((size_t)n + 1, sizeof *parts);
  int *local = malloc(sizeof(int) * (size_t)P);
  size_t cap = 0;
  for (int k = 0; k < n; k++) cap += 8 * (size_t)b->s[k].n_resp + 1;
  char *text = malloc(cap + 1);
  if (!items || !tp || !rew || !parts || !local || !text) die_local("out of memory scoring %d samples", n);
  for (long g = 0; g < P; g++) local[g] = -1;
  int n_groups = 0;
  size_t off = 0;
  for (int k = 0; k < n; k++) {
    struct sample *s = &b->s[k];
    if (s->group < 0 || s->group >= P) die_local("sample with group %d outside 0..%ld", s->group, P - 1);
    if (local[s->group] < 0) local[s->group] = n_groups++;
    if (task_prompt(&r->task, (uint64_t)s->prompt_id, TASK_TRAIN, &tp[k]) != 0)
      die_local("task: prompt %lld has no train problem", (long long)s->prompt_id);
    size_t len = 0;
    if (tokenizer_decode(&r->tok, (const int *)s->resp, (size_t)s->n_resp, text + off, cap + 1 - off, &len) != TOK_OK)
      die_local("response of prompt %lld does not decode", (long long)s->prompt_id);
    items[k] = (struct reward_item){ .prompt = &tp[k], .text = text + off, .len = len,
                                     .n_tokens = s->n_resp, .group = local[s->group] };
    off += len + 1;
  }
  struct reward_stats st;
  double *rm = run_reward_model_scores(r, b);  /* NULL without [reward] rm_path */
  if (reward_score_batch_rm(&r->rcfg, &r->task, items, rm, n, n_groups, rew, parts, &st) != 0)
    die_local("reward scoring of %d samples failed", n);
  free(rm);
  double *q = r->part;
  for (int k = 0; k < n; k++) {
    struct sample *s = &b->s[k];
    s->reward = rew[k];
    for (int c = 0; c < REWARD_NPARTS; c++)
      if ((c != REWARD_RM || r->rcfg.has_rm) && sample_set_part(s, reward_part_name(c), parts[k][c]) != 0)
        die_local("out of memory");
    q[PS_R_SUM] += rew[k];
    q[PS_R2_SUM] += rew[k] * rew[k];
    q[PS_LEN_SUM] += s->n_resp;
    q[PS_TRUNC] += s->finish == FINISH_LENGTH;
    q[PS_LEN_MAX] = fmax(q[PS_LEN_MAX], s->n_resp);
  }
  q[PS_N] += n;
  q[PS_CORRECT] += st.acc * n;
  q[PS_NONFINITE] += (double)st.nonfinite;
  q[PS_GROUPS] += n_groups;
  for (int c = 0; c < REWARD_NPARTS; c++) {
    q[PS_PART_SUM + c] += st.part_mean[c] * n;
    q[PS_PART_CONST + c] += st.part_const_frac[c] * n_groups;
  }
  free(items);
  free(tp);
  free(rew);
  free(parts);
  free(local);
  free(text);
}

static void reward_role_part(struct run *r) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, j = r->comms.place.role_rank[ROLE_REWARD];
  struct sample_batch b, out;
  sample_batch_init(&b);
  sample_batch_init(&out);
  for (int i = 0; i < R; i++)
    if (run_instance_reward(r, i) == j && run_slice_lo(P, R, i) < run_slice_lo(P, R, i + 1))
      run_recv(r, &b, r->rollout_world[i], BOX_SAMPLES, XFER_TAG_SAMPLES);
  if (b.n == 0) return;
  double t0 = wait_now();
  reward_score(r, &b);
  r->part[PS_T_REWARD] = wait_now() - t0;
  /* whole groups to their DP rank, in DP order (receivers take reward ranks in order) */
  for (int d = 0; d < r->comms.counts.train_dp; d++) {
    for (int k = 0; k < b.n; k++)  /* a pushed sample is left zeroed: n_prompt 0 marks it taken */
      if (b.s[k].n_prompt && run_group_dp(r, b.s[k].group) == d) {
        if (sample_batch_push(&out, &b.s[k]) != 0) die_local("out of memory");
      }
    if (out.n) run_send(r, &out, r->train_world[d], BOX_REWARDS, XFER_TAG_REWARDS);
  }
  sample_batch_free(&b);
  sample_batch_free(&out);
}

/* ---- train ------------------------------------------------------------------- */

static int cmp_sample(const void *a, const void *b) {
  const struct sample *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* The trainer's metrics into the partial's trainer block (train dp 0 only). */
static void train_report_fields(struct run *r, struct step_metrics *m) {
  if (r->comms.place.dp != 0) return;
  for (int i = 0; i < metric_fields_len; i++) r->part[PS_TRAIN_BEGIN + i] = *metrics_field(m, i);
  r->part[PS_HAS_TRAIN] = 1;
}

static void train_part(struct run *r) {
  long P = r->cfg->algo.prompts_per_step;
  int D = r->comms.counts.train_dp, d = r->comms.place.dp, W = r->comms.counts.reward;
  struct sample_batch b;
  sample_batch_init(&b);
  char *from = calloc((size_t)W, 1);
  if (!from) die_local("out of memory");
  for (long g = run_slice_lo(P, D, d); g < run_slice_lo(P, D, d + 1); g++)
    from[run_instance_reward(r, run_group_instance(r, g))] = 1;
  for (int j = 0; j < W; j++)
    if (from[j]) run_recv(r, &b, r->reward_world[j], BOX_REWARDS, XFER_TAG_REWARDS);
  free(from);
  qsort(b.s, (size_t)b.n, sizeof *b.s, cmp_sample);
  int64_t v = r->trainer->weight_version;
  for (int k = 0; k < b.n; k++) {
    double lag = (double)(v - b.s[k].weight_version);
    r->part[PS_LAG_SUM] += lag;
    r->part[PS_LAG_MAX] = fmax(r->part[PS_LAG_MAX], lag);
  }
  struct step_metrics m;
  metrics_init(&m);
  if (trainer_rl_step(r->trainer, &b, &m) != 0) die_local("the RL train step failed");
  if (b.n > 0) samples_log_write(r, &b, (long)b.s[0].step);
  train_report_fields(r, &m);
  metrics_free(&m);
  sample_batch_free(&b);
}

/* ---- weight sync and the step ---------------------------------------------------- */

void run_sync_weights(struct run *r) {
  MPI_Comm wc = r->comms.weight_comm;
  if (wc == MPI_COMM_NULL) return;
  int root = r->comms.place.weight_rank == 0;
  int64_t v = root ? r->trainer->weight_version : 0;
  wait_bcast(&v, 1, MPI_INT64_T, 0, wc);
  struct model *m = r->is_train ? &r->trainer->policy : r->rmodel;
  struct xfer_stats st;
  int rc = xfer_bcast_weights(m->params, &m->table, 0, wc, &st);
  if (rc != XFER_OK) die_local("weight broadcast failed: %s", xfer_strerror(rc));
  if (r->is_rollout && r->is_train)
    memcpy(r->rmodel->params, m->params, sizeof(float) * m->table.total);
  r->weight_version = v;
  if (r->is_rollout) rollout_weights_changed(r->engine, v);
  if (root) {
    r->part[PS_TRAIN_BEGIN + run_metric_index("t_sync")] = st.t_sync;
    r->part[PS_TRAIN_BEGIN + run_metric_index("sync_gbps")] = st.sync_gbps;
    r->part[PS_VERSION] = (double)v;
  }
}

/* 1 for every rank that reports in an RL step (every rank with a worker role). */
static void rl_expect(const struct run *r, char *expect) {
  for (int w = 0; w < r->comms.world_size; w++) {
    struct rank_place p;
    roles_place(&r->comms.counts, w, &p);
    expect[w] = (p.roles & ~ROLE_BIT(ROLE_CONTROLLER)) != 0;
  }
}

void run_rl_step(struct run *r, long step) {
  double t0 = wait_now();
  run_part_reset(r, step, PK_RL);
  if (r->is_ctl) controller_send_prompts(r, step);
  if (r->is_rollout) rollout_part(r, step);
  if (r->is_reward) reward_role_part(r);
  if (r->is_train) train_part(r);
  if (r->is_train && run_ckpt_due(r, step)) run_checkpoint(r, step);
  int worker = r->is_rollout || r->is_reward || r->is_train;
  if (worker && !r->is_train) run_part_report(r);
  run_sync_weights(r);
  if (r->is_train) run_part_report(r);
  if (r->is_ctl) {
    char *expect = malloc((size_t)r->comms.world_size);
    double *q = malloc(sizeof(double) * (size_t)r->part_len);
    if (!expect || !q) die_local("out of memory");
    rl_expect(r, expect);
    controller_collect(r, expect, "rl", step, q);
    controller_log_step(r, q, PHASE_RL, step, wait_now() - t0);
    free(expect);
    free(q);
  }
}
