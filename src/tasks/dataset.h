/* tasks/dataset.h: JSONL datasets as an RL / SFT task ([task] name = jsonl, [data] keys).
 *
 * A row is one JSON object per line of [data] train_path / eval_path:
 *   {"prompt": "...", "answer": "..."}       keys named by prompt_key / answer_key;
 *                                             the answer may be a JSON number
 *   {"messages": [{"role": "user", "content": "..."}, ...]}
 *       the last user turn is the prompt; an assistant turn after it, if last, is
 *       the answer (the SFT completion) unless the row also has answer_key.
 *   countdown rows also carry "nums": [ints] (2..6) and "target": int.
 *   code rows (verifier = code) carry tests, HumanEval's or MBPP's (tasks/code.h); their
 *   answer may come from "canonical_solution" / "code" instead of answer_key.
 * The prompt the model sees is prompt_template with {prompt} replaced by the row's
 * prompt, then, with [data] chat_template set, the conversation rendered by tasks/chat.h
 * (turns up to the last user turn, with a generation prompt).
 *
 * Checked at load, each failure naming FILE:LINE (io/jsonl.h policy on_bad_line:
 * error = exit 2, skip = counted and reported once): JSON and UTF-8, keys present
 * with the right types, prompt and answer under TASK_TEXT_MAX bytes. Whether a row's
 * prompt fits [model] max_seq - [rollout] max_new_tokens is counted in tokens once the
 * tokenizer is known (task_check_fit, FILE:LINE in its message).
 *
 * Splits: with eval_path empty, exactly round(eval_frac * n) rows (at least 1, at
 * most n - 1) are held out: those whose keyed hash of their line number
 * (RNG_STREAM_TASK_SPLIT, [run] seed) is smallest. Both splits keep file order.
 *
 * Order: train prompt `index` is row perm_epoch(index mod n) of epoch index / n,
 * where perm_epoch is a keyed permutation of 0..n-1 (a 4-round Feistel network on
 * the next even power of two with cycle-walking, RNG_STREAM_SHUFFLE, key (seed,
 * epoch)); identity with shuffle = false. So the cursor (index) alone decides the
 * next prompt, on every rank and across restarts. Eval prompt i is eval row i mod n.
 *
 * Verifiers ([data] verifier, tasks/verify.h): math against the row's final answer
 * (the inside of the last \boxed{} or the text after "####" when the answer has
 * one, else the whole answer), arith (exact integer), countdown (nums, target),
 * exact (trimmed text equality), code (the row's tests in the sandbox, tasks/code.h). */
#ifndef RLPT_DATASET_H
#define RLPT_DATASET_H

#include <stdint.h>
#include <stdio.h>

#include "deck/config.h"
#include "io/jsonl_rows.h"
#include "tasks/chat.h"
#include "tasks/prompt.h"

struct data_row {
  char *prompt;     /* after template / chat rendering */
  char *answer;     /* the reference completion */
  char *ref;        /* what the verifier compares with (math: the final answer) */
  long line;        /* line in its file */
  int n_nums;       /* countdown */
  long nums[TASK_MAX_NUMS];
  long target;
  char **tests;     /* verifier = code (tasks/code.h): the programs' tests */
  int n_tests;
  char *code_prefix;  /* verifier = code, HumanEval: the raw prompt the program runs after */
  char *json;       /* the row as read (compact JSON), kept for [reward] command and
                       dataset_load_file; else NULL */
};

struct sandbox;

struct dataset {
  struct data_row *rows[2];  /* by enum task_split */
  long n[2];
  char path[2][CFG_STR_MAX]; /* the file each split came from */
  uint64_t seed;
  int shuffle;
  enum data_verifier verifier;
  struct sandbox *sb;        /* verifier = code: where the tests run (dataset_free releases it) */
  int sandbox_workers, code_all;  /* [sandbox] workers; [data] code_score = all */
};

/* Read and check the [data] files; chat is the [data] chat_template task_init looked up
 * (NULL: none). Returns 0; 2 with "FILE:LINE: ..." in err for bad input (on_bad_line =
 * error, or no usable rows); 1 out of memory. Skipped lines are summarised on log (may
 * be NULL). */
int dataset_load(struct dataset *ds, const struct config *cfg, const struct chat_template *chat, FILE *log,
                 char *err, size_t errlen);
void dataset_free(struct dataset *ds);

/* Keyed permutation of 0..n-1 for (seed, epoch): the row visited at position pos. */
uint64_t dataset_perm(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t pos);
/* The row served as prompt `index` of split (NULL when the split is empty). */
const struct data_row *dataset_row(const struct dataset *ds, enum task_split split, uint64_t index);
/* Fill p (text, answer, countdown numbers) for prompt `index` of split; 0, or 1
 * when the split is empty or a field does not fit. */
int dataset_prompt(const struct dataset *ds, uint64_t index, enum task_split split, struct task_prompt *p);
/* The configured verifier on a response to prompt p: 1.0 or 0.0 (code: the share of the
 * tests passed, or all or nothing). */
double dataset_verify(const struct dataset *ds, const struct task_prompt *p, const char *resp, size_t len);
/* dataset_verify of n responses at once: the code verifier runs all their tests over the
 * sandbox pool. st (may be NULL) adds the code verifier's counts. 0, or 1 out of memory. */
struct code_stats;
int dataset_verify_batch(const struct dataset *ds, const struct task_prompt *const *p, const char *const *resp,
                         const size_t *len, int n, double *out, struct code_stats *st);
/* Load one file as the train split alone (no held-out rows, every row's json kept):
 * `rlpt reward-score`'s input. */
int dataset_load_file(struct dataset *ds, const struct config *cfg, const char *path, FILE *log, char *err,
                      size_t errlen);

/* The good rows of a [data] JSONL file (io/jsonl_rows.h) under the deck's [data]
 * on_bad_line and max_row_bytes; ops->max_line and ops->limit are set here. Shared by the
 * datasets and the preference pairs (tasks/preference.c). */
int dataset_load_rows(const struct config *cfg, const char *path, struct jsonl_row_ops ops, const void *ctx,
                      FILE *log, void **rows, long *n, char *err, size_t errlen);

/* prompt_template with "\n", "\t", "\\" escapes turned into bytes; 2 with a message
 * when it lacks {prompt}. out has outlen bytes. */
int dataset_template_unescape(const char *tmpl, char *out, size_t outlen, char *err, size_t errlen);
/* tmpl with every {prompt} replaced by prompt (malloc'd; NULL out of memory). */
char *dataset_apply_template(const char *tmpl, const char *prompt);

#endif
