/* run/controller.c: the controller's side of a step (run/controller.h). */
#include "run/controller.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monitor/watch.h"
#include "mpi/xfer.h"
#include "rl/dynsamp.h"
#include "run/difficulty_sync.h"
#include "run/partial.h"
#include "run/progress.h"
#include "run/route.h"
#include "run/run.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

int run_prompt_tokens(const struct run *r, const struct task_prompt *p, struct sample *s) {
  int ids[TASK_TEXT_MAX + 2];
  size_t n = 0, at = 0;
  if (tokenizer_encode_prompt(&r->tok, p->text, strlen(p->text), ids, TASK_TEXT_MAX + 1, &n, &at) !=
      TOK_OK)
    return -1;
  return sample_set_prompt(s, ids, (int32_t)n);
}

void controller_send_prompts(struct run *r, long step, int round) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances;
  progress_rounds(r, round + 1);
  struct sample_batch b;
  sample_batch_init(&b);
  for (int i = 0; i < R; i++) {
    for (long g = route_slice_lo(P, R, i); g < route_slice_lo(P, R, i + 1); g++) {
      struct task_prompt tp;
      uint64_t id = difficulty_draw(r, step, round, g, &tp);
      struct sample *s = sample_batch_add(&b);
      if (!s) die_local("out of memory for the prompts of step %ld", step);
      s->prompt_id = (int64_t)id;
      s->group = (int32_t)g;
      s->step = step;
      s->weight_version = r->weight_version;
      if (run_prompt_tokens(r, &tp, s) != 0) die_local("prompt '%s' does not encode", tp.text);
    }
    /* under the watchdog's deadline too: a rollout rank stuck since the previous step (after
     * its weight sync) never takes its prompts */
    if (b.n && route_send_until(r, &b, r->rollout_world[i], BOX_PROMPTS, XFER_TAG_PROMPTS,
                                r->cfg->run.phase_timeout_s) != XFER_OK) {
      char roles[64];
      struct rank_place p;
      roles_place(&r->comms.counts, r->rollout_world[i], &p);
      die_local("watchdog: rl step %ld: rank %d (%s) did not take the prompts of the step within "
                "[run] phase_timeout_s = %g s (stuck since its previous step); stopping the job",
                step, r->rollout_world[i], roles_mask_str(p.roles, roles, sizeof roles),
                r->cfg->run.phase_timeout_s);
    }
  }
  sample_batch_free(&b);
}

/* What a rank was doing in phase `phase`, for the watchdog; smaller = earlier in the pipeline. */
static int stage_of(const struct run *r, int rank, const char **what, const char *phase) {
  struct rank_place p;
  roles_place(&r->comms.counts, rank, &p);
  if (strcmp(phase, "rl") != 0) {
    *what = !strcmp(phase, "sft") ? "an SFT step" : "eval generation";
    return 0;
  }
  if (r->comms.counts.colocated) { *what = "rollout, reward or train"; return 0; }
  if (p.roles & ROLE_BIT(ROLE_ROLLOUT)) { *what = "generation"; return 0; }
  if (p.roles & ROLE_BIT(ROLE_REWARD)) { *what = "reward scoring"; return 1; }
  *what = "training and the weight sync";
  return 2;
}

/* The stalled rank by the RL step's stage markers (run/progress.h; separate layout): the
 * earliest stage among the ranks at work, not the ones waiting on them. -1: none found. */
static int marked_culprit(struct run *r, const char *expect, const char *got, const char **what,
                          int *stage) {
  int worst = -1;
  progress_poll(r);
  for (int w = 1; w < r->comms.world_size; w++) {
    const char *wh;
    int st = progress_stage(r, w, expect[w] ? got[w] : 1, &wh);
    if (st >= 0 && st < *stage) *stage = st, worst = w, *what = wh;
  }
  return worst;
}

/* The watchdog: name the rank that stalls (the earliest stage of the pipeline among the
 * ranks still at work) and stop the job. In an RL step of the separate layout the stage
 * markers tell a rank that waits on another from one that works; else a rank's role gives
 * its stage. */
