/* tasks/tasks.h: built-in synthetic tasks with verifiable answers.
 *
 *   arith      "a+b=" / "a-b=" / "a*b=": operands with digits_min..digits_max digits
 *              (with [data] chat_template set, for chat models: the user message
 *              "What is a+b? Answer with just the number." in that template, scored
 *              by the math verifier: the last number of the response)
 *              (a d-digit operand is uniform in [10^(d-1), 10^d - 1]; 1 digit is 0..9),
 *              the operator uniform over [task] ops. Answer: the exact integer.
 *   countdown  "Using 3 7 25 make 46:": numbers_min..numbers_max numbers from
 *              1..number_max and a target in 1..target_max reachable by construction
 *              (a random expression over all the numbers with + - * and exact /,
 *              intermediates positive); the target is never one of the numbers.
 *              Answer: that expression, e.g. "25+3*7".
 *
 * Prompt i of a split is a pure function of (seed, split, i) (util/rng.h streams
 * RNG_STREAM_TASK_TRAIN / RNG_STREAM_TASK_EVAL, a = low 32 bits of i, b = high 32),
 * the same on every rank and across restarts. Train and held-out never share a
 * problem: a keyed hash of the problem (stream RNG_STREAM_TASK_SPLIT; arith: a, op,
 * b; countdown: the sorted numbers and the target) puts a heldout_frac share of the
 * problem space in the held-out split, and each split redraws (up to
 * TASK_MAX_ATTEMPTS times) until it gets one of its own problems.
 *
 * SFT example: [BOS] prompt answer [EOS]; the loss covers answer + EOS. */
#ifndef RLPT_TASKS_H
#define RLPT_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "deck/config.h"
#include "tasks/chat.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

#define TASK_MAX_ATTEMPTS 4096

enum task_kind { TASK_ARITH = 0, TASK_COUNTDOWN = 1, TASK_JSONL = 2 };

struct dataset;

struct task {
  enum task_kind kind;
  uint64_t seed;
  int digits_min, digits_max;
  char ops[4];
  int n_ops;
  int numbers_min, numbers_max;
  long number_max, target_max;
  double heldout_frac;
  struct dataset *ds;           /* TASK_JSONL: the loaded rows (task_free releases them) */
  int chat;                     /* [data] chat_template set: arith's prompts in chat form with the
                                   math verifier; jsonl rows rendered by dataset_load */
  struct chat_template chat_tpl;
};

/* From the deck ([run] seed, [task]; [data] for jsonl, which loads the dataset and prints
 * its skipped-line summary on stderr). Returns 0, or 2 with a message naming the key (or
 * FILE:LINE of a bad row), 1 out of memory. */
int task_init(struct task *t, const struct config *cfg, char *err, size_t errlen);
/* Releases what task_init allocated (the dataset of jsonl). */
void task_free(struct task *t);
const char *task_name(enum task_kind kind);

/* Prompt `index` of `split`. Returns 0, or 1 when no problem of the split was found
 * in TASK_MAX_ATTEMPTS draws (a problem space too small for heldout_frac). */
int task_prompt(const struct task *t, uint64_t index, enum task_split split, struct task_prompt *p);

/* Correctness of a response (text without EOS): 1.0 or 0.0 (code: the share of its tests). */
double task_verify(const struct task *t, const struct task_prompt *p, const char *resp, size_t len);
/* task_verify of n responses into out[n]; the code verifier runs their tests together over
 * the sandbox pool and adds its counts to st (may be NULL). 0, or 1 out of memory. */
struct code_stats;
/* 1 when the task's verifier runs programs in the sandbox ([data] verifier = code). */
int task_sandboxed(const struct task *t);
int task_verify_batch(const struct task *t, const struct task_prompt *const *p, const char *const *resp,
                      const size_t *len, int n, double *out, struct code_stats *st);

/* The canonical final answer of a response under the task's verifier (verify_answer_canon):
 * its length, 0 when the response gives none; -1 when the verifier has no answer to compare
 * (countdown checks an expression against the target). */
long task_answer(const struct task *t, const char *resp, size_t len, char *out, size_t cap);

/* SFT tokens [BOS] prompt answer [EOS] into ids (cap entries). *n_prompt = tokens of
 * [BOS] prompt (the loss starts after them), *n_total = all. Returns 0, or the
 * tokenizer's error code (TOK_ERR_*). */
int task_sft_tokens(const struct tokenizer *tok, const struct task_prompt *p, int *ids, size_t cap,
                    size_t *n_prompt, size_t *n_total);

/* What task_check_fit holds the prompts to. */
struct fit_limits {
  int max_seq;          /* the model's */
  long max_new;         /* [rollout] max_new_tokens */
  int sft;              /* 1: also [BOS] prompt answer [EOS] (an SFT example) within max_seq */
  const char *where;    /* names the model or deck in messages */
  const char *limit;    /* names max_seq in messages ("[model] max_seq", "the model's max_seq") */
};
#define TASK_FIT_PROMPTS 256  /* train prompts rlpt run checks (generated problems of one deck
                                 have bounded length; a dataset is checked whole) */

/* The task's prompts, as tok encodes them (BOS included), must leave max_new tokens
 * within max_seq (and SFT examples fit it): the first n_train train and n_eval held-out
 * prompts, which must exist, or for a JSONL dataset every row of a split asked for
 * (count > 0), named FILE:LINE. Returns 0, or 2 with a message. */
int task_check_fit(const struct task *t, const struct tokenizer *tok, const struct fit_limits *l, long n_train,
                   long n_eval, char *err, size_t errlen);

#endif
