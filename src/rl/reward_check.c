/* rl/reward_check.c: reference and wrong answers scored through a deck's reward
 * (rl/reward_check.h). */
#include "rl/reward_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/import.h"
#include "rl/reward.h"
#include "rl/reward_model.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "tasks/verify.h"
#include "tokenizer/tokenizer.h"
#include "util/alloc.h"

enum { KIND_REF, KIND_OFF_BY_ONE, KIND_EMPTY, KIND_GARBAGE, NKINDS };
static const char *const kind_names[NKINDS] = {"reference", "off_by_one", "empty", "garbage"};
#define NCOLS (REWARD_NCOMPONENTS + 1) /* total, then the parts */
#define ANSWER_MAX (TASK_TEXT_MAX + 8 + 2 * REWARD_TAG_MAX)

/* What the answers are scored with: the deck's task, reward, tokenizer and reward model. */
struct check_env {
  struct task t;
  struct reward_cfg rcfg;
  struct tokenizer tok;
  struct reward_model *rm;  /* NULL without [reward] rm_path */
};

/* One answer kind's totals and components over the prompts. */
struct dist {
  double sum[NCOLS], lo[NCOLS], hi[NCOLS];
  long pos[NCOLS], n;
};

/* Every kind's distribution, and the group statistics over the prompts. */
struct check_sums {
  struct dist d[NKINDS];
  double const_frac[REWARD_NCOMPONENTS];
  long nonfinite;
};

static void dist_add(struct dist *d, double total, const double *parts) {
  for (int c = 0; c < NCOLS; c++) {
    double x = c == 0 ? total : parts[c - 1];
    if (d->n == 0 || x < d->lo[c]) d->lo[c] = x;
    if (d->n == 0 || x > d->hi[c]) d->hi[c] = x;
    d->sum[c] += x;
    d->pos[c] += x > 0;
  }
  d->n++;
}

/* A dataset row's off-by-one answer: the final answer + 1 for math and arith (a
 * reference that is not a number gets a character appended), the expression + 1 for
 * countdown. */
static void jsonl_wrong_answer(const struct task *t, const struct task_prompt *p, char *out, size_t cap) {
  const struct data_row *r = dataset_row(t->ds, (enum task_split)p->split, p->index);
  struct rational q;
  if (t->ds->verifier == DATA_VERIFY_COUNTDOWN) snprintf(out, cap, "%s+1", p->answer);
  else if (!verify_parse_number(r->ref, strlen(r->ref), &q) && q.num < INT64_MAX - q.den)
    snprintf(out, cap, q.den == 1 ? "%lld" : "%lld/%lld", (long long)(q.num + q.den), (long long)q.den);
  else snprintf(out, cap, "%s1", r->ref);
}

/* The answer of one kind for prompt p, before tags. */
static void answer_of_kind(const struct task *t, const struct task_prompt *p, int kind, char *out, size_t cap) {
  if (kind == KIND_REF) snprintf(out, cap, "%s", p->answer);
  else if (kind == KIND_EMPTY) out[0] = '\0';
  else if (kind == KIND_GARBAGE) snprintf(out, cap, "banana?!");
  else if (t->kind == TASK_JSONL) jsonl_wrong_answer(t, p, out, cap);
  else if (t->kind == TASK_ARITH) snprintf(out, cap, "%lld", atoll(p->answer) + 1);
  else snprintf(out, cap, "%s+1", p->answer);  /* every given number is already used once */
}

/* The reward model's scores of [BOS] p + each answer text + EOS into out[NKINDS], the answer
 * cut to max_new tokens as generation would cut it. 0 or 2. */