__attribute__((noreturn)) static void watchdog_fire(struct run *r, const char *expect, const char *got, const char *phase,
                          long step) {
  int worst_stage = 99;
  const char *what = "";
  char others[512] = "";
  size_t o = 0;
  int worst = !strcmp(phase, "rl") && !r->comms.counts.colocated
                  ? marked_culprit(r, expect, got, &what, &worst_stage) : -1;
  int named = worst;
  for (int w = 0; w < r->comms.world_size; w++) {
    int busy = expect[w] && !got[w];
    if (!busy && w != named) continue;  /* the named rank may have reported its partial */
    const char *wh;
    int st = busy ? stage_of(r, w, &wh, phase) : 99;
    if (named < 0 && st < worst_stage) { worst_stage = st; worst = w; what = wh; }
    if (o + 16 < sizeof others) o += (size_t)snprintf(others + o, sizeof others - o, " %d", w);
  }
  struct rank_place p;
  char roles[64];
  roles_place(&r->comms.counts, worst, &p);
  die_local("watchdog: %s step %ld: rank %d (%s) did not finish %s within [run] phase_timeout_s = %g s "
            "(ranks not done:%s); stopping the job", phase, step, worst,
            roles_mask_str(p.roles, roles, sizeof roles), what, r->cfg->run.phase_timeout_s, others);
}

void controller_collect(struct run *r, const char *expect, const char *phase, long step,
                        double *merged) {
  int W = r->comms.world_size, left = 0;
  char *got = calloc_check((size_t)W, 1);
  for (int i = 0; i < r->partial_len; i++) merged[i] = i >= PS_MAX_BEGIN ? NAN : 0.0;
  for (int w = 0; w < W; w++) left += expect[w];
  if (expect[0]) {
    partial_merge(r, merged, r->partial);
    got[0] = 1;
    left--;
  }
  double deadline = clock_seconds() + r->cfg->run.phase_timeout_s;
  while (left > 0) {
    double remain = deadline - clock_seconds();
    unsigned char *buf = NULL;
    size_t len = 0;
    int from = -1;
    int tag = strcmp(phase, "eval") ? XFER_TAG_METRICS : XFER_TAG_EVAL;
    int rc = remain > 0 ? xfer_recv_bytes(&buf, &len, MPI_ANY_SOURCE, tag, r->comms.world, remain, &from)
                        : XFER_TIMEOUT;
    if (rc == XFER_TIMEOUT) watchdog_fire(r, expect, got, phase, step);
    if (rc != XFER_OK) die_local("receiving metrics failed: %s", xfer_strerror(rc));
    const double *p = (const double *)buf;
    if (len != sizeof(double) * (size_t)r->partial_len || from < 0 || from >= W || !expect[from] ||
        got[from] || p[PS_STEP] != (double)step)
      die_local("unexpected metrics message from rank %d (%zu bytes, step %g; expected %s step %ld)", from,
                len, len >= sizeof(double) ? p[PS_STEP] : NAN, phase, step);
    partial_merge(r, merged, p);
    got[from] = 1;
    left--;
    free(buf);
  }
  /* an RL step's stage markers: every one before the step is logged (none is left for the
   * next step), under the same deadline */
  if (!strcmp(phase, "rl")) {
    double sleep_s = 50e-6;
    for (progress_poll(r); progress_missing(r) > 0; progress_poll(r)) {
      if (clock_seconds() > deadline) watchdog_fire(r, expect, got, phase, step);
      struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(sleep_s * 1e9)};
      nanosleep(&ts, NULL);
      sleep_s = sleep_s < 1e-3 ? 2 * sleep_s : 2e-3;
    }
  }
  free(got);
}

/* Append the kept group numbers in msg (len bytes) to out[1..], checking them. */
static void kept_append(long P, const void *msg, size_t len, int from, int32_t *out) {
  size_t n = len / sizeof(int32_t);
  const int32_t *g = msg;
  if (len % sizeof(int32_t) || (long)(out[0] + n) > P)
    die_local("dynamic sampling: a kept-groups message of %zu bytes from rank %d", len, from);
  for (size_t k = 0; k < n; k++) {
    if (g[k] < 0 || g[k] >= P) die_local("dynamic sampling: rank %d kept group %d of 0..%ld", from, g[k], P - 1);
    out[1 + out[0]++] = g[k];
  }
}

