/* monitor/monitor_scenarios.h: synthetic runs for the doctor's tests (tests/monitor/): a
 * healthy GRPO-like run and, for each finding kind, the same run changed to show it. Each
 * scenario makes its RL step records one by one, so the test writes them with the run's
 * own JSONL writer (run/metrics_log.h) and feeds the same records to the watcher. */
#ifndef RLPT_MONITOR_SCENARIOS_H
#define RLPT_MONITOR_SCENARIOS_H

#include <math.h>
#include <string.h>

#include "rl/metrics.h"

struct scenario {
  const char *name;        /* the file is monitor_<name>.jsonl */
  int n_rl;                /* RL steps */
  double sft_pass1;        /* the post-SFT eval's greedy pass@1 */
  void (*change)(struct step_metrics *m, int step, int n);  /* NULL: healthy */
  const char *expect[3];   /* the kinds `rlpt doctor` must find (exactly), NULL-terminated */
};

/* A deterministic wiggle in [-1, 1]. */
static inline double sc_noise(int i, double seed) { return sin(1.7 * i + seed) * cos(0.3 * i); }

/* The healthy base: reward and acc rising slowly, small KL, clip fraction 10%, ratio near 1,
 * steady throughput. */
static inline void sc_base(struct step_metrics *m, int i, int n) {
  metrics_init(m);
  m->step = m->weight_version = i;
  m->phase = PHASE_RL;
  m->time_s = 2.0;
  m->reward_mean = m->acc = 0.4 + 0.1 * i / n + 0.03 * sc_noise(i, 0.1);
  m->reward_std = 0.45;
  m->resp_len_mean = 10 + 0.5 * sc_noise(i, 0.2);
  m->resp_len_max = 16;
  m->truncated_frac = 0.01;
  m->kl = 0.05 + 0.02 * sc_noise(i, 0.3);
  m->entropy = 0.8 + 0.05 * sc_noise(i, 0.4);
  m->pg_loss = 0.001 + 0.01 * sc_noise(i, 0.5);
  m->pg_clipfrac_low = 0.04;
  m->pg_clipfrac_high = 0.06;
  m->ratio_mean = 1.001;
  m->grad_norm = 1 + 0.2 * sc_noise(i, 0.6);
  m->lr = 1e-6;
  m->logprob_diff_max = 1e-5;
  m->lag_mean = 0.5, m->lag_max = 1, m->drop_ratio = 0.02;
  m->groups_filtered = 0, m->gen_rounds = 1, m->groups_trained = 16;
  m->skipped_nonfinite = 0, m->reward_nonfinite = 0, m->reward_parts_const_frac = 0.3;
  m->t_gen = 0.5, m->t_reward = 0.1, m->t_ref = 0.1, m->t_train = 1.0, m->t_sync = 0.1, m->t_ckpt = 0;
  m->gen_tok_per_s = 50000 + 2000 * sc_noise(i, 0.7);
  m->train_tok_per_s = 20000 + 500 * sc_noise(i, 0.8);
  m->sync_gbps = 5;
  metrics_set_part(m, "correct", m->acc);
}

