/* dp_fixture.h: a tiny trainer for the data-parallel tests (train/test_trainer_dp.c,
 * train/test_zero_mpi.c): the deck, SFT steps on this rank's share of each batch, and
 * RL steps on a fixed synthetic batch of groups, DP_STEPS steps each, recording
 * every step's loss and grad_norm. */
#ifndef RLPT_DP_FIXTURE_H
#define RLPT_DP_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "deck/config.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

#define DP_STEPS 3

static const char *const dp_deck_tiny =
    "[run]\nseed = 11\nsteps = 5\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 64\nmax_seq = 32\n"
    "[optim]\nlr = 3e-3\ngrad_clip = 1.0\n"
    "[task]\nname = arith\ndigits_min = 1\ndigits_max = 2\n"
    "[sft]\nsteps = 3\nbatch_size = 12\nlr = 3e-3\n"
    "[ranks]\nmicro_batch_seqs = 5\n";

struct dp_run {
  struct config cfg;
  struct model_config mc;
  struct tokenizer tok;
  struct task task;
  struct trainer t;
  double loss[DP_STEPS], norm[DP_STEPS];  /* per step: pg_loss (SFT: the loss), grad_norm */
};

/* The tiny deck with the overrides, the char tokenizer, its task and a trainer over dp. */
static inline int dp_run_make(struct dp_run *r, int n_over, char *const *over, MPI_Comm dp) {
  char err[512];
  memset(r, 0, sizeof *r);
  tokenizer_init_char(&r->tok);
  if (config_parse(&r->cfg, "tiny.ini", dp_deck_tiny, n_over, over, err, sizeof err) ||
      model_config_from_deck(&r->mc, &r->cfg, r->tok.vocab_size, err, sizeof err) ||
      task_init(&r->task, &r->cfg, err, sizeof err) ||
      trainer_create(&r->t, &r->cfg, &r->mc, 256, dp, err, sizeof err)) {
    fprintf(stderr, "setup: %s\n", err);
    return 1;
  }
  return 0;
}

static inline void dp_run_free(struct dp_run *r) {
  trainer_free(&r->t);
  tokenizer_free(&r->tok);
}

/* DP_STEPS SFT steps on this rank's share of each batch. */
static inline int dp_sft_steps(struct dp_run *r) {
  struct sft_batch b;
  sft_batch_init(&b);
  char err[256];
  long k0, n;
  trainer_sft_share(r->cfg.sft.batch_size, r->t.dp_rank, r->t.dp_size, &k0, &n);
  trainer_begin_sft(&r->t);
  int rc = 0;
  for (long s = 0; s < DP_STEPS && !rc; s++) {
    struct step_metrics m;
    metrics_init(&m);
    rc = trainer_sft_batch_from_task(&b, &r->cfg, &r->task, &r->tok, r->mc.max_seq, s, k0, n, err,
                                     sizeof err) ||
         trainer_sft_step(&r->t, b.tokens, b.cu_seqlens, b.mask, b.nseq, &m);
    r->loss[s] = m.pg_loss;
    r->norm[s] = m.grad_norm;
  }
  sft_batch_free(&b);
  return rc;
}

/* Groups [g0, g1) of a fixed synthetic batch: G = 4 responses of 1-3 digits + EOS
 * to "g+1=", rewards varied within each group, rollout logprobs absent (the
 * trainer recomputes). */
static inline void dp_rl_batch(struct sample_batch *b, int g0, int g1) {
  for (int g = g0; g < g1; g++)
    for (int i = 0; i < 4; i++) {
      struct sample *s = sample_batch_add(b);
      int32_t prompt[5] = {TOK_CHAR_BOS, '1' + g - 32, '+' - 32, '1' - 32, '=' - 32}, resp[4];
      int nr = 2 + (g + i) % 3;
      for (int j = 0; j < nr - 1; j++) resp[j] = '0' + (i * 3 + j * 7 + g) % 10 - 32;
      resp[nr - 1] = TOK_CHAR_EOS;
      sample_set_prompt(s, prompt, 5);
      sample_set_response(s, resp, NULL, nr);
      s->group = g;
      s->index = i;
      s->reward = (double)((g * 7 + i * 3) % 5) / 4.0;
    }
}

/* DP_STEPS RL steps on groups [g0, g1) (whole groups on this rank). */
static inline int dp_rl_steps(struct dp_run *r, int g0, int g1) {
  struct sample_batch b;
  sample_batch_init(&b);
  dp_rl_batch(&b, g0, g1);
  trainer_begin_rl(&r->t);
  int rc = 0;
  for (int s = 0; s < DP_STEPS && !rc; s++) {
    struct step_metrics m;
    metrics_init(&m);
    rc = trainer_rl_step(&r->t, &b, &m);
    r->loss[s] = m.pg_loss;
    r->norm[s] = m.grad_norm;
    if (!isfinite(m.pg_loss) || !isfinite(m.grad_norm)) rc = 1;
  }
  sample_batch_free(&b);
  return rc;
}

/* max |a - b| / max |a| */
static inline double dp_max_rel_diff(const float *a, const float *b, size_t n) {
  double mx = 0.0, scale = 0.0;
  for (size_t i = 0; i < n; i++) {
    mx = fmax(mx, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)a[i]));
  }
  return mx / (scale > 0.0 ? scale : 1.0);
}

#endif