void controller_gather_kept(struct run *r, long step, const int32_t *mine, int n_mine, int32_t *out) {
  long P = r->cfg->algo.prompts_per_step;
  int W = r->comms.world_size, R = r->comms.counts.rollout_instances;
  char *expect = calloc_check((size_t)W, 1), *got = calloc_check((size_t)W, 1);
  for (int i = 0; i < R; i++)  /* the reward ranks that scored a slice this round */
    if (route_slice_lo(P, R, i) < route_slice_lo(P, R, i + 1)) expect[r->reward_world[route_instance_reward(r, i)]] = 1;
  out[0] = 0;
  if (expect[0]) kept_append(P, mine, sizeof(int32_t) * (size_t)n_mine, 0, out);
  double deadline = clock_seconds() + r->cfg->run.phase_timeout_s;
  for (int w = 1; w < W; w++) {
    if (!expect[w]) continue;
    unsigned char *buf = NULL;
    size_t len = 0;
    double remain = deadline - clock_seconds();
    int rc = remain > 0 ? xfer_recv_bytes(&buf, &len, w, XFER_TAG_REWARDS, r->comms.world, remain, NULL)
                        : XFER_TIMEOUT;
    if (rc == XFER_TIMEOUT) watchdog_fire(r, expect, got, "rl", step);
    if (rc != XFER_OK) die_local("receiving the kept groups of rank %d failed: %s", w, xfer_strerror(rc));
    kept_append(P, buf, len, w, out);
    got[w] = 1;
    free(buf);
  }
  dynsamp_sort_groups(out + 1, out[0]);
  free(expect);
  free(got);
}

/* The reward statistics of a merged RL partial into m. */
static void log_rewards(const struct run *r, const double *q, struct step_metrics *m) {
  double n = q[PS_N];
  if (n <= 0) return;
  m->reward_mean = q[PS_R_SUM] / n;
  m->reward_std = sqrt(fmax(q[PS_R2_SUM] / n - m->reward_mean * m->reward_mean, 0.0));
  m->acc = q[PS_CORRECT] / n;
  m->resp_len_mean = q[PS_LEN_SUM] / n;
  m->resp_len_max = q[PS_LEN_MAX];
  m->truncated_frac = q[PS_TRUNC] / n;
  m->reward_nonfinite = q[PS_NONFINITE];
  if (q[PS_ERR_SOURCES] > 0) m->reward_errors = q[PS_REWARD_ERRORS];
  if (q[PS_EXEC_WALL] > 0) m->sandbox_exec_per_s = q[PS_EXECS] / q[PS_EXEC_WALL];
  double cfrac = 0;
  int active = 0;
  for (int k = 0; k < REWARD_NCOMPONENTS; k++) {
    if (r->rcfg.weight[k] == 0 && k != REWARD_CORRECT) continue;
    if (k == REWARD_OVERLONG && r->rcfg.overlong_buffer <= 0) continue;
    metrics_set_part(m, reward_component_name(k), q[PS_PART_SUM + k] / n);
    cfrac += q[PS_GROUPS] > 0 ? q[PS_PART_CONST + k] / q[PS_GROUPS] : 0;
    active++;
  }
  m->reward_parts_const_frac = active ? cfrac / active : NAN;
  if (q[PS_SC_LABELED] > 0) m->sc_label_acc = q[PS_SC_LABEL_OK] / q[PS_SC_LABELED];
  m->t_gen = q[PS_T_GEN];
  m->t_reward = q[PS_T_REWARD];
  if (q[PS_T_GEN] > 0) m->gen_tok_per_s = q[PS_GEN_TOK] / q[PS_T_GEN];
}

/* The first few steps with skipped updates, said on the console (the metrics count them
 * all); parameters that turned NaN/Inf, always (the run stops at the step's boundary). */
#define SKIP_WARNINGS 3