static int rm_answer_scores(struct reward_model *rm, const struct tokenizer *tok, const struct task_prompt *p,
                            char (*text)[ANSWER_MAX], long max_new, double *out) {
  int *ids = malloc_check(sizeof(int) * (TASK_TEXT_MAX + 2 + NKINDS * (ANSWER_MAX + 1)));
  struct rm_seq seqs[NKINDS];
  char err[512] = "";
  int e = tok->eos_id >= 0, rc = 0;
  size_t np = 0, n = 0, at = 0;
  if (tokenizer_encode_prompt(tok, p->text, strlen(p->text), ids, TASK_TEXT_MAX + 1, &np, &at) != TOK_OK) {
    snprintf(err, sizeof err, "the %s tokenizer cannot encode byte %zu of the prompt \"%s\"",
             tokenizer_kind_name(tok->kind), at, p->text);
    rc = 2;
  }
  int *a = ids + np;
  for (int k = 0; !rc && k < NKINDS; k++, a += n + e) {
    if (tokenizer_encode(tok, text[k], strlen(text[k]), a, ANSWER_MAX, &n, &at) != TOK_OK) {
      snprintf(err, sizeof err, "the %s tokenizer cannot encode byte %zu of \"%s\"",
               tokenizer_kind_name(tok->kind), at, text[k]);
      rc = 2;
    }
    a[n] = tok->eos_id;
    long nb = (long)n + e < max_new ? (long)n + e : max_new;
    seqs[k] = (struct rm_seq){.a = ids, .na = (int)np, .b = a, .nb = (int)nb};
  }
  if (!rc && reward_model_score(rm, seqs, NKINDS, out, err, sizeof err) != 0) rc = 2;
  if (rc) fprintf(stderr, "rlpt: reward-check: %s\n", err);
  free(ids);
  return rc;
}

/* Prompt p's answers of every kind, tagged, as reward items over text. 0, or 2 with a
 * message. */
static int answer_items(const struct check_env *e, const struct task_prompt *p, char (*text)[ANSWER_MAX],
                        struct reward_item *items) {
  for (int k = 0; k < NKINDS; k++) {
    char ans[TASK_TEXT_MAX + 8];
    answer_of_kind(&e->t, p, k, ans, sizeof ans);
    snprintf(text[k], ANSWER_MAX, "%s%s%s", e->rcfg.open_tag, ans, e->rcfg.close_tag);
    int ids[ANSWER_MAX];
    size_t n_ids = 0, bad = 0, len = strlen(text[k]);
    int erc = tokenizer_encode(&e->tok, text[k], len, ids, ANSWER_MAX, &n_ids, &bad);
    if (erc && e->t.kind == TASK_JSONL) {
      n_ids = len;  /* dataset answers may hold bytes the char tokenizer lacks: bytes bound the tokens */
    } else if (erc) {
      fprintf(stderr, "rlpt: reward-check: the %s tokenizer cannot encode byte %zu of \"%s\"\n",
              tokenizer_kind_name(e->tok.kind), bad, text[k]);
      return 2;
    }
    items[k] = (struct reward_item){
      .prompt = p, .text = text[k], .len = len, .n_tokens = (long)n_ids + 1 /* EOS */, .group = 0};
  }
  return 0;
}

/* One prompt's four answers form one group, scored as a batch, so the table also shows
 * which components are constant within a group (reward_parts_const_frac). */
static int score_prompt(const struct check_env *e, const struct task_prompt *p, long n_prompts,
                        struct check_sums *s) {
  char text[NKINDS][ANSWER_MAX];
  struct reward_item items[NKINDS];
  double rewards[NKINDS], parts[NKINDS][REWARD_NCOMPONENTS], rms[NKINDS];
  struct reward_stats st;
  if (answer_items(e, p, text, items)) return 2;
  if (e->rm && rm_answer_scores(e->rm, &e->tok, p, text, e->rcfg.max_new_tokens, rms)) return 2;
  if (reward_score_batch_rm(&e->rcfg, &e->t, items, e->rm ? rms : NULL, NKINDS, 1, rewards, parts, &st)) return 1;
  for (int k = 0; k < NKINDS; k++) dist_add(&s->d[k], rewards[k], parts[k]);
  for (int c = 0; c < REWARD_NCOMPONENTS; c++) s->const_frac[c] += st.part_const_frac[c] / (double)n_prompts;
  s->nonfinite += st.nonfinite;
  return 0;
}

