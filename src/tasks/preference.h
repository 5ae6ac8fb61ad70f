/* tasks/preference.h: preference pairs for DPO, IPO and reward-model training ([algo] name =
 * dpo | ipo | rm; [data] pref_path, pref_eval_path, prompt_key, chosen_key, rejected_key).
 *
 * A row is one JSON object per line:
 *   {"prompt": "...", "chosen": "...", "rejected": "..."}   key names from [data]; the
 *       prompt goes through [data] prompt_template, then [data] chat_template (as one user
 *       turn with a generation prompt) when that is set;
 *   {"messages": [..., {"role": "assistant", "content": CHOSEN},
 *                      {"role": "assistant", "content": REJECTED}]}
 *       the two final assistant turns are the pair; the last user turn before them is the
 *       prompt (through prompt_template) and the turns up to it are rendered with the chat
 *       template.
 * Checked at load, each failure naming FILE:LINE ([data] on_bad_line: error = exit 2, skip
 * = counted): JSON, keys present as strings or numbers, texts under TASK_TEXT_MAX bytes,
 * chosen != rejected. pref_check_fit checks in tokens that [BOS] prompt response [EOS]
 * fits [model] max_seq.
 *
 * Splits: with pref_eval_path empty, round(eval_frac * n) rows (at least 1, at most n - 1)
 * are held out, chosen by a keyed permutation of the row numbers ([run] seed); both splits
 * keep file order. Train pair k of step s (0-based) is row perm_epoch(i mod n) of epoch
 * i / n, i = s * pairs_per_step + k (tasks/dataset.h dataset_perm; identity with [data]
 * shuffle = false), so the step alone decides its pairs, on every rank and across
 * restarts. */
#ifndef RLPT_PREFERENCE_H
#define RLPT_PREFERENCE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "deck/config.h"
#include "tasks/chat.h"
#include "tasks/prompt.h"

struct tokenizer;

struct pref_row {
  char *prompt;               /* rendered: template and chat template applied */
  char *chosen, *rejected;
  long line;                  /* in its file */
};

struct pref_set {
  struct pref_row *rows[2];   /* by enum task_split */
  long n[2];
  char path[2][CFG_STR_MAX];
  uint64_t seed;
  int shuffle;
};

/* Read and check [data] pref_path (and pref_eval_path); chat as task_init looked it up
 * (NULL: none); skipped lines are summarised on log (may be NULL). 0; 2 with "FILE:LINE: ..." in err; 1 out of memory. */
int pref_load(struct pref_set *ps, const struct config *cfg, const struct chat_template *chat, FILE *log,
              char *err, size_t errlen);
void pref_free(struct pref_set *ps);
/* The train row of pair `index` (see above), or eval row index mod n. */
const struct pref_row *pref_row_at(const struct pref_set *ps, enum task_split split, uint64_t index);
/* Every row's [BOS] prompt response [EOS], both responses, fits max_seq tokens: 0, or 2
 * with "FILE:LINE: ..." in err. */
int pref_check_fit(const struct pref_set *ps, const struct tokenizer *tok, int max_seq, char *err,
                   size_t errlen);
/* [BOS] prompt response [EOS] of one side into ids (cap entries): *n_prompt, *n_total.
 * 0, or the tokenizer's error. */
int pref_tokens(const struct tokenizer *tok, const struct pref_row *row, int chosen, int *ids, size_t cap,
                size_t *n_prompt, size_t *n_total);

#endif