static void warn_nonfinite(struct run *r, const struct step_metrics *m) {
  const char *ph = metrics_phase_name(m->phase);
  if (m->skipped_nonfinite > 0 && r->nonfinite_warned < SKIP_WARNINGS) {
    r->nonfinite_warned++;
    printf("rlpt: WARNING: %s step %ld: %g optimizer update%s skipped: the gradient norm is NaN or "
           "Inf (parameters and moments unchanged; skipped_nonfinite in the metrics)%s\n", ph, m->step,
           m->skipped_nonfinite, m->skipped_nonfinite == 1 ? "" : "s",
           r->nonfinite_warned == SKIP_WARNINGS ? "; further ones are only counted there" : "");
  }
  if (m->params_nonfinite > 0)
    printf("rlpt: WARNING: %s step %ld: %g parameters are NaN or Inf after the update "
           "(params_nonfinite; [optim] eps = %g, lr = %g): the run stops\n", ph, m->step,
           m->params_nonfinite, r->cfg->optim.eps, m->lr);
  fflush(stdout);
}

void controller_log_step(struct run *r, const double *q, enum metrics_phase phase, long step,
                         double step_s) {
  struct step_metrics m;
  metrics_init(&m);
  if (q[PS_HAS_TRAIN] == 1)
    for (int i = 0; i < metric_fields_len; i++) *metrics_field(&m, i) = q[PS_TRAIN_BEGIN + i];
  m.step = step;
  m.phase = phase;
  m.time_s = step_s;
  m.rss_train_gb = q[PS_RSS_TRAIN] / 1e9;  /* NaN: no train rank reported */
  m.rss_rollout_gb = q[PS_RSS_ROLLOUT] / 1e9;
  if (isfinite(q[PS_VERSION])) r->weight_version = (int64_t)q[PS_VERSION];
  m.weight_version = (long)r->weight_version;
  if (phase == PHASE_RL && !config_is_pref(r->cfg)) {  /* a preference step has no samples */
    log_rewards(r, q, &m);
    if (!isfinite(m.logprob_diff_max)) m.logprob_diff_max = q[PS_LPDIFF_ROLLOUT];
    if (q[PS_TRAINED] > 0) {
      m.lag_mean = q[PS_LAG_SUM] / q[PS_TRAINED];
      m.lag_max = q[PS_LAG_MAX];
      /* the async buffer counts its drops; sync trains on the weights that generated */
      if (!isfinite(m.drop_ratio)) m.drop_ratio = 0;
    }
    if (isfinite(m.buffer_groups) && step_s > 0)  /* separate_async: gen time against the step's */
      m.idle_rollout = fmax(0.0, 1.0 - (isfinite(q[PS_T_GEN]) ? q[PS_T_GEN] : 0.0) / step_s);
    m.groups_filtered = q[PS_FILTERED];
    m.gen_rounds = q[PS_ROUNDS];
    m.groups_trained = q[PS_SELECTED];
    if (r->diff.on) m.prompts_filtered = q[PS_PROMPTS_FILTERED];
    if (q[PS_EPISODES] > 0) {
      m.num_turns_mean = q[PS_TURNS] / q[PS_EPISODES];
      m.tool_calls = q[PS_TOOL_CALLS];
      m.tool_errors = q[PS_TOOL_ERRORS];
      m.t_tool = q[PS_TOOL_S];
    }
  }
  if (metrics_log_step(&r->mlog, &m, stdout) != 0)
    die_local("writing the metrics file %s failed", r->cfg->log.metrics_path);
  warn_nonfinite(r, &m);
  if (phase == PHASE_RL) {  /* a console line the first time each kind of finding appears */
    if (!r->watch) r->watch = watch_new();
    watch_step(r->watch, &m, stdout);
  }
  metrics_free(&m);
}

void controller_summary(const struct run *r) {
  double t = clock_seconds() - r->t_start;
  if (isfinite(r->sft_pass1) && isfinite(r->rl_pass1))
    printf("summary: greedy pass@1 post-SFT %.3f -> post-RL %.3f (gain %+.1f points) after %ld RL "
           "steps; %.1f s wall\n", r->sft_pass1, r->rl_pass1, 100 * (r->rl_pass1 - r->sft_pass1),
           r->cfg->run.steps, t);
  else
    printf("summary: greedy pass@1 post-SFT %.3f; no RL steps; %.1f s wall\n", r->sft_pass1, t);
  fflush(stdout);
}
