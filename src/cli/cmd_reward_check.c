/* cli/cmd_reward_check.c: `rlpt reward-check DECK` scores the configured task's
 * reference answers and deliberately wrong ones (off by one, empty, garbage)
 * through the configured reward, and prints each component's distribution. It
 * catches the miswired reward that makes a GRPO loss sit at 0 before any GPU time
 * is spent. Exit 0 when the references score and the wrong answers score less;
 * 3 when they do not (with a WARNING line); 2 for a bad deck or arguments.
 * With [reward] rm_path the reward model is loaded and scores [BOS] prompt + answer +
 * EOS (what it sees in a run), so its `rm` row shows its score distribution over the
 * references and the wrong answers, and the totals are the rm_alpha mix. */
#include <float.h>
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

enum { KIND_REF, KIND_OFF_BY_ONE, KIND_EMPTY, KIND_GARBAGE, NKINDS };
static const char *const kind_names[NKINDS] = {"reference", "off_by_one", "empty", "garbage"};
#define NCOLS (REWARD_NCOMPONENTS + 1) /* total, then the parts */
#define ANSWER_MAX (TASK_TEXT_MAX + 8 + 2 * REWARD_TAG_MAX)

struct dist {
  double sum[NCOLS], lo[NCOLS], hi[NCOLS];
  long pos[NCOLS], n;
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

/* The wrong answer of one kind for prompt p, before tags. */
static void wrong_answer(const struct task *t, const struct task_prompt *p, int kind, char *out, size_t cap) {
  if (kind == KIND_EMPTY) { out[0] = '\0'; return; }
  if (kind == KIND_GARBAGE) { snprintf(out, cap, "banana?!"); return; }
  if (t->kind == TASK_JSONL) { jsonl_wrong_answer(t, p, out, cap); return; }
  if (t->kind == TASK_ARITH) snprintf(out, cap, "%lld", atoll(p->answer) + 1);
  else snprintf(out, cap, "%s+1", p->answer);  /* every given number is already used once */
}

/* The reward model's scores of [BOS] p + each answer text + EOS into out[NKINDS], the answer
 * cut to max_new tokens as generation would cut it. 0 or 2. */
static int rm_answer_scores(struct reward_model *rm, const struct tokenizer *tok, const struct task_prompt *p,
                            char (*text)[ANSWER_MAX], long max_new, double *out) {
  int *ids = malloc(sizeof(int) * (TASK_TEXT_MAX + 2 + NKINDS * (ANSWER_MAX + 1)));
  struct rm_seq seqs[NKINDS];
  char err[512] = "out of memory";
  int e = tok->eos_id >= 0, rc = ids ? 0 : 1;
  size_t np = 0, n = 0, at = 0;
  if (!rc && tokenizer_encode_prompt(tok, p->text, strlen(p->text), ids, TASK_TEXT_MAX + 1, &np, &at) !=
                 TOK_OK) {
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

/* Each prompt's four answers form one group, scored as a batch, so the table also
 * shows which components are constant within a group (reward_parts_const_frac). */
static int score_prompts(const struct task *t, const struct reward_cfg *rc, const struct tokenizer *tok,
                         struct reward_model *rm, long n_prompts, enum task_split split, struct dist *d,
                         double *const_frac, long *nonfinite) {
  for (long i = 0; i < n_prompts; i++) {
    struct task_prompt p;
    if (task_prompt(t, (uint64_t)i, split, &p)) {
      fprintf(stderr, "rlpt: reward-check: no %s problem found for prompt %ld in %d draws: the problem space "
              "is too small for [task] heldout_frac = %g\n", split == TASK_EVAL ? "held-out" : "train", i,
              TASK_MAX_ATTEMPTS, t->heldout_frac);
      return 2;
    }
    char text[NKINDS][ANSWER_MAX];
    struct reward_item items[NKINDS];
    for (int k = 0; k < NKINDS; k++) {
      char ans[TASK_TEXT_MAX + 8];
      if (k == KIND_REF) snprintf(ans, sizeof ans, "%s", p.answer);
      else wrong_answer(t, &p, k, ans, sizeof ans);
      snprintf(text[k], sizeof text[k], "%s%s%s", rc->open_tag, ans, rc->close_tag);
      int ids[sizeof text[k]];
      size_t n_ids = 0, bad = 0, len = strlen(text[k]);
      int erc = tokenizer_encode(tok, text[k], len, ids, sizeof text[k], &n_ids, &bad);
      if (erc && t->kind == TASK_JSONL) {
        n_ids = len;  /* dataset answers may hold bytes the char tokenizer lacks: bytes bound the tokens */
      } else if (erc) {
        fprintf(stderr, "rlpt: reward-check: the %s tokenizer cannot encode byte %zu of \"%s\"\n",
                tokenizer_kind_name(tok->kind), bad, text[k]);
        return 2;
      }
      items[k] = (struct reward_item){&p, text[k], len, (long)n_ids + 1 /* EOS */, 0};
    }
    double rewards[NKINDS], parts[NKINDS][REWARD_NCOMPONENTS], rms[NKINDS];
    struct reward_stats st;
    if (rm && rm_answer_scores(rm, tok, &p, text, rc->max_new_tokens, rms)) return 2;
    if (reward_score_batch_rm(rc, t, items, rm ? rms : NULL, NKINDS, 1, rewards, parts, &st)) return 1;
    for (int k = 0; k < NKINDS; k++) dist_add(&d[k], rewards[k], parts[k]);
    for (int c = 0; c < REWARD_NCOMPONENTS; c++) const_frac[c] += st.part_const_frac[c] / (double)n_prompts;
    *nonfinite += st.nonfinite;
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
  struct reward_model *rm = calloc(1, sizeof *rm);
  int rc = rm ? 0 : 1;
  if (!rc && model_config_from_deck(&mc, cfg, tok->vocab_size, err, sizeof err) != 0) rc = 2;
  if (!rc) rc = reward_model_load(rm, cfg->reward.rm_path, mc.vocab_size, mc.max_seq,
                                  (int)cfg->reward.rm_batch_tokens, err, sizeof err);
  if (rc) {
    fprintf(stderr, "rlpt: reward-check: %s\n", rc == 1 && !rm ? "out of memory" : err);
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

static int usage(int rc) {
  fprintf(stderr, "usage: rlpt reward-check DECK [--prompts N] [--split train|eval] [section.key=value ...]\n"
                  "  scores N (default 200) reference and wrong answers of the deck's task through its reward;\n"
                  "  exit 0 ok, 3 when the references get no reward or wrong answers score as well, 2 bad input\n");
  return rc;
}

int cmd_reward_check(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  struct config *cfg = malloc(sizeof *cfg);
  int n_over = 0, n_rest = 0, rc = 2;
  long n_prompts = 200;
  enum task_split split = TASK_TRAIN;
  const char *deck = NULL;
  if (!over || !rest || !cfg) { rc = 1; goto done; }
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  for (int i = 0; i < n_rest; i++) {
    char *end = NULL;
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) { rc = usage(0); goto done; }
    if (!strcmp(rest[i], "--prompts") && i + 1 < n_rest) {
      n_prompts = strtol(rest[++i], &end, 10);
      if (*end || n_prompts < 1 || n_prompts > 10000000) { fprintf(stderr, "rlpt: reward-check: --prompts wants 1..1e7\n"); goto done; }
    } else if (!strcmp(rest[i], "--split") && i + 1 < n_rest) {
      i++;
      if (!strcmp(rest[i], "train")) split = TASK_TRAIN;
      else if (!strcmp(rest[i], "eval")) split = TASK_EVAL;
      else { fprintf(stderr, "rlpt: reward-check: --split wants train or eval\n"); goto done; }
    } else if (rest[i][0] != '-' && !deck) {
      deck = rest[i];
    } else {
      rc = usage(2);
      goto done;
    }
  }
  if (!deck) { rc = usage(2); goto done; }
  if ((rc = config_load_serial(cfg, deck, n_over, over)) != 0) goto done;
  struct task t;
  struct reward_cfg rcfg;
  struct tokenizer tok;
  char err[512];
  if (task_init(&t, cfg, err, sizeof err) || reward_init(&rcfg, cfg, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: %s\n", deck, err);
    rc = 2;
    goto done;
  }
  /* the deck's tokenizer and model (as rlpt run builds them): a dataset's rows must fit
   * (a built-in task's deck may be a reward-only one, its [model] not sized for it) */
  struct model_config mc;
  int frc = model_import_or_deck(cfg, &mc, &tok, err, sizeof err), rows = t.kind == TASK_JSONL;
  struct fit_limits lim = { .max_seq = mc.max_seq, .max_new = cfg->rollout.max_new_tokens,
                            .sft = cfg->sft.steps > 0, .where = deck, .limit = "[model] max_seq" };
  if (!frc) frc = task_check_fit(&t, &tok, &lim, rows, rows, err, sizeof err);
  if (frc) {
    fprintf(stderr, "rlpt: %s: %s\n", deck, err);
    tokenizer_free(&tok);
    task_free(&t);
    rc = 2;
    goto done;
  }
  struct reward_model *rm = NULL;
  if ((rc = load_rm(cfg, &tok, &rm)) != 0) {
    tokenizer_free(&tok);
    task_free(&t);
    goto done;
  }
  /* a dataset is scored line by line, each row once */
  if (t.kind == TASK_JSONL && n_prompts > t.ds->n[split]) n_prompts = t.ds->n[split];
  struct dist d[NKINDS];
  memset(d, 0, sizeof d);
  printf("reward-check: task %s, %ld %s prompts, weights correct %g format %g length %g, overlong %s, tags %s%s%s\n",
         task_name(t.kind), n_prompts, split == TASK_EVAL ? "held-out" : "train", rcfg.weight[REWARD_CORRECT],
         rcfg.weight[REWARD_FORMAT], rcfg.weight[REWARD_LENGTH], rcfg.overlong_buffer > 0 ? "on" : "off",
         rcfg.open_tag[0] ? rcfg.open_tag : "(none)", rcfg.open_tag[0] ? "..." : "", rcfg.close_tag);
  double const_frac[REWARD_NCOMPONENTS] = {0};
  long nonfinite = 0;
  rc = score_prompts(&t, &rcfg, &tok, rm, n_prompts, split, d, const_frac, &nonfinite);
  if (rm) reward_model_free(rm);
  free(rm);
  tokenizer_free(&tok);
  task_free(&t);
  if (rc) goto done;
  print_table(d, rcfg.has_rm);
  printf("reward_parts_const_frac (share of prompts whose 4 answers agree):");
  for (int c = 0; c < REWARD_NCOMPONENTS; c++)
    if (c != REWARD_RM || rcfg.has_rm) printf(" %s %.3f", reward_component_name(c), const_frac[c]);
  printf("\nreward_nonfinite: %ld\n", nonfinite);
  rc = judge(d);
  if (!rc) printf("reward-check: ok\n");
done:
  free(over);
  free(rest);
  free(cfg);
  return rc;
}
