/* train/pref_step.c: DPO, IPO and Bradley-Terry reward-model steps on packed preference
 * pairs (train/pref_step.h; the formulas: src/rl/README.md §7). */
#include "train/pref_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "mpi/allreduce.h"
#include "rl/algo.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"

#define PREF_NSTATS 6

/* ---- the batch ---------------------------------------------------------------------------- */

int pref_batch_build(struct sft_batch *b, const struct pref_set *ps, const struct tokenizer *tok,
                     enum task_split split, uint64_t index0, long n, char *err, size_t errlen) {
  static int ids[2 * TASK_TEXT_MAX + 4];
  b->nseq = b->n_tok = 0;
  if (sft_batch_reserve(b, 2 * (int)n, 0)) return 1;
  b->cu_seqlens[0] = 0;
  for (long k = 0; k < n; k++) {
    const struct pref_row *row = pref_row_at(ps, split, index0 + (uint64_t)k);
    for (int side = 1; side >= 0; side--) {  /* chosen first */
      size_t np, nt;
      if (!row || pref_tokens(tok, row, side, ids, sizeof ids / sizeof *ids, &np, &nt)) {
        snprintf(err, errlen, "%s:%ld: the pair does not tokenize", ps->path[split], row ? row->line : 0L);
        return 2;
      }
      if (sft_batch_append(b, ids, np, nt)) return 1;
    }
  }
  return 0;
}

/* ---- the pass ------------------------------------------------------------------------------ */

/* The end (in pairs) of the micro-batch starting at pair p0: whole pairs, at most
 * micro_batch_seqs sequences and max_tokens tokens, always at least one pair. */
static int micro_end(const struct trainer *t, const struct sft_batch *b, int p0) {
  long max_seqs = t->cfg->ranks.micro_batch_seqs;
  int p1 = p0 + 1, n_pairs = b->nseq / 2;
  const int *cu = b->cu_seqlens;
  while (p1 < n_pairs && 2 * (p1 + 1 - p0) <= max_seqs && cu[2 * p1 + 2] - cu[2 * p0] <= t->max_tokens) p1++;
  return p1;
}

/* sum_t mask lp over sequence s of the micro-batch starting at token base. */
static double seq_sum(const struct sft_batch *b, const float *lp, int s, int base) {
  double sum = 0.0;
  for (int i = b->cu_seqlens[s]; i < b->cu_seqlens[s + 1]; i++) sum += (double)b->mask[i] * lp[i - base];
  return sum;
}

static double seq_tokens(const struct sft_batch *b, int s) {
  double n = 0.0;
  for (int i = b->cu_seqlens[s]; i < b->cu_seqlens[s + 1]; i++) n += b->mask[i];
  return n;
}

/* The pairs of micro-batch [p0, p1) from its forwards: q[k], the DPO/IPO sums or the BT
 * scores at the last token (lp = the values then). */
static void micro_pairs(const struct trainer *t, const struct sft_batch *b, int p0, int p1, const float *lp,
                        const float *lp_ref, struct algo_dpo_pair *q) {
  int base = b->cu_seqlens[2 * p0], rm = t->cfg->algo.name == ALGO_RM;
  for (int k = p0; k < p1; k++) {
    int w = 2 * k, l = 2 * k + 1;
    if (rm)
      q[k - p0] = (struct algo_dpo_pair){.logp_w = lp[b->cu_seqlens[w + 1] - 1 - base],
                                         .logp_l = lp[b->cu_seqlens[l + 1] - 1 - base], .n_w = 1, .n_l = 1};
    else
      q[k - p0] = (struct algo_dpo_pair){.logp_w = seq_sum(b, lp, w, base), .logp_l = seq_sum(b, lp, l, base),
                                         .ref_w = seq_sum(b, lp_ref, w, base), .ref_l = seq_sum(b, lp_ref, l, base),
                                         .n_w = seq_tokens(b, w), .n_l = seq_tokens(b, l)};
  }
}

/* d loss / d lp (or d value) per token of the micro-batch from the pairs' gradients. */
static void micro_grads(const struct trainer *t, const struct sft_batch *b, int p0, int p1, const double *dw,
                        const double *dl, float *g) {
  int base = b->cu_seqlens[2 * p0], rm = t->cfg->algo.name == ALGO_RM;
  memset(g, 0, sizeof(float) * (size_t)(b->cu_seqlens[2 * p1] - base));
  for (int k = p0; k < p1; k++)
    for (int side = 0; side < 2; side++) {
      int s = 2 * k + side;
      double d = side ? dl[k - p0] : dw[k - p0];
      if (rm) g[b->cu_seqlens[s + 1] - 1 - base] = (float)d;
      else
        for (int i = b->cu_seqlens[s]; i < b->cu_seqlens[s + 1]; i++) g[i - base] = (float)(b->mask[i] * d);
    }
}

/* Rewards of the pair (TRL's rewards/chosen, rewards/rejected) into st. */
static void add_rewards(const struct trainer *t, const struct algo_dpo_pair *q, int n, struct pref_stats *st) {
  double beta = t->cfg->algo.name == ALGO_RM ? 1.0 : t->cfg->algo.dpo_beta;
  for (int k = 0; k < n; k++) {
    st->chosen += beta * (q[k].logp_w - q[k].ref_w);
    st->rejected += beta * (q[k].logp_l - q[k].ref_l);
  }
}