static int score_prompts(const struct check_env *e, long n_prompts, enum task_split split, struct check_sums *s) {
  for (long i = 0; i < n_prompts; i++) {
    struct task_prompt p;
    if (task_prompt(&e->t, (uint64_t)i, split, &p)) {
      fprintf(stderr, "rlpt: reward-check: no %s problem found for prompt %ld in %d draws: the problem space "
              "is too small for [task] heldout_frac = %g\n", split == TASK_EVAL ? "held-out" : "train", i,
              TASK_MAX_ATTEMPTS, e->t.heldout_frac);
      return 2;
    }
    int rc = score_prompt(e, &p, n_prompts, s);
    if (rc) return rc;
  }
  return 0;
}

static void print_table(const struct dist *d, int has_rm) {
  printf("%-11s %-9s %9s %9s %9s %7s\n", "answers", "component", "mean", "min", "max", "frac>0");
  for (int k = 0; k < NKINDS; k++)
    for (int c = 0; c < NCOLS; c++)
      if (c - 1 != REWARD_RM || has_rm)
        printf("%-11s %-9s %9.4f %9.4f %9.4f %7.3f\n", kind_names[k], c == 0 ? "total" : reward_component_name(c - 1),
               d[k].sum[c] / (double)d[k].n, d[k].lo[c], d[k].hi[c], (double)d[k].pos[c] / (double)d[k].n);
}

/* [reward] rm_path loaded for the deck's policy shape (vocab, max_seq), or NULL without one.
 * 0, or 2/1 with a message. */
static int load_rm(const struct config *cfg, const struct tokenizer *tok, struct reward_model **out) {
  struct model_config mc;
  char err[1024];
  *out = NULL;
  if (!cfg->reward.rm_path[0]) return 0;
  struct reward_model *rm = calloc_check(1, sizeof *rm);
  int rc = 0;
  if (model_config_from_deck(&mc, cfg, tok->vocab_size, err, sizeof err) != 0) rc = 2;
  if (!rc) rc = reward_model_load(rm, cfg->reward.rm_path, mc.vocab_size, mc.max_seq,
                                  (int)cfg->reward.rm_batch_tokens, err, sizeof err);
  if (rc) {
    fprintf(stderr, "rlpt: reward-check: %s\n", err);
    free(rm);
    return rc;
  }
  printf("reward-check: reward model %s (/%s, %zu parameters), rm_alpha %g: total = rm_alpha * rule + "
         "(1 - rm_alpha) * rm\n", rm->path, rm->group, rm->m.table.total, cfg->reward.rm_alpha);
  *out = rm;
  return 0;
}

/* 0 when the reward separates references from wrong answers, else 3 with WARNING lines. */
static int judge(const struct dist *d) {
  int rc = 0;
  const struct dist *ref = &d[KIND_REF];
  if (ref->hi[0] <= 0.0) {
    printf("WARNING: the verifier gives the reference answers no reward (max total %.4g): the reward is "
           "miswired and every GRPO group will have zero advantage\n", ref->hi[0]);
    rc = 3;
  } else if (ref->pos[1] < ref->n) {
    printf("WARNING: %ld of %ld reference answers fail the verifier (correct = 0)\n", ref->n - ref->pos[1], ref->n);
    rc = 3;
  }
  for (int k = KIND_OFF_BY_ONE; k < NKINDS; k++) {
    if (d[k].sum[0] / (double)d[k].n >= ref->sum[0] / (double)ref->n) {
      printf("WARNING: %s answers score as high as the references on average: the reward does not "
             "separate right from wrong\n", kind_names[k]);
      rc = 3;
    }
  }
  return rc;
}

/* The deck's tokenizer and model (as rlpt run builds them), with a dataset's rows
 * fitting them (a built-in task's deck may be a reward-only one, its [model] not sized
 * for it). 0, or 2 with a message naming the deck; tok is to be freed either way. */