/* From step 20 on: reward up to +0.3, responses 10 -> 30 tokens, kl x10, acc flat. */
static inline void sc_hacking(struct step_metrics *m, int i, int n) {
  (void)n;
  double u = i < 20 ? 0 : (i - 20) / 20.0;
  m->reward_mean += 0.3 * u;
  m->resp_len_mean += 20 * u;
  m->kl += 0.45 * u;
}
static inline void sc_kl(struct step_metrics *m, int i, int n) { (void)n; if (i >= 30) m->kl = 60 + i; }
static inline void sc_entropy(struct step_metrics *m, int i, int n) {
  (void)n;
  if (i >= 20) m->entropy = 0.8 * pow(0.82, i - 19);
}
static inline void sc_tput(struct step_metrics *m, int i, int n) {
  if (4 * i > 3 * n) m->gen_tok_per_s *= 0.3;  /* the last quarter at 30% */
}
static inline void sc_nonfinite(struct step_metrics *m, int i, int n) {
  (void)n;
  if (i == 17) m->skipped_nonfinite = 1, m->grad_norm = NAN, m->pg_loss = NAN;
}
static inline void sc_drop(struct step_metrics *m, int i, int n) { (void)n; if (i >= 30 && i <= 32) m->drop_ratio = 0.35; }
static inline void sc_lag(struct step_metrics *m, int i, int n) { (void)n; if (i >= 30 && i <= 35) m->lag_mean = 3.5, m->lag_max = 5; }
static inline void sc_clip_high(struct step_metrics *m, int i, int n) {
  (void)n;
  if (i >= 20) m->pg_clipfrac_low = 0.1, m->pg_clipfrac_high = 0.2;
}
static inline void sc_clip_low(struct step_metrics *m, int i, int n) {
  (void)n, (void)i;
  m->pg_clipfrac_low = m->pg_clipfrac_high = 0.01;
  m->ratio_mean = 1.002;
}
/* One pass, one mini-batch: rho = 1 exactly and nothing clipped (not a finding). */
static inline void sc_on_policy(struct step_metrics *m, int i, int n) {
  (void)n, (void)i;
  m->pg_clipfrac_low = m->pg_clipfrac_high = 0;
  m->ratio_mean = 1;
}
static inline void sc_logprob(struct step_metrics *m, int i, int n) { (void)n; if (i == 12) m->logprob_diff_max = 5e-3; }
static inline void sc_loss_zero(struct step_metrics *m, int i, int n) {
  (void)n;
  if (i >= 25 && i <= 30) m->pg_loss = 0, m->reward_parts_const_frac = 0.95;
}
static inline void sc_easy(struct step_metrics *m, int i, int n) {
  (void)n;
  m->reward_mean = m->acc = 0.95 + 0.02 * sc_noise(i, 0.9);
}
static inline void sc_hard(struct step_metrics *m, int i, int n) {
  (void)n;
  m->reward_mean = m->acc = 0.01 + 0.005 * sc_noise(i, 1.1);
}
/* Not measured: kl null everywhere, entropy null on some steps (gaps, not zeros). */
static inline void sc_nulls(struct step_metrics *m, int i, int n) {
  (void)n;
  m->kl = NAN;
  if (i % 7 == 3) m->entropy = NAN;
}

static const struct scenario scenarios[] = {
  {"healthy", 40, 0.4, NULL, {NULL}},
  {"healthy_on_policy", 40, 0.4, sc_on_policy, {NULL}},
  {"healthy_nulls", 40, 0.4, sc_nulls, {NULL}},
  {"reward_hacking", 40, 0.4, sc_hacking, {"reward_hacking"}},
  {"kl", 40, 0.4, sc_kl, {"kl_explosion"}},
  {"entropy", 40, 0.4, sc_entropy, {"entropy_collapse"}},
  {"throughput", 40, 0.4, sc_tput, {"throughput_decline"}},
  {"throughput_long", 150, 0.4, sc_tput, {"throughput_decline"}},
  {"nonfinite", 40, 0.4, sc_nonfinite, {"nonfinite"}},
  {"drop", 40, 0.4, sc_drop, {"drop_ratio"}},
  {"lag", 40, 0.4, sc_lag, {"lag"}},
  {"clip_high", 40, 0.4, sc_clip_high, {"clip_high"}},
  {"clip_low", 40, 0.4, sc_clip_low, {"clip_low"}},
  {"logprob", 40, 0.4, sc_logprob, {"logprob_mismatch"}},
  {"loss_zero", 40, 0.4, sc_loss_zero, {"loss_zero"}},
  {"too_easy", 40, 0.4, sc_easy, {"task_too_easy"}},
  {"too_hard", 40, 0.4, sc_hard, {"task_too_hard"}},
  {"sft_band", 40, 0.1, NULL, {"sft_band"}},
};
#define N_SCENARIOS ((int)(sizeof scenarios / sizeof scenarios[0]))

/* RL step i (1-based) of scenario s. */
static inline void scenario_step(const struct scenario *s, int i, struct step_metrics *m) {
  sc_base(m, i, s->n_rl);
  if (s->change) s->change(m, i, s->n_rl);
}

#endif