/* Forward(s), loss and (grads) backward of micro-batch [p0, p1). */
static int micro_pass(struct trainer *t, const struct sft_batch *b, int p0, int p1, double n_global, int grads,
                      struct algo_dpo_pair *q, double *dw, double *dl, struct pref_stats *st) {
  int rm = t->cfg->algo.name == ALGO_RM, s0 = 2 * p0, s1 = 2 * p1;
  float *lp_ref = t->ent;  /* scratch: the pass computes no entropy */
  if (!rm && trainer_forward_micro(t, &t->policy, &t->ref, b->tokens, b->cu_seqlens, s0, s1, lp_ref, NULL, NULL))
    return 1;
  if (trainer_forward_micro(t, &t->policy, &t->policy.weights, b->tokens, b->cu_seqlens, s0, s1, rm ? NULL : t->lp, NULL,
                            rm ? t->lp : NULL))
    return 1;
  micro_pairs(t, b, p0, p1, t->lp, lp_ref, q);
  int kind = rm ? DPO_SIGMOID : t->cfg->algo.dpo_loss;
  double beta = rm ? 1.0 : t->cfg->algo.dpo_beta;
  struct algo_dpo_stats ds = {0};
  algo_dpo_loss(kind, beta, q, p1 - p0, n_global, dw, dl, &ds);
  st->loss += ds.loss;
  st->margin += ds.margin_sum;
  st->n_correct += ds.n_correct;
  st->n_pairs += ds.n_pairs;
  add_rewards(t, q, p1 - p0, st);
  if (!grads) return 0;
  micro_grads(t, b, p0, p1, dw, dl, t->dlp);
  if (rm) model_backward(&t->policy, NULL, NULL, t->dlp);
  else model_backward(&t->policy, t->dlp, NULL, NULL);
  return 0;
}

/* rm_train_body = false: only the value head keeps its gradient. */
static void keep_head_grad(struct trainer *t) {
  const struct param_table *tb = &t->policy.table;
  for (int i = 0; i < tb->n; i++)
    if (strcmp(tb->e[i].name, "score.weight"))
      memset(t->policy.grads + tb->e[i].offset, 0, sizeof(float) * tb->e[i].numel);
}

int trainer_pref_pass(struct trainer *t, const struct sft_batch *b, double n_global, int grads,
                      struct pref_stats *st) {
  int n_pairs = b->nseq / 2, n = n_pairs > 0 ? n_pairs : 1;
  struct algo_dpo_pair *q = malloc(sizeof *q * (size_t)n);
  double *dw = malloc(sizeof *dw * (size_t)n), *dl = malloc(sizeof *dl * (size_t)n);
  int rc = !q || !dw || !dl;
  memset(st, 0, sizeof *st);
  if (grads) model_zero_grad(&t->policy);
  for (int p0 = 0; p0 < n_pairs && !rc;) {
    int p1 = micro_end(t, b, p0);
    rc = micro_pass(t, b, p0, p1, n_global, grads, q, dw, dl, st);
    p0 = p1;
  }
  if (!rc && grads && t->cfg->algo.name == ALGO_RM && !t->cfg->algo.rm_train_body) keep_head_grad(t);
  free(q);
  free(dw);
  free(dl);
  return rc;
}

/* ---- step and eval ------------------------------------------------------------------------ */

static void stats_allreduce(struct pref_stats *st, MPI_Comm dp) {
  double v[PREF_NSTATS] = {st->loss, st->chosen, st->rejected, st->margin, st->n_correct, st->n_pairs};
  allreduce_polite(v, PREF_NSTATS, MPI_DOUBLE, MPI_SUM, dp);
  *st = (struct pref_stats){.loss = v[0], .chosen = v[1], .rejected = v[2], .margin = v[3], .n_correct = v[4],
                            .n_pairs = v[5]};
}

int trainer_pref_step(struct trainer *t, const struct sft_batch *b, struct step_metrics *m) {
  double t0 = clock_seconds(), counts[2] = {b->nseq / 2, b->nseq > 0 ? b->cu_seqlens[b->nseq] : 0};
  allreduce_polite(counts, 2, MPI_DOUBLE, MPI_SUM, t->dp);
  struct pref_stats st;
  int rc = trainer_pref_pass(t, b, counts[0], 1, &st);
  if (error_agree(t->dp, rc)) return 1;  /* every rank must reach the collectives below */
  stats_allreduce(&st, t->dp);
  if (trainer_step_update(t, t0, counts[1], m)) t->weight_version++;
  double inv = 1.0 / (st.n_pairs > 0 ? st.n_pairs : 1.0);
  m->phase = PHASE_RL;
  m->pref_loss = st.loss;  /* already divided by the step's pairs */
  m->pref_chosen = st.chosen * inv;
  m->pref_rejected = st.rejected * inv;
  m->pref_margin = st.margin * inv;
  m->pref_acc = st.n_correct * inv;
  return 0;
}

int trainer_pref_eval(struct trainer *t, const struct sft_batch *b, double *acc) {
  struct pref_stats st;
  int rc = trainer_pref_pass(t, b, 1.0, 0, &st);
  if (error_agree(t->dp, rc)) return 1;
  stats_allreduce(&st, t->dp);
  *acc = st.n_pairs > 0 ? st.n_correct / st.n_pairs : NAN;
  return 0;
}