static int open_tokenizer(struct check_env *e, const struct config *cfg, const char *deck) {
  struct model_config mc;
  char err[512];
  int rc = model_import_or_deck(cfg, &mc, &e->tok, err, sizeof err), rows = e->t.kind == TASK_JSONL;
  struct fit_limits lim = {.max_seq = mc.max_seq, .max_new = cfg->rollout.max_new_tokens,
                           .sft = cfg->sft.steps > 0, .where = deck, .limit = "[model] max_seq"};
  if (!rc) rc = task_check_fit(&e->t, &e->tok, &lim, rows, rows, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: %s: %s\n", deck, err);
  return rc ? 2 : 0;
}

/* The task, the reward, the tokenizer and the reward model of the deck. 0, or 2/1 after
 * a message, with nothing left to free. */
static int env_open(struct check_env *e, const struct config *cfg, const char *deck) {
  char err[512];
  memset(e, 0, sizeof *e);
  if (task_init(&e->t, cfg, err, sizeof err) || reward_init(&e->rcfg, cfg, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: %s\n", deck, err);
    return 2;
  }
  int rc = open_tokenizer(e, cfg, deck);
  if (!rc) rc = load_rm(cfg, &e->tok, &e->rm);
  if (rc) {
    tokenizer_free(&e->tok);
    task_free(&e->t);
  }
  return rc;
}

static void env_close(struct check_env *e) {
  if (e->rm) reward_model_free(e->rm);
  free(e->rm);
  tokenizer_free(&e->tok);
  task_free(&e->t);
}

static void print_header(const struct check_env *e, long n_prompts, enum task_split split) {
  const struct reward_cfg *r = &e->rcfg;
  printf("reward-check: task %s, %ld %s prompts, weights correct %g format %g length %g, overlong %s, tags %s%s%s\n",
         task_name(e->t.kind), n_prompts, split == TASK_EVAL ? "held-out" : "train", r->weight[REWARD_CORRECT],
         r->weight[REWARD_FORMAT], r->weight[REWARD_LENGTH], r->overlong_buffer > 0 ? "on" : "off",
         r->open_tag[0] ? r->open_tag : "(none)", r->open_tag[0] ? "..." : "", r->close_tag);
}

static void print_summary(const struct check_sums *s, int has_rm) {
  print_table(s->d, has_rm);
  printf("reward_parts_const_frac (share of prompts whose 4 answers agree):");
  for (int c = 0; c < REWARD_NCOMPONENTS; c++)
    if (c != REWARD_RM || has_rm) printf(" %s %.3f", reward_component_name(c), s->const_frac[c]);
  printf("\nreward_nonfinite: %ld\n", s->nonfinite);
}

static int check_deck(const struct config *cfg, const struct reward_check_opts *o) {
  struct check_env e;
  enum task_split split = o->heldout ? TASK_EVAL : TASK_TRAIN;
  long n_prompts = o->n_prompts;
  int rc = env_open(&e, cfg, o->deck);
  if (rc) return rc;
  /* a dataset is scored line by line, each row once */
  if (e.t.kind == TASK_JSONL && n_prompts > e.t.ds->n[split]) n_prompts = e.t.ds->n[split];
  struct check_sums s;
  int has_rm = e.rcfg.has_rm;
  memset(&s, 0, sizeof s);
  print_header(&e, n_prompts, split);
  rc = score_prompts(&e, n_prompts, split, &s);
  env_close(&e);
  if (rc) return rc;
  print_summary(&s, has_rm);
  rc = judge(s.d);
  if (!rc) printf("reward-check: ok\n");
  return rc;
}

int reward_check(const struct reward_check_opts *o) {
  struct config *cfg = malloc_check(sizeof *cfg);
  int rc = config_load_serial(cfg, o->deck, o->n_over, o->over);
  if (!rc) rc = check_deck(cfg, o);
  free(cfg);
  return rc;
}
